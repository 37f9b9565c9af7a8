package autobound

import (
	"encoding/csv"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"github.com/dpsql/dpsql/mechanism"
)

func simMedian(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// simErrors returns the relative errors of SUM and AVG for one chosen bound
// pair, with the cells' noise drawn as the engine would (eps per cell).
func simErrors(h *Histogram, xs []float64, r Result, epsCell float64, rng *rand.Rand, sum float64) (float64, float64) {
	lap := func(b float64) float64 { return b * (rng.ExpFloat64() - rng.ExpFloat64()) }
	var cs, cc float64
	mid := (r.Lo + r.Hi) / 2
	for _, x := range xs {
		c := math.Min(r.Hi, math.Max(r.Lo, x))
		cs += c
		cc += c - mid
	}
	n := float64(len(xs))
	s := cs + lap(math.Max(-r.Lo, r.Hi)/epsCell)
	cnt := math.Max(1, n+lap(1/epsCell))
	a := (cc+lap((r.Hi-r.Lo)/2/epsCell))/cnt + mid
	return math.Abs(s-sum) / sum, math.Abs(a-sum/n) / (sum / n)
}

// BenchmarkChooseSimulated measures Choose's bounds without the engine:
// the grid of BenchmarkAutoBoundsGrid (log-normal z, 1,000 / 10,000 /
// 100,000 values, ε = 0.01 / 0.03 / 0.1 / 1 for SUM(z), AVG(z)) and
// Adult's ages (when ../shared/data/adult.csv is there), the cells'
// Laplace noise drawn as the engine draws it (1 − fraction of ε, split
// across the query's cells), against [0, max] bounds at the whole ε. It
// logs median relative errors (automatic / declared) over DPSQL_RUNS runs
// (default 300); seeded, so a change to the search shows as a change in
// the table. Seconds, where the engine's benchmark takes minutes:
//
//	go test -run XXX -bench ChooseSimulated -benchtime 1x -v ./autobound
//
// DPSQL_FRACTION sets the bounds' share of ε (default 0.3).
func BenchmarkChooseSimulated(b *testing.B) {
	runs := 300
	frac := 0.3 // planner.DefaultBoundsFraction (autobound cannot import the planner)
	if v := os.Getenv("DPSQL_FRACTION"); v != "" {
		fmt.Sscan(v, &frac)
	}
	if v := os.Getenv("DPSQL_RUNS"); v != "" {
		fmt.Sscan(v, &runs)
	}
	shapes := logNormalShapes()
	{
		r := rand.New(rand.NewPCG(31, 5))
		xs := make([]float64, 10000)
		for i := range xs {
			xs[i] = float64(1990 + r.IntN(31)) // years: far from 0
		}
		shapes = append(shapes, simShape{"years 10000", xs, []float64{0.1, 1}, 3})
	}
	shapes = append(shapes, adultShapes(adultColumn{"adult age", 11}, adultColumn{"adult gain", 12})...)
	for _, sh := range shapes {
		var h Histogram
		sum, mx := 0.0, 0.0
		for _, x := range sh.xs {
			h.Add(x)
			sum += x
			mx = math.Max(mx, x)
		}
		for _, eps := range sh.eps {
			epsB := frac * eps
			epsCell := (1 - frac) * eps / float64(sh.cells)
			rng := rand.New(rand.NewPCG(1, uint64(eps*1000)))
			noise := mechanism.NewSecureNoiser(seeded{rand.New(rand.NewPCG(2, uint64(eps*1000)))})
			var as, aa, ds, da, his []float64
			low := 0
			for i := 0; i < runs; i++ {
				res, _, err := Choose(&h, epsB, 1, noise)
				if err != nil {
					b.Fatal(err)
				}
				s, a := simErrors(&h, sh.xs, res, epsCell, rng, sum)
				as, aa = append(as, s), append(aa, a)
				if s > 0.5 {
					low++
					if os.Getenv("DPSQL_SHOW") != "" {
						b.Logf("  far off: %s ε %v %+v", sh.name, eps, res)
					}
				}
				his = append(his, res.Hi)
				s, a = simErrors(&h, sh.xs, Result{Lo: 0, Hi: mx}, eps/float64(sh.cells), rng, sum)
				ds, da = append(ds, s), append(da, a)
			}
			b.Logf("%-17s ε %-5v SUM %7.2f%% / %7.2f%% (%4.1f×)  AVG %7.3f%% / %7.3f%% (%4.1f×)  hi median %.4g (max %.4g), off by half %d", sh.name, eps,
				100*simMedian(as), 100*simMedian(ds), simMedian(as)/simMedian(ds), 100*simMedian(aa), 100*simMedian(da), simMedian(aa)/simMedian(da), simMedian(his), mx, low)
		}
	}
}

// BenchmarkCoverageSimulated: how often SUM's and AVG's 95% intervals,
// with and without TailExcess, hold the raw truth (sim only).
func BenchmarkCoverageSimulated(b *testing.B) {
	runs := 300
	frac := 0.3
	if v := os.Getenv("DPSQL_RUNS"); v != "" {
		fmt.Sscan(v, &runs)
	}
	shapes := logNormalShapes()
	for _, alpha := range []float64{1.5, 2.5} { // Pareto tails
		r := rand.New(rand.NewPCG(7, 5))
		xs := make([]float64, 10000)
		for i := range xs {
			xs[i] = math.Pow(1-r.Float64(), -1/alpha)
		}
		shapes = append(shapes, simShape{fmt.Sprintf("pareto %.1f", alpha), xs, []float64{0.1, 1}, 3})
	}
	shapes = append(shapes, adultShapes(adultColumn{"adult age", 11}, adultColumn{"adult gain", 12}, adultColumn{"adult hours", 8}, adultColumn{"adult loss", 13})...)
	for _, sh := range shapes {
		for _, eps := range sh.eps {
			c := simCoverage(sh.xs, eps, frac, sh.cells, runs, 1)
			b.Logf("%-17s ε %-5v covered SUM %3.0f%% → %3.0f%%  AVG %3.0f%% → %3.0f%%  heavy %3d/%d  allowance/half-width median %.2f", sh.name, eps,
				100*c.sumWithout, 100*c.sumWith, 100*c.avgWithout, 100*c.avgWith, c.heavy, runs, c.widening)
		}
	}
}

// coverage is how often simulated 95% intervals of SUM and AVG held the
// raw truth, without and with Result.TailExcess's allowance; heavy counts
// the runs whose tail had no finite allowance; widening is the median
// allowance over SUM's half-width.
type coverage struct {
	sumWithout, sumWith, avgWithout, avgWith float64
	heavy                                    int
	widening                                 float64
}

// simCoverage runs Choose on xs runs times at a search share frac of eps
// and draws the cells' Laplace noise as the engine does (the rest of eps,
// split over cells), with seeded sources: the intervals are the Laplace
// half-widths ln(20)·b around the noisy SUM and the centred AVG (the
// count's noise left out of AVG's width), the allowance added above.
func simCoverage(xs []float64, eps, frac float64, cells, runs int, seed uint64) coverage {
	var h Histogram
	sum := 0.0
	for _, x := range xs {
		h.Add(x)
		sum += x
	}
	n := float64(len(xs))
	epsCell := (1 - frac) * eps / float64(cells)
	rng := rand.New(rand.NewPCG(seed, uint64(eps*1000)))
	noise := mechanism.NewSecureNoiser(seeded{rand.New(rand.NewPCG(seed+1, uint64(eps*1000)))})
	lap := func(s float64) float64 { return s * (rng.ExpFloat64() - rng.ExpFloat64()) }
	in := func(lo, hi, t float64) bool { return lo <= t && t <= hi }
	var c coverage
	var widen []float64
	for i := 0; i < runs; i++ {
		res, _, err := Choose(&h, frac*eps, 1, noise)
		if err != nil {
			panic(err)
		}
		var cs, cc float64
		mid := (res.Lo + res.Hi) / 2
		for _, x := range xs {
			v := math.Min(res.Hi, math.Max(res.Lo, x))
			cs += v
			cc += v - mid
		}
		bS := math.Max(-res.Lo, res.Hi) / epsCell
		s, hS := cs+lap(bS), bS*math.Log(20)
		bA := (res.Hi - res.Lo) / 2 / epsCell
		cnt := n + lap(1/epsCell)
		a, hA := (cc+lap(bA))/cnt+mid, bA*math.Log(20)/cnt
		ex, finite := res.TailExcess()
		if !finite {
			c.heavy++
		}
		add := func(p *float64, ok bool) {
			if ok {
				*p += 1 / float64(runs)
			}
		}
		add(&c.sumWithout, in(s-hS, s+hS, sum))
		add(&c.sumWith, in(s-hS, s+hS+ex, sum))
		add(&c.avgWithout, in(a-hA, a+hA, sum/n))
		add(&c.avgWith, in(a-hA, a+hA+ex/cnt, sum/n))
		widen = append(widen, ex/hS)
	}
	c.widening = simMedian(widen)
	return c
}

// simShape is a column the simulations choose bounds for: its values, the
// query ε to simulate at, and how many cells share the rest of it.
type simShape struct {
	name  string
	xs    []float64
	eps   []float64
	cells int
}

// logNormal is the grid's column: units log-normal values (σ = 1, mean
// ≈ 23), seeded by units.
func logNormal(units int) []float64 {
	r := rand.New(rand.NewPCG(uint64(units), 5))
	xs := make([]float64, units)
	for i := range xs {
		xs[i] = math.Exp(math.Log(23) - 0.5 + r.NormFloat64())
	}
	return xs
}

// logNormalShapes is BenchmarkAutoBoundsGrid's grid: 1,000, 10,000 and
// 100,000 log-normal values at ε = 0.01, 0.03, 0.1 and 1.
func logNormalShapes() []simShape {
	var shapes []simShape
	for _, units := range []int{1000, 10000, 100000} {
		shapes = append(shapes, simShape{fmt.Sprintf("lognormal %d", units), logNormal(units), []float64{0.01, 0.03, 0.1, 1}, 3})
	}
	return shapes
}

// adultColumn names a column of adult.csv and its index in a row.
type adultColumn struct {
	name  string
	index int
}

// adultShapes are Adult's columns at ε = 0.1 and 1, when
// ../shared/data/adult.csv is there (none otherwise).
func adultShapes(cols ...adultColumn) []simShape {
	f, err := os.Open(filepath.Join("..", "..", "shared", "data", "adult.csv"))
	if err != nil {
		return nil
	}
	recs, _ := csv.NewReader(f).ReadAll()
	f.Close()
	var shapes []simShape
	for _, col := range cols {
		var xs []float64
		for _, rec := range recs[1:] {
			v, _ := strconv.ParseFloat(rec[col.index], 64)
			xs = append(xs, v)
		}
		shapes = append(shapes, simShape{col.name, xs, []float64{0.1, 1}, 2})
	}
	return shapes
}
