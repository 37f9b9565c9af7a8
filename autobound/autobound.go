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

// The walk. Each comparison of the search is a chance to stop early,
// which the noise gives more often the more comparisons lie below the
// data and the larger the noise is beside the number of rows: with
// 1,000 rows at ε = 0.1 the fine walk (eight candidates per octave, from
// 2^-20 up) stopped below the data nearly every time, and the answer
// collapsed to about zero. So when the threshold is large in rows
// (above CoarseRows), the walk moves an octave at a time — 8× fewer
// comparisons below the data — at a lower threshold (CoarseScales), and
// the bound it stops at is widened by one octave (post-processing): the
// values beyond the stop (up to about the threshold's number) are then
// mostly inside. With a small threshold (a large ε·rows), the fine walk
// finds bounds within 12.5% of the data's (Adult's ages 17..90 at
// ε = 1), where a coarse bound would double the noise. Measured in
// docs/accuracy.md (BenchmarkAutoBoundsGrid, BenchmarkAutoBoundsAccuracyAdult).
const (
	// CoarseRows is the threshold, in rows, above which the walk is coarse.
	CoarseRows = 100
	// CoarseScales is the coarse walk's threshold in noise scales.
	CoarseScales = 2
)

// Walk is how the search runs for its ε and sensitivity (public
// parameters only): the query noise scale, whether it walks an octave at
// a time, its step in candidates, its threshold in noise scales and in
// rows, and how many candidates the bound is widened by after the stop.
type Walk struct {
	Scale, Scales, Threshold float64
	Coarse                   bool
	Step, Widen              int
}

// walkFor is the Walk of a search run at epsilon itself (Search's).
func walkFor(epsilon, sensitivity float64) Walk {
	w := Walk{Scale: mechanism.SparseQueryScale(searchOptions(epsilon, sensitivity)), Scales: ThresholdScales, Step: 1}
	if ThresholdScales*w.Scale > CoarseRows {
		w.Coarse, w.Scales, w.Step, w.Widen = true, CoarseScales, perOctave, perOctave
	}
	w.Threshold = w.Scales * w.Scale
	return w
}

// WalkFor is the Walk of Choose's search for a bound search of epsilon.
func WalkFor(epsilon, sensitivity float64) Walk {
	return walkFor(Parts(epsilon)[0], sensitivity)
}

// Threshold is the threshold in rows of Choose's search for these
// options: about how many values may lie beyond a bound where it stops.
func Threshold(epsilon, sensitivity float64) float64 {
	return WalkFor(epsilon, sensitivity).Threshold
}

func searchOptions(epsilon, sensitivity float64) mechanism.SparseOptions {
	return mechanism.SparseOptions{Epsilon: epsilon, Sensitivity: sensitivity, Cutoff: 2, Monotonic: true}
}

// next is the candidate the walk compares after j.
func next(j, step int) int {
	if j == 0 {
		return 1
	}
	return j + step
}

