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

// MomentsOf returns the moments of the values clipped to r's bounds,
// exactly (Moments, and for a positive lower bound every value at or below
// it counted at it).
func (h *Histogram) MomentsOf(r Result) *Moments {
	if !r.LoUp {
		return h.Moments(r.LoIdx, r.HiIdx)
	}
	lo, hi := Candidate(r.LoIdx), Candidate(r.HiIdx)
	m := &Moments{}
	low, high := h.nonPositive(), h.Over[0]
	for j := 1; j < NumBuckets; j++ {
		switch {
		case j > r.HiIdx:
			high += h.N[0][j]
		case j > r.LoIdx:
			m.Sum.AddAcc(&h.Sum[0][j])
			m.SumSq.AddAcc(&h.SumSq[0][j])
			m.N += h.N[0][j]
		default:
			low += h.N[0][j]
		}
	}
	m.N += low + high
	m.Sum.AddScaled(lo, low)
	m.Sum.AddScaled(hi, high)
	m.SumSq.AddScaled(lo*lo, low)
	m.SumSq.AddScaled(hi*hi, high)
	return m
}

// negated returns −a.
func negated(a *exactsum.Acc) *exactsum.Acc {
	var n exactsum.Acc
	n.AddNegated(a)
	return &n
}

// Result is a chosen pair of bounds.
type Result struct {
	Lo, Hi       float64
	LoIdx, HiIdx int // candidate indexes: Lo = −Candidate(LoIdx) (+Candidate(LoIdx) when LoUp), Hi = Candidate(HiIdx)
	// LoUp marks a positive lower bound (the fine walk's, for a column
	// whose values all lie well above 0: years, ages).
	LoUp bool
	// Threshold is the walk's threshold in rows: about how many values
	// may lie beyond a bound where it stops.
	Threshold float64
	// TailIdx and StopIdx are the fine walk's two upper stops (candidate
	// indexes; both 0 for the coarse walk): about TailScales and
	// FineScales noise scales' worth of values lie beyond them.
	TailIdx, StopIdx int
	// Scale is the walk's query noise scale σ.
	Scale float64
}

// Collapsed reports whether the bounds closed on both sides at once (at
// most the first candidate from 0): too few rows stood above the search's
// noise threshold, so an answer reflects the bounds more than the data.
func (r Result) Collapsed() bool { return !r.LoUp && r.LoIdx <= 1 && r.HiIdx <= 1 }

// clippedBelow is how many values the lower bound of r clips (for a
// positive one, those at or below it: an upper estimate).
func (h *Histogram) clippedBelow(r Result) int64 {
	if r.LoUp {
		return h.atOrBelow()[r.LoIdx]
	}
	return h.beyond(1)[r.LoIdx]
}

// nonPositive is the number of zeros and negative values.
func (h *Histogram) nonPositive() int64 {
	n := h.Zeros + h.Over[1]
	for _, c := range h.N[1] {
		n += c
	}
	return n
}

// atOrBelow returns, for every j ≥ 1, #{values ≤ Candidate(j)}: the zeros,
// every negative value and the positive ones up to Candidate(j).
func (h *Histogram) atOrBelow() []int64 {
	q := make([]int64, NumBuckets)
	n := h.nonPositive()
	for j := 1; j < NumBuckets; j++ {
		n += h.N[0][j]
		q[j] = n
	}
	return q
}

