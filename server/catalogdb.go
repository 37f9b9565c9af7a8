package server

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/sqlrows"
)

// The catalog queries GUI tools and drivers send (information_schema,
// pg_catalog) are answered by running them on an in-memory SQLite
// database that holds the catalog as PostgreSQL lays it out — only names
// and declared types, which are not private (docs/privacy.md) — after
// rewriting what SQLite does not read (:: casts, current_user). Queries
// that still use something SQLite lacks get 0A000 with SQLite's message.

// pgFunctions are the names of the PostgreSQL functions catalogDriver
// adds (filled once, with the driver; read only after).
var pgFunctions = map[string]bool{}

// catalogDriver is the SQLite driver of the catalog databases, with the
// PostgreSQL functions catalog queries call.
var catalogDriver = sync.OnceValue(func() *sqlite.Driver {
	drv := &sqlite.Driver{}
	constant := func(v driver.Value) func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error) {
		return func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error) { return v, nil }
	}
	fns := map[string]*sqlite.FunctionImpl{
		"format_type":            {NArgs: 2, Scalar: formatType},
		"pg_get_userbyid":        {NArgs: 1, Scalar: constant("owner")},
		"pg_table_is_visible":    {NArgs: 1, Scalar: constant(int64(1))},
		"pg_type_is_visible":     {NArgs: 1, Scalar: constant(int64(1))},
		"has_table_privilege":    {NArgs: -1, Scalar: constant(int64(1))},
		"has_schema_privilege":   {NArgs: -1, Scalar: constant(int64(1))},
		"has_database_privilege": {NArgs: -1, Scalar: constant(int64(1))},
		"obj_description":        {NArgs: -1, Scalar: constant(nil)},
		"col_description":        {NArgs: -1, Scalar: constant(nil)},
		"shobj_description":      {NArgs: -1, Scalar: constant(nil)},
		"pg_get_expr":            {NArgs: -1, Scalar: constant(nil)},
		"pg_encoding_to_char":    {NArgs: 1, Scalar: constant("UTF8")},
		"current_database":       {NArgs: 0, Scalar: constant("dpsql")},
		"current_schema":         {NArgs: 0, Scalar: constant("main")},
		"current_schemas":        {NArgs: 1, Scalar: constant("main")},
		"version":                {NArgs: 0, Scalar: constant("PostgreSQL " + ServerVersion + ": dpsql")},
		"regexp": {NArgs: 2, Scalar: func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			pattern, _ := a[0].(string)
			re, err := regexp.Compile(pattern)
			if err != nil || a[1] == nil {
				return nil, err
			}
			if re.MatchString(fmt.Sprint(a[1])) {
				return int64(1), nil
			}
			return int64(0), nil
		}},
		// replace, as SQLite's, with its result bounded (pgjdbc's
		// getSchemas calls it): without a bound, replace(x, '', y) style
		// growth could build gigabytes from a short query.
		"replace": {NArgs: 3, Scalar: boundedReplace},
		"quote_ident": {NArgs: 1, Scalar: func(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
			return `"` + strings.ReplaceAll(fmt.Sprint(a[0]), `"`, `""`) + `"`, nil
		}},
	}
	for name, impl := range fns {
		pgFunctions[name] = true
		if err := drv.RegisterFunction(name, impl); err != nil {
			panic(err)
		}
	}
	return drv
})

// maxCatalogValue bounds a value a catalog query's functions build.
const maxCatalogValue = 1 << 20

// boundedReplace is SQLite's replace(x, from, to) for text, refusing a
// result longer than maxCatalogValue.
func boundedReplace(_ *sqlite.FunctionContext, a []driver.Value) (driver.Value, error) {
	if a[0] == nil || a[1] == nil || a[2] == nil {
		return nil, nil
	}
	text := func(v driver.Value) string {
		if b, ok := v.([]byte); ok {
			return string(b)
		}
		return fmt.Sprint(v)
	}
	x, from, to := text(a[0]), text(a[1]), text(a[2])
	if from == "" {
		return x, nil
	}
	if n := strings.Count(x, from); len(x)+n*(len(to)-len(from)) > maxCatalogValue {
		return nil, fmt.Errorf("replace: the result would be longer than %d bytes", maxCatalogValue)
	}
	return strings.ReplaceAll(x, from, to), nil
}

