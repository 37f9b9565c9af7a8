package mechanism

import (
	"errors"
	"fmt"
	"math"
	"math/big"
)

// SparseOptions configure the sparse vector technique.
type SparseOptions struct {
	// Epsilon is the total privacy cost of the whole run, threshold and
	// queries together, however many queries are asked.
	Epsilon float64
	// Sensitivity is the L1 sensitivity Δ of every query in the stream.
	Sensitivity float64
	// Threshold is the public threshold T.
	Threshold float64
	// Cutoff c is how many above-threshold answers may be reported before
	// the run stops (1 gives AboveThreshold).
	Cutoff int
	// Monotonic declares that for any pair of neighbouring databases all
	// queries move in the same direction (all ≥ or all ≤). Counting
	// queries are monotonic. It allows halved query noise.
	Monotonic bool
}

// ErrSparseDone is returned by Next after the cutoff was reached.
var ErrSparseDone = errors.New("mechanism: sparse vector run is over")

// Sparse is the sparse vector technique in the form that Lyu, Su & Li
// ("Understanding the Sparse Vector Technique for Differential Privacy",
// PVLDB 2017) prove private (their Algorithm 1, the standard SVT):
//
//   - one threshold noise ρ ~ Lap(Δ/ε₁), drawn once for the whole run;
//   - for each query, fresh noise νᵢ ~ Lap(2cΔ/ε₂), or Lap(cΔ/ε₂) when the
//     queries are monotonic;
//   - report ⊤ when qᵢ + νᵢ ≥ T + ρ, else ⊥; stop after c answers ⊤.
//
// The run is (ε₁+ε₂)-DP whatever the number of ⊥ answers. The budget split
// that minimises the error, from the same paper, is ε₁:ε₂ = 1:(2c)^{2/3}
// in general and 1:c^{2/3} for monotonic queries; NewSparse uses it.
//
// Variants that the paper shows are NOT private, and that must not be
// "optimised" into this code: releasing the noisy query value qᵢ+νᵢ with a
// ⊤ answer (it must be measured again with fresh budget); query noise that
// does not grow with c (Lap(Δ/ε₂) with c > 1, as in some textbook
// versions); no query noise at all; drawing the query noise scale from
// ε₂/c without the factor 2 for non-monotonic queries; and continuing past
// the c-th ⊤ without paying again. Reporting ⊥ answers is free; ⊤ answers
// are what the budget pays for.
//
// Noise is drawn with the same grid-based discrete Laplace sampler as the
// Laplace mechanism; comparisons are between grid values.
//
// A Sparse is not safe for concurrent use.
type Sparse struct {
	noiser     *SecureNoiser
	opts       SparseOptions
	eps1, eps2 float64
	threshold  float64 // T + ρ
	above      int
}

// NewSparse validates opts and draws the threshold noise.
func NewSparse(opts SparseOptions, src Source) (*Sparse, error) {
	if err := checkPositive("epsilon", opts.Epsilon); err != nil {
		return nil, err
	}
	if err := checkPositive("sensitivity", opts.Sensitivity); err != nil {
		return nil, err
	}
	if math.IsNaN(opts.Threshold) || math.IsInf(opts.Threshold, 0) {
		return nil, fmt.Errorf("%w: threshold must be finite", ErrInvalidParameter)
	}
	if opts.Cutoff < 1 {
		return nil, fmt.Errorf("%w: cutoff must be at least 1", ErrInvalidParameter)
	}
	eps1, eps2 := SparseSplit(opts.Epsilon, opts.Cutoff, opts.Monotonic)
	s := &Sparse{noiser: NewSecureNoiser(src), opts: opts, eps1: eps1, eps2: eps2}
	t, err := SparseThreshold(opts, s.noiser)
	if err != nil {
		return nil, err
	}
	s.threshold = t
	return s, nil
}

