package autobound

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/mechanism"
)

func TestBucketBoundaries(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100_000; i++ {
		a := math.Exp2(r.Float64()*100 - 30)
		j := bucket(a)
		if j >= NumBuckets {
			if a <= Candidate(NumBuckets-1) {
				t.Fatalf("%g put beyond the top candidate %g", a, Candidate(NumBuckets-1))
			}
			continue
		}
		if a > Candidate(j) || (j > 1 && a <= Candidate(j-1)) {
			t.Fatalf("%g in bucket %d = (%g, %g]", a, j, Candidate(j-1), Candidate(j))
		}
	}
	for j := 1; j < NumBuckets; j++ { // a candidate is in its own bucket
		if got := bucket(Candidate(j)); got != j {
			t.Fatalf("candidate %d (%g) in bucket %d", j, Candidate(j), got)
		}
		if Candidate(j) <= Candidate(j-1) {
			t.Fatalf("candidates not increasing at %d", j)
		}
	}
}

// TestMomentsMatchBruteForce compares the histogram's clipped moments, exactly, with
// a direct clip-and-sum, for pairs of candidate bounds across the range.
func TestMomentsMatchBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var xs []float64
	var h Histogram
	for i := 0; i < 5000; i++ {
		var x float64
		switch i % 5 {
		case 0:
			x = float64(r.IntN(100)) // integers, many on candidates
		case 1:
			x = -r.ExpFloat64() * 50
		case 2:
			x = 0
		case 3:
			x = r.NormFloat64() * 1e4
		default:
			x = math.Ldexp(1.125+0.25*float64(r.IntN(3)), r.IntN(30)-10) // exactly on candidates
		}
		xs = append(xs, x)
		h.AddSquared(x)
	}
	if h.Count() != int64(len(xs)) {
		t.Fatalf("count %d, want %d", h.Count(), len(xs))
	}
	// Every 13th lower and 11th upper candidate (coprime strides, about
	// 3,000 pairs: every bucket class meets both ends) — each pair checked
	// exactly against 5,000 values summed in 4096-bit arithmetic.
	for jl := 0; jl < NumBuckets; jl += 13 {
		for jh := 0; jh < NumBuckets; jh += 11 {
			lo, hi := -Candidate(jl), Candidate(jh)
			checkMoments(t, h.Moments(jl, jh), xs, lo, hi)
		}
	}
}

// checkMoments fails t unless m are exactly the count, sum and sum of
// squares of xs clipped to [lo, hi], summed in 4096-bit arithmetic.
func checkMoments(t *testing.T, m *Moments, xs []float64, lo, hi float64) {
	t.Helper()
	var n int64
	s, s2 := new(big.Float).SetPrec(4096), new(big.Float).SetPrec(4096)
	for _, x := range xs {
		c := new(big.Float).SetPrec(4096).SetFloat64(math.Min(hi, math.Max(lo, x)))
		n++
		s.Add(s, c)
		s2.Add(s2, new(big.Float).SetPrec(4096).Mul(c, c))
	}
	if m.N != n || m.Sum.Big().Cmp(s) != 0 || m.SumSq.Big().Cmp(s2) != 0 {
		t.Fatalf("bounds [%g, %g]: moments N=%d Σ=%s Σ²=%s, exact N=%d Σ=%s Σ²=%s", lo, hi,
			m.N, m.Sum.Big().Text('g', 30), m.SumSq.Big().Text('g', 30), n, s.Text('g', 30), s2.Text('g', 30))
	}
}

// TestMomentsOfPositiveLowerBound: MomentsOf with a positive lower bound
// (every value at or below it counted at it) equals a direct clip-and-sum
// exactly, for pairs of candidates 0 < lo < hi across the range.
func TestMomentsOfPositiveLowerBound(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var xs []float64
	var h Histogram
	for i := 0; i < 3000; i++ {
		var x float64
		switch i % 4 {
		case 0:
			x = float64(1990 + r.IntN(31)) // years: many on and near candidates
		case 1:
			x = -r.ExpFloat64() * 50
		case 2:
			x = 0
		default:
			x = math.Ldexp(1+r.Float64(), r.IntN(40)-10)
		}
		xs = append(xs, x)
		h.AddSquared(x)
	}
	for jl := 1; jl < NumBuckets; jl += 13 {
		for jh := jl + 1; jh < NumBuckets; jh += 11 {
			lo, hi := Candidate(jl), Candidate(jh)
			checkMoments(t, h.MomentsOf(Result{Lo: lo, Hi: hi, LoIdx: jl, HiIdx: jh, LoUp: true}), xs, lo, hi)
		}
	}
}

type seeded struct{ r *rand.Rand }

func (s seeded) Uint64() uint64 { return s.r.Uint64() }

// TestSearchFindsTheTail: on ages in [17, 90] with a thin tail, the chosen
// upper bound lies in [64, 256] and the lower bound in [12, 17] (the
// fine walk's positive lower bound, at most the smallest age), in at
// least 95% of 200 seeded runs at ε = 0.2 (the default share of ε = 1).
// A correct search fails this with tiny probability (a bound misses only
// when the noise exceeds several scales).
func TestSearchFindsTheTail(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var h Histogram
	for i := 0; i < 32_000; i++ {
		h.Add(float64(17 + int(math.Min(73, r.ExpFloat64()*20))))
	}
	noise := mechanism.NewSecureNoiser(seeded{rand.New(rand.NewPCG(7, 8))})
	good := 0
	for i := 0; i < 200; i++ {
		res, err := Search(&h, 0.2, 1, noise)
		if err != nil {
			t.Fatal(err)
		}
		if res.Lo >= 12 && res.Lo <= 17 && res.Hi >= 64 && res.Hi <= 256 {
			good++
		}
	}
	if good < 190 {
		t.Errorf("bounds in range in %d of 200 runs", good)
	}
}

