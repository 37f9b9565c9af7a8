//go:build cgo

package duckdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	duck "github.com/duckdb/duckdb-go/v2"
)

// duckType is the DuckDB type of an imported column of a SQLite type.
func duckType(sqliteType string) string {
	switch strings.ToUpper(sqliteType) {
	case "INTEGER":
		return "BIGINT"
	case "REAL":
		return "DOUBLE"
	}
	return "VARCHAR"
}

// CopyTable creates table in the DuckDB file and fills it with the rows
// of the same table in scratch (a SQLite file csvimport checked and typed
// them into), all or nothing: on any failure the new table is dropped.
// It opens the file for writing, so the source's reading handle is
// closed first; another process holding the file gives ErrInUse.
func (s *Source) CopyTable(ctx context.Context, scratch *sql.DB, table string, names, types []string) (int64, error) {
	return s.write(ctx, table, func(db *sql.DB) (int64, error) {
		defs := make([]string, len(names))
		for i := range names {
			defs[i] = Quote(names[i]) + " " + duckType(types[i])
		}
		if _, err := db.ExecContext(ctx, "CREATE TABLE "+Quote(table)+" ("+strings.Join(defs, ", ")+")"); err != nil {
			return 0, err
		}
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = Quote(n)
		}
		rows, err := scratch.QueryContext(ctx, "SELECT "+strings.Join(quoted, ", ")+" FROM "+Quote(table))
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		return Append(ctx, db, table, rows, func(i int, v any) driver.Value { return typed(v, types[i]) })
	})
}

// Append appends rows (every column of table, in order) to the DuckDB
// table through DuckDB's appender, each value converted by convert (i is
// its column), and returns how many it appended.
func Append(ctx context.Context, db *sql.DB, table string, rows *sql.Rows, convert func(i int, v any) driver.Value) (int64, error) {
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var n int64
	err = conn.Raw(func(dc any) error {
		app, err := duck.NewAppenderFromConn(dc.(driver.Conn), "", table)
		if err != nil {
			return err
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		row := make([]driver.Value, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				app.Close()
				return err
			}
			for i, v := range vals {
				row[i] = convert(i, v)
			}
			if err := app.AppendRow(row...); err != nil {
				app.Close()
				return err
			}
			n++
		}
		if err := rows.Err(); err != nil {
			app.Close()
			return err
		}
		return app.Close()
	})
	return n, err
}

// typed converts a scratch value to its column's Go type for the appender.
func typed(v any, sqliteType string) driver.Value {
	switch x := v.(type) {
	case nil:
		return nil
	case int64:
		if strings.EqualFold(sqliteType, "REAL") {
			return float64(x)
		}
		return x
	case []byte:
		return string(x)
	}
	return v
}

// ImportParquet creates table from a Parquet file with DuckDB's reader,
// all or nothing.
func (s *Source) ImportParquet(ctx context.Context, table, path string) (int64, error) {
	return s.write(ctx, table, func(db *sql.DB) (int64, error) {
		if _, err := db.ExecContext(ctx, "CREATE TABLE "+Quote(table)+" AS SELECT * FROM read_parquet(?)", path); err != nil {
			return 0, err
		}
		var n int64
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+Quote(table)).Scan(&n)
		return n, err
	})
}

// write runs fill on the file opened for writing; a table of that name
// must not exist, and on failure the table is dropped.
func (s *Source) write(ctx context.Context, table string, fill func(*sql.DB) (int64, error)) (int64, error) {
	if err := s.Close(); err != nil {
		return 0, err
	}
	dir, err := acquireSpill(s.TempDir)
	if err != nil {
		return 0, err
	}
	defer releaseSpill(s.TempDir)
	db, err := open(s.Path, false, s.settings(dir))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var taken int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'main' AND lower(table_name) = lower(?)`, table).Scan(&taken); err != nil {
		return 0, err
	}
	if taken > 0 {
		return 0, fmt.Errorf("table %q already exists in %s", table, s.Path)
	}
	n, err := fill(db)
	if err != nil {
		_, _ = db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+Quote(table))
		return 0, fmt.Errorf("importing into %s: %v", s.Path, firstLine(err.Error()))
	}
	if _, err := db.ExecContext(ctx, "CHECKPOINT"); err != nil {
		return 0, err
	}
	return n, nil
}