// SparseThreshold draws a sparse vector run's noisy threshold T + ρ,
// ρ ~ Lap(Δ/ε₁): once per run. A run kept across queries and restarts (a
// threshold watch) stores it, and answers each later query with
// SparseAnswer against the stored value — never a fresh threshold.
func SparseThreshold(opts SparseOptions, noise Noiser) (float64, error) {
	eps1, _ := SparseSplit(opts.Epsilon, opts.Cutoff, opts.Monotonic)
	return noise.AddLaplace(opts.Threshold, opts.Sensitivity, eps1)
}

// SparseAnswer answers one query of a run whose noisy threshold is
// noisyThreshold: the exact value q (rounded to the noise grid only) plus
// fresh noise of scale SparseQueryScale, compared with it. The caller
// stops the run after the Cutoff-th true answer.
func SparseAnswer(opts SparseOptions, noisyThreshold float64, q *big.Float, noise Noiser) (bool, error) {
	sens, eps2 := sparseQueryNoise(opts)
	noisy, err := noise.AddLaplaceExact(q, sens, eps2)
	if err != nil {
		return false, err
	}
	return noisy >= noisyThreshold, nil
}

// CheckSparse reports whether a Sparse run with these options can start
// and answer every finite query without a parameter error: the planner
// calls it before the charge.
func CheckSparse(opts SparseOptions) error {
	if opts.Cutoff < 1 {
		return fmt.Errorf("%w: cutoff must be at least 1", ErrInvalidParameter)
	}
	if math.IsNaN(opts.Threshold) || math.IsInf(opts.Threshold, 0) {
		return fmt.Errorf("%w: threshold must be finite", ErrInvalidParameter)
	}
	eps1, _ := SparseSplit(opts.Epsilon, opts.Cutoff, opts.Monotonic)
	if err := CheckLaplace(opts.Sensitivity, eps1); err != nil {
		return err
	}
	return CheckLaplace(sparseQueryNoise(opts))
}

// sparseQueryNoise is what each query's Laplace noise is calibrated to:
// sensitivity 2cΔ (cΔ for monotonic queries) at ε₂.
func sparseQueryNoise(opts SparseOptions) (sensitivity, eps2 float64) {
	_, eps2 = SparseSplit(opts.Epsilon, opts.Cutoff, opts.Monotonic)
	f := 2.0
	if opts.Monotonic {
		f = 1
	}
	return f * float64(opts.Cutoff) * opts.Sensitivity, eps2
}

// NewSparse starts a Sparse run drawing from the noiser's source.
func (n *SecureNoiser) NewSparse(opts SparseOptions) (Thresholder, error) {
	return NewSparse(opts, n.src)
}

// SparseSplit returns (ε₁, ε₂), the threshold and query shares of epsilon,
// in the ratio 1:(2c)^{2/3} (1:c^{2/3} for monotonic queries).
func SparseSplit(epsilon float64, cutoff int, monotonic bool) (eps1, eps2 float64) {
	k := 2 * float64(cutoff)
	if monotonic {
		k = float64(cutoff)
	}
	r := math.Pow(k, 2.0/3.0)
	return epsilon / (1 + r), epsilon * r / (1 + r)
}

// SparseQueryScale is the Laplace scale of the per-query noise.
func SparseQueryScale(opts SparseOptions) float64 {
	sens, eps2 := sparseQueryNoise(opts)
	return sens / eps2
}

// Next answers whether query value q is above the threshold. After the
// cutoff-th true answer it returns ErrSparseDone.
func (s *Sparse) Next(q float64) (bool, error) {
	return s.next(func(sens, eps float64) (float64, error) { return s.noiser.AddLaplace(q, sens, eps) })
}

// NextExact is Next for an exact value, rounded to the noise grid exactly
// (AddLaplaceExact).
func (s *Sparse) NextExact(q *big.Float) (bool, error) {
	return s.next(func(sens, eps float64) (float64, error) { return s.noiser.AddLaplaceExact(q, sens, eps) })
}

func (s *Sparse) next(noised func(sens, eps float64) (float64, error)) (bool, error) {
	if s.above >= s.opts.Cutoff {
		return false, ErrSparseDone
	}
	noisy, err := noised(sparseQueryNoise(s.opts))
	if err != nil {
		return false, err
	}
	if noisy >= s.threshold {
		s.above++
		return true, nil
	}
	return false, nil
}
