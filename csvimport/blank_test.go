package csvimport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// TestBlankLines: a blank line in a one-column file is an empty value (as
// sqlite3's .import and DuckDB's read_csv keep it); in a wider file blank
// lines at the end are ignored and one before a row is refused at its line;
// a line break inside a quoted field is never taken for a blank line.
func TestBlankLines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, csv string
		want      []string // the stored rows, columns joined by '|', NULL as ∅
		errLine   int
	}{
		{"one column", "id\n1\n\n\n2\n", []string{"1", "∅", "∅", "2"}, 0},
		{"one column, CRLF", "id\r\n1\r\n\r\n2\r\n", []string{"1", "∅", "2"}, 0},
		{"one column, blank last line", "id\n1\n\n", []string{"1", "∅"}, 0},
		{"one column, no final break", "id\n\n7", []string{"∅", "7"}, 0},
		{"blank lines before the header", "\n\nid\n\n5\n", []string{"∅", "5"}, 0},
		{"quoted line breaks", "s\n\"a\n\nb\"\n\n", []string{"a\n\nb", "∅"}, 0},
		{"doubled quotes", "s\n\"x\"\"\n\"\n\n", []string{"x\"\n", "∅"}, 0},
		{"wide, blank lines at the end", "a,b\n1,2\n\n\n", []string{"1|2"}, 0},
		{"wide, blank line before a row", "a,b\n1,2\n\n3,4\n", nil, 3},
		{"wide, blank line after the header", "a,b\n\n3,4\n", nil, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := testDB(t)
			path := filepath.Join(t.TempDir(), "f.csv")
			if err := os.WriteFile(path, []byte(c.csv), 0o644); err != nil {
				t.Fatal(err)
			}
			n, cols, err := Import(context.Background(), db, "t", path, Options{})
			if c.errLine > 0 {
				var ie *Error
				if !errors.As(err, &ie) || ie.Line != c.errLine || !strings.Contains(ie.Msg, "blank") {
					t.Fatalf("want an error about the blank line %d, got %v", c.errLine, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(len(c.want)) {
				t.Errorf("%d rows imported, want %d", n, len(c.want))
			}
			exprs := make([]string, len(cols))
			for i, col := range cols {
				exprs[i] = `COALESCE(CAST("` + col.Name + `" AS TEXT), '∅')`
			}
			rows, err := db.Query(`SELECT ` + strings.Join(exprs, ` || '|' || `) + ` FROM t ORDER BY rowid`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var got []string
			for rows.Next() {
				var s string
				rows.Scan(&s)
				got = append(got, s)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("stored %q, want %q", got, c.want)
			}
		})
	}
}

// TestBlankKeeperReadSizes: the rewriting does not depend on how the
// stream is cut into reads (a CR and its LF, a quote, a break in different
// reads).
func TestBlankKeeperReadSizes(t *testing.T) {
	t.Parallel()
	in := "h\r\n\r\n\"q\r\n\r\n\"\n\n\nx\r\n\r\n"
	want := "h\r\n\"\"\r\n\"q\r\n\r\n\"\n\"\"\n\"\"\nx\r\n\"\"\r\n"
	for _, r := range []func() *blankKeeper{
		func() *blankKeeper { return newBlankKeeper(strings.NewReader(in)) },
		func() *blankKeeper { return newBlankKeeper(iotest.OneByteReader(strings.NewReader(in))) },
		func() *blankKeeper { return newBlankKeeper(iotest.HalfReader(strings.NewReader(in))) },
	} {
		var sb strings.Builder
		buf := make([]byte, 3)
		k := r()
		for {
			n, err := k.Read(buf)
			sb.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if sb.String() != want {
			t.Errorf("got %q, want %q", sb.String(), want)
		}
	}
}

// TestHeaderMistakes: a header the database could not take is refused with
// a message about the file, not SQLite's.
func TestHeaderMistakes(t *testing.T) {
	t.Parallel()
	wide := make([]string, MaxColumns+1)
	for i := range wide {
		wide[i] = "c" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
	}
	for _, c := range []struct{ csv, want string }{
		{"a\x00b,c\n1,2\n", "NUL byte"},
		{strings.Join(wide, ",") + "\n", "at most 2000"},
	} {
		path := filepath.Join(t.TempDir(), "f.csv")
		if err := os.WriteFile(path, []byte(c.csv), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := Import(context.Background(), testDB(t), "t", path, Options{})
		var ie *Error
		if !errors.As(err, &ie) || !strings.Contains(ie.Msg, c.want) || strings.Contains(ie.Msg, "SQL logic") {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
}

// TestCheckAgreesWithImport: Check finds the rows, types (widened after
// the sample too) and errors Import does, for every file of the other
// tests.
func TestCheckAgreesWithImport(t *testing.T) {
	t.Parallel()
	files := []string{
		"id\n1\n\n\n2\n", "id\r\n1\r\n\r\n2\r\n", "s\n\"a\n\nb\"\n\n", "a,b\n1,2\n\n\n", "a,b\n1,2\n\n3,4\n",
		"a,b,c\n1,1.5,x\n2,,y\n", "a\n1\n2\n3\n4.5\n", "a\n1\n2\n99999999999999999999\n", "a\n1\n2\n1e400\n",
		"a,b\n1,2\n3\n", "\ufeffa,b\n1,\"x\"\"y\"\n", "a\n0.1\n0.10\n-0\n", "a\xff\n1\n",
	}
	for i, f := range files {
		path := filepath.Join(t.TempDir(), "f.csv")
		if err := os.WriteFile(path, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
		opts := Options{SampleRows: 2} // so that rows after the sample widen types
		n, cols, ierr := Import(context.Background(), testDB(t), "t", path, opts)
		c, cerr := Check(context.Background(), path, opts)
		if (ierr == nil) != (cerr == nil) || (ierr != nil && ierr.Error() != cerr.Error()) {
			t.Errorf("file %d: Import %v, Check %v", i, ierr, cerr)
			continue
		}
		if ierr != nil {
			continue
		}
		if c.Rows != n || fmt.Sprint(c.Columns) != fmt.Sprint(cols) {
			t.Errorf("file %d: Import %d %v, Check %d %v", i, n, cols, c.Rows, c.Columns)
		}
	}
}
