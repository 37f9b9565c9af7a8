package dpsql_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/internal/adultdata"
	"github.com/dpsql/dpsql/planner"
)

// adultDB imports ../shared/data/adult.csv into a fresh database with a
// policy (no bounds) and a budget large enough for many runs.
func (h *harness) adultDB(tb testing.TB) string {
	tb.Helper()
	csvPath := filepath.Join("..", "shared", "data", "adult.csv")
	if _, err := os.Stat(csvPath); err != nil {
		tb.Skip("../shared/data/adult.csv not present")
	}
	path := filepath.Join(tb.TempDir(), "adult.db")
	owner, err := h.openEngine(path, dpsql.Options{Owner: true}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer owner.Close()
	if _, _, err := owner.ImportCSV(context.Background(), "adult", csvPath, csvimport.Options{}); err != nil {
		tb.Fatal(err)
	}
	if err := owner.Run(context.Background(), `CREATE PRIVACY POLICY ON adult; SET BUDGET epsilon = 1e6`, func(*dpsql.Result) error { return nil }); err != nil {
		tb.Fatal(err)
	}
	return path
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkAutoBoundsAccuracyAdult measures the accuracy of automatic
// bounds on adult.csv at ε = 1 for the whole query, with real noise from
// crypto/rand, over DPSQL_RUNS runs (default 200) per query. It reports the
// median errors as metrics; docs/benchmarks.md quotes them. Run with
//
//	go test -run XXX -bench AutoBoundsAccuracyAdult -benchtime 1x .
//
// DPSQL_FRACTION sets bounds_epsilon_fraction (default: the engine's).
func BenchmarkAutoBoundsAccuracyAdult(b *testing.B) {
	h := newHarness(nil, false) // on SQLite
	path := h.adultDB(b)
	runs := 200
	if v := os.Getenv("DPSQL_RUNS"); v != "" {
		fmt.Sscan(v, &runs)
	}
	frac := ""
	if v := os.Getenv("DPSQL_FRACTION"); v != "" {
		frac = ", bounds_epsilon_fraction = " + v
	}
	eng, err := h.openEngine(path, dpsql.Options{NoCache: true}, nil) // repeated runs measure fresh noise
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.Query(context.Background(), "SET show_bounds = on"); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	type target struct {
		name, agg string
		truth     float64
		relative  bool
	}
	for _, tg := range []target{
		{"avg_age_abs", `AVG("Age")`, 38.58164675532078, false},
		{"avg_capital_gain_rel", `AVG("Capital Gain")`, 1077.6488437087312, true},
		{"stddev_age_rel", `STDDEV_POP("Age")`, math.Sqrt(186.05568600783084), true},
		// The baselines in the same run: the true bounds declared, at the
		// whole ε and at the share the cells get beside a bound search
		// (1 − bounds_epsilon_fraction): no automatic choice can beat the
		// latter, whatever bounds it finds.
		{"avg_age_true_bounds_abs", `AVG("Age", contribution_bounds_per_row => (17, 90))`, 38.58164675532078, false},
		{"avg_age_true_bounds_at_cells_share_abs", `AVG("Age", contribution_bounds_per_row => (17, 90))`, 38.58164675532078, false},
	} {
		var errs []float64
		inRange, covered := 0, 0
		eps := "1"
		if tg.name == "avg_age_true_bounds_at_cells_share_abs" {
			f := planner.DefaultBoundsFraction
			if v := os.Getenv("DPSQL_FRACTION"); v != "" {
				fmt.Sscan(v, &f)
			}
			eps = fmt.Sprint(1 - f)
		}
		for i := 0; i < b.N*runs; i++ {
			r, err := eng.Query(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = `+eps+frac+`) `+tg.agg+` FROM adult`)
			if err != nil {
				b.Fatal(err)
			}
			v := r.Rows[0][0].(float64)
			e := math.Abs(v - tg.truth)
			if iv := r.Intervals[0][0]; iv != nil && iv.Lo <= tg.truth && tg.truth <= iv.Hi {
				covered++
			}
			if tg.relative {
				e /= tg.truth
			}
			errs = append(errs, e)
			for _, n := range r.Notes { // values clipped to bounds: AVG("Age") [lo, hi] (chosen privately) …
				var lo, hi float64
				if i := strings.Index(n, "["); strings.HasPrefix(n, "values clipped to bounds") && i > 0 {
					if k, _ := fmt.Sscanf(n[i+1:], "%g, %g]", &lo, &hi); k == 2 && hi >= 64 && hi <= 256 {
						inRange++
					}
				}
			}
		}
		b.ReportMetric(median(errs), tg.name+"-median")
		b.ReportMetric(float64(covered)/float64(len(errs)), tg.name+"-covered")
		if tg.name == "avg_age_abs" {
			b.ReportMetric(float64(inRange)/float64(len(errs)), "age_hi_in_64_256")
		}
	}
}

// BenchmarkAutoBoundsCoverageAdult measures how often the 95% intervals of
// COUNT(*), SUM and AVG with automatic bounds hold the true value on
// adult.csv's ages and weekly hours, at ε = 0.1 and 1 for the whole query,
// over DPSQL_RUNS runs (default 200) with crypto/rand's noise; and the
// same with the true bounds declared. docs/accuracy.md quotes it:
//
//	go test -run XXX -bench AutoBoundsCoverageAdult -benchtime 1x -v .
func BenchmarkAutoBoundsCoverageAdult(b *testing.B) {
	h := newHarness(nil, false) // on SQLite
	path := h.adultDB(b)
	runs := 200
	if v := os.Getenv("DPSQL_RUNS"); v != "" {
		fmt.Sscan(v, &runs)
	}
	eng, err := h.openEngine(path, dpsql.Options{NoCache: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	for _, col := range []struct{ name, bounds string }{{`"Age"`, "17, 90"}, {`"Hours per week"`, "1, 99"}} {
		want := adultTruth(b, col.name)
		for _, eps := range []float64{0.1, 1} {
			for _, declared := range []bool{false, true} {
				args := col.name
				if declared {
					args += ", contribution_bounds_per_row => (" + col.bounds + ")"
				}
				covered, bare := [3]int{}, [3]int{} // bare: the interval without its tail allowance
				var tails []float64
				for i := 0; i < runs*b.N; i++ {
					res, err := eng.Query(ctx, fmt.Sprintf(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = %v) COUNT(*), SUM(%s), AVG(%s) FROM adult`, eps, args, args))
					if err != nil {
						b.Fatal(err)
					}
					for j := range covered {
						if iv := res.Intervals[0][j]; iv != nil && iv.Lo <= want[j] && want[j] <= iv.Hi {
							covered[j]++
							if want[j] <= iv.Hi-iv.Tail {
								bare[j]++
							}
						}
					}
					tails = append(tails, res.Intervals[0][1].Tail)
				}
				pct := func(k int) float64 { return 100 * float64(k) / float64(len(tails)) }
				b.Logf("%-16s ε %-4v %-9s 95%% intervals held the truth: COUNT %5.1f%%, SUM %5.1f%%, AVG %5.1f%% (without the tail allowance: SUM %5.1f%%, AVG %5.1f%%; median allowance on SUM %.4g)", col.name, eps,
					map[bool]string{false: "automatic", true: "declared"}[declared],
					pct(covered[0]), pct(covered[1]), pct(covered[2]), pct(bare[1]), pct(bare[2]), median(tails))
			}
		}
	}
}

