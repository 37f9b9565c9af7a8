package mechanism

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// Statistical privacy tests: a mechanism runs many times on each of two
// neighbouring inputs, and for every output seen often enough on both the
// empirical probabilities must satisfy P(o | D) ≤ e^ε·P(o | D'), both
// ways, within zTolerance standard errors of the difference (p − e^ε·q).
// Each comparison fails falsely with probability about 1e-5 (a one-sided
// normal tail at 4.4σ); a test makes at most a few hundred, so its
// false-failure rate is below 1%, and the fixed seeds make every run
// identical. The same harness must FAIL on the broken variants that Lyu,
// Su & Li ("Understanding the Sparse Vector Technique for Differential
// Privacy", PVLDB 2017) list, implemented here in the tests only: a
// passing test that could not fail would prove nothing.

// privacyRuns is how many runs each neighbour gets by default.
const privacyRuns = 40_000

// outcomeCounts runs mech runs times and counts its outputs.
func outcomeCounts(seed uint64, runs int, mech func(src Source) string) map[string]int {
	src := newSeeded(seed)
	out := map[string]int{}
	for range runs {
		out[mech(src)]++
	}
	return out
}

// worstExcess returns the largest standardized excess (p − e^ε·q)/se over
// the outputs seen at least minCount times on both sides, both ways, and
// the output it was found at.
func worstExcess(a, b map[string]int, runs int, eps float64) (float64, string, int) {
	const minCount = 200
	e := math.Exp(eps)
	worst, where, checked := math.Inf(-1), "", 0
	n := float64(runs)
	for o := range a {
		for _, pr := range [][2]int{{a[o], b[o]}, {b[o], a[o]}} {
			if pr[0] < minCount || pr[1] < minCount {
				continue
			}
			p, q := float64(pr[0])/n, float64(pr[1])/n
			se := math.Sqrt(p*(1-p)/n + e*e*q*(1-q)/n)
			if z := (p - e*q) / se; z > worst {
				worst, where = z, o
			}
			checked++
		}
	}
	return worst, where, checked
}

// judge fails the test when a private mechanism's outputs exceed e^ε
// beyond the tolerance, or when a broken one's do not.
func judge(t *testing.T, runs int, eps float64, private bool, a, b map[string]int) {
	t.Helper()
	z, where, checked := worstExcess(a, b, runs, eps)
	if checked < 2 {
		t.Fatalf("only %d comparisons", checked)
	}
	t.Logf("worst excess %.1fσ at %q (%d comparisons)", z, where, checked)
	if private && z > zTolerance {
		t.Errorf("output %q: P exceeds e^ε·P' by %.1f standard errors", where, z)
	}
	if !private && z <= zTolerance {
		t.Errorf("the broken variant was not caught: worst excess %.1fσ", z)
	}
}

// sparseVariant is one way to run the sparse vector technique over a
// stream of query values; it returns the output as a string.
type sparseVariant func(opts SparseOptions, qs []float64, src Source) string

// correctSparse is mechanism.Sparse: the answers, ⊤ or ⊥, until the c-th ⊤.
func correctSparse(opts SparseOptions, qs []float64, src Source) string {
	s, err := NewSparse(opts, src)
	if err != nil {
		panic(err)
	}
	var sb strings.Builder
	for _, q := range qs {
		above, err := s.Next(q)
		if err != nil {
			break
		}
		sb.WriteString(map[bool]string{true: "T", false: "F"}[above])
	}
	return sb.String()
}

// watchSparse is a threshold watch's run: the noisy threshold drawn once
// (SparseThreshold, as a watch stores it), each query answered on its own
// against it (SparseAnswer, as each query to the watch is), stopping at
// the c-th ⊤.
func watchSparse(opts SparseOptions, qs []float64, src Source) string {
	n := NewSecureNoiser(src)
	t, err := SparseThreshold(opts, n)
	if err != nil {
		panic(err)
	}
	var sb strings.Builder
	above := 0
	for _, q := range qs {
		a, err := SparseAnswer(opts, t, big.NewFloat(q), n)
		if err != nil {
			panic(err)
		}
		sb.WriteString(map[bool]string{true: "T", false: "F"}[a])
		if a {
			if above++; above == opts.Cutoff {
				break
			}
		}
	}
	return sb.String()
}

