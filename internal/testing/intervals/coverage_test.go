package intervals_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/testopts"
	"github.com/dpsql/dpsql/mechanism"
)

// coverageGroups is how many groups (independent repetitions) each
// coverage query releases. With true coverage 0.95, the measured share has
// standard deviation √(0.95·0.05/2000) = 0.49%: outside [93%, 97%] with
// probability about 4·10⁻⁵ per configuration, 0.2% for the 38 below
// together (the seeds are fixed, so a run is reproducible).
const coverageGroups = 2000

// coverageDB builds c(g, x): coverageGroups groups of n rows each, every
// group the same values x_i = (37·i) mod 101 in the declared bounds
// [0, 100], each row its own unit. It returns the path and the true
// count, sum, mean and population variance of a group.
func coverageDB(t *testing.T, n int) (path string, count, sum, mean, variance float64, values []float64) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "c.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf(`CREATE TABLE c (g INTEGER, x INTEGER);
		WITH RECURSIVE gs(g) AS (SELECT 0 UNION ALL SELECT g + 1 FROM gs WHERE g < %d),
		rs(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM rs WHERE i < %d)
		INSERT INTO c SELECT g, (37 * i) %% 101 FROM gs, rs`, coverageGroups-1, n-1)); err != nil {
		t.Fatal(err)
	}
	var sq float64
	for i := 0; i < n; i++ {
		x := float64((37 * i) % 101)
		sum += x
		sq += x * x
		values = append(values, x)
	}
	count = float64(n)
	mean = sum / count
	variance = sq/count - mean*mean
	domain := make([]string, coverageGroups)
	for g := range domain {
		domain[g] = fmt.Sprint(g)
	}
	owner, err := dpsql.Open(path, dpsql.Options{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if err := owner.Run(context.Background(), `CREATE PRIVACY POLICY ON c;
		ALTER PRIVACY POLICY ON c SET BOUNDS x (0, 100);
		ALTER PRIVACY POLICY ON c SET DOMAIN g (`+strings.Join(domain, ", ")+`);
		SET BUDGET epsilon = 1000, delta = 0.5`, func(*dpsql.Result) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return path, count, sum, mean, variance, values
}

// percentileCont is PERCENTILE_CONT(p) of values: linear interpolation
// between the order statistics at rank p·(n − 1).
func percentileCont(values []float64, p float64) float64 {
	v := append([]float64(nil), values...)
	sort.Float64s(v)
	r := p * float64(len(v)-1)
	i := int(math.Floor(r))
	if i+1 >= len(v) {
		return v[len(v)-1]
	}
	return v[i] + (r-float64(i))*(v[i+1]-v[i])
}

// TestIntervalCoverage measures the 95% intervals' coverage with real
// noise (the production samplers on a seeded source): for each aggregate
// kind, two ε and two group sizes, Laplace and Gaussian, the share of
// 2,000 groups whose interval holds the true value must lie in
// [93%, 97%] (at least 93% for percentiles, see below).
func TestIntervalCoverage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("coverage needs 38 queries of 2,000 groups")
	}
	ctx := context.Background()
	for _, n := range []int{40, 200} {
		path, count, sum, mean, variance, values := coverageDB(t, n)
		truth := map[string]float64{"COUNT(x)": count, "SUM(x)": sum, "AVG(x)": mean, "VAR_POP(x)": variance, "STDDEV_POP(x)": math.Sqrt(variance),
			"MEDIAN(x)": percentileCont(values, 0.5), "PERCENTILE_CONT(x, 0.9)": percentileCont(values, 0.9)}
		for _, cfg := range []struct {
			eps   float64
			noise string
		}{{0.5, "laplace"}, {2, "laplace"}, {1, "gaussian"}} {
			for _, agg := range []string{"COUNT(x)", "SUM(x)", "AVG(x)", "VAR_POP(x)", "STDDEV_POP(x)", "MEDIAN(x)", "PERCENTILE_CONT(x, 0.9)", "APPROX_QUANTILES(x, 4)"} {
				if cfg.noise == "gaussian" && n == 40 && agg != "AVG(x)" {
					continue // Gaussian: every kind on the large groups, AVG on both
				}
				if strings.HasPrefix(agg, "MEDIAN") || strings.HasPrefix(agg, "PERCENTILE") || strings.HasPrefix(agg, "APPROX") {
					if cfg.noise == "gaussian" {
						continue // the quantile tree is Laplace under either noise
					}
				}
				t.Run(fmt.Sprintf("n=%d/eps=%g/%s/%s", n, cfg.eps, cfg.noise, agg), func(t *testing.T) {
					t.Parallel() // each query on an engine of its own: the 38 share both cores
					seed := uint64(n)*1000 + uint64(cfg.eps*10)
					e, err := dpsql.Open(path, dpsql.Options{Epsilon: cfg.eps, Testing: &testopts.Options{Noise: mechanism.NewSecureNoiser(seeded{rand.New(rand.NewPCG(seed, seed+1))})}})
					if err != nil {
						t.Fatal(err)
					}
					q := fmt.Sprintf(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (noise = '%s') g, %s FROM c GROUP BY g`, cfg.noise, agg)
					res, err := e.Query(ctx, q)
					e.Close()
					if err != nil {
						t.Fatalf("%s: %v", q, err)
					}
					if res.Mechanism != cfg.noise {
						t.Fatalf("%s ran with %s noise", q, res.Mechanism)
					}
					if strings.HasPrefix(agg, "APPROX") {
						approxCoverage(t, fmt.Sprintf("n=%d ε=%g", n, cfg.eps), res, values)
						return
					}
					in, wide := 0, 0
					for r := range res.Rows {
						iv := res.Intervals[r][1]
						if iv == nil {
							t.Fatalf("%s: no interval in row %d", q, r)
						}
						if iv.Wide {
							wide++
						}
						if v := truth[agg]; iv.Lo <= v && v <= iv.Hi {
							in++
						}
					}
					share := float64(in) / float64(len(res.Rows))
					t.Logf("n=%d ε=%g %s %s: coverage %.1f%% of %d groups (%d wide)", n, cfg.eps, cfg.noise, agg, 100*share, len(res.Rows), wide)
					// Percentiles' intervals invert one-sided tests on the noisy
					// tree: at least 95% for every data set, exact only for data
					// concentrated at the quantile, conservative on these spread
					// values (99.9–100% measured): a named gap, held to at least
					// 93% here; exec's TestQuantileIntervalCoverage measures them
					// over data shapes and sizes (docs/privacy.md).
					top := 0.97
					if strings.HasPrefix(agg, "MEDIAN") || strings.HasPrefix(agg, "PERCENTILE") {
						top = 1
					}
					if len(res.Rows) != coverageGroups || share < 0.93 || share > top {
						t.Errorf("n=%d ε=%g %s %s: coverage %.1f%% of %d groups, want 93–%g%%", n, cfg.eps, cfg.noise, agg, 100*share, len(res.Rows), 100*top)
					}
				})
			}
		}
	}
}