// TestSearchIsPrivate runs the search many times on a histogram and on its
// neighbour without the largest value, and checks that the distribution of
// the chosen upper bound index satisfies P(D) ≤ e^ε P(D') (both ways) bin
// by bin within 4.4 standard errors (false-failure rate ~1e-5 per bin).
func TestSearchIsPrivate(t *testing.T) {
	const n, eps = 20_000, 1.0
	var d, dp Histogram
	for i := 0; i < 40; i++ {
		d.Add(float64(i % 10))
		dp.Add(float64(i % 10))
	}
	d.Add(200) // the extra row of D
	run := func(h *Histogram, seed uint64) map[int]int {
		noise := mechanism.NewSecureNoiser(seeded{rand.New(rand.NewPCG(seed, seed))})
		out := map[int]int{}
		for i := 0; i < n; i++ {
			res, err := Search(h, eps, 1, noise)
			if err != nil {
				t.Fatal(err)
			}
			out[res.HiIdx]++
		}
		return out
	}
	a, b := run(&d, 11), run(&dp, 12)
	e := math.Exp(eps)
	checked := 0
	for j := 0; j < NumBuckets; j++ {
		for _, pr := range [][2]int{{a[j], b[j]}, {b[j], a[j]}} {
			if pr[0] < 300 || pr[1] < 300 {
				continue
			}
			p, q := float64(pr[0])/n, float64(pr[1])/n
			se := math.Sqrt(p/n + e*e*q/n)
			if p-e*q > 4.4*se {
				t.Errorf("index %d: %.4f > e^ε × %.4f", j, p, q)
			}
			checked++
		}
	}
	if checked < 4 {
		t.Errorf("only %d comparisons had enough samples", checked)
	}
}

// TestBucketIsTheSmallestCandidateAbove: bucket(a) is the smallest j with
// Candidate(j) ≥ a, for values on, just above and just below candidates.
func TestBucketIsTheSmallestCandidateAbove(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var as []float64
	for j := 1; j < NumBuckets; j++ {
		c := Candidate(j)
		as = append(as, c, math.Nextafter(c, 0), math.Nextafter(c, math.Inf(1)))
	}
	for i := 0; i < 10000; i++ {
		as = append(as, math.Ldexp(r.Float64()+0.5, r.IntN(100)-30))
	}
	for _, a := range as {
		want := NumBuckets
		for j := 1; j < NumBuckets; j++ {
			if Candidate(j) >= a {
				want = j
				break
			}
		}
		if got := bucket(a); got != want {
			t.Fatalf("bucket(%v) = %d, want %d", a, got, want)
		}
	}
}

// TestTailExcessFollowsTheStops: the allowance is 0 where the count beyond
// fell at once (the two stops one candidate) or the search collapsed,
// positive and finite for a tail that thins between the stops, smaller the
// further the bound lies past the last stop, and not finite where the
// stops lie so far apart that the extrapolated tail has no finite sum.
func TestTailExcessFollowsTheStops(t *testing.T) {
	at := func(v float64) int { return bucket(v) }
	fine := func(tail, stop, hi float64) Result {
		return Result{Hi: hi, HiIdx: at(hi), TailIdx: at(tail), StopIdx: at(stop), Scale: 19, Threshold: 19}
	}
	for _, tc := range []struct {
		name          string
		r             Result
		zero, finite_ bool
	}{
		{"cliff: one candidate", fine(96, 96, 96), true, true},
		{"collapsed", Result{Hi: Candidate(1), HiIdx: 1, Threshold: 19}, true, true},
		{"thinning tail", fine(96, 224, 416), false, true},
		{"stops five octaves apart", fine(96, 96*32, 96*32), true, false},
		{"coarse walk", Result{Hi: 512, HiIdx: at(512), Scale: 60, Threshold: 120}, false, true},
		{"fine walk from 0", Result{Hi: 300, HiIdx: at(300), StopIdx: at(300), Scale: 19, Threshold: 19}, false, true},
	} {
		ex, finite := tc.r.TailExcess()
		if finite != tc.finite_ || (ex == 0) != tc.zero || ex < 0 || math.IsNaN(ex) || math.IsInf(ex, 0) {
			t.Errorf("%s: TailExcess() = %v, %v", tc.name, ex, finite)
		}
	}
	near, _ := fine(96, 224, 256).TailExcess()
	far, _ := fine(96, 224, 448).TailExcess()
	if !(far < near) {
		t.Errorf("the allowance past a bound further out (%v) is not below the nearer one's (%v)", far, near)
	}
}

// TestTailAllowanceRestoresCoverage: on 10,000 log-normal values at ε = 1
// (the bound search at 0.3 of it, three cells sharing the rest, as
// BenchmarkChooseSimulated draws them), the 95% intervals of SUM and AVG
// with the allowance hold the raw truth in at least 90% of 400 seeded runs,
// where without it AVG's held it in under 85% (measured: 93–97% with, 75%
// without). Seeded: the outcome is fixed; the margins are the run-to-run
// spread of the simulation across seeds.
func TestTailAllowanceRestoresCoverage(t *testing.T) {
	c := simCoverage(logNormal(10000), 1, 0.3, 3, 400, 1)
	if c.sumWith < 0.90 || c.avgWith < 0.90 {
		t.Errorf("with the allowance, SUM held the truth in %.1f%%, AVG in %.1f%% (want ≥ 90%%)", 100*c.sumWith, 100*c.avgWith)
	}
	if c.avgWithout > 0.85 {
		t.Errorf("without the allowance AVG held the truth in %.1f%%: the shape no longer tests it", 100*c.avgWithout)
	}
}