// brokenSparse runs the sparse vector technique with the given threshold
// and query noise scales, stopping after stopAfter ⊤ answers (0: never),
// and writing each ⊤'s noisy value rounded to a bin of width bin (0:
// not written).
func brokenSparse(thresholdScale, queryScale float64, stopAfter int, bin float64) sparseVariant {
	return func(opts SparseOptions, qs []float64, src Source) string {
		n := NewSecureNoiser(src)
		t := opts.Threshold
		if thresholdScale > 0 {
			t, _ = n.AddLaplace(opts.Threshold, thresholdScale, 1)
		}
		var sb strings.Builder
		above := 0
		for _, q := range qs {
			v, _ := n.AddLaplace(q, queryScale, 1)
			if v < t {
				sb.WriteString("F")
				continue
			}
			sb.WriteString("T")
			if bin > 0 {
				fmt.Fprintf(&sb, "%d", int(math.Floor(v/bin)))
			}
			if above++; stopAfter > 0 && above == stopAfter {
				break
			}
		}
		return sb.String()
	}
}

func TestSparseVariantsPrivacy(t *testing.T) {
	t.Parallel()
	const eps = 1.0
	constant := func(m int, v float64) []float64 {
		qs := make([]float64, m)
		for i := range qs {
			qs[i] = v
		}
		return qs
	}
	general := func(c int) SparseOptions {
		return SparseOptions{Epsilon: eps, Sensitivity: 1, Threshold: 0, Cutoff: c}
	}
	alternating := func(m int) []float64 {
		qs := make([]float64, m)
		for i := range qs {
			qs[i] = float64(1 - 2*(i%2))
		}
		return qs
	}
	b1 := func(o SparseOptions) float64 {
		e1, _ := SparseSplit(o.Epsilon, o.Cutoff, o.Monotonic)
		return o.Sensitivity / e1
	}
	b2 := SparseQueryScale
	_, e2c3 := SparseSplit(eps, 3, false)
	cases := []struct {
		name    string
		opts    SparseOptions
		d, d2   []float64 // the query values on the two neighbours
		variant sparseVariant
		private bool
		// tops summarizes the output as its number of ⊤ answers at odd
		// positions minus those at even ones (a post-processing, so an
		// ε-DP output stays ε-DP): the broken variants' many distinct
		// answer strings are each rare, and on neighbours whose queries
		// move in opposite directions (odd up, even down) this count
		// moves the most.
		tops bool
		runs int // 0: privacyRuns
	}{
		// The stream answers of the real mechanism, on the neighbours
		// that each broken variant below is caught on.
		{"Sparse c=1, all queries down by Δ", general(1), constant(6, 0), constant(6, -1), correctSparse, true, false, 0},
		{"Sparse c=1, all queries up by Δ", general(1), constant(10, 0), constant(10, 1), correctSparse, true, false, 0},
		{"Sparse c=1, queries up and down by Δ, ⊤ count", general(1), constant(20, 0), alternating(20), correctSparse, true, true, 0},
		{"Sparse c=3, all queries up by Δ", general(3), constant(8, 0), constant(8, 1), correctSparse, true, false, 0},
		{"Sparse c=3, queries up and down by Δ, ⊤ count", general(3), constant(20, 0), alternating(20), correctSparse, true, true, 0},
		// A threshold watch: the same run, its threshold stored and its
		// queries answered one at a time.
		{"watch c=2, all queries down by Δ", general(2), constant(6, 0), constant(6, -1), watchSparse, true, false, 30_000},
		{"watch c=2, queries up and down by Δ, ⊤ count", general(2), constant(20, 0), alternating(20), watchSparse, true, true, 30_000},
		// Without threshold noise (Stoddard et al.'s variant): a long run
		// of ⊥ answers multiplies small per-query ratios.
		{"no threshold noise", general(1), constant(6, 0), constant(6, -1),
			brokenSparse(0, b2(general(1)), 1, 0), false, false, 0},
		// Query noise that does not grow with c: Lap(2Δ/ε₂) with c = 3.
		{"query noise not growing with c", general(3), constant(20, 0), alternating(20),
			brokenSparse(b1(general(3)), 2/e2c3, 3, 0), false, true, 0},
		// Releasing the compared noisy value with the ⊤ (Roth's lecture
		// notes' variant, Lyu–Su–Li's Algorithm 3): the value bounds the
		// threshold noise from above, and the ⊥ answers before it stop
		// being correlated. It takes many runs to see: 2,000,000 (the
		// ratio shows on three ⊥ answers and a ⊤ value around −2, an
		// output of probability about 3e-4).
		{"releasing the compared noisy value", general(1), constant(4, 0), constant(4, -1),
			brokenSparse(b1(general(1)), b2(general(1)), 1, 1), false, false, 2_000_000},
		// Continuing past the c-th ⊤ (c = 1's noise, never stopping).
		{"continuing past the cutoff", general(1), constant(20, 0), alternating(20),
			brokenSparse(b1(general(1)), b2(general(1)), 0, 0), false, true, 0},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			run := func(qs []float64) func(Source) string {
				return func(src Source) string {
					o := c.variant(c.opts, qs, src)
					if c.tops {
						k := 0
						for i, a := range o {
							if a == 'T' {
								k += 1 - 2*(i%2)
							}
						}
						return fmt.Sprint(k)
					}
					return o
				}
			}
			runs := privacyRuns
			if c.runs > 0 {
				runs = c.runs
			}
			judge(t, runs, eps, c.private, outcomeCounts(uint64(100+2*i), runs, run(c.d)), outcomeCounts(uint64(101+2*i), runs, run(c.d2)))
		})
	}
}