// The walk. Each comparison of the search is a chance to stop early,
// which the noise gives more often the more comparisons lie below the
// data and the larger the noise is beside the number of rows.
//
// Where rows are many for the noise (a threshold of three query noise
// scales is at most CoarseRows rows, or the noisy count of all values is
// large: walkForCount), the walk is fine: eight candidates per octave,
// and the upper bound is found in two stages, so that it follows the
// data's tail rather than stopping where a fixed number of values lie
// beyond it. Stage one stops at the first candidate beyond which about
// TailScales noise scales' worth of values lie, stage two walks on from
// there to about one noise scale's worth, and the bound is then widened
// (post-processing, tailWiden) by TailReach times the distance between
// the two stops, in candidates: where the count beyond falls steadily
// near the top (a log-normal tail) the bound follows it on; where it
// drops at once (ages to 90) the two stops meet and the bound is not
// widened. A single stop at three noise scales (the walk before) left
// about 61 values beyond the bound at ε = 1, and their clipping was the
// error (docs/accuracy.md). The fine walk's lower bound comes last, down
// from below the upper stop: a column far from 0 (years) gets a positive
// lower bound, and with it a range, and a noise, many times smaller.
//
// Where rows are few for the noise, the walk is coarse: one candidate per
// octave — 8× fewer comparisons below the data — at CoarseScales noise
// scales, and the bound it stops at is widened by one octave; the values
// beyond the stop (up to about the threshold's number) are then mostly
// inside. Measured in docs/accuracy.md (BenchmarkAutoBoundsGrid,
// BenchmarkAutoBoundsAccuracyAdult, BenchmarkChooseSimulated).
const (
	// CoarseRows is the threshold, in rows, above which the walk is coarse.
	CoarseRows = 100
	// CoarseScales is the coarse walk's threshold in noise scales.
	CoarseScales = 2
	// FineScales is the fine walk's threshold in noise scales (its second
	// stage, and its lower bound).
	FineScales = 1
	// TailScales is the fine walk's first-stage threshold in noise scales.
	TailScales = 16
	// ZeroScales is the threshold in noise scales of the negative side's
	// first question, whether any values are negative.
	ZeroScales = 5
	// LowReach: the fine walk keeps a positive lower bound lo only where
	// lo·LowReach ≥ hi (it then narrows [0, hi] by at least 1/LowReach);
	// below that it takes 0.
	LowReach = 16
	// TailReach is how far past its second stop the fine walk widens the
	// upper bound, in units of the distance between its two stops.
	TailReach = 0.8
)

// Walk is how the search runs for its ε and sensitivity (public
// parameters only): the query noise scale, whether it walks an octave at
// a time, its step in candidates, its threshold in noise scales and in
// rows, how many candidates the bound is widened by after the stop (the
// coarse walk), and the sparse vector run's cutoff (2 for the coarse
// walk, 3 for the fine walk's two-stage upper bound).
type Walk struct {
	Scale, Scales, Threshold float64
	Coarse                   bool
	Step, Widen, Cutoff      int
}

// walkFor is the Walk of a search run at epsilon itself (Search's). The
// choice between the two walks is made at cutoff 2 and three noise
// scales, as it always was, so that it depends on ε and the sensitivity
// alone.
func walkFor(epsilon, sensitivity float64) Walk {
	if 3*mechanism.SparseQueryScale(searchOptions(epsilon, sensitivity, 2)) > CoarseRows {
		return coarseWalk(epsilon, sensitivity)
	}
	return fineWalk(epsilon, sensitivity)
}

func coarseWalk(epsilon, sensitivity float64) Walk {
	w := Walk{Scale: mechanism.SparseQueryScale(searchOptions(epsilon, sensitivity, 2)), Scales: CoarseScales,
		Coarse: true, Step: perOctave, Widen: perOctave, Cutoff: 2}
	w.Threshold = w.Scales * w.Scale
	return w
}

func fineWalk(epsilon, sensitivity float64) Walk {
	w := Walk{Scale: mechanism.SparseQueryScale(searchOptions(epsilon, sensitivity, 3)), Scales: FineScales, Step: 1, Cutoff: 3}
	w.Threshold = w.Scales * w.Scale
	return w
}

// FineScalesOfRows is how many of the fine walk's noise scales σ the
// noisy count of all values must reach for Choose to walk fine where ε
// alone would walk coarse. The fine walk stops where about σ values lie
// beyond its bound, unwidened when its two stops meet: at 100σ that is
// about 1% of the values (at 16σ, 10,000 values at ε = 0.03, it clipped
// 6% and the answers' error doubled); and an early stop below the data
// would need a query noise of about 100σ, which never comes.
const FineScalesOfRows = 100

