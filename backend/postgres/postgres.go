// Package postgres lets dpsql answer queries about tables that live in a
// PostgreSQL database.
//
// Where it sits: beside exec, below the engine. Each PostgreSQL table is
// mirrored in the engine's SQLite file as a virtual table of the module
// "dpsql_postgres" (Module); every statement the engine runs — the planner-
// printed scan with its measurement aggregate, public queries, the
// post-processing — stays a SQLite statement, and SQLite pulls the rows it
// needs through the virtual table's cursor (cursor.go), which runs one
// SELECT on PostgreSQL per scan. So the rules that make dpsql private
// (statements printed from the resolved plan, the authorizer, total
// expressions, contribution bounding and exact sums in the measurement
// aggregate) hold unchanged on PostgreSQL data: PostgreSQL only ever
// evaluates statements this package prints, which read named columns and
// never compute a value that could fail on some row (selectSQL), and the
// compiled measurements (measure.go), whose every expression measuresql
// prints in a total form. The
// catalog, budget, ledger and answer cache stay in the SQLite file (the
// state file); mirror.go declares the mirrors and imports with COPY.
//
// What is pushed down: the columns a statement uses (SQLite's colUsed);
// for scans that read the hidden weight column, the grouping of
// identical rows with their counts; comparisons PostgreSQL decides
// exactly as SQLite (filter pushdown); and, outside the virtual table,
// a scan's whole measurement compiled as one statement (measure.go:
// Measure, for exec's Measurer) whenever the PostgreSQL printer compiles
// its plan; docs/backends.md has the measurements.
package postgres

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/measuresql"
	"modernc.org/sqlite"
	"modernc.org/sqlite/vtab"
)

// Module is the name of the SQLite virtual-table module that reads
// PostgreSQL tables. A mirrored table is declared as
//
//	CREATE VIRTUAL TABLE "t" USING dpsql_postgres('source', 'schema', 'table')
//
// where source is the state file's source id (SourceID): the engine that
// installed the module (Install) reads the table only if its Source has
// that id.
const Module = "dpsql_postgres"

// ErrNoSource reports a mirrored table whose PostgreSQL database this
// engine has not connected to.
var ErrNoSource = errors.New("the table lives in PostgreSQL, and this engine was not opened with its connection string")

// Source is one engine's PostgreSQL database: the state file's source id
// (SourceID), the engine's connection pool, and its test switches (nil
// in production). The engine owns the pool; the mirrored tables of the
// engine's SQLite connections read through it.
type Source struct {
	ID    string
	Pool  *pgxpool.Pool // nil until the engine has connected
	Knobs *knobs.Knobs
	// Observe, when set (tests only), sees every statement sent to
	// PostgreSQL for this source.
	Observe func(sql string)

	// encoding is whether the database stores UTF8 (else SQL_ASCII,
	// checkEncoding), read from a connection once: a database's
	// encoding never changes.
	encoding struct {
		sync.Mutex
		known, utf8 bool
	}
	// ledger is the pool as a database/sql handle (PolicyStore), opened
	// on first use.
	ledger struct {
		sync.Once
		db *sql.DB
	}
}

// Install registers the module that reads the source's mirrored tables
// on drv, the SQLite driver private to one engine (register it before
// drv opens a connection; the pool may come later). No process-wide
// registry is involved: two engines over one state file each read
// through their own pool.
func (s *Source) Install(drv *sqlite.Driver) error {
	return drv.RegisterModule(Module, module{src: s})
}

// observe shows sql to the source's observer, if any.
func (s *Source) observe(sql string) {
	if s != nil && s.Observe != nil {
		s.Observe(sql)
	}
}

// kind is how a PostgreSQL column's values reach SQLite.
type kind int

const (
	kindInteger kind = iota // int2, int4, int8, bool (as 0/1), oid
	kindReal                // float4, float8
	kindNumeric             // numeric: read as text, parsed to a float (±Inf beyond range, NaN → NULL)
	kindBlob                // bytea
	kindText                // text, varchar, char, name, and every other type through its text output
)

// column is one column of a mirrored table.
type column struct {
	name    string
	typname string // PostgreSQL's type name (pg_type.typname)
	kind    kind
	// readable: the role may read the whole table (has_table_privilege;
	// the same for every column).
	readable bool
	// partitioned: the table is a partitioned one (the same for every
	// column).
	partitioned bool
	// compared: how PostgreSQL can compare the column with a value as
	// SQLite would (filter pushdown), or noCompare.
	compared comparison
}

// comparison is the kind of column whose comparisons with a value
// PostgreSQL decides exactly as SQLite does.
type comparison int

