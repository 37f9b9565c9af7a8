package dpsql_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/planner"
)

// TestSingleQueryNeverNoisier: on a fresh budget, whatever its total,
// whatever the query's ε and shape, the mechanism the engine chooses gives
// no cell more noise than Laplace at the query's ε (EXPLAIN's 95% error
// bounds) — basic composition stays available, so one query never costs
// more than before zCDP accounting.
func TestSingleQueryNeverNoisier(t *testing.T) { testSingleQueryNeverNoisier(t, parallel(t)) }

func testSingleQueryNeverNoisier(t *testing.T, h *harness) {
	for _, total := range []string{"epsilon = 1", "epsilon = 1, delta = 1e-6", "epsilon = 10, delta = 1e-3", "epsilon = 100, delta = 1e-9"} {
		path := h.newDB(t)
		mustRun(t, h.open(t, path, dpsql.Options{Owner: true}), "SET BUDGET "+total)
		e := h.open(t, path, dpsql.Options{})
		for _, eps := range []float64{0.001, 0.01, 0.1, 1} {
			for _, shape := range []string{
				"COUNT(*) FROM t",
				"g, COUNT(*), AVG(x) FROM t GROUP BY g",
				"SUM(i) FROM t",                 // bounds chosen privately
				"x, COUNT(*) FROM t GROUP BY x", // partition selection
			} {
				opts := fmt.Sprintf("epsilon = %g", eps)
				if shape == "x, COUNT(*) FROM t GROUP BY x" {
					opts += ", delta = 1e-10"
				}
				auto := explainErrors(t, e, fmt.Sprintf("EXPLAIN SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (%s) %s", opts, shape))
				lap := explainErrors(t, e, fmt.Sprintf("EXPLAIN SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (%s, noise = 'laplace') %s", opts, shape))
				for i := range lap {
					if auto[i] > lap[i]*(1+1e-12) {
						t.Errorf("%s, ε = %g, %s: cell %d gets ±%g, Laplace ±%g", total, eps, shape, i, auto[i], lap[i])
					}
				}
			}
		}
	}
}