// TestNoisyTopKPrivacy: candidates whose counts move by Δ = 1 between
// neighbours (general: either way; monotonic: two of four up, two still);
// the chosen indexes, in order, must be ε-DP. Noise that does not grow
// with k (each round at the whole ε) is caught, for general and
// monotonic scores.
func TestNoisyTopKPrivacy(t *testing.T) {
	t.Parallel()
	const eps = 1.0
	scores := func(vs ...float64) []*big.Float {
		out := make([]*big.Float, len(vs))
		for i, v := range vs {
			out[i] = big.NewFloat(v)
		}
		return out
	}
	cases := []struct {
		name    string
		opts    TopKOptions
		epsRun  float64 // the ε each run is given
		private bool
	}{
		{"peeling at ε/k, general scores", TopKOptions{Epsilon: eps, Sensitivity: 1, K: 3}, eps, true},
		{"peeling at ε/k, monotonic scores", TopKOptions{Epsilon: eps, Sensitivity: 1, K: 2, Monotonic: true}, eps, true},
		// Broken: every round at the whole ε (k rounds then cost k·ε).
		{"every round at the whole ε", TopKOptions{Epsilon: 3 * eps, Sensitivity: 1, K: 3}, eps, false},
		{"monotonic, every round at the whole ε", TopKOptions{Epsilon: 2 * eps, Sensitivity: 1, K: 2, Monotonic: true}, eps, false},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			run := func(sc []*big.Float) func(Source) string {
				return func(src Source) string {
					idx, err := NoisyTopK(sc, c.opts, NewSecureNoiser(src), nil)
					if err != nil {
						panic(err)
					}
					return fmt.Sprint(idx)
				}
			}
			// General neighbours: scores move by Δ either way.
			d, d2 := scores(2, 1, 0, 0), scores(1, 2, 1, 1)
			if c.opts.Monotonic {
				// Monotonic neighbours: some scores up by Δ, the rest
				// still (a uniform shift of every score leaves report
				// noisy max's choice unchanged, so it could not fail).
				d, d2 = scores(0, 0, 0, 0), scores(1, 1, 0, 0)
			}
			judge(t, privacyRuns, c.epsRun, c.private, outcomeCounts(uint64(200+2*i), privacyRuns, run(d)), outcomeCounts(uint64(201+2*i), privacyRuns, run(d2)))
		})
	}
}

