// Package catalog keeps the schema and the privacy policy of a dpsql
// database: which tables are public, the declared clipping bounds of
// columns, and the public domains of group-key columns. The policies live
// in _dpsql_* tables of the same SQLite file as the data — or, for tables
// in PostgreSQL, in its schema dpsql (tables, bounds, domains), shared by
// every dpsql process over that database (storesql translates the
// statements). The schema (tables and columns) is always read from SQLite.
//
// Where it sits: the planner reads a Catalog snapshot to resolve names and
// decide what may be released; owner statements change the policy through
// the functions here. The catalog never reads private data values.
package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/dpsql/dpsql/dperr"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/internal/storesql"
	"github.com/dpsql/dpsql/parser"
)

// Sentinel errors, checkable with errors.Is.
var (
	// ErrUnknownTable: the table does not exist (or is internal).
	ErrUnknownTable = dperr.UnknownTable
	// ErrUnknownColumn: the column does not exist in the table.
	ErrUnknownColumn = dperr.UnknownColumn
	// ErrNoPolicy: an ALTER/DROP names a table without a privacy policy.
	ErrNoPolicy = dperr.NoPolicy
	// ErrInvalidPolicy: a policy statement has a bad value.
	ErrInvalidPolicy = dperr.InvalidPolicy
)

// InternalPrefix starts the names of dpsql's own tables; analysts cannot
// see or query them, and imports cannot create them.
const InternalPrefix = "_dpsql_"

// IsInternalName reports whether a table name is reserved for dpsql or
// SQLite itself.
func IsInternalName(name string) bool {
	l := FoldName(name)
	return strings.HasPrefix(l, InternalPrefix) || strings.HasPrefix(l, "sqlite_")
}

// FoldName folds an identifier as SQLite does (parser.FoldName: ASCII
// letters only).
func FoldName(name string) string { return parser.FoldName(name) }

// SameName reports whether SQLite takes a and b for the same identifier.
func SameName(a, b string) bool { return len(a) == len(b) && FoldName(a) == FoldName(b) }

const schema = `
CREATE TABLE IF NOT EXISTS _dpsql_tables (
	table_name TEXT PRIMARY KEY COLLATE NOCASE,
	public     INTEGER NOT NULL DEFAULT 0,
	has_policy INTEGER NOT NULL DEFAULT 0,
	unit_column TEXT,
	max_groups INTEGER NOT NULL DEFAULT 1,
	max_rows   INTEGER NOT NULL DEFAULT 1,
	bounds_warnings TEXT
);
CREATE TABLE IF NOT EXISTS _dpsql_bounds (
	table_name  TEXT NOT NULL COLLATE NOCASE,
	column_name TEXT NOT NULL COLLATE NOCASE,
	lo REAL NOT NULL,
	hi REAL NOT NULL,
	PRIMARY KEY (table_name, column_name)
);
CREATE TABLE IF NOT EXISTS _dpsql_domains (
	table_name  TEXT NOT NULL COLLATE NOCASE,
	column_name TEXT NOT NULL COLLATE NOCASE,
	position    INTEGER NOT NULL,
	value       ANY NOT NULL,
	PRIMARY KEY (table_name, column_name, position)
);
`