// explainErrors reads the 95% error bounds of the cells with declared
// bounds from EXPLAIN, and the ε of the bound searches and selection (as
// the error of a pure part: 1/ε).
func explainErrors(t *testing.T, e *dpsql.Engine, q string) []float64 {
	t.Helper()
	var out []float64
	for _, row := range query(t, e, q).Rows {
		step, detail := row[0].(string), row[1].(string)
		var v float64
		switch {
		case len(step) > 6 && step[:6] == "noise ":
			if _, err := fmt.Sscanf(detail[strings.LastIndex(detail, "±")+len("±"):], "%g", &v); err != nil {
				continue // a cell whose bounds a search chooses
			}
		case len(step) > 14 && step[:14] == "bounds search ", step == "groups" && strings.Contains(detail, "partition selection"):
			eps := detail[strings.Index(detail, "ε=")+len("ε="):]
			if _, err := fmt.Sscanf(eps, "%g", &v); err != nil {
				t.Fatalf("%s: %q", step, detail)
			}
			v = 1 / v
		default:
			continue
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		t.Fatalf("no noise rows in EXPLAIN of %s", q)
	}
	return out
}

// TestPureBudgetAndRecordedRho: under SET BUDGET ... PURE a query asking
// for Gaussian noise is refused before anything is charged; a Laplace
// query with a bound search records ρ = Σ ε_k²/2 over its parts (search
// 0.2 of ε = 1 — its sparse vector run 0.16 and its two clipped-share
// counts 0.02 each — and the cell 0.8: 0.0128 + 0.0002 + 0.0002 + 0.32);
// a Gaussian one records its share
// of ρ_T.
func TestPureBudgetAndRecordedRho(t *testing.T) { testPureBudgetAndRecordedRho(t, parallel(t)) }

func testPureBudgetAndRecordedRho(t *testing.T, h *harness) {
	path := h.newDB(t)
	owner := h.open(t, path, dpsql.Options{Owner: true})
	r := mustRun(t, owner, "SET BUDGET epsilon = 10 pure")
	if !strings.Contains(r[0].Message, "pure ε-DP") {
		t.Errorf("message %q", r[0].Message)
	}
	if _, err := owner.Query(context.Background(), "SET BUDGET epsilon = 10, delta = 1e-6 PURE"); err == nil || !strings.Contains(err.Error(), "delta = 0") {
		t.Errorf("PURE with δ: %v", err)
	}
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	_, err := e.Query(context.Background(), "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (noise = 'gaussian') COUNT(*) FROM t")
	if err == nil || !strings.Contains(err.Error(), "PURE") {
		t.Errorf("Gaussian under PURE: %v", err)
	}
	if st, _ := e.Budget(context.Background()); st.Spent.Epsilon != 0 {
		t.Errorf("a refused query was charged: %+v", st)
	}
	res := query(t, e, "SELECT SUM(i) FROM t")
	// Pure parts, ε²/2 each: the search's three (0.8, 0.1 and 0.1 of the
	// bounds' share f) and the sum's cell (1 − f).
	f := planner.DefaultBoundsFraction
	wantRho := (math.Pow(0.8*f, 2) + 2*math.Pow(0.1*f, 2) + math.Pow(1-f, 2)) / 2
	if res.Mechanism != budget.Laplace || math.Abs(res.Rho-wantRho) > 1e-9 {
		t.Errorf("Laplace with a search: %s ρ=%v, want %v", res.Mechanism, res.Rho, wantRho)
	}
	mustRun(t, owner, "SET BUDGET epsilon = 10, delta = 1e-6")
	res = query(t, e, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (noise = 'gaussian') SUM(i) FROM t")
	if want := budget.RhoFor(10, 5e-7) / 10; res.Mechanism != budget.Gaussian || math.Abs(res.Rho-want) > 1e-12 {
		t.Errorf("Gaussian: %s ρ=%v, want %v", res.Mechanism, res.Rho, want)
	}
	if _, err := e.Query(context.Background(), "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (noise = 'uniform') COUNT(*) FROM t"); err == nil || !strings.Contains(err.Error(), "noise takes") {
		t.Errorf("unknown noise: %v", err)
	}
}

// TestCachedRepeatSaysNothingWasSpent: a repeat answered from the cache
// does not repeat the first answer's note of what it spent beside
// "nothing charged".
func TestCachedRepeatSaysNothingWasSpent(t *testing.T) {
	h := parallel(t)
	path := h.newDB(t)
	owner := h.open(t, path, dpsql.Options{Owner: true})
	mustRun(t, owner, "SET BUDGET epsilon = 10, delta = 1e-6")
	e, err := h.openEngine(path, dpsql.Options{Epsilon: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	const q = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (noise = 'gaussian') COUNT(*) FROM t"
	first, again := query(t, e, q), query(t, e, q)
	if !strings.Contains(strings.Join(first.Notes, "\n"), "this query spent") {
		t.Fatalf("the charged answer's notes: %q", first.Notes)
	}
	notes := strings.Join(again.Notes, "\n")
	if again.Cost.Epsilon != 0 || !strings.Contains(notes, "nothing charged") || strings.Contains(notes, "spent") {
		t.Errorf("the repeat: cost %+v, notes %q", again.Cost, again.Notes)
	}
}

// TestShowBudgetSaysWhyNothingFits: after a Gaussian query, a budget whose
// δ the owner set to 0 fits nothing although its ε is not spent; SHOW
// BUDGET says why, as a refused query does (issue 51).
func TestShowBudgetSaysWhyNothingFits(t *testing.T) {
	h := parallel(t)
	path := h.newDB(t)
	owner := h.open(t, path, dpsql.Options{Owner: true})
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	query(t, e, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (noise = 'gaussian') COUNT(*) FROM t")
	mustRun(t, owner, "SET BUDGET epsilon = 100")
	_, err := e.Query(context.Background(), "SELECT COUNT(*) FROM t")
	if err == nil || !strings.Contains(err.Error(), "accounted in zCDP") {
		t.Fatalf("query on a stuck budget: %v", err)
	}
	r := query(t, e, "SHOW BUDGET")
	if !strings.Contains(strings.Join(r.Notes, "\n"), "nothing more fits: queries with Gaussian noise were charged") {
		t.Errorf("SHOW BUDGET notes %q lack why nothing fits", r.Notes)
	}
	mustRun(t, owner, "SET BUDGET epsilon = 100, delta = 1e-6")
	if r := query(t, e, "SHOW BUDGET"); strings.Contains(strings.Join(r.Notes, "\n"), "nothing more fits") {
		t.Errorf("SHOW BUDGET of a budget that fits says it does not: %q", r.Notes)
	}
}
