package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dpsql/dpsql/internal/storesql"
)

// sourceTable records, in the state file, the id under which its mirrored
// tables find their PostgreSQL connection (Register).
const sourceTable = "_dpsql_postgres"

// SourceID returns the state file's source id. An owner (create) makes
// one the first time; otherwise a file without one gives "".
func SourceID(ctx context.Context, db *sql.DB, create bool) (string, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, sourceTable).Scan(&n); err != nil {
		return "", err
	}
	if n == 0 && !create {
		return "", nil
	}
	var id string
	if n > 0 {
		// Read first: a state file that has its id is not written (an
		// analyst may open one they cannot write).
		err := db.QueryRowContext(ctx, `SELECT id FROM `+sourceTable+` LIMIT 1`).Scan(&id)
		if err == nil || err != sql.ErrNoRows {
			return id, err
		}
	}
	if create {
		b := make([]byte, 8)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+sourceTable+` (id TEXT NOT NULL);
			INSERT INTO `+sourceTable+` (id) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM `+sourceTable+`)`, "pg"+hex.EncodeToString(b)); err != nil {
			return "", err
		}
	}
	err := db.QueryRowContext(ctx, `SELECT id FROM `+sourceTable+` LIMIT 1`).Scan(&id)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return id, err
}

// Connect opens a pool on dsn and checks that it answers. Unless the
// connection string sets pool_max_conns, the pool keeps up to 32
// connections: a statement holds one per table it reads, and a cursor
// that finds the pool busy opens a connection of its own (cursor.begin).
func Connect(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL connection string: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = 32
	}
	// Text must reach dpsql as it is stored: a conversion in flight fails
	// on the first stored value the client encoding cannot hold, when that
	// value is sent — which rows are sent depends on the analyst's WHERE,
	// so the failure would tell of one row. The client encoding is UTF8
	// whatever the connection string, role or database say (the startup
	// parameter outranks the role's and database's settings), and every
	// connection checks both encodings (checkEncoding).
	cfg.ConnConfig.RuntimeParams["client_encoding"] = "UTF8"
	validate := cfg.ConnConfig.ValidateConnect // target_session_attrs'
	cfg.ConnConfig.ValidateConnect = func(ctx context.Context, c *pgconn.PgConn) error {
		if validate != nil {
			if err := validate(ctx, c); err != nil {
				return err
			}
		}
		return checkEncoding(ctx, c)
	}
	cfg.ConnConfig.AfterConnect = pinCatalog
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL connection string: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	return pool, nil
}

// ErrEncoding reports a PostgreSQL database whose text dpsql cannot read
// without a conversion that may fail on a stored value.
var ErrEncoding = errors.New("the PostgreSQL database's encoding is not supported")

// checkEncoding accepts a connection whose client encoding is UTF8 and
// whose database stores UTF8 (sent as it is) or SQL_ASCII (bytes, never
// converted). Any other server encoding (WIN1252, LATIN1, ...) is
// refused: its conversion to UTF8 raises on bytes it does not map (0x81
// in WIN1252), at the moment a row holding one is sent.
func checkEncoding(_ context.Context, c *pgconn.PgConn) error {
	server, client := c.ParameterStatus("server_encoding"), c.ParameterStatus("client_encoding")
	if server != "UTF8" && server != "SQL_ASCII" {
		return fmt.Errorf("%w: the database stores text as %s; dpsql reads UTF8 (or SQL_ASCII) databases only, since converting %s to UTF8 fails on some stored values (make a UTF8 copy: CREATE DATABASE ... ENCODING 'UTF8' and pg_dump | psql)", ErrEncoding, server, server)
	}
	if client != "UTF8" {
		return fmt.Errorf("%w: the connection's client_encoding is %s after dpsql asked for UTF8", ErrEncoding, client)
	}
	return nil
}

// pinCatalog puts pg_catalog first in the connection's search path (the
// role's path follows, so that its first schema stays dpsql's data
// schema): an operator, function, type or collation that dpsql's
// statements name unqualified is then PostgreSQL's built-in one even where
// an earlier schema of the role's path holds one of the same name and
// arguments. The measuring transaction narrows the path further, to
// pg_catalog alone (Source.Measure).
func pinCatalog(ctx context.Context, c *pgconn.PgConn) error {
	rows, err := c.Exec(ctx, `SELECT pg_catalog.current_setting('search_path')`).ReadAll()
	if err != nil {
		return err
	}
	path := "pg_catalog"
	if len(rows) == 1 && len(rows[0].Rows) == 1 && len(rows[0].Rows[0]) == 1 {
		if role := strings.TrimSpace(string(rows[0].Rows[0][0])); role != "" {
			path += ", " + role
		}
	}
	res := c.ExecParams(ctx, `SELECT pg_catalog.set_config('search_path', $1, false)`, [][]byte{[]byte(path)}, nil, nil, nil).Read()
	return res.Err
}