// approxCoverage checks APPROX_QUANTILES(x, 4)'s intervals, one per value:
// the three inner quantiles (0.25, 0.5, 0.75) together, the minimum and
// the maximum each at least 93% (percentile intervals are at least 95%
// by construction, conservative on spread data).
func approxCoverage(t *testing.T, what string, res *dpsql.Result, values []float64) {
	t.Helper()
	in := make([]int, 5)
	for r := range res.Rows {
		iv := res.Intervals[r][1]
		if iv == nil || len(iv.Each) != 5 {
			t.Fatalf("%s APPROX_QUANTILES: row %d has %v", what, r, iv)
		}
		for k, e := range iv.Each {
			if v := percentileCont(values, float64(k)/4); e.Lo <= v && v <= e.Hi {
				in[k]++
			}
		}
	}
	n := float64(len(res.Rows))
	inner := float64(in[1]+in[2]+in[3]) / (3 * n)
	t.Logf("%s laplace APPROX_QUANTILES(x, 4): coverage %.1f%% of %d inner values (quantiles 0.25, 0.5, 0.75); minimum %.1f%%, maximum %.1f%%", what, 100*inner, 3*len(res.Rows), 100*float64(in[0])/n, 100*float64(in[4])/n)
	if inner < 0.93 || float64(in[0])/n < 0.93 || float64(in[4])/n < 0.93 {
		t.Errorf("%s APPROX_QUANTILES(x, 4): coverage %v of %d groups", what, in, len(res.Rows))
	}
}

// seeded is a seeded source for mechanism.NewSecureNoiser: the production
// samplers, reproducible.
type seeded struct{ r *rand.Rand }

func (s seeded) Uint64() uint64 { return s.r.Uint64() }
