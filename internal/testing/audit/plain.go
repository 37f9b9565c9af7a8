package audit

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/knobs"
)

// CheckCompiledOnNeighbours checks PlainStatements (40 per pair) on the
// auditor's neighbouring pairs drawn from r (8, or 3 with -short),
// opened with open over engines carrying hooks (with their small
// contribution bounds, so that the compiled bounding samples), and
// reports as errors of t each broken sensitivity claim, any compiled
// statement that failed in the engine (named where), and fewer compiled
// scans than statements.
func CheckCompiledOnNeighbours(t testing.TB, open Opener, hooks *knobs.Knobs, r *rand.Rand, where string) {
	t.Helper()
	databases := 8
	if testing.Short() {
		databases = 3
	}
	before := hooks.Compiled.Load()
	checked := 0
	for d := 0; d < databases; d++ {
		db := NewDatabase(r)
		path, path2, err := db.Build(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		pair, err := OpenPair(open, path, path2)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range PlainStatements(r, 40) {
			for _, p := range pair.Check(st) {
				t.Errorf("database %d (%s): %s: %s", d, strings.Join(db.Neighbour, "; "), st.SQL, p)
			}
			checked++
		}
		pair.Close()
	}
	compiled := hooks.Compiled.Load() - before
	t.Logf("%d plain statements checked, %d scans compiled", checked, compiled)
	if n := hooks.CompiledFailed.Load(); n > 0 {
		t.Errorf("%d compiled statements failed in %s", n, where)
	}
	if compiled < int64(checked) {
		t.Errorf("only %d scans of %d plain statements ran compiled in %s", compiled, checked, where)
	}
}

// PlainStatements are n statements whose measurement the printers
// compile (the compiled engines' auditor tests run them): aggregates
// of plain columns of the auditor's tables, of their joins (with the
// public table, and of the two private tables on the unit) and of
// subqueries (filtering, and aggregating per unit), grouped by
// columns with and without public domains, bins and CASE buckets,
// filtered by comparisons with literals, LIKE and float arithmetic,
// measuring columns and IFNULL.
func PlainStatements(r *rand.Rand, n int) []Statement {
	aggs := []string{"COUNT(*)", "COUNT(%s)", "SUM(%s)", "AVG(%s)", "VARIANCE(%s)", "STDDEV(%s)", "SUM(%s, contribution_bounds_per_row => (-20, 20))",
		"SUM(IFNULL(%s, 1) * 2, contribution_bounds_per_row => (-10, 10))",
		"AVG(%s, contribution_bounds_per_row => (0, 100))", "COUNT(%s, contribution_bounds_per_group => (0, 2))", "SUM(%s, contribution_bounds_per_group => (-10, 10))",
		"COUNT(DISTINCT %s)"} // (the auditor's recorder does not follow the percentiles' tree descent)
	type rel struct {
		table string
		cols  []string
		keys  []string
		where []string
	}
	rels := []rel{
		{"p", []string{"w", "n", "v", "uid"}, []string{"", "g", "n", "h", "g, n", "FLOOR(n / 2) * 2", "CASE WHEN w > 1 THEN 'hi' WHEN w IS NULL THEN NULL ELSE 'lo' END"},
			[]string{"", "w > 0", "n IN (1, 2)", "g = 'a' OR w < -5", "NOT (v >= 2.5)", "h IS NOT NULL", "n BETWEEN 2 AND 3", "h LIKE 'a%'", "w * 1.5 + n > 2"}},
		{"q", []string{"x", "y"}, []string{"", "k"}, []string{"", "y > 1", "k <> 'x'", "x IS NULL"}},
		{"p JOIN pub ON p.g = pub.g", []string{"p.w", "p.n", "pub.weight"}, []string{"", "p.g", "pub.label"}, []string{"", "pub.weight > 1", "p.n < 3"}},
		{"p JOIN p2 USING (uid)", []string{"p.w", "p2.z"}, []string{"", "p.g", "p2.tag"}, []string{"", "p2.z > 0"}},
		{"(SELECT uid, w, n AS m, g FROM p WHERE n > 0) AS s", []string{"s.w", "s.m"}, []string{"", "s.g"}, []string{"", "s.m < 3"}},
		{"(SELECT uid, g, COUNT(*) AS k, MAX(n) AS m FROM p GROUP BY uid, g) AS s", []string{"s.k", "s.m"}, []string{"", "s.g"}, []string{"", "s.k > 1"}},
	}
	var out []Statement
	for len(out) < n {
		rl := rels[r.IntN(len(rels))]
		col := rl.cols[r.IntN(len(rl.cols))]
		agg := strings.ReplaceAll(aggs[r.IntN(len(aggs))], "%s", col)
		key := rl.keys[r.IntN(len(rl.keys))]
		where := rl.where[r.IntN(len(rl.where))]
		sel := agg
		if key != "" {
			sel = key + ", " + agg
		}
		q := "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-5) " + sel + " FROM " + rl.table
		if where != "" {
			q += " WHERE " + where
		}
		if key != "" {
			q += " GROUP BY " + key
		}
		out = append(out, Statement{SQL: q})
	}
	return out
}