// dataSchema is the schema dpsql's tables are read from and imported
// into: the first schema of the role's search path other than dpsql
// (which holds the budget, and which a role named dpsql finds first
// through "$user") and pg_catalog (which pinCatalog puts first). It is
// empty when the search path has no other.
const dataSchema = `SELECT COALESCE((SELECT s FROM unnest(current_schemas(false)) WITH ORDINALITY AS p(s, i) WHERE s <> 'dpsql' AND s <> 'pg_catalog' ORDER BY i LIMIT 1), '')`

// BudgetSchema is the schema of the database's policies, budget and
// ledger (storesql.Schema); it is never mirrored, and tables are never
// imported into it.
const BudgetSchema = storesql.Schema

// Mirror declares in the state file a virtual table for every table
// (plain, partitioned, materialized view) of PostgreSQL's data schema
// that the file does not have yet, and returns the names it added and
// those it skipped (a name SQLite reserves, or one that differs only in
// case from a table already in the file). The PostgreSQL tables are never
// changed.
//
// Views and foreign tables are not mirrored, nor tables whose row-level
// security applies to dpsql's role: reading them runs code (the view's
// expressions, a foreign-data wrapper's conversions, the policies'
// predicates) that can fail on some row, and a scan that fails or not
// depending on one row would tell an analyst about it. A materialized view was computed when the
// owner refreshed it; reading it computes nothing.
func (s *Source) Mirror(ctx context.Context, db *sql.DB) (added, skipped []string, err error) {
	pool, id := s.Pool, s.ID
	const q = `SELECT n.nspname, c.relname, row_security_active(c.oid) FROM pg_catalog.pg_class c
	JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = (` + dataSchema + `) AND n.nspname <> '` + BudgetSchema + `' AND c.relkind IN ('r', 'p', 'm')
	ORDER BY c.relname`
	s.observe(q)
	rows, err := pool.Query(ctx, q)
	if err != nil {
		return nil, nil, fmt.Errorf("listing PostgreSQL's tables: %w", err)
	}
	type rel struct {
		schema, name string
		rls          bool
	}
	var rels []rel
	for rows.Next() {
		var r rel
		if err := rows.Scan(&r.schema, &r.name, &r.rls); err != nil {
			rows.Close()
			return nil, nil, err
		}
		rels = append(rels, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	// Tables someone made in the budget's schema (budget/ and catalog/ make
	// the ones listed here; a role named dpsql
	// finds it first on its search path, "$user") are never read; the
	// owner is told, by their qualified names.
	const strays = `SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = '` + BudgetSchema + `' AND c.relkind IN ('r', 'p', 'm', 'v', 'f')
	AND c.relname NOT IN ('budget', 'budget_resets', 'ledger', 'spent', 'analysts', 'auth_secret', 'adopted', 'watches', 'tables', 'bounds', 'domains') ORDER BY c.relname`
	s.observe(strays)
	names, err := pool.Query(ctx, strays)
	if err != nil {
		return nil, nil, fmt.Errorf("listing PostgreSQL's tables: %w", err)
	}
	for names.Next() {
		var n string
		if err := names.Scan(&n); err != nil {
			names.Close()
			return nil, nil, err
		}
		skipped = append(skipped, BudgetSchema+"."+n)
	}
	names.Close()
	if err := names.Err(); err != nil {
		return nil, nil, err
	}
	for _, r := range rels {
		lower := strings.ToLower(r.name)
		if r.rls || strings.HasPrefix(lower, "_dpsql_") || strings.HasPrefix(lower, "sqlite_") {
			skipped = append(skipped, r.name)
			continue
		}
		var existing string
		err := db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE`, r.name).Scan(&existing)
		switch {
		case err == sql.ErrNoRows:
		case err != nil:
			return added, skipped, err
		default:
			// Already mirrored, or the name is taken: by a table of the
			// file itself, or (SQLite's names ignore case) by the mirror
			// of another PostgreSQL table.
			if !strings.HasSuffix(existing, mirrorArgs(id, r.schema, r.name)) {
				skipped = append(skipped, r.name)
			}
			continue
		}
		stmt := "CREATE VIRTUAL TABLE " + Quote(r.name) + " USING " + Module + mirrorArgs(id, r.schema, r.name)
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return added, skipped, fmt.Errorf("mirroring %s: %w", Quote(r.name), err)
		}
		added = append(added, r.name)
	}
	return added, skipped, nil
}

// mirrorArgs prints a mirror's module arguments.
func mirrorArgs(id, schema, name string) string {
	return "(" + Literal(id) + ", " + Literal(schema) + ", " + Literal(name) + ")"
}

// CopyTable creates table in PostgreSQL's data schema with the given
// columns (types INTEGER, REAL or TEXT, as csvimport infers them) and
// copies every row of the same table of src into it with COPY, in one
// transaction: on any error PostgreSQL is left as it was.
func CopyTable(ctx context.Context, to *Source, src *sql.DB, table string, names, types []string) (int64, error) {
	pool := to.Pool
	defs := make([]string, len(names))
	for i, n := range names {
		t := "text"
		switch types[i] {
		case "INTEGER":
			t = "bigint"
		case "REAL":
			t = "double precision"
		}
		defs[i] = Quote(n) + " " + t
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	var schema string
	if err := tx.QueryRow(ctx, dataSchema).Scan(&schema); err != nil {
		return 0, err
	}
	if schema == "" {
		return 0, fmt.Errorf("PostgreSQL's search path has no schema to import into (other than %s, which holds the budget)", BudgetSchema)
	}
	create := "CREATE TABLE " + Quote(schema) + "." + Quote(table) + " (" + strings.Join(defs, ", ") + ")"
	to.observe(create)
	if _, err := tx.Exec(ctx, create); err != nil {
		return 0, fmt.Errorf("creating %s in PostgreSQL: %w", Quote(table), err)
	}
	rows, err := src.QueryContext(ctx, "SELECT * FROM "+Quote(table))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	vals := make([]any, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	next := func() ([]any, error) {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		return vals, nil
	}
	n, err := tx.CopyFrom(ctx, pgx.Identifier{schema, table}, names, &rowSource{rows: rows, next: next})
	if err != nil {
		return 0, fmt.Errorf("copying into %s: %w", Quote(table), err)
	}
	return n, tx.Commit(ctx)
}

// rowSource adapts *sql.Rows to pgx.CopyFromSource.
type rowSource struct {
	rows *sql.Rows
	next func() ([]any, error)
	err  error
}

func (r *rowSource) Next() bool { return r.rows.Next() }
func (r *rowSource) Values() ([]any, error) {
	v, err := r.next()
	r.err = err
	return v, err
}
func (r *rowSource) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.rows.Err()
}

// mirrorOf reads the module arguments of the mirror called name (ok is
// false when name is not a mirror).
func mirrorOf(ctx context.Context, db *sql.DB, name string) (id, schema, table string, ok bool, err error) {
	var stmt string
	err = db.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE`, name).Scan(&stmt)
	if err == sql.ErrNoRows {
		return "", "", "", false, nil
	}
	if err != nil {
		return "", "", "", false, err
	}
	id, schema, table, ok = parseMirror(stmt)
	return id, schema, table, ok, nil
}

// parseMirror reads the module arguments from a mirror's CREATE VIRTUAL
// TABLE statement (Mirror's; ok is false for any other statement).
func parseMirror(stmt string) (id, schema, table string, ok bool) {
	_, rest, found := strings.Cut(stmt, " USING "+Module+"(")
	if !found || !strings.HasSuffix(rest, ")") {
		return "", "", "", false
	}
	var vals []string
	rest = strings.TrimSuffix(rest, ")")
	for rest != "" {
		// Literal's strings: a quote, anything with quotes doubled, a quote.
		end := 1
		for end < len(rest) {
			if rest[end] == '\'' {
				if end+1 < len(rest) && rest[end+1] == '\'' {
					end += 2
					continue
				}
				break
			}
			end++
		}
		v, err := unliteral(rest[:min(end+1, len(rest))])
		if err != nil {
			return "", "", "", false
		}
		vals = append(vals, v)
		rest = strings.TrimPrefix(rest[min(end+1, len(rest)):], ", ")
	}
	if len(vals) != 3 || !strings.HasSuffix(stmt, mirrorArgs(vals[0], vals[1], vals[2])) {
		return "", "", "", false
	}
	return vals[0], vals[1], vals[2], true
}