// pgTypes are the PostgreSQL types the emulated catalog lists: oid, name,
// length, category.
var pgTypes = []struct {
	oid      int64
	name     string
	length   int64
	category string
}{
	{16, "bool", 1, "B"}, {17, "bytea", -1, "U"}, {18, "char", 1, "S"}, {19, "name", 64, "S"}, {20, "int8", 8, "N"},
	{21, "int2", 2, "N"}, {23, "int4", 4, "N"}, {25, "text", -1, "S"}, {26, "oid", 4, "N"}, {700, "float4", 4, "N"},
	{701, "float8", 8, "N"}, {1043, "varchar", -1, "S"}, {1082, "date", 4, "D"}, {1114, "timestamp", 8, "D"}, {1700, "numeric", -1, "N"},
}

// formatType is PostgreSQL's format_type(oid, typmod).
func formatType(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	oid, _ := args[0].(int64)
	switch oid {
	case 20:
		return "bigint", nil
	case 701:
		return "double precision", nil
	case 16:
		return "boolean", nil
	case 23:
		return "integer", nil
	case 1043:
		return "character varying", nil
	}
	for _, t := range pgTypes {
		if t.oid == oid {
			return t.name, nil
		}
	}
	return nil, nil
}

// typeOID is the pg_type oid of a declared column type.
func typeOID(declared string) int64 {
	switch dpsql.ColumnType(declared) {
	case dpsql.TypeInteger:
		return 20
	case dpsql.TypeReal:
		return 701
	}
	return 25
}

// typeName and typeLength are pg_type's typname and typlen of an oid.
func typeName(oid int64) string {
	for _, t := range pgTypes {
		if t.oid == oid {
			return t.name
		}
	}
	return ""
}

func typeLength(oid int64) int64 {
	for _, t := range pgTypes {
		if t.oid == oid {
			return t.length
		}
	}
	return -1
}

// Namespace oids of the emulated catalog.
const (
	oidPgCatalog  = 11
	oidMain       = 2200
	oidInfoSchema = 13000
)