// CountForFine is the noisy count of all values from which Choose walks
// fine where ε alone would walk coarse (for a bound search of epsilon): a
// public figure, for EXPLAIN.
func CountForFine(epsilon, sensitivity float64) float64 {
	return FineScalesOfRows * fineWalk(Parts(epsilon)[0], sensitivity).Scale
}

// walkForCount is Choose's walk: the fine walk when ε alone allows it,
// or when the noisy count of all values is at least FineScalesOfRows of
// its noise scales (many rows: comparisons below the data cannot stop
// early); else the coarse walk.
func walkForCount(epsilon, sensitivity, count float64) Walk {
	w := walkFor(epsilon, sensitivity)
	if f := fineWalk(epsilon, sensitivity); w.Coarse && count >= FineScalesOfRows*f.Scale {
		return f
	}
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

func searchOptions(epsilon, sensitivity float64, cutoff int) mechanism.SparseOptions {
	return mechanism.SparseOptions{Epsilon: epsilon, Sensitivity: sensitivity, Cutoff: cutoff, Monotonic: true}
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
// bounding), so that every count moves by at most that: one Sparse run
// over monotonic counting queries, walked as its Walk says — coarse
// (cutoff 2): the negative side −q⁻_0, −q⁻_1, ... until the first ⊤, then
// the positive side; fine (cutoff 3): the positive side in two stages,
// then down from there −L_j, L_j = #{x ≤ Candidate(j)}, and past 0 the
// negative side. Adding a row raises every q and every L: the queries
// all move one way. Each query is
// compared with the run's noisy threshold −T + ρ after a public shift: a
// stage whose threshold is t rows asks −q_j + (t − T), so that ⊤ means
// about "at most t values beyond candidate j".
//
// Why it is private: the stream's queries are counts with sensitivity 1
// (shifted by public constants), all moving in the same direction when a
// row is added (monotonic), chosen adaptively from earlier ⊥/⊤ answers and
// public parameters only (the walk depends on ε and the sensitivity);
// this is exactly the setting of Lyu et al.'s Algorithm 1, whose
// thresholds may differ per query, with c = the walk's cutoff. Only the ⊤
// positions leave, and the widening after them is post-processing.
func Search(h *Histogram, epsilon, sensitivity float64, noise mechanism.Noiser) (Result, error) {
	if epsilon <= 0 || math.IsNaN(epsilon) || math.IsInf(epsilon, 0) {
		return Result{}, fmt.Errorf("%w: bound search epsilon %v", mechanism.ErrInvalidParameter, epsilon)
	}
	return search(h, epsilon, sensitivity, walkFor(epsilon, sensitivity), noise)
}

// search is Search with its walk given (public, or chosen from an
// earlier DP release: adaptive composition).
func search(h *Histogram, epsilon, sensitivity float64, w Walk, noise mechanism.Noiser) (Result, error) {
	opts := searchOptions(epsilon, sensitivity, w.Cutoff)
	opts.Threshold = -w.Threshold
	sv, err := noise.NewSparse(opts)
	if err != nil {
		return Result{}, err
	}
	// pick walks one side from candidate from, step candidates at a time,
	// and returns the first candidate beyond which about rows values lie.
	//
	// The shift is rounded to a whole number of rows, so that −q + shift
	// is exact in float64 and neighbours' queries differ by exactly what
	// their counts do.
	pick := func(side, from, step int, rows float64) (int, error) {
		q := h.beyond(side)
		shift := math.Round(rows - w.Threshold)
		for j := from; j < NumBuckets; j = next(j, step) {
			above, err := sv.Next(-float64(q[j]) + shift)
			if err != nil {
				return 0, err
			}
			if above {
				return j, nil
			}
		}
		return NumBuckets - 1, nil // nothing reported: the widest bound
	}
	// negative walks the lower side over 0 and the negative candidates:
	// first whether about no values are negative, at ZeroScales noise
	// scales (a column without negative values then gets the lower bound
	// 0 nearly always, not a tiny negative one), then down the negative
	// candidates.
	negative := func() (int, error) {
		zero, err := sv.Next(-float64(h.beyond(1)[0]) + math.Round(max(w.Threshold, ZeroScales*w.Scale)-w.Threshold))
		if err != nil || zero {
			return 0, err
		}
		return pick(1, 1, w.Step, w.Threshold)
	}
	var jl, jh, tailIdx, stopIdx int
	loUp := false
	if w.Coarse {
		if jl, err = negative(); err != nil {
			return Result{}, err
		}
		if jh, err = pick(0, 0, w.Step, w.Threshold); err != nil {
			return Result{}, err
		}
		if jl > 0 {
			jl = min(jl+w.Widen, NumBuckets-1)
		}
		if jh > 0 {
			jh = min(jh+w.Widen, NumBuckets-1)
		}
	} else {
		tail, err := pick(0, 0, w.Step, TailScales*w.Scale)
		if err != nil {
			return Result{}, err
		}
		stop := tail
		if tail < NumBuckets-1 {
			if stop, err = pick(0, tail, w.Step, w.Threshold); err != nil {
				return Result{}, err
			}
		}
		jh = min(stop+tailWiden(stop-tail), NumBuckets-1)
		tailIdx, stopIdx = tail, stop
		// The lower bound: down from below the upper stop, the first
		// candidate with about at most one noise scale's worth of values
		// at or below it; past 0, the negative side.
		below := h.atOrBelow()
		found := false
		for j := stop - 1; j >= 1 && !found; j-- {
			if found, err = sv.Next(-float64(below[j])); err != nil {
				return Result{}, err
			}
			if found && Candidate(j)*LowReach >= Candidate(jh) {
				jl, loUp = j, true
			}
		}
		// A positive bound far below the upper one narrows the range by
		// little and lifts the values under it: 0 instead
		// (post-processing). Not found: the negative side.
		if !found {
			if jl, err = negative(); err != nil {
				return Result{}, err
			}
		}
	}
	if loUp {
		return Result{Lo: Candidate(jl), Hi: Candidate(jh), LoIdx: jl, HiIdx: jh, LoUp: true, Threshold: w.Threshold,
			TailIdx: tailIdx, StopIdx: stopIdx, Scale: w.Scale}, nil
	}
	r := Result{Lo: 0 - Candidate(jl), Hi: Candidate(jh), LoIdx: jl, HiIdx: jh, Threshold: w.Threshold,
		TailIdx: tailIdx, StopIdx: stopIdx, Scale: w.Scale} // 0 − x, not −x: no −0
	if r.Lo == r.Hi { // both at 0: keep a non-empty interval
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

// Choose chooses bounds with ε-DP: first the count of all values, with
// Laplace noise at half of (1 − SearchShare) of epsilon; then the search,
// at SearchShare of epsilon, walking as walkForCount says for that noisy
// count; then the count of the values beyond the chosen bounds, at the
// other half (sequential composition, adaptive: each part's parameters
// depend only on earlier releases; the parts add up to epsilon; each
// count moves by at most sensitivity).
func Choose(h *Histogram, epsilon, sensitivity float64, noise mechanism.Noiser) (Result, Clipped, error) {
	if epsilon <= 0 || math.IsNaN(epsilon) || math.IsInf(epsilon, 0) {
		return Result{}, Clipped{}, fmt.Errorf("%w: bound search epsilon %v", mechanism.ErrInvalidParameter, epsilon)
	}
	parts := Parts(epsilon)
	each := parts[1]
	var c Clipped
	var err error
	if c.Total, err = noise.AddLaplace(float64(h.Count()), sensitivity, each); err != nil {
		return Result{}, Clipped{}, err
	}
	r, err := search(h, parts[0], sensitivity, walkForCount(parts[0], sensitivity, c.Total), noise)
	if err != nil {
		return Result{}, Clipped{}, err
	}
	if c.Beyond, err = noise.AddLaplace(float64(h.clippedBelow(r)+h.beyond(0)[r.HiIdx]), sensitivity, each); err != nil {
		return Result{}, Clipped{}, err
	}
	c.ErrorBound = mechanism.LaplaceErrorBound(mechanism.LaplaceScale(sensitivity, each), 0.05)
	return r, c, nil
}

// Check reports whether Choose accepts these parameters for every
// histogram (the planner calls it before the charge).
func Check(epsilon, sensitivity float64) error {
	parts := Parts(epsilon)
	for _, w := range []Walk{coarseWalk(parts[0], sensitivity), fineWalk(parts[0], sensitivity)} { // walkForCount may take either
		opts := searchOptions(parts[0], sensitivity, w.Cutoff)
		opts.Threshold = -w.Threshold
		if err := mechanism.CheckSparse(opts); err != nil {
			return err
		}
	}
	return mechanism.CheckLaplace(sensitivity, parts[1])
}

// Parts are the ε of Choose's three mechanisms for a bound search of
// epsilon: the sparse vector search, and the two counts (all values, the
// values beyond the bounds), each half the rest (they add up to epsilon;
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

// tailWiden is how many candidates the fine walk widens its upper bound
// by, for gap candidates between its two stops: TailReach·gap, at most an
// octave, where the count beyond falls steadily between the stops (a
// smooth tail thins from 16 noise scales' worth to one within an octave
// or two); none where the stops lie more than two octaves apart — the
// values between them are then sparse, and the second stop is at a
// cluster of the largest values (Adult's capital gains: 159 of 99,999
// above a few hundred spread over three octaves), past which there is
// nothing to follow.
func tailWiden(gap int) int {
	if gap > 2*perOctave {
		return 0
	}
	return min(int(TailReach*float64(gap)), perOctave)
}

// The tail allowance: what the search's stops say about the values beyond
// the upper bound, for the intervals (post-processing of its release).
const (
	// TailStopScales is how many noise scales' worth of values the
	// allowance assumes lie beyond the walk's last stop: the walk stops
	// at about one, but the first noisy crossing comes early — beyond the
	// stop lay up to four noise scales' worth in 95% of simulated runs
	// (BenchmarkCoverageSimulated).
	TailStopScales = 3
	// SingleStopAlpha is the power-law exponent assumed where the walk
	// stopped once on the upper side (the coarse walk, or a fine walk
	// whose first stop is 0): a tail heavier than most measured data.
	SingleStopAlpha = 2
)

// TailExcess estimates, from the walk's released stops alone
// (post-processing: free), the sum of (x − Hi) over the values beyond Hi,
// so that an interval can allow for what clipping at Hi removed. The
// count beyond a bound b is modelled as a power law through the stops:
// N(b) = k·σ·(b/b_stop)^−α, with k = TailStopScales noise scales' worth
// beyond the last stop and 16 beyond the first, so α = ln(16/k) /
// ln(b_stop/b_tail) (SingleStopAlpha where the walk stopped once); the
// excess is then N(Hi)·Hi/(α − 1). A model, not a bound: no private
// release can see a few values far beyond the rest. finite is false
// where the model has no finite excess (α ≤ 1: a tail too heavy to
// extrapolate). Zero for a collapsed search and where the first stop
// and the last are one candidate (the count beyond fell at once).
func (r Result) TailExcess() (excess float64, finite bool) {
	if r.HiIdx <= 1 || r.Threshold <= 0 {
		return 0, true
	}
	alpha := float64(SingleStopAlpha)
	var stop float64
	n := TailStopScales * r.Threshold
	switch {
	case r.StopIdx > 0 && r.TailIdx > 0:
		if r.StopIdx == r.TailIdx {
			return 0, true
		}
		stop = Candidate(r.StopIdx)
		n = TailStopScales * r.Scale
		alpha = math.Log(TailScales/TailStopScales) / math.Log(stop/Candidate(r.TailIdx))
	case r.StopIdx > 0: // the fine walk, first stop at 0
		stop = Candidate(r.StopIdx)
		n = TailStopScales * r.Scale
	default: // the coarse walk: its stop, one widening below Hi
		stop = Candidate(max(1, r.HiIdx-perOctave))
	}
	if alpha <= 1 {
		return 0, false
	}
	n *= math.Pow(r.Hi/stop, -alpha)
	return n * r.Hi / (alpha - 1), true
}
