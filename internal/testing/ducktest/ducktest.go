//go:build cgo

// Package ducktest copies SQLite test databases into DuckDB files, so
// that tests run the same data on both backends.
package ducktest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

// duckTypes maps pgtest's column types to DuckDB's.
var duckTypes = map[string]string{"bigint": "BIGINT", "double precision": "DOUBLE", "bytea": "BLOB", "text": "VARCHAR"}

func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// typeOf is pgtest.TypeOf, with untyped for columns declared without a
// type.
func typeOf(decl, untyped string) string {
	if strings.TrimSpace(decl) == "" {
		return untyped
	}
	return pgtest.TypeOf(decl)
}

// CopyFromSQLite creates each named table of the SQLite database src in
// the DuckDB file at path (made if missing) and copies its rows: INTEGER
// columns become BIGINT, REAL DOUBLE, BLOB BLOB, the rest VARCHAR, each
// value converted by pgtest.Convert's fixed rule (row by row, so that
// copies of neighbouring databases are neighbours). A column declared
// without a type is copied as the pgtest type untyped ("text", or
// "double precision" to have its numbers summed in DuckDB; text in it
// then becomes NULL).
func CopyFromSQLite(ctx context.Context, path string, src *sql.DB, untyped string, tables ...string) error {
	db, err := sql.Open("duckdb", path)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, name := range tables {
		rows, err := src.QueryContext(ctx, `SELECT name, type FROM pragma_table_info(?) ORDER BY cid`, name)
		if err != nil {
			return err
		}
		var defs, types []string
		for rows.Next() {
			var c, typ string
			if err := rows.Scan(&c, &typ); err != nil {
				rows.Close()
				return err
			}
			types = append(types, typeOf(typ, untyped))
			defs = append(defs, quote(c)+" "+duckTypes[typeOf(typ, untyped)])
		}
		rows.Close()
		if len(defs) == 0 {
			return fmt.Errorf("ducktest: SQLite has no table %q", name)
		}
		if _, err := db.ExecContext(ctx, "CREATE TABLE "+quote(name)+" ("+strings.Join(defs, ", ")+")"); err != nil {
			return err
		}
		if err := copyRows(ctx, db, src, name, types); err != nil {
			return fmt.Errorf("ducktest: copying %s: %w", name, err)
		}
	}
	return nil
}

func copyRows(ctx context.Context, db, src *sql.DB, name string, types []string) error {
	data, err := src.QueryContext(ctx, "SELECT * FROM "+quote(name))
	if err != nil {
		return err
	}
	defer data.Close()
	_, err = duckdb.Append(ctx, db, name, data, func(i int, v any) driver.Value { return pgtest.Convert(types[i], v) })
	return err
}

// Exec runs statements on the DuckDB file at path (made if missing).
func Exec(ctx context.Context, path string, stmts ...string) error {
	db, err := sql.Open("duckdb", path)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}
