// Package autobound chooses clipping bounds privately, from one scan.
//
// Where it sits: the backend computes, per group, a Histogram of a column's
// values over magnitude buckets (exec registers it as an SQLite aggregate);
// Search merges the groups' histograms and runs the sparse vector technique
// over the counts "how many values lie beyond candidate b" to pick a lower
// and an upper bound; Moments then gives the exact clipped count, sum and
// sum of squares for those bounds from the same histograms. So a query with
// automatic bounds scans the data once, and its cost does not depend on the
// number of candidates.
//
// Candidates are 0 and (1 + k/8)·2^e for k = 0..7 and e = MinExp..MaxExp−1:
// eight per octave, finer than powers of two (a bound at most 12.5% above
// the value it must cover), and all exact in binary, so a bucket boundary is
// a candidate and clipped sums at a candidate are exact.
package autobound

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/exactsum"
	"github.com/dpsql/dpsql/mechanism"
)

// Candidate grid.
const (
	MinExp     = -20 // smallest non-zero candidate: 2^-20
	MaxExp     = 63  // largest candidate: 1.875·2^62
	perOctave  = 8
	NumBuckets = 1 + (MaxExp-MinExp)*perOctave // bucket 0 holds exact zeros
)

// Candidate returns the j-th candidate bound (j = 0 is 0).
func Candidate(j int) float64 {
	if j <= 0 {
		return 0
	}
	t := j - 1
	return math.Ldexp(1+float64(t%perOctave)/perOctave, MinExp+t/perOctave)
}

// bucket returns the smallest j ≥ 1 with Candidate(j) ≥ a, for a > 0, or
// NumBuckets when a exceeds every candidate.
func bucket(a float64) int {
	if a <= math.Ldexp(1, MinExp) {
		return 1
	}
	// a = (1 + f)·2^e with f in [0, 1): the smallest candidate ≥ a is
	// (1 + k/8)·2^e with k = ⌈8f⌉ (k = 8 is 2^(e+1)). ⌈8f⌉ is read from
	// the top three bits of the mantissa, plus one if any lower bit is set.
	b := math.Float64bits(a)
	e := int(b>>52&0x7ff) - 1023
	frac := b & (1<<52 - 1)
	k := int(frac >> 49)
	if frac&(1<<49-1) != 0 {
		k++
	}
	j := (e-MinExp)*perOctave + k + 1
	if j >= NumBuckets {
		return NumBuckets
	}
	return j
}

// Histogram holds, for each sign and magnitude bucket, the count, sum and
// sum of squares of the magnitudes of the non-NULL values. Values beyond
// the largest candidate (and non-numeric values, which SQLite orders above
// all numbers) are only counted, in Over: every candidate clips them.
type Histogram struct {
	Zeros int64
	N     [2][NumBuckets]int64        // [0]: positive values, [1]: negative values
	Sum   [2][NumBuckets]exactsum.Acc // exact Σ of magnitudes
	SumSq [2][NumBuckets]exactsum.Acc // exact Σ of squared magnitudes
	Over  [2]int64
}

// Add adds one value; NULLs must not be added. The sums of squares are
// left empty: use AddSquared when the moments will include them.
func (h *Histogram) Add(x float64) { h.add(x, false, 1) }

// AddSquared adds one value to the sums and to the sums of squares.
func (h *Histogram) AddSquared(x float64) { h.add(x, true, 1) }

// AddN adds n ≥ 1 copies of one value, exactly as n calls of Add would.
func (h *Histogram) AddN(x float64, n int64) { h.add(x, false, n) }

// AddSquaredN adds n ≥ 1 copies of one value, as n calls of AddSquared.
func (h *Histogram) AddSquaredN(x float64, n int64) { h.add(x, true, n) }

func (h *Histogram) add(x float64, squares bool, n int64) {
	side := 0
	if x < 0 || (math.IsInf(x, -1)) {
		side, x = 1, -x
	}
	switch {
	case x == 0:
		h.Zeros += n
		return
	case math.IsNaN(x) || math.IsInf(x, 0):
		h.Over[side] += n
		return
	}
	j := bucket(x)
	if j >= NumBuckets {
		h.Over[side] += n
		return
	}
	h.N[side][j] += n
	if n == 1 {
		h.Sum[side][j].Add(x)
		if squares {
			h.SumSq[side][j].AddSquare(x)
		}
		return
	}
	h.Sum[side][j].AddScaled(x, n)
	if squares {
		p := x * x // x² = p + e exactly, as in AddSquare
		h.SumSq[side][j].AddScaled(p, n)
		h.SumSq[side][j].AddScaled(math.FMA(x, x, -p), n)
	}
}

// AddAbove counts a value that sorts above every number (SQLite text).
func (h *Histogram) AddAbove() { h.Over[0]++ }

// Merge adds o into h.
func (h *Histogram) Merge(o *Histogram) {
	h.Zeros += o.Zeros
	for s := 0; s < 2; s++ {
		h.Over[s] += o.Over[s]
		for j := range h.N[s] {
			h.N[s][j] += o.N[s][j]
			h.Sum[s][j].AddAcc(&o.Sum[s][j])
			h.SumSq[s][j].AddAcc(&o.SumSq[s][j])
		}
	}
}

