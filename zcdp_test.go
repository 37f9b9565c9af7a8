package dpsql_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/mechanism"
)

// zcdpWorkloadDB makes the issue-12 benchmark database: table c with one
// row per unit (2,000 units), and table h where each of 5,000 units has
// one row in each of 10 bins, with max_groups_contributed = 10 and a
// declared bin domain. Its budget is (ε = 1, δ = 1e-6), PURE when pure.
func zcdpWorkloadDB(t testing.TB, pure bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE c (v INTEGER);
		CREATE TABLE h (uid INTEGER, bin INTEGER);
		WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 1999)
		INSERT INTO c SELECT i FROM n;
		WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 49999)
		INSERT INTO h SELECT i / 10, i % 10 FROM n;`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	owner, err := openEngine(path, dpsql.Options{Owner: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	set := "SET BUDGET epsilon = 1, delta = 1e-6"
	if pure {
		set = "SET BUDGET epsilon = 1 PURE"
	}
	err = owner.Run(context.Background(), `CREATE PRIVACY POLICY ON c;
		CREATE PRIVACY POLICY ON h OPTIONS (privacy_unit_column = uid, max_groups_contributed = 10, max_rows_contributed = 1);
		ALTER PRIVACY POLICY ON h SET DOMAIN bin (0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
		`+set, func(*dpsql.Result) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// workloadSD runs 100 queries at ε = 0.01 (the whole budget) with seeded
// noise and returns the standard deviation of the errors of all their
// counts (exact: each is exact), and the mechanism of the last query.
func workloadSD(t testing.TB, path, q string, exact float64, seed uint64) (float64, string) {
	t.Helper()
	e, err := openEngine(path, dpsql.Options{Epsilon: 0.01}, mechanism.NewSecureNoiser(seeded{rand.New(rand.NewPCG(seed, seed))}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var ss float64
	n := 0
	var mech string
	for i := 0; i < 100; i++ {
		r, err := e.Query(context.Background(), q)
		if err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
		mech = r.Mechanism
		for _, row := range r.Rows {
			// Counts are clamped at 0, about 3.5 (counts) and 5 (bins)
			// Laplace scales below the exact value: a negligible truncation.
			d := float64(row[len(row)-1].(int64)) - exact
			ss += d * d
			n++
		}
	}
	if _, err := e.Query(context.Background(), q); err == nil {
		t.Errorf("a 101st query at ε = 0.01 within ε = 1 was answered")
	}
	return math.Sqrt(ss / float64(n)), mech
}

// TestZCDPWorkloads is issue 12's benchmark, measured: 100 COUNT queries,
// and 100 ten-bin histograms where a unit touches all 10 bins, each
// workload within (ε = 1, δ = 1e-6), under the engine's choice (zCDP,
// Gaussian) and under pure accounting (Laplace at ε = 0.01 each). Goals:
// the noise standard deviation ≤ 0.45× for the counts and ≤ 0.2× for the
// histograms. Each measured deviation is also checked against its
// theoretical value within 25%: for 100 (counts) or 1,000 (histogram)
// samples that is more than 3.5 standard errors of the sample deviation
// for either distribution (false-failure rate below 1e-3 per check, and the
// seeds are fixed).
func TestZCDPWorkloads(t *testing.T) {
	parallel(t)
	rhoEach := budget.RhoFor(1, 5e-7) / 100
	for _, w := range []struct {
		name, q         string
		l0, exact, goal float64
	}{
		{"100 COUNT queries", `SELECT COUNT(*) FROM c`, 1, 2000, 0.45},
		{"100 ten-bin histograms", `SELECT bin, COUNT(*) FROM h GROUP BY bin`, 10, 5000, 0.2},
	} {
		zc, mz := workloadSD(t, zcdpWorkloadDB(t, false), w.q, w.exact, 1)
		pure, mp := workloadSD(t, zcdpWorkloadDB(t, true), w.q, w.exact, 2)
		wantZ := math.Sqrt(w.l0) / math.Sqrt(2*rhoEach) // σ for L2 sensitivity √l0
		wantP := math.Sqrt2 * w.l0 / 0.01               // Laplace, L1 sensitivity l0
		t.Logf("%s within (1, 1e-6): zCDP (%s) sd %.1f (theory %.1f), pure (%s) sd %.1f (theory %.1f): %.3f×", w.name, mz, zc, wantZ, mp, pure, wantP, zc/pure)
		if mz != budget.Gaussian || mp != budget.Laplace {
			t.Errorf("%s: mechanisms %s / %s", w.name, mz, mp)
		}
		for _, c := range []struct{ got, want float64 }{{zc, wantZ}, {pure, wantP}} {
			if math.Abs(c.got/c.want-1) > 0.25 {
				t.Errorf("%s: sd %.1f, theory %.1f", w.name, c.got, c.want)
			}
		}
		if zc/pure > w.goal {
			t.Errorf("%s: ratio %.3f, goal ≤ %g", w.name, zc/pure, w.goal)
		}
	}
}

// TestSingleQueryNeverNoisier: on a fresh budget, whatever its total,
// whatever the query's ε and shape, the mechanism the engine chooses gives
// no cell more noise than Laplace at the query's ε (EXPLAIN's 95% error
// bounds) — basic composition stays available, so one query never costs
// more than before zCDP accounting.
func TestSingleQueryNeverNoisier(t *testing.T) {
	parallel(t)
	for _, total := range []string{"epsilon = 1", "epsilon = 1, delta = 1e-6", "epsilon = 10, delta = 1e-3", "epsilon = 100, delta = 1e-9"} {
		path := newDB(t)
		mustRun(t, open(t, path, dpsql.Options{Owner: true}), "SET BUDGET "+total)
		e := open(t, path, dpsql.Options{})
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
// 0.2, cell 0.8 of ε = 1: 0.02 + 0.32); a Gaussian one records its share
// of ρ_T.
func TestPureBudgetAndRecordedRho(t *testing.T) {
	parallel(t)
	path := newDB(t)
	owner := open(t, path, dpsql.Options{Owner: true})
	r := mustRun(t, owner, "SET BUDGET epsilon = 10 pure")
	if !strings.Contains(r[0].Message, "pure ε-DP") {
		t.Errorf("message %q", r[0].Message)
	}
	if _, err := owner.Query(context.Background(), "SET BUDGET epsilon = 10, delta = 1e-6 PURE"); err == nil || !strings.Contains(err.Error(), "delta = 0") {
		t.Errorf("PURE with δ: %v", err)
	}
	e := open(t, path, dpsql.Options{Epsilon: 1})
	_, err := e.Query(context.Background(), "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (noise = 'gaussian') COUNT(*) FROM t")
	if err == nil || !strings.Contains(err.Error(), "PURE") {
		t.Errorf("Gaussian under PURE: %v", err)
	}
	if st, _ := e.Budget(context.Background()); st.Spent.Epsilon != 0 {
		t.Errorf("a refused query was charged: %+v", st)
	}
	res := query(t, e, "SELECT SUM(i) FROM t")
	if res.Mechanism != budget.Laplace || math.Abs(res.Rho-0.34) > 1e-9 {
		t.Errorf("Laplace with a search: %s ρ=%v, want 0.34", res.Mechanism, res.Rho)
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
	parallel(t)
	path := newDB(t)
	owner := open(t, path, dpsql.Options{Owner: true})
	mustRun(t, owner, "SET BUDGET epsilon = 10, delta = 1e-6")
	e, err := openEngine(path, dpsql.Options{Epsilon: 1}, nil)
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
