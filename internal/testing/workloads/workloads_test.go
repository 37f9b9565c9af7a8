package workloads_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/internal/adultdata"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testopts"
	"github.com/dpsql/dpsql/mechanism"
)

// seeded is a fixed-seed source for the production noise samplers.
type seeded struct{ r *rand.Rand }

func (s seeded) Uint64() uint64 { return s.r.Uint64() }

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
	owner, err := dpsql.Open(path, dpsql.Options{Owner: true})
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
	e, err := dpsql.Open(path, dpsql.Options{Epsilon: 0.01, Testing: &testopts.Options{Noise: mechanism.NewSecureNoiser(seeded{rand.New(rand.NewPCG(seed, seed))})}})
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
	t.Parallel()
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

// TestMedianAgeAccuracy: the accuracy goal on adult.csv —
// MEDIAN("Age") at ε = 1 within ±1 of the true median in at least 95% of
// runs. 200 runs; the test asserts at least 180 (90%), so that a true
// rate of 95% fails it with probability below 10⁻³ (binomial tail); the
// measured rate is logged (docs/benchmarks.md).
func TestMedianAgeAccuracy(t *testing.T) {
	t.Parallel()
	csvPath := filepath.Join("..", "..", "..", "..", "shared", "data", "adult.csv")
	if _, err := os.Stat(csvPath); err != nil {
		t.Skip("../shared/data/adult.csv not present")
	}
	if testing.Short() {
		t.Skip("statistical test skipped in -short mode")
	}
	path := filepath.Join(t.TempDir(), "adult.db")
	owner, err := dpsql.Open(path, dpsql.Options{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, _, err := owner.ImportCSV(context.Background(), "adult", csvPath, csvimport.Options{}); err != nil {
		t.Fatal(err)
	}
	enginetest.Run(t, owner, `CREATE PRIVACY POLICY ON adult; ALTER PRIVACY POLICY ON adult SET BOUNDS "Age" (0, 125);
		ALTER PRIVACY POLICY ON adult SET BOUNDS "Capital Gain" (0, 100000); SET BUDGET epsilon = 1000000`)
	e, err := dpsql.Open(path, dpsql.Options{Epsilon: 1, NoCache: true}) // real noise
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const runs, trueMedian = 200, 37.0
	within := 0
	var errs []float64
	for i := 0; i < runs; i++ {
		r := enginetest.Query(t, e, `SELECT MEDIAN("Age") FROM adult`)
		err := math.Abs(adultdata.Num(r.Rows[0][0]) - trueMedian)
		errs = append(errs, err)
		if err <= 1 {
			within++
		}
	}
	sort.Float64s(errs)
	t.Logf("MEDIAN(Age) at ε = 1: %d of %d runs within ±1 of %g; median |error| %.3f, 95th percentile %.3f", within, runs, trueMedian, errs[runs/2], errs[runs*95/100])
	if within < 180 {
		t.Errorf("only %d of %d runs within ±1", within, runs)
	}
	// The same with bounds chosen privately ("Age" + 0 is an expression,
	// so the policy's bounds do not apply): a fifth of ε chooses them.
	within, errs = 0, errs[:0]
	for i := 0; i < runs; i++ {
		r := enginetest.Query(t, e, `SELECT MEDIAN("Age" + 0) FROM adult`)
		err := math.Abs(adultdata.Num(r.Rows[0][0]) - trueMedian)
		errs = append(errs, err)
		if err <= 1 {
			within++
		}
	}
	sort.Float64s(errs)
	t.Logf("MEDIAN(Age), bounds chosen privately, ε = 1: %d of %d runs within ±1; median |error| %.3f, 95th percentile %.3f", within, runs, errs[runs/2], errs[runs*95/100])
	if within < 170 {
		t.Errorf("chosen bounds: only %d of %d runs within ±1", within, runs)
	}
	// The 10th, 50th and 90th percentiles of Age (22, 37, 58) and Capital
	// Gain (0, 0, 0: 92% of the rows are 0), one query each at ε = 1, 50
	// runs: the median absolute error, logged for docs/benchmarks.md and
	// asserted loosely (a tenth of the bounds' width).
	for _, tc := range []struct {
		col   string
		p     float64
		truth float64
		width float64
	}{{"Age", 0.1, 22, 125}, {"Age", 0.5, 37, 125}, {"Age", 0.9, 58, 125},
		{"Capital Gain", 0.1, 0, 100000}, {"Capital Gain", 0.5, 0, 100000}, {"Capital Gain", 0.9, 0, 100000}} {
		var errs []float64
		for i := 0; i < 50; i++ {
			r := enginetest.Query(t, e, fmt.Sprintf(`SELECT PERCENTILE_CONT(%q, %g) FROM adult`, tc.col, tc.p))
			errs = append(errs, math.Abs(adultdata.Num(r.Rows[0][0])-tc.truth))
		}
		sort.Float64s(errs)
		t.Logf("PERCENTILE_CONT(%s, %g) at ε = 1: median |error| %.4g, 90th percentile %.4g (truth %g)", tc.col, tc.p, errs[25], errs[45], tc.truth)
		if errs[25] > tc.width/10 {
			t.Errorf("PERCENTILE_CONT(%s, %g): median error %v", tc.col, tc.p, errs[25])
		}
	}
}
