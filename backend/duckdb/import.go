//go:build cgo

package duckdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
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

// ErrCSVDiffers reports that DuckDB's CSV reader did not read a file as
// dpsql's checker did (another row or value count, or an error of its
// own): the caller loads the file the slower, exact way instead.
var ErrCSVDiffers = errors.New("DuckDB's CSV reader read the file differently from dpsql's check")

// CSVSpec is how to read a CSV file: its columns' names and SQLite types
// (csvimport's), its delimiter and whether it has a header.
type CSVSpec struct {
	Names, Types []string
	Delimiter    rune // 0: ','
	Header       bool
}

// CSVCheck is what csvimport.Check found in the file: the final types,
// the rows, and each column's count of non-empty fields.
type CSVCheck struct {
	Types  []string
	Rows   int64
	Values []int64
}

// ErrTypesWidened: the check's final types are wider than the ones the
// file was read with (rows after the sample widened them); read it again
// with the final types.
var ErrTypesWidened = errors.New("the checked types are wider than those read")

// keepError carries an error of the check through write unchanged.
type keepError struct{ error }

func (k keepError) Unwrap() error { return k.error }

// ReadCSV creates table from a CSV file with DuckDB's own reader
// (parallel, no copy through dpsql), with spec's types, all or nothing,
// while the caller checks the same file: check waits for that check. Its
// error (a malformed row, with its line) is returned as it is; should the
// check have widened the types, ErrTypesWidened; and should DuckDB's count
// of rows or of any column's values differ from the check's, or its reader
// fail, ErrCSVDiffers, so that the caller loads the file through its
// checked copy instead. In each case no table is left.
func (s *Source) ReadCSV(ctx context.Context, table, path string, spec CSVSpec, check func() (CSVCheck, error)) (int64, error) {
	delim := spec.Delimiter
	if delim == 0 {
		delim = ','
	}
	if delim > 127 || delim == '"' || delim == '\n' || delim == '\r' {
		return 0, ErrCSVDiffers // DuckDB's reader takes other delimiters, but not as csvimport reads them
	}
	n, err := s.write(ctx, table, func(db *sql.DB) (int64, error) {
		defs := make([]string, len(spec.Names))
		cols := make([]string, len(spec.Names))
		sel := make([]string, len(spec.Names))
		counts := make([]string, len(spec.Names))
		for i := range spec.Names {
			defs[i] = Quote(spec.Names[i]) + " " + duckType(spec.Types[i])
			cols[i] = stringLiteral(fmt.Sprintf("c%d", i+1)) + ": " + stringLiteral(duckType(spec.Types[i]))
			sel[i] = fmt.Sprintf("c%d", i+1)
			if duckType(spec.Types[i]) == "DOUBLE" {
				sel[i] += " + 0.0" // -0 stored as 0, as SQLite stores it
			}
			counts[i] = "system.main.count(" + Quote(spec.Names[i]) + ")"
		}
		if _, err := db.ExecContext(ctx, "CREATE TABLE "+Quote(table)+" ("+strings.Join(defs, ", ")+")"); err != nil {
			return 0, err
		}
		header := "false"
		if spec.Header {
			header = "true"
		}
		read := fmt.Sprintf("INSERT INTO %s SELECT %s FROM read_csv(%s, header = %s, delim = %s, quote = '\"', escape = '\"', columns = {%s}, auto_detect = false, strict_mode = true, null_padding = false, ignore_errors = false, allow_quoted_nulls = true, skip = 0)",
			Quote(table), strings.Join(sel, ", "), stringLiteral(path), header, stringLiteral(string(delim)), strings.Join(cols, ", "))
		_, rerr := db.ExecContext(ctx, read)
		checked, cerr := check()
		if cerr != nil {
			return 0, keepError{cerr} // the file's own error comes first
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, fmt.Errorf("%w (%v)", ErrCSVDiffers, firstLine(rerr.Error()))
		}
		if fmt.Sprint(checked.Types) != fmt.Sprint(spec.Types) {
			return 0, keepError{ErrTypesWidened}
		}
		got := make([]int64, len(spec.Names)+1)
		ptrs := make([]any, len(got))
		for i := range got {
			ptrs[i] = &got[i]
		}
		if err := db.QueryRowContext(ctx, "SELECT system.main.count(*), "+strings.Join(counts, ", ")+" FROM "+Quote(table)).Scan(ptrs...); err != nil {
			return 0, err
		}
		if got[0] != checked.Rows || fmt.Sprint(got[1:]) != fmt.Sprint(checked.Values) {
			return 0, fmt.Errorf("%w: %d rows and %v values, where the check found %d and %v", ErrCSVDiffers, got[0], got[1:], checked.Rows, checked.Values)
		}
		return got[0], nil
	})
	var k keepError
	if errors.As(err, &k) {
		return 0, k.error
	}
	return n, err
}

// stringLiteral quotes s as a DuckDB string literal.
func stringLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

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
		var k keepError
		if errors.Is(err, ErrCSVDiffers) || errors.As(err, &k) || ctx.Err() != nil {
			return 0, err
		}
		return 0, fmt.Errorf("importing into %s: %v", s.Path, firstLine(err.Error()))
	}
	// Storing the rows (the checkpoint) is the last step that may be
	// cancelled: if it fails the table goes too, so that a cancelled
	// import is one that imported nothing (a table left behind, with all
	// its rows, used to outlive an "import cancelled" message).
	s.observe("CHECKPOINT")
	if _, err := db.ExecContext(ctx, "CHECKPOINT"); err != nil {
		_, _ = db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+Quote(table))
		_, _ = db.ExecContext(context.Background(), "CHECKPOINT")
		return 0, err
	}
	return n, nil
}
