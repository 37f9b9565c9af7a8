package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/planner"
)

// The long-run expectations: each example's mechanism run many times on
// the true counts with the engine's own samplers (package mechanism: the
// sparse vector run and the Laplace mechanism on their grids), with the
// parameters the engine's EXPLAIN gives for the tutorial's statements —
// the same draws the engine makes, without the scan that takes it a
// minute. A seeded source makes the table reproducible; the engine itself
// draws from crypto/rand.

// seeded is a reproducible mechanism.Source (for measuring only).
type seeded struct{ r *rand.ChaCha8 }

func (s seeded) Uint64() uint64 { return s.r.Uint64() }

func newNoiser(seed uint64) *mechanism.SecureNoiser {
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	return mechanism.NewSecureNoiser(seeded{rand.NewChaCha8(key)})
}

// stat is a sample's mean with its standard error and spread.
type stat struct{ xs []float64 }

func (s *stat) add(x float64) { s.xs = append(s.xs, x) }

func (s *stat) String() string {
	n := float64(len(s.xs))
	if n == 0 {
		return "—"
	}
	m := mean(s.xs)
	v := 0.0
	for _, x := range s.xs {
		v += (x - m) * (x - m)
	}
	se := math.Sqrt(v/(n-1)) / math.Sqrt(n)
	ys := append([]float64{}, s.xs...)
	sort.Float64s(ys)
	return fmt.Sprintf("%.1f ± %.1f (median %.0f, 90th percentile %.0f)", m, 2*se, ys[len(ys)/2], ys[len(ys)*9/10])
}

// simulate prints the table of long-run expectations over runs runs.
func (l *lab) simulate(runs int, seed uint64) error {
	noise := newNoiser(seed)
	fmt.Printf("| example | mechanism at ε = 1 | expected over %d simulated runs (mean ± 2 standard errors) |\n|---|---|---|\n", runs)
	if err := l.simulateClip(runs, noise); err != nil {
		return err
	}
	return l.simulateRanges(runs, noise)
}

// compared is the ε of the tutorial's statements (1) left for choosing
// and measuring once the estimate of what bounding dropped has its share:
// their joins repeat a person's row, so each row is its own unit, bounded
// (planner.DroppedFraction).
const compared = 1 - planner.DroppedFraction

// simulateClip: AboveThreshold (ε = 1, c = 1, sensitivity 1, monotonic)
// over b = 0, 5, ..., 150 comparing −count(age > b) with −1, against the
// 31 counts at ε/31 each, the first below 1 taken.
func (l *lab) simulateClip(runs int, noise *mechanism.SecureNoiser) error {
	var bounds []int
	var older []float64
	truth := -1
	for b := 0; b <= 150; b += 5 {
		n := l.count(func(a int) bool { return a > b })
		bounds, older = append(bounds, b), append(older, float64(n))
		if n == 0 && truth < 0 {
			truth = b
		}
	}
	var svt, base stat
	var svtExact, baseExact int
	for range runs {
		run, err := noise.NewSparse(mechanism.SparseOptions{Epsilon: compared, Sensitivity: 1, Threshold: -1, Cutoff: 1, Monotonic: true})
		if err != nil {
			return err
		}
		got := 155
		for i, n := range older {
			above, err := run.Next(-n)
			if err != nil {
				return err
			}
			if above {
				got = bounds[i]
				break
			}
		}
		svt.add(math.Abs(float64(got - truth)))
		if got == truth {
			svtExact++
		}
		got = 155
		for i, n := range older {
			v, err := noise.AddLaplace(n, 1, 1.0/31)
			if err != nil {
				return err
			}
			if v < 1 {
				got = bounds[i]
				break
			}
		}
		base.add(math.Abs(float64(got - truth)))
		if got == truth {
			baseExact++
		}
	}
	fmt.Printf("| AboveThreshold: the clipping bound for ages (true %d) | sparse vector, c = 1 | error %s years; exactly %d in %.0f%% of runs |\n", truth, &svt, truth, 100*float64(svtExact)/float64(runs))
	fmt.Printf("| | per-query Laplace, 31 queries at ε/31 | error %s years; exactly %d in %.0f%% of runs |\n", &base, truth, 100*float64(baseExact)/float64(runs))
	return nil
}

// simulateRanges: Sparse over the 1,600 (lo, hi) candidates in key order
// (the empty ones with lo ≥ hi included), c = 3 at ε = 1 and c = 5 at
// ε/2 with each released range counted at ε/2/5; against each of the 820
// ranges counted at ε/820, the first c above 10,000 taken.
func (l *lab) simulateRanges(runs int, noise *mechanism.SecureNoiser) error {
	const threshold = 10000
	type cand struct {
		n     float64
		valid bool
	}
	var cands []cand
	for lo := 30; lo < 70; lo++ {
		for hi := 31; hi <= 70; hi++ {
			n := 0
			if lo < hi {
				n = l.count(func(a int) bool { return a >= lo && a < hi })
			}
			cands = append(cands, cand{float64(n), lo < hi})
		}
	}
	var counts []float64
	for _, c := range cands {
		if c.valid {
			counts = append(counts, c.n)
		}
	}
	for _, c := range []int{3, 5} {
		choose := compared
		if c == 5 {
			choose = compared * planner.ChoiceFraction
		}
		var below, bBelow, released, bReleased int
		var short, bShort, valueErr, bErr stat
		for range runs {
			run, err := noise.NewSparse(mechanism.SparseOptions{Epsilon: choose, Sensitivity: 1, Threshold: threshold, Cutoff: c, Monotonic: true})
			if err != nil {
				return err
			}
			found := 0
			for _, k := range cands {
				if found == c {
					break
				}
				above, err := run.Next(k.n)
				if err != nil {
					return err
				}
				if !above {
					continue
				}
				found++
				released++
				if k.n <= threshold {
					below++
					short.add(threshold - k.n)
				}
				if c == 5 {
					v, err := noise.AddLaplace(k.n, 1, compared*(1-planner.ChoiceFraction)/5)
					if err != nil {
						return err
					}
					valueErr.add(math.Abs(v - k.n))
				}
			}
			found = 0
			for _, n := range counts {
				if found == c {
					break
				}
				v, err := noise.AddLaplace(n, 1, 1.0/float64(len(counts)))
				if err != nil {
					return err
				}
				if v <= threshold {
					continue
				}
				found++
				bReleased++
				if n <= threshold {
					bBelow++
					bShort.add(threshold - n)
				}
				bErr.add(math.Abs(v - n))
			}
		}
		what := fmt.Sprintf("Sparse, c = %d: the first %d ranges with more than 10,000 people", c, c)
		values, bValues := "", ""
		if c == 5 {
			what = "The range-query application: c = 5 and each range's count"
			values, bValues = "; counts' error "+valueErr.String(), "; counts' error "+bErr.String()
		}
		share := func(k, n int) string { return fmt.Sprintf("%.2f%%", 100*float64(k)/float64(n)) }
		fmt.Printf("| %s | sparse vector | %s of released ranges at or below 10,000 (by %s)%s |\n", what, share(below, released), &short, values)
		fmt.Printf("| | per-query Laplace, each range at ε/820 | %s of released ranges at or below 10,000 (by %s)%s |\n", share(bBelow, bReleased), &bShort, bValues)
	}
	return nil
}