// Init creates the catalog tables when they are missing, and adds the
// privacy-unit columns to a _dpsql_tables made by an earlier version.
func Init(ctx context.Context, db *sql.DB) error {
	// An up-to-date catalog is only read: opening a database must not wait
	// for another process's write lock (an owner's import).
	var current int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('_dpsql_tables', '_dpsql_bounds', '_dpsql_domains'))
		+ (SELECT COUNT(*) FROM pragma_table_info('_dpsql_tables') WHERE name IN ('unit_column', 'max_groups', 'max_rows', 'bounds_warnings'))`).Scan(&current); err != nil {
		return err
	}
	if current == 7 {
		return nil
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return err
	}
	cols, err := queryStrings(ctx, db, `SELECT name FROM pragma_table_info('_dpsql_tables')`)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, c := range cols {
		have[c] = true
	}
	for _, add := range []struct{ name, def string }{
		{"unit_column", "TEXT"},
		{"max_groups", "INTEGER NOT NULL DEFAULT 1"},
		{"max_rows", "INTEGER NOT NULL DEFAULT 1"},
		{"bounds_warnings", "TEXT"},
	} {
		if !have[add.name] {
			if _, err := db.ExecContext(ctx, "ALTER TABLE _dpsql_tables ADD COLUMN "+add.name+" "+add.def); err != nil {
				return err
			}
		}
	}
	return nil
}

// Column is one column of a table, with the type SQLite declared for it.
type Column struct {
	Name string
	Type string // INTEGER, REAL, TEXT or what the table declared
}

// Bounds are declared clipping bounds [Lo, Hi] of a numeric column.
type Bounds struct {
	Lo, Hi float64
}

// Table is one user table with its policy.
type Table struct {
	Name      string
	Columns   []Column
	Public    bool
	HasPolicy bool // CREATE PRIVACY POLICY was run
	// Unit is the privacy unit: its column ("" when each row is a unit)
	// and the contribution bounds of one unit.
	Unit    Unit
	Bounds  map[string]Bounds // by canonical column name
	Domains map[string][]any  // by canonical column name; values int64, float64 or string
	// Unreadable is set when the table's columns cannot be read (a
	// mirrored table whose PostgreSQL table is gone or unreachable);
	// statements that use the table are refused with it, the others run.
	Unreadable error
	// Identified: the table is a virtual table with the hidden column
	// IdentityColumn, each row's stable identity (for a joined table
	// without a unit column, the unit), instead of SQLite's rowid.
	Identified bool
	// Weighted: the table is a virtual table with the hidden column
	// WeightColumn. Reading that column makes each row of the table stand
	// for as many identical rows as it says (a source that pre-aggregates
	// identical rows, such as backend/postgres); the column is not among
	// Columns, so no statement of an analyst can name it.
	Weighted bool
}

// WeightColumn is the hidden column of a Weighted table.
const WeightColumn = "_dpsql_weight"

// IdentityColumn is the hidden column of an Identified table.
const IdentityColumn = "_dpsql_rowid"

// Column returns the column with the given name, matched as SQLite matches
// names (ASCII case-insensitively).
func (t *Table) Column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if SameName(c.Name, name) {
			return c, true
		}
	}
	return Column{}, false
}

// Unit describes the privacy unit of a table and how much one unit may
// contribute to a query.
type Unit struct {
	Column    string // "" when each row is its own unit
	MaxGroups int64  // l0: groups one unit may contribute to
	MaxRows   int64  // l∞: rows one unit may contribute per group
	// BoundsWarnings is what becomes of an answer whose privately chosen
	// bounds carry a warning (collapsed, or clipping a share the answer
	// estimates at 5% or more): BoundsWarningsNote ("", the default) keeps
	// the answer with the warning in its notes, BoundsWarningsError
	// refuses it after the charge (policy option bounds_warnings).
	BoundsWarnings string
}

// AutoBound as a Unit's MaxGroups or MaxRows leaves that bound to dpsql:
// chosen privately for each query from the units' distribution of groups
// and rows (package contrib; policy option max_groups_contributed = AUTO).
const AutoBound int64 = -1

// BoundText prints a contribution bound as a policy gives it: the number,
// or AUTO.
func BoundText(n int64) string {
	if n == AutoBound {
		return "AUTO"
	}
	return strconv.FormatInt(n, 10)
}

// The values of Unit.BoundsWarnings.
const (
	BoundsWarningsNote  = ""
	BoundsWarningsError = "error"
)

// Catalog is a snapshot of all user tables and their policies.
type Catalog struct {
	tables []*Table
}

// Tables returns the user tables sorted by name.
func (c *Catalog) Tables() []*Table { return c.tables }

// Table finds a user table by name, case-insensitively.
func (c *Catalog) Table(name string) (*Table, bool) {
	for _, t := range c.tables {
		if SameName(t.Name, name) {
			return t, true
		}
	}
	return nil, false
}

// Querier is what Load needs: *sql.DB, *sql.Conn and *sql.Tx all have it.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Load reads the schema from the SQLite database q and the policies from
// where they are kept.
func Load(ctx context.Context, q Querier, policies storesql.On) (*Catalog, error) {
	cat, byName, err := loadTables(ctx, q)
	if err != nil {
		return nil, err
	}
	return cat, loadPolicies(ctx, policies, byName)
}

// Schema is the user tables and their columns as the SQLite file has
// them at one schema version: what only a change of schema changes
// (SQLite counts every one, in any process, in PRAGMA schema_version).
// A Schema is never modified; LoadOn adds the policies to copies.
type Schema struct {
	// Version is the schema_version read before the tables.
	Version int64
	tables  []*Table
}

// SchemaVersion reads the file's schema version.
func SchemaVersion(ctx context.Context, q Querier) (int64, error) {
	rows, err := q.QueryContext(ctx, `PRAGMA schema_version`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var v int64
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("catalog: no schema version")
	}
	if err := rows.Scan(&v); err != nil {
		return 0, err
	}
	return v, rows.Close()
}

// LoadSchema reads the schema and its version (read first: a change
// between the two reads makes the next version differ, so the schema is
// read again). ok is false when some table's columns could not be read
// (Unreadable): such a schema is not worth keeping.
func LoadSchema(ctx context.Context, q Querier) (s *Schema, ok bool, err error) {
	v, err := SchemaVersion(ctx, q)
	if err != nil {
		return nil, false, err
	}
	cat, _, err := loadTables(ctx, q)
	if err != nil {
		return nil, false, err
	}
	ok = true
	for _, t := range cat.tables {
		ok = ok && t.Unreadable == nil
	}
	return &Schema{Version: v, tables: cat.tables}, ok, nil
}

// LoadOn is Load over a schema read before: the tables are copied, and
// the policies read from where they are kept.
func LoadOn(ctx context.Context, s *Schema, policies storesql.On) (*Catalog, error) {
	cat := &Catalog{}
	byName := map[string]*Table{}
	for _, t := range s.tables {
		c := newTable(t.Name)
		c.Columns, c.Unreadable, c.Identified, c.Weighted = append([]Column(nil), t.Columns...), t.Unreadable, t.Identified, t.Weighted
		cat.tables = append(cat.tables, c)
		byName[FoldName(c.Name)] = c
	}
	return cat, loadPolicies(ctx, policies, byName)
}

// loadPolicies adds the policies to the tables byName.
func loadPolicies(ctx context.Context, policies storesql.On, byName map[string]*Table) error {
	if err := loadUnits(ctx, policies, byName); err != nil {
		return err
	}
	if err := loadBounds(ctx, policies, byName); err != nil {
		return err
	}
	return loadDomains(ctx, policies, byName)
}

// newTable is a table as it stands before its columns and policy are
// read: no policy, each row its own unit.
func newTable(name string) *Table {
	return &Table{Name: name, Bounds: map[string]Bounds{}, Domains: map[string][]any{}, Unit: Unit{MaxGroups: 1, MaxRows: 1}}
}

// loadTables reads the user tables and their columns, by folded name.
func loadTables(ctx context.Context, q Querier) (*Catalog, map[string]*Table, error) {
	names, err := queryStrings(ctx, q, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		return nil, nil, err
	}
	cat := &Catalog{}
	byName := map[string]*Table{}
	for _, n := range names {
		if IsInternalName(n) {
			continue
		}
		t := newTable(n)
		cat.tables = append(cat.tables, t)
		byName[FoldName(n)] = t
	}
	// Every table's columns in one statement (a statement per table made
	// the catalog a good part of each query's cost); should one table's
	// columns be unreadable, which fails the whole statement, table by
	// table, so that only that one is marked.
	if err := loadAllColumns(ctx, q, byName); err == nil {
		return cat, byName, nil
	} else if ctx.Err() != nil {
		return nil, nil, err
	}
	for _, t := range cat.tables {
		t.Columns, t.Weighted, t.Identified = nil, false, false
		if err := loadColumns(ctx, q, t); err != nil {
			return nil, nil, err
		}
	}
	return cat, byName, nil
}

// loadAllColumns reads the columns of every table in byName at once.
func loadAllColumns(ctx context.Context, q Querier, byName map[string]*Table) error {
	rows, err := q.QueryContext(ctx, `SELECT m.name, c.name, c.type, c.hidden FROM sqlite_master AS m, pragma_table_xinfo(m.name) AS c
		WHERE m.type = 'table' ORDER BY m.name, c.cid`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var table string
		var c Column
		var hidden int
		if err := rows.Scan(&table, &c.Name, &c.Type, &hidden); err != nil {
			return err
		}
		t := byName[FoldName(table)]
		if t == nil || t.Name != table {
			continue // an internal table
		}
		addColumn(t, c, hidden)
	}
	return rows.Err()
}

// addColumn adds a column pragma_table_xinfo listed (hidden: its column).
func addColumn(t *Table, c Column, hidden int) {
	switch {
	case hidden == 0:
		t.Columns = append(t.Columns, c)
	case hidden == 1 && c.Name == WeightColumn:
		t.Weighted = true
	case hidden == 1 && c.Name == IdentityColumn:
		t.Identified = true
	}
}

// loadColumns reads a table's columns; a table whose columns cannot be
// read (a mirror whose database is unreachable) is marked Unreadable.
func loadColumns(ctx context.Context, q Querier, t *Table) error {
	// table_xinfo lists hidden columns too (hidden = 1, only in
	// virtual tables; 2 and 3 are generated columns, which
	// table_info leaves out as well).
	rows, err := q.QueryContext(ctx, `SELECT name, type, hidden FROM pragma_table_xinfo(?) ORDER BY cid`, t.Name)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		t.Unreadable = err
		return nil
	}
	defer rows.Close()
	for rows.Next() {
		var c Column
		var hidden int
		if err := rows.Scan(&c.Name, &c.Type, &hidden); err != nil {
			return err
		}
		addColumn(t, c, hidden)
	}
	return rows.Err()
}

// loadUnits reads each table's privacy (public, policy, unit).
func loadUnits(ctx context.Context, policies storesql.On, byName map[string]*Table) error {
	rows, err := policies.QueryContext(ctx, `SELECT table_name, public, has_policy, COALESCE(unit_column, ''), max_groups, max_rows, COALESCE(bounds_warnings, '') FROM _dpsql_tables`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var public, has bool
		var u Unit
		if err := rows.Scan(&name, &public, &has, &u.Column, &u.MaxGroups, &u.MaxRows, &u.BoundsWarnings); err != nil {
			return err
		}
		if t := byName[FoldName(name)]; t != nil {
			t.Public, t.HasPolicy = public, has
			if c, ok := t.Column(u.Column); ok {
				u.Column = c.Name
			} else {
				u.Column = ""
			}
			t.Unit = u
		}
	}
	return rows.Err()
}

// loadBounds reads the declared bounds.
func loadBounds(ctx context.Context, policies storesql.On, byName map[string]*Table) error {
	rows, err := policies.QueryContext(ctx, `SELECT table_name, column_name, lo, hi FROM _dpsql_bounds`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tn, cn string
		var b Bounds
		if err := rows.Scan(&tn, &cn, &b.Lo, &b.Hi); err != nil {
			return err
		}
		if t := byName[FoldName(tn)]; t != nil {
			if c, ok := t.Column(cn); ok {
				t.Bounds[c.Name] = b
			}
		}
	}
	return rows.Err()
}

// loadDomains reads the public domains, each value with its type.
func loadDomains(ctx context.Context, policies storesql.On, byName map[string]*Table) error {
	domains := `SELECT table_name, column_name, value FROM _dpsql_domains ORDER BY table_name, column_name, position`
	if policies.Postgres {
		domains = `SELECT table_name, column_name, kind, value FROM _dpsql_domains ORDER BY table_name, column_name, position`
	}
	rows, err := policies.QueryContext(ctx, domains)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var tn, cn string
		var v any
		if policies.Postgres {
			var kind, text string
			if err := rows.Scan(&tn, &cn, &kind, &text); err != nil {
				return err
			}
			if v, err = parseDomainValue(kind, text); err != nil {
				return err
			}
		} else if err := rows.Scan(&tn, &cn, &v); err != nil {
			return err
		}
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		if t := byName[FoldName(tn)]; t != nil {
			if c, ok := t.Column(cn); ok {
				t.Domains[c.Name] = append(t.Domains[c.Name], v)
			}
		}
	}
	return rows.Err()
}

func queryStrings(ctx context.Context, q Querier, query string, args ...any) ([]string, error) {
	return storesql.Collect(ctx, q, query, args, func(rows *sql.Rows) (s string, err error) {
		err = rows.Scan(&s)
		return s, err
	})
}

// CreatePolicy marks table as private with an explicit policy: its
// privacy unit (u.Column, "" for one unit per row) and the unit's
// contribution bounds.
func (c *Catalog) CreatePolicy(ctx context.Context, db storesql.On, table string, u Unit) error {
	t, ok := c.Table(table)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownTable, table)
	}
	var unitCol any
	if u.Column != "" {
		col, ok := t.Column(u.Column)
		if !ok {
			return fmt.Errorf("%w %q in table %q (privacy_unit_column)", ErrUnknownColumn, u.Column, t.Name)
		}
		unitCol = col.Name
	}
	if (u.MaxGroups < 1 && u.MaxGroups != AutoBound) || (u.MaxRows < 1 && u.MaxRows != AutoBound) {
		return fmt.Errorf("%w: max_groups_contributed and max_rows_contributed must be at least 1, or AUTO", ErrInvalidPolicy)
	}
	if u.BoundsWarnings != BoundsWarningsNote && u.BoundsWarnings != BoundsWarningsError {
		return fmt.Errorf("%w: bounds_warnings is 'note' or 'error'", ErrInvalidPolicy)
	}
	var warnings any
	if u.BoundsWarnings != BoundsWarningsNote {
		warnings = u.BoundsWarnings
	}
	_, err := db.ExecContext(ctx, `INSERT INTO _dpsql_tables (table_name, public, has_policy, unit_column, max_groups, max_rows, bounds_warnings) VALUES (?, 0, 1, ?, ?, ?, ?)
		ON CONFLICT (table_name) DO UPDATE SET public = 0, has_policy = 1, unit_column = excluded.unit_column,
		max_groups = excluded.max_groups, max_rows = excluded.max_rows, bounds_warnings = excluded.bounds_warnings`, t.Name, unitCol, u.MaxGroups, u.MaxRows, warnings)
	return err
}

// DropPolicy removes the table's policy, bounds and domains; the table stays
// private.
func (c *Catalog) DropPolicy(ctx context.Context, db storesql.On, table string) error {
	t, err := c.policyTable(table)
	if err != nil {
		return err
	}
	return deletePolicy(ctx, db, t.Name)
}

// deletePolicy removes what the catalog keeps about a table: its policy,
// bounds and domains.
func deletePolicy(ctx context.Context, db storesql.On, table string) error {
	for _, q := range []string{
		`DELETE FROM _dpsql_bounds WHERE table_name = ?`,
		`DELETE FROM _dpsql_domains WHERE table_name = ?`,
		`DELETE FROM _dpsql_tables WHERE table_name = ?`,
	} {
		if _, err := db.ExecContext(ctx, q, table); err != nil {
			return err
		}
	}
	return nil
}

// DropTable removes a table of the file and everything the catalog keeps
// about it (its policy, bounds and domains).
func (c *Catalog) DropTable(ctx context.Context, db storesql.On, table string) error {
	t, ok := c.Table(table)
	if !ok || IsInternalName(table) {
		return fmt.Errorf("%w %q", ErrUnknownTable, table)
	}
	if err := deletePolicy(ctx, db, t.Name); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `DROP TABLE `+parser.QuoteIdent(t.Name))
	return err
}

func (c *Catalog) policyTable(table string) (*Table, error) {
	t, ok := c.Table(table)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownTable, table)
	}
	if !t.HasPolicy {
		return nil, fmt.Errorf("%w on table %q: run CREATE PRIVACY POLICY ON %s first", ErrNoPolicy, t.Name, t.Name)
	}
	return t, nil
}

// policyColumn resolves a column of a table that has a policy.
func (c *Catalog) policyColumn(table, column string) (*Table, Column, error) {
	t, err := c.policyTable(table)
	if err != nil {
		return nil, Column{}, err
	}
	col, ok := t.Column(column)
	if !ok {
		return nil, Column{}, fmt.Errorf("%w %q in table %q", ErrUnknownColumn, column, t.Name)
	}
	return t, col, nil
}

// SetBounds declares clipping bounds for a numeric column.
func (c *Catalog) SetBounds(ctx context.Context, db storesql.On, table, column string, b Bounds) error {
	t, col, err := c.policyColumn(table, column)
	if err != nil {
		return err
	}
	if math.IsNaN(b.Lo) || math.IsNaN(b.Hi) || math.IsInf(b.Lo, 0) || math.IsInf(b.Hi, 0) || b.Lo >= b.Hi {
		return fmt.Errorf("%w: bounds must be finite numbers with lo < hi, got (%v, %v)", ErrInvalidPolicy, b.Lo, b.Hi)
	}
	// What every aggregate over the bounds needs (the planner checks the
	// same): a span whose square is a finite double. Wider bounds would be
	// accepted here and then fail every SUM, AVG and VAR of analysts.
	if span := b.Hi - b.Lo; math.IsInf(span, 0) || math.IsInf(span*span, 0) {
		return fmt.Errorf("%w: bounds (%g, %g) are too wide: no SUM, AVG or VAR over them could be noised (hi − lo must stay below about 1e154; bounds near the data's range give far less noise)", ErrInvalidPolicy, b.Lo, b.Hi)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO _dpsql_bounds (table_name, column_name, lo, hi) VALUES (?, ?, ?, ?)
		ON CONFLICT (table_name, column_name) DO UPDATE SET lo = excluded.lo, hi = excluded.hi`, t.Name, col.Name, b.Lo, b.Hi)
	return err
}