const (
	noCompare   comparison = iota
	intCompare             // int2, int4, int8: exact 64-bit integers on both sides
	realCompare            // float4, float8: IEEE doubles on both sides (NaN is NULL in SQLite)
	// textCompare: a column read through its text output, compared as
	// that text in the "C" collation (bytes, then length), as SQLite's
	// BINARY collation compares the same text — dpsql's grammar has no
	// COLLATE, and the mirrors declare none.
	textCompare
)

func comparisonOf(typname string) comparison {
	switch typname {
	case "int2", "int4", "int8":
		return intCompare
	case "float4", "float8":
		return realCompare
	}
	if kindOf(typname) == kindText {
		return textCompare
	}
	return noCompare
}

// affinity is the SQLite type declared for a kind.
func (k kind) affinity() string {
	switch k {
	case kindInteger:
		return "INTEGER"
	case kindReal, kindNumeric:
		return "REAL"
	case kindBlob:
		return "BLOB"
	}
	return "TEXT"
}

func kindOf(typname string) kind {
	switch typname {
	case "int2", "int4", "int8", "bool", "oid":
		return kindInteger
	case "float4", "float8":
		return kindReal
	case "numeric":
		return kindNumeric
	case "bytea":
		return kindBlob
	}
	return kindText
}

// Quote quotes an identifier for both SQLite and PostgreSQL.
func Quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// Literal quotes a string literal for both SQLite and PostgreSQL
// (standard_conforming_strings, PostgreSQL's default).
func Literal(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// unliteral undoes Literal on a virtual table's argument.
func unliteral(s string) (string, error) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
		return "", fmt.Errorf("%s: argument %s is not a quoted string", Module, s)
	}
	return strings.ReplaceAll(s[1:len(s)-1], "''", "'"), nil
}

