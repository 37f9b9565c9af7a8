package catalog

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dpsql/dpsql/internal/storesql"
)

// postgresSchema holds the policies of a PostgreSQL database's tables in
// its schema dpsql (made by the budget's Init, which runs first). Names
// are kept as the catalog spells them (as PostgreSQL's own catalog does);
// domain values keep their type in kind and their exact text in value.
var postgresSchema = []string{
	`CREATE TABLE IF NOT EXISTS dpsql.tables (
	table_name  text PRIMARY KEY,
	public      integer NOT NULL DEFAULT 0,
	has_policy  integer NOT NULL DEFAULT 0,
	unit_column text,
	max_groups  bigint NOT NULL DEFAULT 1,
	max_rows    bigint NOT NULL DEFAULT 1,
	bounds_warnings text
)`,
	// A catalog made before the policy option bounds_warnings.
	`ALTER TABLE dpsql.tables ADD COLUMN IF NOT EXISTS bounds_warnings text`,
	`CREATE TABLE IF NOT EXISTS dpsql.bounds (
	table_name  text NOT NULL,
	column_name text NOT NULL,
	lo double precision NOT NULL,
	hi double precision NOT NULL,
	PRIMARY KEY (table_name, column_name)
)`,
	`CREATE TABLE IF NOT EXISTS dpsql.domains (
	table_name  text NOT NULL,
	column_name text NOT NULL,
	position    integer NOT NULL,
	kind        text NOT NULL CHECK (kind IN ('integer', 'real', 'text', 'hex')),
	value       text NOT NULL,
	PRIMARY KEY (table_name, column_name, position)
)`,
}

// PostgresTables are the catalog's tables in the schema dpsql.
var PostgresTables = []string{"tables", "bounds", "domains"}

