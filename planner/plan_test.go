package planner_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

var update = flag.Bool("update", false, "rewrite planner/testdata/plans.txt with the plans printed now")

// planCatalog is the catalog the plan cases run against: a table without
// a unit column, one with a unit and contribution bounds, and a public one.
func planCatalog() *catalog.Catalog {
	return catalog.New(
		&catalog.Table{
			Name: "adult", HasPolicy: true, Unit: catalog.Unit{MaxGroups: 1, MaxRows: 1},
			Columns: []catalog.Column{{Name: "Age", Type: "INTEGER"}, {Name: "Sex", Type: "TEXT"}, {Name: "Education", Type: "TEXT"}, {Name: "Capital Gain", Type: "INTEGER"}},
			Bounds:  map[string]catalog.Bounds{"Age": {Lo: 0, Hi: 125}},
			Domains: map[string][]any{"Sex": {"Female", "Male"}, "Education": {"Bachelors", "HS-grad", "Masters"}},
		},
		&catalog.Table{
			Name: "visits", HasPolicy: true,
			Columns: []catalog.Column{{Name: "uid", Type: "INTEGER"}, {Name: "cost", Type: "REAL"}, {Name: "ward", Type: "TEXT"}, {Name: "day", Type: "INTEGER"}},
			Bounds:  map[string]catalog.Bounds{"cost": {Lo: 0, Hi: 500}},
			Domains: map[string][]any{"ward": {"A", "B"}},
			Unit:    catalog.Unit{Column: "uid", MaxGroups: 8, MaxRows: 5},
		},
		&catalog.Table{Name: "lookup", Public: true, Columns: []catalog.Column{{Name: "code", Type: "TEXT"}, {Name: "label", Type: "TEXT"}}},
	)
}

// planCase is one case of testdata/plans.txt:
//
//	plan [epsilon=E] [delta=D] [noise=N]
//	SELECT ...
//	----
//	what the planner made of it
type planCase struct {
	directive string
	sql       string
	want      string
}

// TestPlans plans each statement of testdata/plans.txt under the
// directive's settings and compares the printed plan (cells with their
// sensitivities and ε shares, bound searches, partition selection, or the
// refusal with its position) with the expected text; -update rewrites it.
func TestPlans(t *testing.T) {
	const path = "testdata/plans.txt"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := readPlanCases(string(src))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for i, c := range cases {
		got := runPlanCase(t, c)
		if !*update && got != c.want {
			t.Errorf("case %d (%s):\n%s\ngot:\n%s\nwant:\n%s", i+1, c.directive, c.sql, got, c.want)
		}
		fmt.Fprintf(&out, "%s\n%s\n----\n%s\n\n", c.directive, c.sql, got)
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(cases) < 20 {
		t.Errorf("only %d plan cases", len(cases))
	}
}

// readPlanCases splits the file into cases; blank lines separate them.
func readPlanCases(src string) ([]planCase, error) {
	var cases []planCase
	for _, block := range strings.Split(strings.TrimSpace(src), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[0], "plan") {
			return nil, fmt.Errorf("a case starts with a plan line, then SQL: %q", block)
		}
		c := planCase{directive: lines[0]}
		sqlLines, wantLines, inWant := []string{}, []string{}, false
		for _, l := range lines[1:] {
			switch {
			case l == "----":
				inWant = true
			case inWant:
				wantLines = append(wantLines, l)
			default:
				sqlLines = append(sqlLines, l)
			}
		}
		c.sql, c.want = strings.Join(sqlLines, "\n"), strings.Join(wantLines, "\n")
		cases = append(cases, c)
	}
	return cases, nil
}