// adultTruth is COUNT(*), SUM(col) and AVG(col) over adult.csv (col as
// quoted in SQL), read from the file (not through the engine, which
// answers only privately).
func adultTruth(tb testing.TB, col string) [3]float64 {
	vs, err := adultdata.ReadColumn(filepath.Join("..", "shared", "data", "adult.csv"), strings.Trim(col, `"`))
	if err != nil {
		tb.Fatal(err)
	}
	var sum float64
	for _, v := range vs {
		sum += v
	}
	n := float64(len(vs))
	return [3]float64{n, sum, sum / n}
}

// BenchmarkAutoBoundsGrid measures automatic bounds where they are
// hardest: a log-normal column z (mean ≈ 23, no declared bounds), one row
// per unit, SUM(z) and AVG(z) at 1,000 / 10,000 / 100,000 units and
// ε = 0.01 / 0.03 / 0.1 / 1, against the same queries with bounds declared
// as [0, max(z)], over DPSQL_RUNS runs (default 10) with crypto/rand's
// noise. It logs the median relative errors (automatic, declared) per
// cell, how many automatic answers carried a clipping warning, how many
// fell below half the truth without one (and of those, how many had a
// 95% interval that missed the truth: silently wrong), and how many
// automatic answers' 95% intervals covered the truth;
// docs/accuracy.md quotes them. Run with
//
//	go test -run XXX -bench AutoBoundsGrid -benchtime 1x -v .
func BenchmarkAutoBoundsGrid(b *testing.B) {
	h := newHarness(nil, false) // on SQLite
	runs := 10
	if v := os.Getenv("DPSQL_RUNS"); v != "" {
		fmt.Sscan(v, &runs)
	}
	ctx := context.Background()
	sizes := []int{1000, 10000, 100000}
	if v := os.Getenv("DPSQL_UNITS"); v != "" { // one size
		var n int
		fmt.Sscan(v, &n)
		sizes = []int{n}
	}
	for _, units := range sizes {
		r := rand.New(rand.NewPCG(uint64(units), 5))
		var sb strings.Builder
		sb.WriteString("CREATE TABLE za (z REAL); CREATE TABLE zd (z REAL); INSERT INTO za VALUES ")
		zs := make([]float64, units)
		mx, sum := 0.0, 0.0
		for i := range zs {
			zs[i] = math.Exp(math.Log(23) - 0.5 + r.NormFloat64()) // log-normal, σ = 1, mean 23
			mx, sum = math.Max(mx, zs[i]), sum+zs[i]
			if i > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "(%v)", zs[i])
		}
		sb.WriteString("; INSERT INTO zd SELECT z FROM za;")
		path := h.hardDB(b, sb.String(), fmt.Sprintf(`CREATE PRIVACY POLICY ON za; CREATE PRIVACY POLICY ON zd; ALTER PRIVACY POLICY ON zd SET BOUNDS z (0, %v); SET BUDGET epsilon = 1e6`, mx))
		eng, err := h.openEngine(path, dpsql.Options{NoCache: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		mean := sum / float64(units)
		for _, eps := range []float64{0.01, 0.03, 0.1, 1} {
			var autoSum, autoAvg, declSum, declAvg []float64
			warned, low, silent, coverSum, coverAvg, declCoverSum, declCoverAvg := 0, 0, 0, 0, 0, 0, 0
			for i := 0; i < runs*b.N; i++ {
				for _, table := range []string{"za", "zd"} {
					res, err := eng.Query(ctx, fmt.Sprintf(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = %v) SUM(z), AVG(z) FROM %s`, eps, table))
					if err != nil {
						b.Fatal(err)
					}
					s, a := num(res.Rows[0][0]), num(res.Rows[0][1])
					es, ea := math.Abs(s-sum)/sum, math.Abs(a-mean)/mean
					in := func(j int, truth float64) bool {
						iv := res.Intervals[0][j]
						return iv != nil && iv.Lo <= truth && truth <= iv.Hi
					}
					if table == "zd" {
						declSum, declAvg = append(declSum, es), append(declAvg, ea)
						if in(0, sum) {
							declCoverSum++
						}
						if in(1, mean) {
							declCoverAvg++
						}
						continue
					}
					autoSum, autoAvg = append(autoSum, es), append(autoAvg, ea)
					w := strings.Contains(strings.Join(res.Notes, "\n"), "warning")
					if w {
						warned++
					}
					if in(0, sum) {
						coverSum++
					}
					if in(1, mean) {
						coverAvg++
					}
					if s < sum/2 && !w {
						low++
						if !in(0, sum) {
							silent++ // neither a warning nor an interval that says so
						}
					}
				}
			}
			b.Logf("units %6d ε %-4v SUM auto %6.3g%% declared %6.3g%% | AVG auto %6.3g%% declared %6.3g%% | warned %d/%d, below half unwarned %d (its interval missing the truth %d) | 95%% intervals cover SUM %d, AVG %d (declared: %d, %d)",
				units, eps, 100*median(autoSum), 100*median(declSum), 100*median(autoAvg), 100*median(declAvg), warned, len(autoSum), low, silent, coverSum, coverAvg, declCoverSum, declCoverAvg)
		}
		eng.Close()
	}
}
