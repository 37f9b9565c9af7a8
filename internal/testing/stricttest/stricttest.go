// Package stricttest copies a SQLite database file into one whose tables
// are STRICT, the tables the compiled SQLite measurement reads
// (backend/sqlite), for the tests that run the sensitivity auditor's
// generated databases on that path; and it lists a file's own tables
// (OwnerTables), which ducktest moves into DuckDB too.
package stricttest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"

	_ "modernc.org/sqlite" // the databases

	"github.com/dpsql/dpsql/internal/storesql"
)

// Copy writes to dst a copy of the SQLite file src (dpsql's catalog,
// policies and budget included) in which every table of the owner's is
// STRICT: a column declared INTEGER keeps its integers, REAL its numbers
// (integers as doubles), TEXT its text and numbers as their text; a
// column without a type (which may hold every class) becomes REAL with
// its numbers, as ducktest.Move makes it a DOUBLE. Every other value
// (text in a number column, a blob) becomes NULL.
func Copy(src, dst string) error {
	ctx := context.Background()
	os.Remove(dst)
	in, err := sql.Open("sqlite", "file:"+src)
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := in.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", "file:"+dst)
	if err != nil {
		return err
	}
	defer db.Close()
	tables, err := OwnerTables(ctx, db)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if err := strict(ctx, db, t); err != nil {
			return fmt.Errorf("table %s: %w", t, err)
		}
	}
	return nil
}

// OwnerTables are the tables of a SQLite file that are the owner's: not
// dpsql's catalog (_dpsql_*) nor SQLite's own.
func OwnerTables(ctx context.Context, db *sql.DB) ([]string, error) {
	return storesql.Collect(ctx, db, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '\_dpsql\_%' ESCAPE '\' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`, nil,
		func(rows *sql.Rows) (name string, err error) { return name, rows.Scan(&name) })
}

// strict replaces table t with a STRICT table of the same columns.
func strict(ctx context.Context, db *sql.DB, t string) error {
	type column struct{ name, typ string }
	cols, err := storesql.Collect(ctx, db, `SELECT name, type FROM pragma_table_info(?)`, []any{t},
		func(rows *sql.Rows) (c column, err error) { return c, rows.Scan(&c.name, &c.typ) })
	if err != nil {
		return err
	}
	var defs, reads, names []string
	for _, c := range cols {
		q := quote(c.name)
		names = append(names, q)
		switch strings.ToUpper(c.typ) {
		case "INTEGER", "INT":
			defs = append(defs, q+" INTEGER")
			reads = append(reads, "CASE WHEN typeof("+q+") = 'integer' THEN "+q+" END")
		case "TEXT":
			defs = append(defs, q+" TEXT")
			reads = append(reads, "CASE WHEN typeof("+q+") IN ('text', 'integer', 'real') THEN CAST("+q+" AS TEXT) END")
		default:
			defs = append(defs, q+" REAL")
			reads = append(reads, "CASE WHEN typeof("+q+") IN ('integer', 'real') THEN CAST("+q+" AS REAL) END")
		}
	}
	old := quote(t + "_loose")
	stmts := []string{
		`ALTER TABLE ` + quote(t) + ` RENAME TO ` + old,
		`CREATE TABLE ` + quote(t) + ` (` + strings.Join(defs, ", ") + `) STRICT`,
		`INSERT INTO ` + quote(t) + ` (rowid, ` + strings.Join(names, ", ") + `) SELECT rowid, ` + strings.Join(reads, ", ") + ` FROM ` + old, // the rows keep their identities
		`DROP TABLE ` + old,
	}
	for _, st := range stmts {
		if _, err := db.ExecContext(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