// Search chooses bounds with ε-DP, where sensitivity is how many rows one
// privacy unit can add (1 when a row is a unit; l0·l∞ after contribution
// bounding), so that every count moves by at most that: one Sparse run with cutoff 2 over
// monotonic counting queries, first the negative side −q⁻_0, −q⁻_1, ...
// until the first ⊤, then the positive side, walked as walk says (every
// candidate, or one per octave). The threshold is −t with t = a number of
// query noise scales (Threshold).
//
// Why it is private: the stream's queries are counts with sensitivity 1,
// all moving in the same direction when a row is added (monotonic), chosen
// adaptively from earlier ⊥/⊤ answers and public parameters only (the
// walk depends on ε and the sensitivity); this is exactly the setting of
// Lyu et al.'s Algorithm 1 with c = 2. Only the two ⊤ positions leave,
// and the widening after them is post-processing.
func Search(h *Histogram, epsilon, sensitivity float64, noise mechanism.Noiser) (Result, error) {
	opts := searchOptions(epsilon, sensitivity)
	if epsilon <= 0 || math.IsNaN(epsilon) || math.IsInf(epsilon, 0) {
		return Result{}, fmt.Errorf("%w: bound search epsilon %v", mechanism.ErrInvalidParameter, epsilon)
	}
	w := walkFor(epsilon, sensitivity)
	step, widen := w.Step, w.Widen
	opts.Threshold = -w.Threshold
	sv, err := noise.NewSparse(opts)
	if err != nil {
		return Result{}, err
	}
	pick := func(side int) (int, error) {
		q := h.beyond(side)
		for j := 0; j < NumBuckets; j = next(j, step) {
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
	if jl > 0 {
		jl = min(jl+widen, NumBuckets-1)
	}
	if jh > 0 {
		jh = min(jh+widen, NumBuckets-1)
	}
	r := Result{Lo: 0 - Candidate(jl), Hi: Candidate(jh), LoIdx: jl, HiIdx: jh} // 0 − x, not −x: no −0
	if r.Lo == r.Hi {                                                           // both at 0: keep a non-empty interval
		r.HiIdx = 1
		r.Hi = Candidate(1)
	}
	return r, nil
}

// SearchShare is the share of a bound search's ε that chooses the bounds;
// the rest measures how many values they clip (Clipped), in two equal
// halves: the count beyond the bounds and the count of all values.
const SearchShare = 0.8

// WarnShare is the estimated share of clipped values from which an
// answer with privately chosen bounds carries a warning.
const WarnShare = 0.05

// Clipped is a private estimate of how many values privately chosen
// bounds clipped: noisy counts of the values beyond the bounds and of all
// values, and the 95% error bound of each.
type Clipped struct {
	Beyond, Total float64
	ErrorBound    float64
}

// Share is the estimated share of the values clipped, in [0, 1].
func (c Clipped) Share() float64 {
	if c.Total <= 0 {
		return 1
	}
	return math.Max(0, math.Min(1, c.Beyond/c.Total))
}

// MaxShare is the largest share the estimate allows at 95% (each count at
// its error bound, against the share).
func (c Clipped) MaxShare() float64 {
	if c.Total-c.ErrorBound <= 0 {
		return 1
	}
	return math.Max(0, math.Min(1, (c.Beyond+c.ErrorBound)/(c.Total-c.ErrorBound)))
}

// Choose chooses bounds with ε-DP: Search at SearchShare of epsilon, then
// the counts of the values beyond the chosen bounds and of all values,
// each with Laplace noise at half the rest (sequential composition: the
// parts add up to epsilon; each count moves by at most sensitivity).
func Choose(h *Histogram, epsilon, sensitivity float64, noise mechanism.Noiser) (Result, Clipped, error) {
	parts := Parts(epsilon)
	r, err := Search(h, parts[0], sensitivity, noise)
	if err != nil {
		return Result{}, Clipped{}, err
	}
	each := parts[1]
	lo, hi := h.beyond(1), h.beyond(0)
	beyond := lo[r.LoIdx] + hi[r.HiIdx]
	var c Clipped
	if c.Beyond, err = noise.AddLaplace(float64(beyond), sensitivity, each); err != nil {
		return Result{}, Clipped{}, err
	}
	if c.Total, err = noise.AddLaplace(float64(h.Count()), sensitivity, each); err != nil {
		return Result{}, Clipped{}, err
	}
	c.ErrorBound = mechanism.LaplaceErrorBound(mechanism.LaplaceScale(sensitivity, each), 0.05)
	return r, c, nil
}

// Check reports whether Choose accepts these parameters for every
// histogram (the planner calls it before the charge).
func Check(epsilon, sensitivity float64) error {
	parts := Parts(epsilon)
	opts := searchOptions(parts[0], sensitivity)
	opts.Threshold = -Threshold(epsilon, sensitivity)
	if err := mechanism.CheckSparse(opts); err != nil {
		return err
	}
	return mechanism.CheckLaplace(sensitivity, parts[1])
}

// Parts are the ε of Choose's three mechanisms for a bound search of
// epsilon, in order: the sparse vector search, the count of the values
// beyond the bounds, the count of all values (they add up to epsilon;
// the ledger composes them as three pure parts).
func Parts(epsilon float64) []float64 {
	each := epsilon * (1 - SearchShare) / 2
	return []float64{epsilon * SearchShare, each, each}
}

// UnitsFor is about how many values a column needs for bounds chosen
// with these parameters to clip at most share of them: the search stops
// where about Threshold values lie beyond its bound. A public figure
// (EXPLAIN shows it before anything is spent).
func UnitsFor(epsilon, sensitivity, share float64) float64 {
	return Threshold(epsilon, sensitivity) / share
}