// catalogSchema makes the emulated catalog's tables.
var catalogSchema = []string{
	`ATTACH ':memory:' AS pg_catalog`,
	`ATTACH ':memory:' AS information_schema`,
	`CREATE TABLE pg_catalog.pg_namespace (oid INTEGER, nspname TEXT, nspowner INTEGER, nspacl TEXT)`,
	`CREATE TABLE pg_catalog.pg_class (oid INTEGER, relname TEXT, relnamespace INTEGER, relkind TEXT, relowner INTEGER, reltuples REAL,
		relhasindex INTEGER, relpersistence TEXT, relispartition INTEGER, reltype INTEGER, relacl TEXT, relchecks INTEGER,
		relhasrules INTEGER, relhastriggers INTEGER, relrowsecurity INTEGER, relforcerowsecurity INTEGER, relam INTEGER, reloptions TEXT, relnatts INTEGER, reltablespace INTEGER)`,
	`CREATE TABLE pg_catalog.pg_attribute (attrelid INTEGER, attname TEXT, atttypid INTEGER, attnum INTEGER, attnotnull INTEGER,
		attisdropped INTEGER, atttypmod INTEGER, attlen INTEGER, atthasdef INTEGER, attidentity TEXT, attgenerated TEXT, attcollation INTEGER, attndims INTEGER)`,
	`CREATE TABLE pg_catalog.pg_type (oid INTEGER, typname TEXT, typnamespace INTEGER, typlen INTEGER, typtype TEXT, typbasetype INTEGER,
		typelem INTEGER, typrelid INTEGER, typnotnull INTEGER, typtypmod INTEGER, typarray INTEGER, typcategory TEXT, typowner INTEGER)`,
	`CREATE TABLE pg_catalog.pg_database (oid INTEGER, datname TEXT, datdba INTEGER, encoding INTEGER, datcollate TEXT, datctype TEXT,
		datistemplate INTEGER, datallowconn INTEGER, datconnlimit INTEGER, dattablespace INTEGER, datacl TEXT)`,
	`CREATE TABLE pg_catalog.pg_settings (name TEXT, setting TEXT, unit TEXT, category TEXT, short_desc TEXT, vartype TEXT, context TEXT)`,
	`CREATE TABLE pg_catalog.pg_roles (oid INTEGER, rolname TEXT, rolsuper INTEGER, rolcanlogin INTEGER, rolinherit INTEGER, rolcreaterole INTEGER, rolcreatedb INTEGER)`,
	`CREATE TABLE pg_catalog.pg_user (usesysid INTEGER, usename TEXT, usesuper INTEGER)`,
	`CREATE TABLE pg_catalog.pg_description (objoid INTEGER, classoid INTEGER, objsubid INTEGER, description TEXT)`,
	`CREATE TABLE pg_catalog.pg_index (indexrelid INTEGER, indrelid INTEGER, indisprimary INTEGER, indisunique INTEGER, indkey TEXT)`,
	`CREATE TABLE pg_catalog.pg_constraint (oid INTEGER, conname TEXT, conrelid INTEGER, contype TEXT, conkey TEXT, connamespace INTEGER)`,
	`CREATE TABLE pg_catalog.pg_proc (oid INTEGER, proname TEXT, pronamespace INTEGER)`,
	`CREATE TABLE pg_catalog.pg_attrdef (oid INTEGER, adrelid INTEGER, adnum INTEGER, adbin TEXT)`,
	`CREATE TABLE pg_catalog.pg_collation (oid INTEGER, collname TEXT, collnamespace INTEGER)`,
	`CREATE TABLE pg_catalog.pg_am (oid INTEGER, amname TEXT, amtype TEXT)`,
	`CREATE TABLE pg_catalog.pg_tables (schemaname TEXT, tablename TEXT, tableowner TEXT, hasindexes INTEGER)`,
	`CREATE TABLE information_schema.schemata (catalog_name TEXT, schema_name TEXT, schema_owner TEXT)`,
	`CREATE TABLE information_schema.tables (table_catalog TEXT, table_schema TEXT, table_name TEXT, table_type TEXT, is_insertable_into TEXT)`,
	`CREATE TABLE information_schema.columns (table_catalog TEXT, table_schema TEXT, table_name TEXT, column_name TEXT, ordinal_position INTEGER,
		column_default TEXT, is_nullable TEXT, data_type TEXT, udt_name TEXT, character_maximum_length INTEGER, numeric_precision INTEGER,
		numeric_scale INTEGER, is_updatable TEXT)`,
	`CREATE TABLE information_schema.views (table_catalog TEXT, table_schema TEXT, table_name TEXT)`,
	`CREATE TABLE information_schema.table_constraints (constraint_name TEXT, table_schema TEXT, table_name TEXT, constraint_type TEXT)`,
	`CREATE TABLE information_schema.key_column_usage (constraint_name TEXT, table_schema TEXT, table_name TEXT, column_name TEXT, ordinal_position INTEGER)`,
	`CREATE TABLE information_schema.routines (routine_name TEXT, routine_schema TEXT)`,
}

