//go:build cgo

package duckdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/duckdb/duckdb-go/v2" // the "duckdb" database/sql driver, and its typed errors
	"modernc.org/sqlite"
	"modernc.org/sqlite/vtab"

	"github.com/dpsql/dpsql/measure"
	"github.com/dpsql/dpsql/measuresql"
)

// Available reports whether this build has DuckDB (it needs cgo).
const Available = true

// Module is the SQLite virtual-table module of the mirrors:
//
//	CREATE VIRTUAL TABLE "t" USING dpsql_duckdb('t')
const Module = "dpsql_duckdb"

// ErrInUse reports a DuckDB file another process holds open for writing
// (DuckDB locks the file: one writing process, or any number of
// reading ones).
var ErrInUse = errors.New("the DuckDB database is in use by another process")

// Source is one engine's DuckDB file. The engine reads it through one
// read-only handle, opened at first use, so that any number of dpsql
// processes can read it at once; an import opens it for writing alone.
type Source struct {
	Path string
	// MemoryLimit caps the memory DuckDB uses for a query (DuckDB's
	// memory_limit, such as "512MB"; "" takes $DPSQL_DUCKDB_MEMORY_LIMIT,
	// else DefaultResources from the machine's memory and cores, which
	// also sets the threads); beyond it
	// DuckDB spills to a directory private to this user and process,
	// made fresh inside TempDir (default the system's temporary
	// directory; a given one must be the user's own and writable by no one
	// else) and removed when the last handle closes (spill.go).
	MemoryLimit, TempDir string
	// Observe, when set (tests only), sees every statement sent to DuckDB.
	Observe func(sql string)

	mu   sync.Mutex
	db   *sql.DB
	cols map[string][]column // per table, while db is open (a read-only file's schema cannot change)
}

func (s *Source) observe(q string) {
	if os.Getenv("DPSQL_DEBUG_DUCKDB") != "" {
		fmt.Fprintln(os.Stderr, "duckdb:", q)
	}
	if s.Observe != nil {
		s.Observe(q)
	}
}

// DB returns the read-only handle, opening it if needed.
func (s *Source) DB() (*sql.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db != nil {
		return s.db, nil
	}
	if _, err := os.Stat(s.Path); err != nil {
		return nil, fmt.Errorf("DuckDB database %s: %w", s.Path, err)
	}
	dir, err := acquireSpill(s.TempDir)
	if err != nil {
		return nil, err
	}
	db, err := open(s.Path, true, s.settings(dir))
	if err != nil {
		releaseSpill(s.TempDir)
		return nil, err
	}
	s.db = db
	return db, nil
}

// ReadOnlyDSN is the duckdb-go DSN the source reads its file with. DuckDB
// opens a file with one configuration per process: another handle on the
// file in the same process must use the same DSN. It holds this
// process's private spill directory until the process ends.
func (s *Source) ReadOnlyDSN() (string, error) {
	dir, err := acquireSpill(s.TempDir)
	if err != nil {
		return "", err
	}
	return s.Path + "?access_mode=read_only" + s.settings(dir), nil
}

// settings are the DSN's DuckDB settings: the memory limit, and the
// spill directory dir (acquireSpill: private to this user and process).
func (s *Source) settings(dir string) string {
	limit := s.MemoryLimit
	if limit == "" {
		limit = os.Getenv("DPSQL_DUCKDB_MEMORY_LIMIT")
	}
	spill := "&temp_directory=" + url.QueryEscape(dir)
	if limit == "" {
		return machineResources().setting() + spill // what the machine has (DefaultResources)
	}
	return "&memory_limit=" + url.QueryEscape(limit) + spill
}

// Close closes the handle (a later DB opens it again).
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db, s.cols = nil, nil
	releaseSpill(s.TempDir)
	return err
}

// open opens a DuckDB file, read-only or for writing.
func open(path string, readOnly bool, settings string) (*sql.DB, error) {
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("DuckDB path %q must not contain '?' or '#'", path)
	}
	mode := "read_write"
	if readOnly {
		mode = "read_only"
	}
	db, err := sql.Open("duckdb", path+"?access_mode="+mode+settings)
	if err != nil {
		return nil, openError(path, err)
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, openError(path, err)
	}
	return db, nil
}