// InitPostgres makes the catalog's tables in PostgreSQL's schema dpsql
// when they are missing, in one transaction.
func InitPostgres(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM pg_catalog.pg_tables WHERE schemaname = 'dpsql' AND tablename = ANY($1))
		+ (SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = 'dpsql' AND table_name = 'tables' AND column_name = 'bounds_warnings')`, PostgresTables).Scan(&n); err != nil {
		return fmt.Errorf("catalog: reading the schema dpsql: %w", err)
	}
	if n == len(PostgresTables)+1 {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// The same lock as the budget's tables: two processes creating them
	// at once would collide in PostgreSQL's catalog.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, storesql.SchemaLock); err != nil {
		return err
	}
	for _, stmt := range postgresSchema {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("catalog: making the schema dpsql: %w", err)
		}
	}
	return tx.Commit()
}

// domainValueText is a domain value as PostgreSQL keeps it: its type and
// its exact text (floats in the shortest form that reads back the same;
// a string PostgreSQL's text cannot hold — a NUL byte, invalid UTF-8 —
// in hexadecimal).
func domainValueText(v any) (kind, text string) {
	switch x := v.(type) {
	case int64:
		return "integer", strconv.FormatInt(x, 10)
	case float64:
		return "real", strconv.FormatFloat(x, 'g', -1, 64)
	default:
		s := fmt.Sprint(x)
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return "hex", hex.EncodeToString([]byte(s))
		}
		return "text", s
	}
}

// parseDomainValue reads back what domainValueText wrote.
func parseDomainValue(kind, text string) (any, error) {
	switch kind {
	case "integer":
		return strconv.ParseInt(text, 10, 64)
	case "real":
		return strconv.ParseFloat(text, 64)
	case "text":
		return text, nil
	case "hex":
		b, err := hex.DecodeString(text)
		return string(b), err
	}
	return nil, fmt.Errorf("catalog: unknown domain value kind %q", kind)
}

// Fingerprint prints the policies of the named tables canonically: two
// catalogs give the same text exactly when those tables have the same
// policies. The answer cache keys answers with it.
func (c *Catalog) Fingerprint(tables []string) string {
	names := append([]string(nil), tables...)
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		t, ok := c.Table(n)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "%q public=%t policy=%t unit=%q/%d/%d", t.Name, t.Public, t.HasPolicy, t.Unit.Column, t.Unit.MaxGroups, t.Unit.MaxRows)
		for _, col := range SortedColumns(t.Bounds) {
			bd := t.Bounds[col]
			fmt.Fprintf(&b, " bounds %q=[%x,%x]", col, math.Float64bits(bd.Lo), math.Float64bits(bd.Hi))
		}
		for _, col := range SortedColumns(t.Domains) {
			fmt.Fprintf(&b, " domain %q=", col)
			for _, v := range t.Domains[col] {
				kind, text := domainValueText(v)
				fmt.Fprintf(&b, "%s:%q,", kind, text)
			}
		}
		b.WriteString(";")
	}
	return b.String()
}

// HasFilePolicies reports whether the SQLite file db still holds policies
// (a state file of an earlier version, not yet adopted): until they are
// in PostgreSQL, its tables would be read without them.
func HasFilePolicies(ctx context.Context, db *sql.DB) (bool, error) {
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_dpsql_tables'`).Scan(&tables); err != nil || tables == 0 {
		return false, err
	}
	var rows int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM _dpsql_tables`).Scan(&rows)
	return rows > 0, err
}

// Adopt moves the policies a SQLite state file kept (as versions did
// before the catalog of a PostgreSQL database lived in it) into
// PostgreSQL: every table's policy, bounds and domains, for tables
// PostgreSQL has no policy row for, in one transaction; then it empties
// the state file's policy tables, so that nothing is adopted twice. It
// reports the tables it adopted.
func Adopt(ctx context.Context, from *sql.DB, to *sql.DB) ([]string, error) {
	var have int
	if err := from.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('_dpsql_tables', '_dpsql_bounds', '_dpsql_domains')`).Scan(&have); err != nil || have < 3 {
		return nil, err
	}
	type policy struct {
		name, unit         string
		public, has        int64
		maxGroups, maxRows int64
		warnings           sql.NullString
	}
	var policies []policy
	// A state file of a version before bounds_warnings has no such column.
	var hasWarnings int
	if err := from.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info('_dpsql_tables') WHERE name = 'bounds_warnings'`).Scan(&hasWarnings); err != nil {
		return nil, err
	}
	warnings := "NULL"
	if hasWarnings > 0 {
		warnings = "bounds_warnings"
	}
	rows, err := from.QueryContext(ctx, `SELECT table_name, public, has_policy, COALESCE(unit_column, ''), max_groups, max_rows, `+warnings+` FROM _dpsql_tables ORDER BY table_name`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var p policy
		if err := rows.Scan(&p.name, &p.public, &p.has, &p.unit, &p.maxGroups, &p.maxRows, &p.warnings); err != nil {
			rows.Close()
			return nil, err
		}
		policies = append(policies, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(policies) == 0 {
		return nil, err
	}
	tx, err := to.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	pg := storesql.On{R: tx, Postgres: true}
	var adopted []string
	for _, p := range policies {
		var unit any
		if p.unit != "" {
			unit = p.unit
		}
		res, err := pg.ExecContext(ctx, `INSERT INTO _dpsql_tables (table_name, public, has_policy, unit_column, max_groups, max_rows, bounds_warnings) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (table_name) DO NOTHING`, p.name, p.public, p.has, unit, p.maxGroups, p.maxRows, p.warnings)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue // PostgreSQL's policy for this table stands
		}
		adopted = append(adopted, p.name)
		if err := copyBounds(ctx, from, pg, p.name); err != nil {
			return nil, err
		}
		if err := copyDomains(ctx, from, pg, p.name); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	// PostgreSQL has them now; a state file that cannot be written (an
	// analyst's copy) keeps its rows, which are no longer read, and the
	// next owner's open finds PostgreSQL's rows in place.
	_, _ = from.ExecContext(ctx, `DELETE FROM _dpsql_bounds; DELETE FROM _dpsql_domains; DELETE FROM _dpsql_tables`)
	return adopted, nil
}

func copyBounds(ctx context.Context, from *sql.DB, to storesql.On, table string) error {
	rows, err := from.QueryContext(ctx, `SELECT column_name, lo, hi FROM _dpsql_bounds WHERE table_name = ?`, table)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var col string
		var lo, hi float64
		if err := rows.Scan(&col, &lo, &hi); err != nil {
			return err
		}
		if _, err := to.ExecContext(ctx, `INSERT INTO _dpsql_bounds (table_name, column_name, lo, hi) VALUES (?, ?, ?, ?)`, table, col, lo, hi); err != nil {
			return err
		}
	}
	return rows.Err()
}

func copyDomains(ctx context.Context, from *sql.DB, to storesql.On, table string) error {
	rows, err := from.QueryContext(ctx, `SELECT column_name, position, value FROM _dpsql_domains WHERE table_name = ? ORDER BY column_name, position`, table)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var col string
		var pos int64
		var v any
		if err := rows.Scan(&col, &pos, &v); err != nil {
			return err
		}
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		kind, text := domainValueText(v)
		if _, err := to.ExecContext(ctx, `INSERT INTO _dpsql_domains (table_name, column_name, position, kind, value) VALUES (?, ?, ?, ?, ?)`, table, col, pos, kind, text); err != nil {
			return err
		}
	}
	return rows.Err()
}
