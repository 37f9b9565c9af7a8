package mechanism

import (
	"fmt"
	"math"
	"math/big"
)

// TopKOptions configure NoisyTopK.
type TopKOptions struct {
	// Epsilon is the cost of choosing all K: each of the K rounds spends
	// Epsilon/K (sequential composition).
	Epsilon float64
	// Sensitivity is how much one privacy unit can move any one
	// candidate's score (an l∞ bound over candidates: it may move every
	// candidate by that much at once).
	Sensitivity float64
	// K is how many candidates are chosen.
	K int
	// Monotonic declares that on neighbouring databases all scores move
	// in the same direction (counts, sums of non-negative values): the
	// noise is then halved.
	Monotonic bool
}

// TopKScale is the Laplace scale of the noise added to every score in
// every round: 2Δ·K/ε, or Δ·K/ε for monotonic scores.
func TopKScale(opts TopKOptions) float64 {
	return topKFactor(opts) * opts.Sensitivity * float64(opts.K) / opts.Epsilon
}

func topKFactor(opts TopKOptions) float64 {
	if opts.Monotonic {
		return 1
	}
	return 2
}

// CheckTopK reports whether NoisyTopK accepts these options for every set
// of finite scores: the planner calls it before the charge.
func CheckTopK(opts TopKOptions) error {
	if opts.K < 1 {
		return fmt.Errorf("%w: k must be at least 1", ErrInvalidParameter)
	}
	if err := checkPositive("epsilon", opts.Epsilon); err != nil {
		return err
	}
	return CheckLaplace(topKFactor(opts)*opts.Sensitivity, opts.Epsilon/float64(opts.K))
}

// NoisyTopK chooses K of the candidates by report noisy max, peeled: in
// each of K rounds every candidate not yet chosen gets fresh Laplace noise
// of scale TopKScale added to its exact score, and the largest noisy score
// is chosen (ties go to the earlier candidate, in the public order of the
// slice). Only the indexes are returned, best first: a noisy score never
// leaves this function, so the values of the chosen candidates must be
// measured again with budget of their own.
//
// Each round is report noisy max at ε/K (Dwork & Roth, "The Algorithmic
// Foundations of Differential Privacy", Claim 3.9: Laplace noise of scale
// Δ/ε' for monotonic scores, 2Δ/ε' in general, is ε'-DP whatever the
// number of candidates and however many of them one unit moves, each by
// at most Δ); the K rounds compose to ε. The noise is the grid-based
// discrete Laplace of AddLaplaceExact, whose grid rounding is covered by
// its calibration. before, when not nil, is told which round and
// candidate each noise draw is for, before it is drawn (for tests that
// record the draws).
func NoisyTopK(scores []*big.Float, opts TopKOptions, noise Noiser, before func(round, candidate int)) ([]int, error) {
	if err := CheckTopK(opts); err != nil {
		return nil, err
	}
	chosen := make([]bool, len(scores))
	var out []int
	per := opts.Epsilon / float64(opts.K)
	sens := topKFactor(opts) * opts.Sensitivity
	for round := 0; round < opts.K && len(out) < len(scores); round++ {
		best, bestScore := -1, 0.0
		for i, s := range scores {
			if chosen[i] {
				continue
			}
			if before != nil {
				before(round, i)
			}
			v, err := noise.AddLaplaceExact(s, sens, per)
			if err != nil {
				return nil, err
			}
			if best < 0 || v > bestScore {
				best, bestScore = i, v
			}
		}
		chosen[best] = true
		out = append(out, best)
	}
	return out, nil
}

// TopKMargin is the accuracy of NoisyTopK in the analyst's terms: with
// probability 1 − beta, every chosen candidate's exact score is at least
// the best score among those not chosen before it minus the margin (so the
// j-th chosen is at least the j-th largest score minus the margin). By
// the union bound over the K·candidates noise draws, each |noise| ≤
// b·ln(K·candidates/beta), b = TopKScale: the margin is twice that.
func TopKMargin(opts TopKOptions, candidates int, beta float64) float64 {
	n := float64(max(1, candidates) * max(1, opts.K))
	return 2 * TopKScale(opts) * math.Log(n/beta)
}

// HistogramTopMargin is the same guarantee for reading the top k off a
// noisy histogram whose every cell has Laplace noise of scale b: with
// probability 1 − beta all candidates' noise is within b·ln(candidates/
// beta), and the margin is twice that.
func HistogramTopMargin(scale float64, candidates int, beta float64) float64 {
	return 2 * scale * math.Log(float64(max(1, candidates))/beta)
}

// SparseMargin is the accuracy of a Sparse run over queries questions in
// Dwork & Roth's form (Theorem 3.24): with probability 1 − beta, every
// query answered above has an exact value of at least T − α, and every
// query of exact value at least T + α met before the run stops is
// answered above. It holds when the threshold noise and every query's
// noise are each within α/2; by the union bound it suffices that
// exp(−α/(2b₁)) + queries·exp(−α/(2b₂)) ≤ beta, b₁ the threshold noise's
// scale and b₂ the query noise's. α is found by bisection, rounded up.
func SparseMargin(opts SparseOptions, queries int, beta float64) float64 {
	eps1, _ := SparseSplit(opts.Epsilon, opts.Cutoff, opts.Monotonic)
	b1 := opts.Sensitivity / eps1
	b2 := SparseQueryScale(opts)
	fail := func(a float64) float64 {
		return math.Exp(-a/(2*b1)) + float64(max(1, queries))*math.Exp(-a/(2*b2))
	}
	lo, hi := 0.0, 2*(b1+b2)*math.Log(float64(max(1, queries)+1)/beta)
	for fail(hi) > beta {
		hi *= 2
	}
	for range 200 {
		mid := lo/2 + hi/2
		if fail(mid) > beta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