// openError says why DuckDB would not open path, in dpsql's terms. It
// tells the errors apart by DuckDB's error type (duckdb.Error): a
// Connection error is this process holding the file under another
// configuration (read-only in one engine, for writing in another); an IO
// error about the file's lock is another process writing it. Within the
// IO type, the lock is told from the file system's other refusals by the
// message, which DuckDB gives no type of its own.
func openError(path string, err error) error {
	var de *duckdb.Error
	if !errors.As(err, &de) {
		return fmt.Errorf("opening DuckDB database %s: %v", path, firstLine(err.Error()))
	}
	if de.Type == duckdb.ErrorTypeConnection {
		return fmt.Errorf("%s: %w (this process has it open read-only in another engine)", path, ErrInUse)
	}
	if de.Type == duckdb.ErrorTypeIO && strings.Contains(de.Msg, "lock") {
		// DuckDB's own text advises its CLI's -readonly flag; say it in
		// dpsql's terms, with the process that holds the file.
		holder := "another process"
		if m := lockHolder.FindStringSubmatch(err.Error()); m != nil {
			holder = "process " + m[1]
		}
		return fmt.Errorf("%s: %w: %s has it open for writing (an import or an owner's shell); try again when it is done", path, ErrInUse, holder)
	}
	return fmt.Errorf("opening DuckDB database %s: %v", path, firstLine(err.Error()))
}

// lockHolder finds the process id in DuckDB's lock error.
var lockHolder = regexp.MustCompile(`PID (\d+)`)

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// column is one column of a DuckDB table: how it is read (a total
// expression over the quoted name), the SQLite type its mirror declares,
// and its class for the compiler.
type column struct {
	name     string
	typ      string // DuckDB's data_type
	affinity string
	class    measuresql.Type
}

// read is the column as the mirror reads it.
func (c column) read() string {
	q := Quote(c.name)
	switch c.affinity {
	case "INTEGER":
		return "CAST(" + q + " AS BIGINT)"
	case "REAL":
		return "CAST(" + q + " AS DOUBLE)"
	case "BLOB":
		return q
	}
	if c.typ == "VARCHAR" {
		return q
	}
	return "CAST(" + q + " AS VARCHAR)" // every type has a text form
}

// classify maps DuckDB's data_type to how the mirror reads it: integers
// that fit int64 (and booleans) as INTEGER, floats as REAL (both
// compiled), wider or decimal numbers as REAL through a DOUBLE cast (not
// compiled: the reference sees them rounded), VARCHAR as TEXT (compiled),
// BLOB as BLOB, everything else as its text (not compiled).
func classify(name, typ string) column {
	c := column{name: name, typ: typ, affinity: "TEXT"}
	switch {
	case typ == "BIGINT":
		c.affinity, c.class = "INTEGER", measuresql.Int
	case typ == "INTEGER" || typ == "SMALLINT" || typ == "TINYINT":
		c.affinity, c.class = "INTEGER", measuresql.Int32
	case typ == "UINTEGER" || typ == "USMALLINT" || typ == "UTINYINT" || typ == "BOOLEAN":
		c.affinity, c.class = "INTEGER", measuresql.Integer
	case typ == "DOUBLE" || typ == "FLOAT":
		c.affinity, c.class = "REAL", measuresql.Real
	case typ == "HUGEINT" || typ == "UHUGEINT" || typ == "UBIGINT" || strings.HasPrefix(typ, "DECIMAL"):
		c.affinity = "REAL"
	case typ == "BLOB":
		c.affinity = "BLOB"
	case typ == "VARCHAR":
		c.class = measuresql.Text
	}
	return c
}

