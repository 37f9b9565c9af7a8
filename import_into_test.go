package dpsql_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/csvimport"
)

// TestImportReplaceAndAppend: --replace swaps a table's rows keeping its
// policy, --append adds rows of the same columns and types; both drop the
// table's cached answers (the repeat is charged again), and a bad file,
// mismatched columns or a missing policy column change nothing.
func TestImportReplaceAndAppend(t *testing.T) {
	h := parallel(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "r.db")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	owner := h.open(t, path, dpsql.Options{Owner: true})
	if _, _, err := owner.ImportCSV(ctx, "t", write("a.csv", "x,g\n1,a\n2,b\n3,a\n"), csvimport.Options{}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, owner, `CREATE PRIVACY POLICY ON t; ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 10); SET BUDGET epsilon = 100`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	const q = `SELECT COUNT(*), SUM(x) FROM t`
	if got := rowsOf(query(t, e, q)); got != "3:6" {
		t.Fatalf("before: %s", got)
	}
	before := spent(t, owner)
	// Replace: the policy stays, the cache entry goes.
	if n, _, err := owner.ImportInto(ctx, "t", write("b.csv", "x,g\n5,a\n5,b\n"), csvimport.Options{}, dpsql.ImportReplace); err != nil || n != 2 {
		t.Fatalf("replace: %d %v", n, err)
	}
	if got := rowsOf(query(t, e, q)); got != "2:10" {
		t.Errorf("after replace: %s (a stale cached answer?)", got)
	}
	if spent(t, owner) <= before {
		t.Error("the repeat after the replace was not charged: its cached answer survived")
	}
	// Append: same columns, INTEGER into INTEGER.
	if n, _, err := owner.ImportInto(ctx, "t", write("c.csv", "x,g\n1,c\n"), csvimport.Options{}, dpsql.ImportAppend); err != nil || n != 1 {
		t.Fatalf("append: %d %v", n, err)
	}
	if got := rowsOf(query(t, e, q)); got != "3:11" {
		t.Errorf("after append: %s", got)
	}
	// Refusals leave the table as it was.
	for _, c := range []struct {
		name, text string
		mode       dpsql.ImportMode
		want       string
	}{
		{"d.csv", "x,g\n1.5,a\n", dpsql.ImportAppend, "holds REAL values"},
		{"e.csv", "g,x\na,1\n", dpsql.ImportAppend, "same columns in the same order"},
		{"f.csv", "g\na\n", dpsql.ImportReplace, `names column "x"`},
		{"g.csv", "x,g\n1,a\n2,b,extra\n", dpsql.ImportReplace, "line 3"},
		{"i.csv", "x,g\n1,a\nn/a,b\n", dpsql.ImportReplace, `column "x" of table t has bounds [0, 10]`}, // a bounded INTEGER column turned TEXT (issue 51)
	} {
		_, _, err := owner.ImportInto(ctx, "t", write(c.name, c.text), csvimport.Options{}, c.mode)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if got := rowsOf(query(t, e, q)); got != "3:11" {
		t.Errorf("after the refusals: %s", got)
	}
	var scratch int
	if err := dpsql.RawDB(owner).QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '\_dpsql\_import\_%' ESCAPE '\'`).Scan(&scratch); err != nil || scratch != 0 {
		t.Errorf("%d scratch tables left behind (%v)", scratch, err)
	}
	if _, _, err := owner.ImportInto(ctx, "nope", write("h.csv", "x\n1\n"), csvimport.Options{}, dpsql.ImportAppend); !errors.Is(err, dpsql.ErrUnknownName) {
		t.Errorf("append to a missing table: %v", err)
	}
}