// catalogDB fills a fresh in-memory catalog with the user's tables.
func (c *conn) catalogDB(ctx context.Context) (*sql.Conn, func(), error) {
	db := sql.OpenDB(catalogConnector{})
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	done := func() { conn.Close(); db.Close() }
	exec := func(q string, args ...any) error {
		_, err := conn.ExecContext(ctx, q, args...)
		return err
	}
	for _, stmt := range catalogSchema {
		if err := exec(stmt); err != nil {
			done()
			return nil, nil, err
		}
	}
	ts, err := c.tables()
	if err != nil {
		done()
		return nil, nil, err
	}
	// insert is one statement filling the catalog.
	type insert struct {
		q    string
		args []any
	}
	steps := []insert{
		{`INSERT INTO pg_namespace VALUES (?, 'pg_catalog', 10, NULL), (?, 'main', 10, NULL), (?, 'information_schema', 10, NULL)`, []any{oidPgCatalog, oidMain, oidInfoSchema}},
		{`INSERT INTO pg_database VALUES (1, 'dpsql', 10, 6, 'C', 'C', 0, 1, -1, 1663, NULL)`, nil},
		{`INSERT INTO pg_roles VALUES (10, 'owner', 1, 1, 1, 1, 1), (?, ?, 0, 1, 1, 0, 0)`, []any{16000, c.user}},
		{`INSERT INTO pg_user VALUES (10, 'owner', 1), (16000, ?, 0)`, []any{c.user}},
		{`INSERT INTO information_schema.schemata VALUES ('dpsql', 'main', 'owner'), ('dpsql', 'pg_catalog', 'owner'), ('dpsql', 'information_schema', 'owner')`, nil},
	}
	for _, t := range pgTypes {
		steps = append(steps, insert{`INSERT INTO pg_type VALUES (?, ?, ?, ?, 'b', 0, 0, 0, 0, -1, 0, ?, 10)`, []any{t.oid, t.name, oidPgCatalog, t.length, t.category}})
	}
	for name, v := range serverSettings {
		steps = append(steps, insert{`INSERT INTO pg_settings VALUES (?, ?, NULL, 'dpsql', '', 'string', 'user')`, []any{name, v}})
	}
	for i, t := range ts {
		oid := tableOID + i
		steps = append(steps,
			insert{`INSERT INTO pg_class VALUES (?, ?, ?, 'r', 10, -1, 0, 'p', 0, 0, NULL, 0, 0, 0, 0, 0, 2, NULL, ?, 0)`, []any{oid, t.Name, oidMain, len(t.Columns)}},
			insert{`INSERT INTO pg_tables VALUES ('main', ?, 'owner', 0)`, []any{t.Name}},
			insert{`INSERT INTO information_schema.tables VALUES ('dpsql', 'main', ?, 'BASE TABLE', 'NO')`, []any{t.Name}})
		for j, col := range t.Columns {
			typ := typeOID(col.Type)
			steps = append(steps,
				insert{`INSERT INTO pg_attribute VALUES (?, ?, ?, ?, 0, 0, -1, ?, 0, '', '', 0, 0)`, []any{oid, col.Name, typ, j + 1, typeLength(typ)}},
				insert{`INSERT INTO information_schema.columns VALUES ('dpsql', 'main', ?, ?, ?, NULL, 'YES', ?, ?, NULL, NULL, NULL, 'NO')`, []any{t.Name, col.Name, j + 1, pgTypeName(col.Type), typeName(typ)}})
		}
	}
	for _, s := range steps {
		if err := exec(s.q, s.args...); err != nil {
			done()
			return nil, nil, err
		}
	}
	// From here the client's query runs: it may only read the emulated
	// catalog (no ATTACH of another file, no PRAGMA, no writes).
	err = conn.Raw(func(dc any) error {
		r, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return fmt.Errorf("server: the catalog's SQLite driver has no authorizer")
		}
		return r.RegisterAuthorizer(func(action sqlite.AuthorizerActionCode, _, name, database, _ string) sqlite.AuthorizerReturnCode {
			switch action {
			case sqlite.AuthSelect:
				return sqlite.AuthorizerOK
			case sqlite.AuthFunction:
				if catalogFunctions[strings.ToLower(name)] || pgFunctions[strings.ToLower(name)] {
					return sqlite.AuthorizerOK
				}
			case sqlite.AuthRead:
				if database == "pg_catalog" || database == "information_schema" || database == "" {
					return sqlite.AuthorizerOK
				}
			}
			return sqlite.AuthorizerDeny
		})
	})
	if err != nil {
		done()
		return nil, nil, err
	}
	return conn, done, nil
}

