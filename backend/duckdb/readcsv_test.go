//go:build cgo

package duckdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/csvimport"
	_ "modernc.org/sqlite"
)

// TestReadCSVStoresWhatImportStores: a file csvimport has checked, read by
// DuckDB's reader with the checked types, holds exactly the rows and values
// csvimport stores in SQLite (a differential test over files with quoting,
// line breaks in fields, CRLF, a byte-order mark, blank lines, widened
// types, -0, exponents, big integers, tabs as delimiter and no header); where
// DuckDB reads a file otherwise, ReadCSV says so (ErrCSVDiffers) and leaves
// no table, and the caller takes the exact path.
func TestReadCSVStoresWhatImportStores(t *testing.T) {
	t.Parallel()
	big := strings.Builder{}
	big.WriteString("id,x,s\n")
	for i := 0; i < 30000; i++ {
		fmt.Fprintf(&big, "%d,%d.25,\"s%d, \"\"q\"\"\"\n", i, i-15000, i%7)
	}
	type file struct {
		text string
		opts csvimport.Options
		fast bool // DuckDB's reader must take it
	}
	files := []file{
		{"a,b,c\n1,1.5,x\n2,,y\n", csvimport.Options{}, true},
		{"id\n1\n\n\n2\n", csvimport.Options{}, true},
		{"s,t\n\"a\nb\",\"\"\n\"x\"\"y\",z\n", csvimport.Options{}, true},
		{"a,b\r\n1,2\r\n3,4\r\n", csvimport.Options{}, true},
		{"\ufeffa,b\n1,2\n", csvimport.Options{}, true},
		{"a\n1\n2\n3\n4.5\n-0\n1e-5\n", csvimport.Options{SampleRows: 2}, true},
		{"a\n1\n2\n99999999999999999999\n", csvimport.Options{SampleRows: 2}, true},
		{"a\n0.1\n0.10\n02134\n", csvimport.Options{}, true},
		{"a\tb\n1\tx y\n", csvimport.Options{Delimiter: '\t'}, true},
		{"1,x\n2,y\n", csvimport.Options{NoHeader: true}, true},
		{"a,b\n1,2\n\n\n", csvimport.Options{}, false}, // trailing blank lines: either way
		{"a, b \n 1 , x \n", csvimport.Options{}, true},
		{big.String(), csvimport.Options{SampleRows: 100}, true},
	}
	for i, f := range files {
		dir := t.TempDir()
		path := filepath.Join(dir, "f.csv")
		if err := os.WriteFile(path, []byte(f.text), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		checked, err := csvimport.Check(ctx, path, f.opts)
		if err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
		lite, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "s.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer lite.Close()
		if _, _, err := csvimport.Import(ctx, lite, "t", path, f.opts); err != nil {
			t.Fatalf("file %d: import: %v", i, err)
		}
		var names, types []string
		for _, c := range checked.Columns {
			names, types = append(names, c.Name), append(types, c.Type)
		}
		src := &Source{Path: filepath.Join(dir, "d.duckdb")}
		defer src.Close()
		n, err := src.ReadCSV(ctx, "t", path, CSVSpec{Names: names, Types: types, Delimiter: f.opts.Delimiter, Header: !f.opts.NoHeader},
			func() (CSVCheck, error) {
				return CSVCheck{Types: types, Rows: checked.Rows, Values: checked.Values}, nil
			})
		if errors.Is(err, ErrCSVDiffers) && !f.fast {
			continue
		}
		if err != nil || n != checked.Rows {
			t.Errorf("file %d: ReadCSV %d rows, %v (checked %d)", i, n, err, checked.Rows)
			continue
		}
		want := dump(t, lite, names, "rowid")
		db, err := src.DB()
		if err != nil {
			t.Fatal(err)
		}
		if got := dump(t, db, names, ""); got != want {
			t.Errorf("file %d: DuckDB holds\n%.600s\nSQLite\n%.600s", i, got, want)
		}
	}
}

// dump is a table's rows as text, each value with its Go type (floats
// in full, -0 apart from 0), in order (DuckDB keeps a single insert's
// order; SQLite's by rowid).
func dump(t *testing.T, db *sql.DB, names []string, order string) string {
	t.Helper()
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = Quote(n)
	}
	q := "SELECT " + strings.Join(quoted, ", ") + " FROM t"
	if order != "" {
		q += " ORDER BY " + order
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sb strings.Builder
	vals := make([]any, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			switch x := v.(type) {
			case float64:
				fmt.Fprintf(&sb, "f%v/%v|", x, math.Signbit(x))
			case []byte:
				fmt.Fprintf(&sb, "%T%q|", "", x)
			default:
				fmt.Fprintf(&sb, "%T%#v|", v, v)
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}