// Textual reports whether a declared type has SQLite's TEXT affinity, or
// is BLOB (SQLite's rules: a type naming INT is an integer first; one
// naming CHAR, CLOB or TEXT is text): its values are read as numbers by
// CAST(x AS REAL) when an aggregate clips them (a date's year, else
// mostly 0).
func Textual(declared string) bool {
	t := strings.ToUpper(declared)
	if strings.Contains(t, "INT") {
		return false
	}
	return strings.Contains(t, "CHAR") || strings.Contains(t, "CLOB") || strings.Contains(t, "TEXT") || t == "BLOB"
}

// SetDomain declares the public domain of a group-key column; the values
// must be distinct, non-NULL constants (int64, float64 or string).
func (c *Catalog) SetDomain(ctx context.Context, db storesql.On, table, column string, values []any) error {
	t, col, err := c.policyColumn(table, column)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, v := range values {
		switch v.(type) {
		case int64, float64, string:
		default:
			return fmt.Errorf("%w: domain values must be numbers or strings, got %v", ErrInvalidPolicy, v)
		}
		k := fmt.Sprintf("%T:%v", v, v)
		if seen[k] {
			return fmt.Errorf("%w: domain value %v is listed twice", ErrInvalidPolicy, v)
		}
		seen[k] = true
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM _dpsql_domains WHERE table_name = ? AND column_name = ?`, t.Name, col.Name); err != nil {
		return err
	}
	for i, v := range values {
		insert, args := `INSERT INTO _dpsql_domains (table_name, column_name, position, value) VALUES (?, ?, ?, ?)`, []any{t.Name, col.Name, i, v}
		if db.Postgres {
			kind, text := domainValueText(v)
			insert, args = `INSERT INTO _dpsql_domains (table_name, column_name, position, kind, value) VALUES (?, ?, ?, ?, ?)`, []any{t.Name, col.Name, i, kind, text}
		}
		if _, err := db.ExecContext(ctx, insert, args...); err != nil {
			return err
		}
	}
	return nil
}

// SetPublic marks a table public: it is queried without noise. Its policy,
// if any, is removed.
func (c *Catalog) SetPublic(ctx context.Context, db storesql.On, table string) error {
	t, ok := c.Table(table)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownTable, table)
	}
	for _, q := range []string{
		`DELETE FROM _dpsql_bounds WHERE table_name = ?`,
		`DELETE FROM _dpsql_domains WHERE table_name = ?`,
	} {
		if _, err := db.ExecContext(ctx, q, t.Name); err != nil {
			return err
		}
	}
	_, err := db.ExecContext(ctx, `INSERT INTO _dpsql_tables (table_name, public, has_policy) VALUES (?, 1, 0)
		ON CONFLICT (table_name) DO UPDATE SET public = 1, has_policy = 0, unit_column = NULL, max_groups = 1, max_rows = 1`, t.Name)
	return err
}

// SetPrivate makes a public table private again with the default policy
// (each row a unit); a private table stays as it is.
func (c *Catalog) SetPrivate(ctx context.Context, db storesql.On, table string) error {
	t, ok := c.Table(table)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownTable, table)
	}
	_, err := db.ExecContext(ctx, `UPDATE _dpsql_tables SET public = 0 WHERE table_name = ? AND public <> 0`, t.Name)
	return err
}

// SortedColumns returns the names of the map's keys in order (for stable output).
func SortedColumns[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// New builds a catalog from tables (for tests and tools that plan without a
// database).
func New(tables ...*Table) *Catalog {
	for _, t := range tables {
		if t.Bounds == nil {
			t.Bounds = map[string]Bounds{}
		}
		if t.Domains == nil {
			t.Domains = map[string][]any{}
		}
	}
	return &Catalog{tables: tables}
}