// TestSparseMarginCoverage measures SparseMargin's guarantee on a stream
// crowded around the threshold (every value in T ± 2α): over 1,000 runs,
// a ⊤ below T − α or a ⊥ at or above T + α before the run stops must
// happen in at most 5% + 3 standard errors of them; the same stream with
// a margin ten times smaller fails.
func TestSparseMarginCoverage(t *testing.T) {
	t.Parallel()
	const runs, queries = 1000, 200
	limit := 0.05 + 3*math.Sqrt(0.05*0.95/runs)
	for _, o := range []SparseOptions{
		{Epsilon: 1, Sensitivity: 1, Threshold: 100, Cutoff: 3, Monotonic: true},
		{Epsilon: 0.5, Sensitivity: 2, Threshold: -40, Cutoff: 1},
	} {
		alpha := SparseMargin(o, queries, 0.05)
		rate := func(alpha float64, seed uint64) float64 {
			src := newSeeded(seed)
			vals := rand.New(rand.NewPCG(seed, 3))
			failed := 0
			for range runs {
				s, err := NewSparse(o, src)
				if err != nil {
					t.Fatal(err)
				}
				bad := false
				for range queries {
					q := o.Threshold + (vals.Float64()*4-2)*alpha
					above, err := s.Next(q)
					if err != nil {
						break
					}
					bad = bad || (above && q < o.Threshold-alpha) || (!above && q >= o.Threshold+alpha)
				}
				if bad {
					failed++
				}
			}
			return float64(failed) / runs
		}
		if r := rate(alpha, 41); r > limit {
			t.Errorf("%+v: α=%.4g failed in %.1f%% of runs, above %.1f%%", o, alpha, 100*r, 100*limit)
		}
		if r := rate(alpha/10, 42); r <= limit {
			t.Errorf("%+v: α/10 failed in only %.1f%% of runs: the test cannot fail", o, 100*r)
		}
	}
}

// TestTopKMarginCoverage measures TopKMargin's guarantee on crowded
// scores (200 candidates within 4α of each other): the j-th chosen must
// be at least the j-th largest minus α in all but 5% + 3 standard errors
// of 1,000 runs; a margin ten times smaller fails.
func TestTopKMarginCoverage(t *testing.T) {
	t.Parallel()
	const runs, n = 1000, 200
	limit := 0.05 + 3*math.Sqrt(0.05*0.95/runs)
	opts := TopKOptions{Epsilon: 1, Sensitivity: 1, K: 3, Monotonic: true}
	alpha := TopKMargin(opts, n, 0.05)
	vals := rand.New(rand.NewPCG(5, 6))
	scores := make([]*big.Float, n)
	sorted := make([]float64, n)
	for i := range scores {
		v := math.Round(vals.Float64() * 4 * alpha)
		scores[i], sorted[i] = big.NewFloat(v), v
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(sorted)))
	rate := func(alpha float64, seed uint64) float64 {
		noise := NewSecureNoiser(newSeeded(seed))
		failed := 0
		for range runs {
			idx, err := NoisyTopK(scores, opts, noise, nil)
			if err != nil {
				t.Fatal(err)
			}
			for j, i := range idx {
				if f, _ := scores[i].Float64(); f < sorted[j]-alpha {
					failed++
					break
				}
			}
		}
		return float64(failed) / runs
	}
	if r := rate(alpha, 51); r > limit {
		t.Errorf("α=%.4g failed in %.1f%% of runs, above %.1f%%", alpha, 100*r, 100*limit)
	}
	if r := rate(alpha/10, 52); r <= limit {
		t.Errorf("α/10 failed in only %.1f%% of runs: the test cannot fail", 100*r)
	}
}