// columns reads a table's columns from PostgreSQL's catalog.
func (s *Source) columns(ctx context.Context, schema, table string) ([]column, error) {
	pool := s.Pool
	const q = `SELECT a.attname, t.typname, pg_catalog.has_table_privilege(c.oid, 'SELECT'), c.relkind = 'p' FROM pg_catalog.pg_attribute a
	JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
	JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
	WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'm') AND NOT row_security_active(c.oid)
	AND a.attnum > 0 AND NOT a.attisdropped
	ORDER BY a.attnum`
	s.observe(q)
	rows, err := pool.Query(ctx, q, schema, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []column
	for rows.Next() {
		var name, typ string
		var readable, partitioned bool
		if err := rows.Scan(&name, &typ, &readable, &partitioned); err != nil {
			return nil, err
		}
		cols = append(cols, column{name: name, typname: typ, kind: kindOf(typ), compared: comparisonOf(typ), readable: readable, partitioned: partitioned})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		// Also when the name now belongs to a view or a foreign table, or
		// row-level security now applies to it: Mirror would not have
		// mirrored it (reading it runs code that can fail on a row).
		return nil, fmt.Errorf("PostgreSQL has no table %s.%s that dpsql may read (a plain, partitioned or materialized one, with columns, without row-level security for this role)", Quote(schema), Quote(table))
	}
	return cols, nil
}

// module is the virtual-table module of one engine's Source.
type module struct{ src *Source }

func (m module) Create(ctx vtab.Context, args []string) (vtab.Table, error) {
	return m.connect(ctx, args)
}

func (m module) Connect(ctx vtab.Context, args []string) (vtab.Table, error) {
	return m.connect(ctx, args)
}

// connect declares the mirrored table to SQLite with PostgreSQL's current
// columns. args: module, database, table, then the three arguments.
func (m module) connect(vctx vtab.Context, args []string) (vtab.Table, error) {
	if len(args) != 6 {
		return nil, fmt.Errorf("%s takes three arguments (source, schema, table), got %d", Module, len(args)-3)
	}
	var vals [3]string
	for i := range vals {
		v, err := unliteral(args[3+i])
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	if m.src.Pool == nil || vals[0] != m.src.ID {
		return nil, fmt.Errorf("table %s: %w (open it with --db postgres://...)", args[2], ErrNoSource)
	}
	cols, err := m.src.columns(context.Background(), vals[1], vals[2])
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", args[2], err)
	}
	// The hidden columns come first, so that SQLite's colUsed has a bit
	// of their own for them (its bit 63 stands for every column from the
	// 64th on). A statement that reads the weight (catalog.WeightColumn)
	// gets the distinct rows of the columns it uses, each with its
	// multiplicity; one that reads the identity (catalog.IdentityColumn)
	// gets each row's physical identity (selectSQL).
	defs := []string{Quote(weightColumn) + " INTEGER HIDDEN", Quote(identityColumn) + " INTEGER HIDDEN"}
	for _, c := range cols {
		defs = append(defs, Quote(c.name)+" "+c.kind.affinity())
	}
	if err := vctx.Declare("CREATE TABLE x (" + strings.Join(defs, ", ") + ")"); err != nil {
		return nil, err
	}
	return &table{src: m.src, schema: vals[1], name: vals[2], cols: cols}, nil
}

// table is one mirrored PostgreSQL table, as one SQLite connection
// declared it. It keeps the source id, not a pool: the pool that was
// newest when the connection declared the table may have been withdrawn
// since (Register).
type table struct {
	src          *Source
	schema, name string
	cols         []column
}

// weightColumn and identityColumn are catalog.WeightColumn and
// catalog.IdentityColumn (this package sits below the catalog and does
// not import it; a test checks they agree). In the declared table they
// are columns 0 and 1; table column i is column i+hidden.
const (
	weightColumn   = "_dpsql_weight"
	identityColumn = "_dpsql_rowid"
	hidden         = 2
)

// BestIndex pushes down the columns the statement uses (passed to Filter
// in IdxStr: "w" for the weight, "r" for the identity, and the indexes
// of the table's columns) and no constraint: SQLite evaluates every
// expression and predicate itself, with its own (total) semantics.
func (t *table) BestIndex(info *vtab.IndexInfo) error {
	var used []string
	for j := 0; j < len(t.cols)+hidden; j++ {
		bit := min(j, 63) // SQLite's bit 63 stands for every column from the 64th on
		if info.ColUsed&(1<<uint(bit)) == 0 {
			continue
		}
		switch j {
		case 0:
			used = append(used, "w")
		case 1:
			used = append(used, "r")
		default:
			used = append(used, strconv.Itoa(j-hidden))
		}
	}
	info.IdxStr = strings.Join(used, ",")
	info.EstimatedRows = 1e6
	// Comparisons of an integer, float or text column with a value
	// (filter pushdown): the cursor sends those whose value PostgreSQL compares
	// exactly as SQLite does (param) as parameters of the scan's WHERE,
	// so PostgreSQL sends only rows that can match.
	// SQLite still checks every row it receives (Omit stays false), so
	// a comparison not sent, or a later scan sent without them, only
	// costs time.
	var filters []string
	equalities := 0
	for i := range info.Constraints {
		c := &info.Constraints[i]
		op, ok := pushedOps[c.Op]
		if !c.Usable || !ok || c.Column < hidden || c.Column-hidden >= len(t.cols) || t.cols[c.Column-hidden].compared == noCompare {
			continue
		}
		c.ArgIndex = len(filters)
		filters = append(filters, strconv.Itoa(c.Column-hidden)+op)
		if op == "=" {
			equalities++
		}
	}
	if len(filters) > 0 {
		info.IdxStr += "|" + strings.Join(filters, ",")
	}
	// The cost never drops with comparisons, and grows with each
	// equality. So SQLite never chooses a plan that merges several
	// filtered scans by rowid (its OR optimization: two scans cost more
	// than one) — the cursor's rowids are row counters, not identities
	// across scans, so a merge would drop rows (and Rowid refuses it,
	// below). And where an equality comes from an IN list, SQLite, which
	// would call Filter once per value (the cursor would then read the
	// table again and again), finds its plan without the IN cheaper; an
	// equality of its own is still the only plan offered, and sent.
	info.EstimatedCost = 1e9 * float64(1+equalities)
	return nil
}

// param is the parameter PostgreSQL compares with a column of kind cmp
// exactly as SQLite compares that column with v, if there is one: an
// integer with an integer column; a float, or an integer a float64
// holds exactly (|v| ≤ 2⁵³), with a float column; text PostgreSQL can
// hold (valid UTF-8 without NUL) with a text column. A float compared
// with an integer column, numbers with text, blobs and NULL are left to
// SQLite.
func param(cmp comparison, v vtab.Value) (any, bool) {
	switch cmp {
	case textCompare:
		x, ok := v.(string)
		return x, ok && utf8.ValidString(x) && !strings.ContainsRune(x, 0)
	case intCompare:
		x, ok := v.(int64)
		return x, ok
	case realCompare:
		switch x := v.(type) {
		case float64:
			return x, !math.IsNaN(x)
		case int64:
			if x >= -1<<53 && x <= 1<<53 {
				return float64(x), true
			}
		}
	}
	return nil, false
}

// comparedAs is how a pushed comparison types its two sides: always in a
// type that holds every value of both, so that no value of the column
// or the parameter can make the statement fail. Left alone, PostgreSQL
// gives a parameter its column's type: an int64 that does not fit an
// int4 column then fails to encode (a scan that fails or not with the
// value SQLite hands over — on a join's inner side, a private row's), and
// a float64 compared with a float4 column is rounded to float4 (rows
// that pass SQLite's comparison are dropped). int2/int4 compare with an
// int8, and float4 with a float8, through PostgreSQL's cross-type
// operators (exact widening, and still the column's btree index).
var comparedAs = map[comparison]struct{ column, param string }{
	intCompare:  {"", "::int8"},
	realCompare: {"", "::float8"},
	textCompare: {`::text COLLATE "C"`, "::text"},
}

// pushedOps are the comparisons a scan can send PostgreSQL.
var pushedOps = map[vtab.ConstraintOp]string{vtab.OpEQ: "=", vtab.OpLT: "<", vtab.OpLE: "<=", vtab.OpGT: ">", vtab.OpGE: ">="}

// where prints the scan's WHERE clause from the filters of idxStr
// ("column op", as BestIndex wrote them) and their values: only those
// whose value param accepts, each a parameter ($1, ...); nothing of the
// analyst's text. A filter left out only lets more rows through, which
// SQLite then checks.
func (t *table) where(filters []string, vals []vtab.Value) (string, []any) {
	var conds []string
	var args []any
	for i, f := range filters {
		if i >= len(vals) {
			break
		}
		n := strings.IndexAny(f, "=<>")
		if n < 0 {
			continue
		}
		c, err := strconv.Atoi(f[:n])
		op := f[n:]
		if err != nil || c < 0 || c >= len(t.cols) || !slices.Contains(slices.Collect(maps.Values(pushedOps)), op) {
			continue
		}
		v, ok := param(t.cols[c].compared, vals[i])
		if !ok {
			continue
		}
		args = append(args, v)
		conds = append(conds, Quote(t.cols[c].name)+comparedAs[t.cols[c].compared].column+" "+op+" $"+strconv.Itoa(len(args))+comparedAs[t.cols[c].compared].param)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

func (t *table) Disconnect() error { return nil }

// Destroy runs on DROP TABLE of the mirror: the PostgreSQL table stays.
func (t *table) Destroy() error { return nil }

// selectSQL prints the one statement a scan sends: the used columns, each
// read as itself or through its text output, which no value can make fail
// (no arithmetic, no cast that can overflow: numeric is parsed in Go),
// and, when identified, the row's identity (its table's oid and ctid).
//
// With weighted, the statement groups the rows by those columns and
// counts them: PostgreSQL aggregates (in parallel) and SQLite receives one
// row per distinct tuple. Grouping must not merge values SQLite tells
// apart, so floats are read and grouped as their bits (float8send: 0 and
// −0 stay two rows), text-like values as their text in the "C" collation
// (byte equality, whatever the column's collation), and COUNT(*) is a
// bigint that cannot overflow.
//
// where (from table.where) restricts the rows to those that can pass the
// statement's comparisons of integer and float columns with values.
func (t *table) selectSQL(used []int, weighted, identified bool, where string) string {
	exprs := make([]string, len(used))
	for i, c := range used {
		col := t.cols[c]
		exprs[i] = Quote(col.name)
		switch {
		case weighted && col.kind == kindReal:
			exprs[i] = "float8send(" + exprs[i] + "::float8)"
		case weighted && (col.kind == kindNumeric || col.kind == kindText):
			exprs[i] += "::text COLLATE \"C\""
		case col.kind == kindNumeric || col.kind == kindText:
			exprs[i] += "::text"
		}
	}
	from := " FROM " + Quote(t.schema) + "." + Quote(t.name) + where
	if !weighted {
		if identified {
			// The row's physical identity (rowidOf), the same in every
			// scan of one snapshot.
			exprs = append(exprs, "tableoid::int8", "ctid")
		}
		if len(exprs) == 0 {
			return "SELECT" + from // rows without columns: a count of them
		}
		return "SELECT " + strings.Join(exprs, ", ") + from
	}
	if len(used) == 0 {
		return "SELECT COUNT(*)" + from + " HAVING COUNT(*) > 0"
	}
	groups := make([]string, len(used))
	for i := range used {
		groups[i] = strconv.Itoa(i + 1)
	}
	return "SELECT " + strings.Join(exprs, ", ") + ", COUNT(*)" + from + " GROUP BY " + strings.Join(groups, ", ")
}

// querier is what groupingPays needs of a connection or transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// groupingPays decides, from PostgreSQL's planner statistics, whether
// grouping identical rows will send markedly fewer rows than the table
// has: the product of the used columns' estimated distinct counts is at
// most a quarter of the estimated rows. Without statistics (a table never
// analysed) it groups. Either choice measures exactly the same values;
// only the time differs.
func (t *table) groupingPays(ctx context.Context, q querier, used []int) bool {
	switch t.src.Knobs.Grouping() {
	case knobs.GroupAlways:
		return true
	case knobs.GroupNever:
		return false
	}
	names := make([]string, len(used))
	for i, c := range used {
		names[i] = t.cols[c].name
	}
	const stats = `SELECT c.reltuples::float8, COALESCE(array_agg(s.n_distinct::float8) FILTER (WHERE s.attname IS NOT NULL), '{}')
	FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	LEFT JOIN pg_catalog.pg_stats s ON s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = ANY($3)
	WHERE n.nspname = $1 AND c.relname = $2 GROUP BY c.reltuples`
	t.src.observe(stats)
	var rows float64
	var distinct []float64
	if err := q.QueryRow(ctx, stats, t.schema, t.name, names).Scan(&rows, &distinct); err != nil || rows <= 0 || len(distinct) < len(names) {
		return true
	}
	tuples := 1.0
	for _, d := range distinct {
		if d < 0 { // a fraction of the rows
			d = -d * rows
		}
		tuples *= math.Max(d, 1)
	}
	return tuples <= rows/4
}

// sqliteValue converts what pgx decoded to a SQLite value; it is total.
func sqliteValue(k kind, v any) vtab.Value {
	switch x := v.(type) {
	case nil:
		return nil
	case int16, int32, int64, uint32, bool, float32, float64:
		return measuresql.Normalize(x) // int64, float64 (NaN as NULL), booleans as 0/1
	case []byte:
		return append([]byte(nil), x...)
	case string:
		if k == kindNumeric {
			f, err := strconv.ParseFloat(x, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return nil // NaN is the only other numeric text
			}
			return finiteOrNull(f)
		}
		return x
	}
	return fmt.Sprint(v) // not reached: other types are read as text
}

// finiteOrNull maps NaN to NULL, as SQLite itself stores it.
func finiteOrNull(f float64) vtab.Value {
	if math.IsNaN(f) {
		return nil
	}
	return f
}

// floatFromBits decodes float8send's big-endian bits (NaN is NULL).
func floatFromBits(b []byte) vtab.Value {
	return finiteOrNull(math.Float64frombits(binary.BigEndian.Uint64(b)))
}

// Where names PostgreSQL in messages (backend.Mirrored).
func (s *Source) Where() string { return "PostgreSQL" }

// Unmirrored says what keeps a PostgreSQL table from being mirrored.
func (s *Source) Unmirrored() string {
	return "the name is reserved or taken in the state file, the table is under row-level security, or it is in the schema dpsql, which holds the budget"
}

// PolicyStore is the schema dpsql's database, through the pool
// (backend.PolicyKeeper): the policies and the budget live there.
func (s *Source) PolicyStore() (*sql.DB, bool) {
	s.ledger.Do(func() { s.ledger.db = stdlib.OpenDBFromPool(s.Pool) })
	return s.ledger.db, true
}

// Close closes the pool (and its database/sql handle); the engine's
// SQLite connections, which read through it, are closed first.
func (s *Source) Close() error {
	if s == nil || s.Pool == nil {
		return nil
	}
	s.ledger.Do(func() {}) // none opened from now on
	if s.ledger.db != nil {
		s.ledger.db.Close()
	}
	s.Pool.Close()
	return nil
}

// Import loads a CSV file into a new PostgreSQL table
// (backend.Importer): csvimport reads, checks and types it into a
// scratch SQLite file (so a malformed file fails exactly as it does on
// SQLite, before PostgreSQL is touched), then COPY moves the rows in one
// PostgreSQL transaction.
func (s *Source) Import(ctx context.Context, table, path string, opts csvimport.Options) (int64, []csvimport.Column, error) {
	scratch, n, cols, err := csvimport.ImportScratch(ctx, table, path, opts)
	if err != nil {
		return 0, nil, err
	}
	defer scratch.Close()
	names, types := csvimport.NamesAndTypes(cols)
	if _, err := CopyTable(ctx, s, scratch.DB, table, names, types); err != nil {
		return 0, nil, err
	}
	return n, cols, nil
}
