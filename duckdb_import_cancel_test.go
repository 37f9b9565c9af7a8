//go:build cgo

package dpsql_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/internal/testopts"
)

// TestDuckDBImportCancelledWhileStoringImportsNothing: an import into a
// DuckDB file that already holds a table, cancelled while DuckDB stores
// the rows (its checkpoint), says "nothing was imported" and means it:
// the table is in neither the DuckDB file nor the state file, and the
// same import then succeeds. (The table used to stay, with all its rows,
// after the message; issue 51 W1.)
func TestDuckDBImportCancelledWhileStoringImportsNothing(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	duck := filepath.Join(dir, "c.duckdb")
	first := filepath.Join(dir, "first.csv")
	rows := filepath.Join(dir, "rows.csv")
	writeFile(t, first, "x\n1\n")
	writeFile(t, rows, "x,g\n1,a\n2,b\n3,a\n")
	owner := openDuck(t, duck, true, nil, nil)
	if _, _, err := owner.ImportCSV(context.Background(), "before", first, csvimport.Options{}); err != nil {
		t.Fatal(err)
	}
	owner.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := dpsql.Open("", dpsql.Options{Owner: true, DuckDB: duck, NoCache: true, Testing: &testopts.Options{
		DuckDBStatements: func(q string) {
			if q == "CHECKPOINT" {
				cancel() // Ctrl-C while the rows are being stored
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = e.ImportCSV(ctx, "visits", rows, csvimport.Options{})
	if !errors.Is(err, dpsql.ErrCancelled) || !strings.Contains(err.Error(), "nothing was imported") {
		t.Fatalf("cancelled while storing: %v", err)
	}
	tables := func(e *dpsql.Engine) string {
		t.Helper()
		r, err := e.Query(context.Background(), "SHOW TABLES")
		if err != nil {
			t.Fatal(err)
		}
		return rowsOf(r)
	}
	if got := tables(e); strings.Contains(got, "visits") {
		t.Errorf("after the cancelled import the engine lists %s", got)
	}
	e.Close()
	again := openDuck(t, duck, true, nil, nil) // a new process mirrors what the DuckDB file holds
	if got := tables(again); strings.Contains(got, "visits") || !strings.Contains(got, "before") {
		t.Errorf("the DuckDB file holds %s after the cancelled import", got)
	}
	if n, _, err := again.ImportCSV(context.Background(), "visits", rows, csvimport.Options{}); err != nil || n != 3 {
		t.Errorf("importing again: %d %v", n, err)
	}
}
