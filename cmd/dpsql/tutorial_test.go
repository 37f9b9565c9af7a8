package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/internal/adultdata"
)

var update = flag.Bool("update", false, "paste fresh outputs into docs/tutorial.md")

var tutorialBlock = regexp.MustCompile("(?s)```sql( owner| error)?\n(.*?)```\n(\n```text\n(.*?)```\n)?")

// TestTutorial runs every SQL block of docs/tutorial.md on adult.csv, in
// order, as the owner ("sql owner") or an analyst. Each block must succeed
// (a "sql error" block must fail), and its output must have the shape of
// the output pasted under it (shape: the same header lines and notes; the
// numbers, and how many rows a noisy answer has, are not compared). With
// -update the fresh outputs are pasted into the file.
func TestTutorial(t *testing.T) {
	csvPath := filepath.Join("..", "..", "..", "shared", "data", "adult.csv")
	if _, err := os.Stat(csvPath); err != nil {
		t.Skip("../shared/data/adult.csv not present")
	}
	docPath := filepath.Join("..", "..", "docs", "tutorial.md")
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "adult.db")
	owner, err := dpsql.Open(db, dpsql.Options{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, _, err := owner.ImportCSV(context.Background(), "adult", csvPath, csvimport.Options{}); err != nil {
		t.Fatal(err)
	}
	// The public tables the tutorial's sh block imports.
	if err := adultdata.ImportPublicTables(context.Background(), owner, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	analyst, err := dpsql.Open(db, dpsql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer analyst.Close()
	blocks := tutorialBlock.FindAllSubmatchIndex(doc, -1)
	if len(blocks) < 8 {
		t.Fatalf("found %d SQL blocks", len(blocks))
	}
	var out bytes.Buffer
	last := 0
	for _, m := range blocks {
		kind, sql := "", string(doc[m[4]:m[5]])
		if m[2] >= 0 {
			kind = string(doc[m[2]:m[3]])
		}
		eng := analyst
		if kind == " owner" {
			eng = owner
		}
		var screen bytes.Buffer
		pr, _ := newPrinter("table", &screen)
		runErr := eng.Run(context.Background(), sql, pr.print)
		if runErr != nil {
			screen.WriteString("error: " + runErr.Error() + "\n")
		}
		switch {
		case kind == " error" && runErr == nil:
			t.Errorf("block expected to fail ran:\n%s", sql)
		case kind != " error" && runErr != nil:
			t.Errorf("block failed: %v\n%s", runErr, sql)
		}
		if m[6] < 0 { // no output block (owner statements)
			continue
		}
		pasted := string(doc[m[8]:m[9]])
		if *update {
			out.Write(doc[last:m[8]])
			out.Write(screen.Bytes())
			last = m[9]
			continue
		}
		if shape(pasted) != shape(screen.String()) {
			t.Errorf("output of\n%s\nhas another shape than the pasted one:\n--- pasted\n%s--- now\n%s(go test ./cmd/dpsql -run Tutorial -update to paste it again)", sql, pasted, screen.String())
		}
	}
	if *update {
		out.Write(doc[last:])
		if err := os.WriteFile(docPath, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// shape keeps what does not depend on the noise: the header line of each
// table, the first words of each note, and the words of lines without
// digits. A run of lines with digits (a table's rows and its footer)
// counts as one: how many rows a noisy answer has may itself be noisy (a
// threshold query's groups, partition selection), and so are the
// numbers in a note.
func shape(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var b strings.Builder
	digits := false
	for i, l := range lines {
		row := false
		switch {
		case i+1 < len(lines) && strings.HasPrefix(lines[i+1], "---"):
			b.WriteString(strings.Join(strings.Fields(l), " "))
		case strings.HasPrefix(l, "---"):
			b.WriteString("---") // separator widths follow the noisy values
		case strings.HasPrefix(l, "note: "):
			w := strings.Fields(l)
			b.WriteString(strings.Join(w[:min(3, len(w))], " "))
		case strings.ContainsAny(l, "0123456789"):
			row = true
			if digits {
				continue // the same run
			}
			b.WriteString("#")
		default:
			b.WriteString(l)
		}
		digits = row
		b.WriteString("\n")
	}
	return b.String()
}

// TestShape: what the tutorial's check compares, and what it lets vary.
func TestShape(t *testing.T) {
	zero := "bound\n-----\n(0 rows; spent ε=1)\n"
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{zero, "bound\n-----\n   90\n(1 row; spent ε=1)\n", true},                                                              // a threshold query's row count is noisy
		{zero, "bound\n-----\n   90\n  110\n(2 rows; spent ε=1)\n", true},                                                      // so is how many rows pass
		{zero, "limit\n-----\n(0 rows; spent ε=1)\n", false},                                                                   // another header
		{zero, zero + "note: values clipped to bounds: gain [0, 5]\n", false},                                                  // a note appears
		{zero + "note: values clipped to bounds: gain [0, 5]\n", zero + "note: values clipped to bounds: gain [0, 9]\n", true}, // its numbers differ
		{zero + "note: values clipped to bounds: x\n", zero + "note: warning: the bounds of x\n", false},                       // another note
	} {
		if got := shape(c.a) == shape(c.b); got != c.same {
			t.Errorf("shape(%q) == shape(%q) is %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
