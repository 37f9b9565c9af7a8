package rewrite_test

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/rewrite"
)

var update = flag.Bool("update", false, "rewrite golden files")

func testCatalog() *catalog.Catalog {
	return catalog.New(
		&catalog.Table{
			Name: "adult", HasPolicy: true,
			Columns: []catalog.Column{{Name: "Age", Type: "INTEGER"}, {Name: "Sex", Type: "TEXT"}, {Name: "Education", Type: "TEXT"}, {Name: "Capital Gain", Type: "INTEGER"}},
			Bounds:  map[string]catalog.Bounds{"Age": {Lo: 0, Hi: 125}},
			Domains: map[string][]any{"Sex": {"Female", "Male"}, "Education": {"Bachelors", "HS-grad", "Masters"}},
		},
		&catalog.Table{
			Name: "visits", HasPolicy: true,
			Columns: []catalog.Column{{Name: "uid", Type: "INTEGER"}, {Name: "cost", Type: "REAL"}, {Name: "ward", Type: "TEXT"}, {Name: "day", Type: "INTEGER"}},
			Bounds:  map[string]catalog.Bounds{"cost": {Lo: 0, Hi: 500}},
			Domains: map[string][]any{"ward": {"A", "B"}},
			Unit:    catalog.Unit{Column: "uid", MaxGroups: 2, MaxRows: 3},
		},
		&catalog.Table{Name: "lookup", Public: true, Columns: []catalog.Column{{Name: "code", Type: "TEXT"}, {Name: "label", Type: "TEXT"}}},
	)
}

// TestGolden plans and rewrites each query of testdata/queries.sql and
// compares the backend SQL, the noise plan and the post-processing SQL with
// testdata/rewrite.golden (go test ./rewrite -update regenerates it).
func TestGolden(t *testing.T) {
	src, err := os.ReadFile("testdata/queries.sql")
	if err != nil {
		t.Fatal(err)
	}
	stmts, err := parser.ParseScript(string(src))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, s := range stmts {
		sel := s.(*parser.SelectStmt)
		fmt.Fprintf(&out, "query: %s\n", parser.FormatStmt(sel))
		plan, err := planner.PlanSelect(sel, testCatalog(), planner.Settings{Epsilon: 1}, planner.Inputs{})
		if err != nil {
			// SQL over released results: each DP part, then the outer
			// query with the parts as (empty) VALUES lists.
			comp, cerr := planner.PlanComposite(sel, testCatalog(), planner.Settings{Epsilon: 1}, planner.Inputs{})
			if comp == nil || cerr != nil {
				t.Fatalf("%s: %v (as a composite query: %v)", parser.FormatStmt(sel), err, cerr)
			}
			for i, part := range comp.Parts {
				fmt.Fprintf(&out, "part %d: %s\n", i+1, parser.FormatStmt(part.Stmt))
			}
			fmt.Fprintf(&out, "outer: %s\n\n", comp.Outer.SQL)
			continue
		}
		switch p := plan.(type) {
		case *planner.PublicQuery:
			out.WriteString("public: runs as written\n\n")
		case *planner.PrivateQuery:
			rw, err := rewrite.Private(p)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&out, "scan: %s\n", rw.Scan)
			for i, sr := range p.Searches {
				fmt.Fprintf(&out, "search s%d: %s epsilon=%.6g\n", i, sr.Label, sr.Epsilon)
			}
			for i, c := range p.Cells {
				fmt.Fprintf(&out, "cell c%d: %s sensitivity=%g epsilon=%.6g source=%+v\n", i, c.Label, c.L1Sensitivity, c.Epsilon, rw.CellSource[i])
			}
			fmt.Fprintf(&out, "unit: %+v\n", p.Unit)
			if sel := p.Selection; sel != nil {
				fmt.Fprintf(&out, "selection: epsilon=%.6g delta=%g sensitivity=%g threshold=%.6g units column m%d\n", sel.Epsilon, sel.Delta, sel.Sensitivity, sel.Threshold, rw.UnitsColumn)
			}
			fmt.Fprintf(&out, "post: %s\n\n", rw.Post)
		}
	}
	got := out.String()
	if *update {
		if err := os.WriteFile("testdata/rewrite.golden", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("testdata/rewrite.golden")
	if err != nil {
		t.Fatalf("%v (run go test ./rewrite -update)", err)
	}
	if got != string(want) {
		t.Errorf("rewrite output differs from testdata/rewrite.golden (go test ./rewrite -update to accept):\n%s", got)
	}
}

// FuzzPlanRewrite feeds arbitrary statements through parse, plan and
// rewrite: none may panic, and every private plan must rewrite.
func FuzzPlanRewrite(f *testing.F) {
	src, _ := os.ReadFile("testdata/queries.sql")
	for _, q := range strings.Split(string(src), ";") {
		f.Add(q)
	}
	f.Add(`SELECT "Sex", COUNT(*) FROM adult GROUP BY "Sex" ORDER BY 9`)
	f.Add(`SELECT AVG("Age", contribution_bounds_per_group => (5, 1)) FROM adult`)
	f.Fuzz(func(t *testing.T, q string) {
		stmts, _ := parser.ParseScript(q)
		for _, s := range stmts {
			sel, ok := s.(*parser.SelectStmt)
			if !ok {
				continue
			}
			plan, err := planner.PlanSelect(sel, testCatalog(), planner.Settings{Epsilon: 1}, planner.Inputs{})
			if err != nil {
				continue
			}
			if p, ok := plan.(*planner.PrivateQuery); ok {
				if _, err := rewrite.Private(p); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				for _, c := range p.Cells {
					if (c.Search < 0 && (!(c.L1Sensitivity > 0) || math.IsInf(c.L1Sensitivity, 0))) || !(c.Epsilon > 0) {
						t.Fatalf("%s: cell %s has sensitivity %v, epsilon %v", q, c.Label, c.L1Sensitivity, c.Epsilon)
					}
				}
			}
		}
	})
}