// catalogFunctions are the functions a catalog query may call: the
// PostgreSQL ones catalogDriver adds, and SQLite's built-ins whose result
// is never much larger than their arguments. Everything else is refused
// (zeroblob(1e9) is a gigabyte; printf('%*d', ...), replace, hex or
// json_quote nested, and the aggregates that concatenate, grow without
// bound), and so is recursion (a recursive CTE doubles a string in each
// step): with the query's text bounded (catalogMaxText), what a catalog
// query builds stays within a small multiple of its text and the catalog;
// its time and its answer are bounded too (catalogSQL).
var catalogFunctions = map[string]bool{
	"abs": true, "coalesce": true, "ifnull": true, "iif": true, "if": true, "nullif": true, "typeof": true,
	"length": true, "octet_length": true, "lower": true, "upper": true, "substr": true, "substring": true,
	"trim": true, "ltrim": true, "rtrim": true, "instr": true, "like": true, "glob": true, "unicode": true,
	"char": true, "concat": true, "concat_ws": true, "sign": true, "round": true, "max": true, "min": true,
	"count": true, "sum": true, "total": true, "avg": true, "row_number": true, "rank": true, "dense_rank": true,
	"likely": true, "unlikely": true, "likelihood": true,
}

// Bounds of a catalog query's answer (a tool's catalog query returns a
// few rows per column of the catalog).
const (
	catalogTimeout    = 10 * time.Second
	catalogMaxRows    = 100000
	catalogMaxBytes   = 16 << 20
	catalogMaxMessage = "a catalog query's answer is limited to 100,000 rows and 16 MB"
	catalogMaxText    = 32 << 10
)

// catalogConnector opens in-memory databases of catalogDriver.
type catalogConnector struct{}

func (catalogConnector) Connect(context.Context) (driver.Conn, error) {
	return catalogDriver().Open(":memory:")
}
func (catalogConnector) Driver() driver.Driver { return catalogDriver() }

var (
	// reCast matches a PostgreSQL cast suffix: ::type, ::"char",
	// ::regclass, ::text[].
	reCast = regexp.MustCompile(`::\s*(?:"[^"]*"|[A-Za-z_][A-Za-z0-9_]*(?:\s+varying)?)(?:\[\])?`)
	// reSessionWord matches the SQL functions written without parentheses.
	reSessionWord = regexp.MustCompile(`(?i)\b(current_user|session_user|current_role)\b`)
	// reRegexOp matches PostgreSQL's regular-expression match operators
	// (as psql writes them too: OPERATOR(pg_catalog.~)).
	reRegexOp = regexp.MustCompile(`(?i)OPERATOR\(pg_catalog\.!?~\)|!~|~`)
	// reSubscript matches an array subscript after a parenthesis,
	// (current_schemas(true))[1]: the emulated arrays are their first
	// element.
	reSubscript = regexp.MustCompile(`\)\s*\[\s*\d+\s*\]`)
	// reQualifiedCall matches pg_catalog.f( : SQLite's functions have no schema.
	reQualifiedCall = regexp.MustCompile(`(?i)\bpg_catalog\.([a-z_][a-z0-9_]*)\s*\(`)
)

// rewriteForSQLite drops :: casts (SQLite's values carry their types) and
// turns current_user and its kin into the connected user's name, outside
// string literals and quoted identifiers.
func (c *conn) rewriteForSQLite(q string) string {
	var out strings.Builder
	i := 0
	for i < len(q) {
		if q[i] == '\'' || q[i] == '"' {
			j := i + 1
			for j < len(q) {
				if q[j] == q[i] {
					if j+1 < len(q) && q[j+1] == q[i] {
						j += 2
						continue
					}
					break
				}
				j++
			}
			end := min(j+1, len(q))
			out.WriteString(q[i:end])
			i = end
			continue
		}
		j := i
		for j < len(q) && q[j] != '\'' && q[j] != '"' {
			j++
		}
		chunk := q[i:j]
		if trimmed := strings.TrimRight(chunk, " \t\n"); strings.HasSuffix(trimmed, "::") && j < len(q) && q[j] == '"' {
			// ::"char": drop the cast and its quoted type name.
			chunk = strings.TrimSuffix(trimmed, "::")
			if k := strings.IndexByte(q[j+1:], '"'); k >= 0 {
				j += k + 2
			}
		}
		chunk = reCast.ReplaceAllString(chunk, "")
		chunk = reQualifiedCall.ReplaceAllString(chunk, "$1(")
		chunk = reSubscript.ReplaceAllString(chunk, ")")
		chunk = reRegexOp.ReplaceAllStringFunc(chunk, func(op string) string {
			if strings.Contains(op, "!") {
				return " NOT REGEXP "
			}
			return " REGEXP "
		})
		chunk = reSessionWord.ReplaceAllString(chunk, "'"+strings.ReplaceAll(c.user, "'", "''")+"'")
		out.WriteString(chunk)
		i = j
	}
	return out.String()
}