// Count is the number of values.
func (h *Histogram) Count() int64 {
	n := h.Zeros + h.Over[0] + h.Over[1]
	for s := 0; s < 2; s++ {
		for _, c := range h.N[s] {
			n += c
		}
	}
	return n
}

// beyond returns, for one side, q_j = #{values with magnitude > Candidate(j)}
// on that side, for every j.
func (h *Histogram) beyond(side int) []int64 {
	q := make([]int64, NumBuckets)
	rest := h.Over[side]
	for j := NumBuckets - 1; j >= 0; j-- {
		q[j] = rest
		rest += h.N[side][j]
	}
	return q
}

// Moments are a column's clipped count, and its exact clipped sum and sum
// of squares.
type Moments struct {
	N          int64
	Sum, SumSq exactsum.Acc
}

// Moments returns the moments of the values clipped to [lo, hi], where
// lo = −Candidate(jl) and hi = Candidate(jh). They are exact, because a
// candidate is a bucket boundary and the buckets' sums are exact.
func (h *Histogram) Moments(jl, jh int) *Moments {
	m := &Moments{N: h.Zeros}
	for side, jb := range [2]int{jh, jl} {
		b := Candidate(jb)
		sign := 1.0
		if side == 1 {
			sign = -1
		}
		clipped := h.Over[side]
		for j := 1; j < NumBuckets; j++ {
			if j <= jb {
				if side == 1 {
					neg := negated(&h.Sum[side][j])
					m.Sum.AddAcc(neg)
				} else {
					m.Sum.AddAcc(&h.Sum[side][j])
				}
				m.SumSq.AddAcc(&h.SumSq[side][j])
				m.N += h.N[side][j]
			} else {
				clipped += h.N[side][j]
			}
		}
		m.N += clipped
		m.Sum.AddScaled(sign*b, clipped)
		m.SumSq.AddScaled(b*b, clipped)
	}
	return m
}

// negated returns −a.
func negated(a *exactsum.Acc) *exactsum.Acc {
	var n exactsum.Acc
	n.AddNegated(a)
	return &n
}

// ThresholdScales is the default threshold in units of the query noise
// scale: the search stops at the first candidate beyond which at most about
// this many noise scales' worth of values lie. Chosen by measurement
// (docs/benchmarks.md).
const ThresholdScales = 3

// Result is a chosen pair of bounds.
type Result struct {
	Lo, Hi       float64
	LoIdx, HiIdx int // candidate indexes: Lo = −Candidate(LoIdx), Hi = Candidate(HiIdx)
}

// Search chooses bounds with ε-DP, where sensitivity is how many rows one
// privacy unit can add (1 when a row is a unit; l0·l∞ after contribution
// bounding), so that every count moves by at most that: one Sparse run with cutoff 2 over
// monotonic counting queries, first the negative side −q⁻_0, −q⁻_1, ...
// until the first ⊤, then the positive side. The threshold is −t with
// t = ThresholdScales × the query noise scale.
//
// Why it is private: the stream's queries are counts with sensitivity 1,
// all moving in the same direction when a row is added (monotonic), chosen
// adaptively from earlier ⊥/⊤ answers only; this is exactly the setting of
// Lyu et al.'s Algorithm 1 with c = 2. Only the two ⊤ positions leave.
func Search(h *Histogram, epsilon, sensitivity float64, noise mechanism.Noiser) (Result, error) {
	opts := mechanism.SparseOptions{Epsilon: epsilon, Sensitivity: sensitivity, Cutoff: 2, Monotonic: true}
	if epsilon <= 0 || math.IsNaN(epsilon) || math.IsInf(epsilon, 0) {
		return Result{}, fmt.Errorf("%w: bound search epsilon %v", mechanism.ErrInvalidParameter, epsilon)
	}
	opts.Threshold = -ThresholdScales * mechanism.SparseQueryScale(opts)
	sv, err := noise.NewSparse(opts)
	if err != nil {
		return Result{}, err
	}
	pick := func(side int) (int, error) {
		q := h.beyond(side)
		for j := 0; j < NumBuckets; j++ {
			above, err := sv.Next(-float64(q[j]))
			if err != nil {
				return 0, err
			}
			if above {
				return j, nil
			}
		}
		return NumBuckets - 1, nil // nothing reported: the widest bound
	}
	jl, err := pick(1)
	if err != nil {
		return Result{}, err
	}
	jh, err := pick(0)
	if err != nil {
		return Result{}, err
	}
	r := Result{Lo: 0 - Candidate(jl), Hi: Candidate(jh), LoIdx: jl, HiIdx: jh} // 0 − x, not −x: no −0
	if r.Lo == r.Hi {                                                           // both at 0: keep a non-empty interval
		r.HiIdx = 1
		r.Hi = Candidate(1)
	}
	return r, nil
}