// columns lists the columns of a base table that dpsql reads: those
// whose every stored value reads without error (readable). Views are never
// read (a view's expressions run per row and could fail on one), and
// neither is a column computed at read time or of a type outside the
// built-in ones; the catalog is read through DuckDB's system functions by
// their qualified names, which nothing in the file can shadow.
func (s *Source) columns(ctx context.Context, table string) ([]column, error) {
	db, err := s.DB()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	cached, ok := s.cols[table]
	s.mu.Unlock()
	if ok {
		return cached, nil
	}
	// Two small scans of the catalog (a join of the two needs more memory
	// than a tight memory limit leaves).
	const qt = `SELECT table_oid, sql FROM system.main.duckdb_tables() WHERE database_name = system.main.current_database()
	AND schema_name = 'main' AND table_name = ? AND NOT temporary AND NOT internal`
	s.observe(qt)
	var oid int64
	var tableSQL string
	switch err := db.QueryRowContext(ctx, qt, table).Scan(&oid, &tableSQL); {
	case errors.Is(err, sql.ErrNoRows):
		return nil, fmt.Errorf("DuckDB has no table %s (a base table in the schema main)", Quote(table))
	case err != nil:
		return nil, err
	}
	const qc = `SELECT column_name, data_type, data_type_id, column_default IS NOT NULL
	FROM system.main.duckdb_columns() WHERE table_oid = ? ORDER BY column_index`
	s.observe(qc)
	rows, err := db.QueryContext(ctx, qc, oid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var all []catalogColumn
	for rows.Next() {
		c := catalogColumn{tableSQL: tableSQL}
		if err := rows.Scan(&c.name, &c.typ, &c.typeID, &c.hasDefault); err != nil {
			return nil, err
		}
		all = append(all, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("DuckDB has no table %s (a base table in the schema main)", Quote(table))
	}
	var cols []column
	for _, c := range all {
		if strings.EqualFold(c.name, "rowid") {
			return nil, fmt.Errorf("DuckDB table %s has a column named %s, which hides DuckDB's row identifier that dpsql reads: rename the column", Quote(table), Quote(c.name))
		}
		if readable(c) {
			cols = append(cols, classify(c.name, c.typ))
		}
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("DuckDB table %s has no column dpsql can read (docs/privacy.md, \"What a DuckDB file may hold\")", Quote(table))
	}
	s.mu.Lock()
	if s.db == db {
		if s.cols == nil {
			s.cols = map[string][]column{}
		}
		s.cols[table] = cols
	}
	s.mu.Unlock()
	return cols, nil
}

// catalogColumn is a column as DuckDB's catalog describes it.
type catalogColumn struct {
	name, typ  string
	typeID     int
	hasDefault bool   // a DEFAULT, or a generated column's expression
	tableSQL   string // the table's CREATE statement, as DuckDB prints it
}

// readable reports whether reading the column (through column.read) can
// never raise, whatever the file's rows: a stored column of a built-in
// type. DuckDB's catalog shows a generated column's expression where it
// shows a default, so in a table that has a generated column (its CREATE
// statement says GENERATED ALWAYS AS) no column with either is read: a
// VIRTUAL column is computed on every read, and DuckDB checks its
// expression on INSERT but not on UPDATE, so one stored row could make
// every read raise. Types outside the built-in ones (an extension's,
// whose cast to text is not DuckDB's) are not read either; ENUM, nested
// and user type aliases resolve to built-in types.
func readable(c catalogColumn) bool {
	if c.hasDefault && strings.Contains(strings.ToUpper(c.tableSQL), "GENERATED ALWAYS AS") {
		return false
	}
	return builtinTypeIDs[c.typeID]
}

// builtinTypeIDs are DuckDB's logical type ids (duckdb_columns().data_type_id)
// whose values, stored, read and cast to text without error: booleans,
// every integer, decimal and float, text, blobs, bits, dates and times,
// intervals, UUIDs, enums and the nested types (struct, list, map, union,
// array) over them.
var builtinTypeIDs = map[int]bool{
	10: true, 11: true, 12: true, 13: true, 14: true, // BOOLEAN, TINYINT, SMALLINT, INTEGER, BIGINT
	15: true, 16: true, 17: true, 18: true, 19: true, 20: true, // DATE, TIME, TIMESTAMP_S/_MS/ /_NS
	21: true, 22: true, 23: true, 24: true, 25: true, 26: true, 27: true, // DECIMAL, FLOAT, DOUBLE, CHAR, VARCHAR, BLOB, INTERVAL
	28: true, 29: true, 30: true, 31: true, 32: true, 34: true, 35: true, 36: true, 39: true, // unsigned integers, TIMESTAMP_TZ, TIME_TZ, TIME_NS, BIT, BIGNUM
	49: true, 50: true, 54: true, // UHUGEINT, HUGEINT, UUID
	100: true, 101: true, 102: true, 104: true, 107: true, 108: true, // STRUCT, LIST, MAP, ENUM, UNION, ARRAY
}

// Tables lists the base tables of the schema main.
func (s *Source) Tables(ctx context.Context) ([]string, error) {
	db, err := s.DB()
	if err != nil {
		return nil, err
	}
	const q = `SELECT table_name FROM system.main.duckdb_tables() WHERE database_name = system.main.current_database()
	AND schema_name = 'main' AND NOT temporary AND NOT internal ORDER BY table_name`
	s.observe(q)
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// Quote quotes an identifier.
func Quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// Where names DuckDB in messages (backend.Mirrored).
func (s *Source) Where() string { return "DuckDB" }

// Install registers the mirrors' module on drv, the SQLite driver private
// to one engine.
func (s *Source) Install(drv *sqlite.Driver) error {
	return drv.RegisterModule(Module, module{src: s})
}

// Unmirrored says what keeps a DuckDB table from being mirrored.
func (s *Source) Unmirrored() string {
	return "the name is reserved or taken in the state file"
}

// Mirror declares in the state file db a mirror of every DuckDB table it
// does not have yet, and returns the names added and those skipped
// (reserved names, or a name taken in the file). A file not made yet
// (the owner's first import makes it) has none.
func (s *Source) Mirror(ctx context.Context, db *sql.DB) (added, skipped []string, err error) {
	if _, err := os.Stat(s.Path); err != nil {
		return nil, nil, nil
	}
	tables, err := s.Tables(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range tables {
		lower := strings.ToLower(t)
		if strings.HasPrefix(lower, "_dpsql_") || strings.HasPrefix(lower, "sqlite_") {
			skipped = append(skipped, t)
			continue
		}
		var existing string
		err := db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE`, t).Scan(&existing)
		switch {
		case err == sql.ErrNoRows:
		case err != nil:
			return nil, nil, err
		default:
			if !strings.Contains(existing, Module) {
				skipped = append(skipped, t)
			}
			continue
		}
		stmt := "CREATE VIRTUAL TABLE " + Quote(t) + " USING " + Module + "('" + strings.ReplaceAll(t, "'", "''") + "')"
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return nil, nil, fmt.Errorf("mirroring %s: %w", t, err)
		}
		added = append(added, t)
	}
	return added, skipped, nil
}

// IsMirror reports whether the state file's table name is a DuckDB mirror.
func IsMirror(ctx context.Context, db *sql.DB, name string) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ? AND sql LIKE '%'||?||'%'`, name, Module).Scan(&n)
	return n > 0, err
}

// Explain says where a scan with this measurement plan runs: in DuckDB as
// one statement, or through the reference evaluator over the mirror, and
// why (m nil: the scan has no plan, for the reason noPlan); statement is
// the one it runs in DuckDB (measuresql.Shown), "" on the mirror.
func (s *Source) Explain(ctx context.Context, state *sql.DB, m *measure.Plan, noPlan string) (where, statement string, err error) {
	const reference = "the reference evaluator (dpsql_measure in SQLite) over the rows the mirror reads from DuckDB"
	if m == nil {
		return reference + ": " + noPlan, "", nil
	}
	types, ok, err := s.types(ctx, state, m)
	if err != nil {
		return "", "", err
	}
	if !ok {
		return reference + ": a table it reads is not one of the DuckDB file's", "", nil
	}
	if why := measuresql.WhyNot(m, types, measuresql.DuckDB{}); why != "" {
		return reference + ": the DuckDB printer does not compile " + why, "", nil
	}
	statement, _ = measuresql.Shown(m, types, measuresql.DuckDB{})
	return "one DuckDB statement (measuresql): DuckDB measures every group where the data is and returns only per-group aggregates", statement, nil
}

// types are the classes of the columns of every table the plan reads,
// named as the plan names them (measure.Column); ok is false when one of
// them is not a table of the DuckDB file that the state file mirrors.
func (s *Source) types(ctx context.Context, state *sql.DB, m *measure.Plan) (types map[measure.Col]measuresql.Type, ok bool, err error) {
	types = map[measure.Col]measuresql.Type{}
	for i, t := range append([]string{m.Table}, m.Joins...) {
		if ok, err := IsMirror(ctx, state, t); err != nil || !ok {
			return nil, false, err
		}
		cols, err := s.columns(ctx, t)
		if err != nil {
			return nil, false, err
		}
		for _, c := range cols {
			types[measure.Column(i, c.name)] = c.class
		}
	}
	return types, true, nil
}

// WhyNot says why Measure would decline the plan ("": it runs it): a
// table it reads is not a mirrored table of the file, or the DuckDB
// printer does not compile a form of it.
func (s *Source) WhyNot(ctx context.Context, state *sql.DB, m *measure.Plan) (string, error) {
	types, ok, err := s.types(ctx, state, m)
	if err != nil {
		return "", err
	}
	if !ok {
		return "a table it reads is not one of the DuckDB file's", nil
	}
	return measuresql.WhyNot(m, types, measuresql.DuckDB{}), nil
}

// Measure runs a scan's measurement plan as one DuckDB statement
// (measuresql, dialect DuckDB) and returns its per-group measurements; ok
// is false when the plan's forms or the table's column types are not
// compiled. Only tables the state file mirrors are read.
func (s *Source) Measure(ctx context.Context, state *sql.DB, m *measure.Plan, key uint64) (*measuresql.Statement, []*measuresql.Group, bool, error) {
	types, ok, err := s.types(ctx, state, m)
	if err != nil || !ok {
		return nil, nil, false, err
	}
	st, ok := measuresql.Compile(m, types, measuresql.DuckDB{}, key)
	if !ok {
		return nil, nil, false, nil
	}
	db, err := s.DB()
	if err != nil {
		return nil, nil, false, err
	}
	s.observe(st.SQL)
	rows, err := db.QueryContext(ctx, st.SQL)
	if err != nil {
		if os.Getenv("DPSQL_DEBUG_DUCKDB") != "" {
			fmt.Fprintln(os.Stderr, "duckdb error:", err)
		}
		return nil, nil, false, resourceError(err)
	}
	defer rows.Close()
	groups, err := st.Read(rows)
	return st, groups, err == nil, err
}

// resourceError marks DuckDB's out-of-memory and disk-full failures
// (measuresql.ErrEngineResources), told by the driver's error type
// (duckdb.ErrorTypeOutOfMemory; ErrorTypeIO only when the disk is full):
// after them the reference measures instead; every other failure stays
// the query's error.
func resourceError(err error) error {
	var de *duckdb.Error
	if errors.As(err, &de) && (de.Type == duckdb.ErrorTypeOutOfMemory || de.Type == duckdb.ErrorTypeIO && strings.Contains(de.Msg, "No space left on device")) {
		return fmt.Errorf("%w: %w", measuresql.ErrEngineResources, err)
	}
	return err
}

// module is the virtual-table module of one engine's mirrors.
type module struct{ src *Source }

func (m module) Create(ctx vtab.Context, args []string) (vtab.Table, error) {
	return m.connect(ctx, args)
}

func (m module) Connect(ctx vtab.Context, args []string) (vtab.Table, error) {
	return m.connect(ctx, args)
}

func (m module) connect(vctx vtab.Context, args []string) (vtab.Table, error) {
	if len(args) != 4 {
		return nil, fmt.Errorf("%s takes one argument (the table), got %d", Module, len(args)-3)
	}
	name := strings.TrimSpace(args[3])
	if len(name) < 2 || name[0] != '\'' || name[len(name)-1] != '\'' {
		return nil, fmt.Errorf("%s: argument %s is not a quoted string", Module, name)
	}
	name = strings.ReplaceAll(name[1:len(name)-1], "''", "'")
	if m.src == nil || m.src.Path == "" {
		return nil, fmt.Errorf("table %s lives in DuckDB, and this engine was not opened with its DuckDB file", args[2])
	}
	cols, err := m.src.columns(context.Background(), name)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", args[2], err)
	}
	defs := []string{Quote(identityColumn) + " INTEGER HIDDEN"}
	for _, c := range cols {
		defs = append(defs, Quote(c.name)+" "+c.affinity)
	}
	if err := vctx.Declare("CREATE TABLE x (" + strings.Join(defs, ", ") + ")"); err != nil {
		return nil, err
	}
	return &table{src: m.src, name: name, cols: cols}, nil
}

// identityColumn is the hidden column giving each row its DuckDB rowid
// (catalog.IdentityColumn): stable while the file is open read-only.
const identityColumn = "_dpsql_rowid"

type table struct {
	src  *Source
	name string
	cols []column
}

// BestIndex asks for the used columns only; nothing is filtered in
// DuckDB (SQLite checks every row).
func (t *table) BestIndex(info *vtab.IndexInfo) error {
	var used []string
	for j := 0; j <= len(t.cols); j++ {
		bit := min(j, 63)
		if info.ColUsed&(1<<uint(bit)) == 0 {
			continue
		}
		if j == 0 {
			used = append(used, "r")
		} else {
			used = append(used, strconv.Itoa(j-1))
		}
	}
	info.IdxStr = strings.Join(used, ",")
	info.EstimatedRows = 1e6
	info.EstimatedCost = 1e9
	return nil
}

func (t *table) Open() (vtab.Cursor, error) { return &cursor{t: t}, nil }
func (t *table) Disconnect() error          { return nil }
func (t *table) Destroy() error             { return nil }

type cursor struct {
	t     *table
	rows  *sql.Rows
	pos   []int // table column (0: identity) → result position, or -1
	vals  []any
	rowid int64
	eof   bool
}

func (c *cursor) Filter(_ int, idxStr string, _ []vtab.Value) error {
	c.close()
	c.pos = make([]int, len(c.t.cols)+1)
	for i := range c.pos {
		c.pos[i] = -1
	}
	var exprs []string
	if idxStr != "" {
		for _, s := range strings.Split(idxStr, ",") {
			if s == "r" {
				c.pos[0] = len(exprs)
				exprs = append(exprs, "rowid")
				continue
			}
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(c.t.cols) {
				return fmt.Errorf("%s: bad column list %q", Module, idxStr)
			}
			c.pos[i+1] = len(exprs)
			exprs = append(exprs, c.t.cols[i].read())
		}
	}
	if len(exprs) == 0 {
		exprs = append(exprs, "NULL")
	}
	db, err := c.t.src.DB()
	if err != nil {
		return err
	}
	q := "SELECT " + strings.Join(exprs, ", ") + " FROM " + Quote(c.t.name)
	c.t.src.observe(q)
	rows, err := db.Query(q)
	if err != nil {
		return err
	}
	c.rows, c.rowid, c.eof = rows, 0, false
	c.vals = make([]any, len(exprs))
	return c.Next()
}

func (c *cursor) Next() error {
	if !c.rows.Next() {
		c.eof = true
		err := c.rows.Err()
		c.close()
		return err
	}
	ptrs := make([]any, len(c.vals))
	for i := range c.vals {
		c.vals[i] = nil
		ptrs[i] = &c.vals[i]
	}
	if err := c.rows.Scan(ptrs...); err != nil {
		return err
	}
	c.rowid++
	return nil
}

func (c *cursor) Eof() bool { return c.eof }

func (c *cursor) Column(col int) (vtab.Value, error) {
	if col < 0 || col >= len(c.pos) || c.pos[col] < 0 {
		return nil, nil
	}
	return measuresql.Normalize(c.vals[c.pos[col]]), nil
}

func (c *cursor) Rowid() (int64, error) { return c.rowid, nil }

func (c *cursor) close() {
	if c.rows != nil {
		c.rows.Close()
		c.rows = nil
	}
}

func (c *cursor) Close() error {
	c.close()
	return nil
}