// runPlanCase plans one case and prints the outcome.
func runPlanCase(t *testing.T, c planCase) string {
	t.Helper()
	var set planner.Settings
	for _, f := range strings.Fields(c.directive)[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "epsilon", "delta":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", c.directive, err)
			}
			if k == "epsilon" {
				set.Epsilon = x
			} else {
				set.Delta = x
			}
		case "noise":
			set.Noise = v
		default:
			t.Fatalf("unknown setting %q in %q", k, c.directive)
		}
	}
	stmt, err := parser.ParseStatement(c.sql)
	if err != nil {
		return "syntax error: " + err.Error()
	}
	sel, ok := stmt.(*parser.SelectStmt)
	if !ok {
		t.Fatalf("not a SELECT: %s", c.sql)
	}
	plan, err := planner.PlanSelect(sel, planCatalog(), set, planner.Inputs{})
	if err != nil {
		return "error: " + err.Error()
	}
	return printPlan(plan)
}

var cellKinds = map[planner.CellKind]string{
	planner.CountRows: "count rows", planner.CountValues: "count values", planner.ClippedSum: "clipped sum",
	planner.CenteredSum: "centred sum", planner.CenteredSumSq: "centred sum of squares",
	planner.CountUnits: "count units", planner.CountDistinct: "count distinct", planner.QuantileTree: "quantile tree",
}

// printPlan prints what the planner decided, one fact per line.
func printPlan(plan planner.Plan) string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	var b strings.Builder
	switch p := plan.(type) {
	case *planner.PublicQuery:
		fmt.Fprintf(&b, "public: %s", p.SQL)
		return b.String()
	case *planner.PrivateQuery:
		fmt.Fprintf(&b, "private: ε=%s δ=%s unit=%q l0=%d l∞=%d", g(p.Epsilon), g(p.Delta), p.Unit.Column, p.Unit.MaxGroups, p.Unit.MaxRows)
		for _, k := range p.Keys {
			if k.Domain == nil {
				fmt.Fprintf(&b, "\nkey %s: partition selection", k.Column)
			} else {
				fmt.Fprintf(&b, "\nkey %s: public domain of %d", k.Column, len(k.Domain))
			}
		}
		for i, c := range p.Cells {
			fmt.Fprintf(&b, "\ncell %d: %s %s: scale %s, sensitivity %s, ε %s", i, cellKinds[c.Kind], c.Label, g(c.Scale), g(c.L1Sensitivity), g(c.Epsilon))
			if c.Search >= 0 {
				fmt.Fprintf(&b, ", bounds from search %d", c.Search)
			}
		}
		for i, s := range p.Searches {
			fmt.Fprintf(&b, "\nsearch %d: %s: ε %s, sensitivity %s", i, s.Label, g(s.Epsilon), g(s.Sensitivity))
		}
		if d := p.Dropped; d != nil {
			fmt.Fprintf(&b, "\nwhat bounding dropped: ε %s", g(d.Epsilon))
		}
		if s := p.Selection; s != nil {
			fmt.Fprintf(&b, "\npartition selection: ε %s, δ %s, sensitivity %s, threshold %s", g(s.Epsilon), g(s.Delta), g(s.Sensitivity), g(s.Threshold))
		}
		if t := p.Threshold; t != nil {
			fmt.Fprintf(&b, "\nsparse vector: %s over %d candidates, cutoff %d: ε %s, sensitivity %s, compared with %s (below: %v), monotonic %v; values ε %s", t.Text, t.Candidates, t.Cutoff, g(t.Sparse.Epsilon), g(t.Sparse.Sensitivity), g(t.Sparse.Threshold), t.Below, t.Sparse.Monotonic, g(t.ValueEpsilon))
		}
		if t := p.TopK; t != nil {
			fmt.Fprintf(&b, "\nreport noisy max: %s over %d candidates: ε %s, sensitivity %s, monotonic %v; values ε %s", t.Text, t.Candidates, g(t.TopK.Epsilon), g(t.TopK.Sensitivity), t.TopK.Monotonic, g(t.ValueEpsilon))
		}
		if p.TopKNote != "" {
			fmt.Fprintf(&b, "\ntop-k: %s", p.TopKNote)
		}
		for _, o := range p.Outputs {
			fmt.Fprintf(&b, "\noutput %s", o.Name)
		}
		return b.String()
	}
	return fmt.Sprintf("plan %T", plan)
}