// catalogSQL answers a catalog query on the emulated catalog, within
// catalogTimeout or the session's statement_timeout, whichever is
// shorter, and stopped by a CancelRequest like any statement.
func (c *conn) catalogSQL(q string) (*answer, error) {
	if len(q) > catalogMaxText {
		return nil, &wireError{code: "54000", msg: fmt.Sprintf("a catalog query may be at most %d bytes long", catalogMaxText)}
	}
	limit := catalogTimeout
	if d := c.timeout(); d > 0 && d < limit {
		limit = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer c.track(cancel)()
	a, err := c.catalogRows(ctx, q)
	if err != nil && ctx.Err() != nil {
		why := "canceling statement due to user request"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			why = fmt.Sprintf("canceling statement due to statement timeout (%s)", limit)
		}
		return nil, &wireError{code: "57014", msg: why}
	}
	return a, err
}

// lacking names what an emulated catalog query needed, from the SQLite
// error that ran it (which is not shown: its codes and wording are the
// emulation's, not PostgreSQL's).
func lacking(err error) string {
	msg := err.Error()
	for _, p := range []struct{ prefix, what string }{{"no such function: ", "the function "}, {"no such table: ", "the table "}, {"no such column: ", "the column "}} {
		if _, rest, ok := strings.Cut(msg, p.prefix); ok {
			name, _, _ := strings.Cut(rest, " (")
			return p.what + name
		}
	}
	return "SQL beyond what the emulation reads (such as ARRAY(...) or a PostgreSQL-only operator)"
}

// catalogRows runs a catalog query and reads its answer.
func (c *conn) catalogRows(ctx context.Context, q string) (*answer, error) {
	conn, done, err := c.catalogDB(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	rows, err := conn.QueryContext(ctx, c.rewriteForSQLite(q))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &wireError{code: "0A000", msg: "dpsql answers catalog queries (information_schema, pg_catalog) from an emulated catalog of its tables and columns; this one uses " + lacking(err) + ", which that catalog lacks (it has no functions, roles, extensions, indexes or constraints: SHOW TABLES and \\d list what there is, SHOW ANALYSTS the analysts)"}
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	a := &answer{desc: &description{columns: cols, types: make([]string, len(cols))}, tag: "SELECT"}
	size := 0
	for rows.Next() {
		vals, err := sqlrows.Values(rows, len(cols))
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			if s, ok := v.(string); ok {
				size += len(s)
			}
			size += 16
		}
		a.rows = append(a.rows, vals)
		if len(a.rows) > catalogMaxRows || size > catalogMaxBytes {
			return nil, &wireError{code: "54000", msg: catalogMaxMessage}
		}
	}
	if err := rows.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &wireError{code: "54000", msg: "a catalog query's work is limited: " + err.Error()}
	}
	for j := range cols {
		a.desc.types[j] = columnType(a.rows, j)
	}
	return a, nil
}

// columnType types a column by its values: integer or real when every
// non-NULL value is one, text otherwise (each value then sent as text).
func columnType(rows [][]any, j int) string {
	ints, reals, texts := 0, 0, 0
	for _, r := range rows {
		switch v := r[j].(type) {
		case nil:
		case int64:
			ints++
		case float64:
			reals++
		default:
			texts++
			r[j] = fmt.Sprint(v)
		}
	}
	switch {
	case texts > 0 || ints+reals == 0:
		for _, r := range rows {
			if r[j] != nil {
				r[j] = fmt.Sprint(r[j])
			}
		}
		return dpsql.TypeText
	case reals > 0:
		for _, r := range rows {
			if i, ok := r[j].(int64); ok {
				r[j] = float64(i)
			}
		}
		return dpsql.TypeReal
	}
	return dpsql.TypeInteger
}
