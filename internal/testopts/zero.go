package testopts

import (
	"math/big"

	"github.com/dpsql/dpsql/mechanism"
)

// ZeroNoise returns a noiser that adds nothing (and compares the sparse
// vector technique's queries without noise), for tests of exact answers.
func ZeroNoise() mechanism.Noiser { return zeroNoise{} }

// zeroNoise adds no noise: it lets tests check exact answers.
type zeroNoise struct{}

func (zeroNoise) AddLaplace(v, _, _ float64) (float64, error) { return v, nil }

// AddLaplaceExact returns the exact value, rounded to float64 only at the end.
func (zeroNoise) AddLaplaceExact(v *big.Float, _, _ float64) (float64, error) {
	f, _ := v.Float64()
	return f, nil
}

// AddGaussianExact returns the exact value, rounded to float64 only at the end.
func (z zeroNoise) AddGaussianExact(v *big.Float, _, _ float64) (float64, error) {
	return z.AddLaplaceExact(v, 0, 0)
}

// NewSparse compares without noise: above when q ≥ the threshold.
func (zeroNoise) NewSparse(opts mechanism.SparseOptions) (mechanism.Thresholder, error) {
	return &exactThreshold{t: opts.Threshold, left: opts.Cutoff}, nil
}

type exactThreshold struct {
	t    float64
	left int
}

// NextExact compares the exact value with the threshold.
func (e *exactThreshold) NextExact(q *big.Float) (bool, error) {
	if e.left == 0 {
		return false, mechanism.ErrSparseDone
	}
	if q.Cmp(big.NewFloat(e.t)) >= 0 {
		e.left--
		return true, nil
	}
	return false, nil
}

func (e *exactThreshold) Next(q float64) (bool, error) {
	if e.left == 0 {
		return false, mechanism.ErrSparseDone
	}
	if q >= e.t {
		e.left--
		return true, nil
	}
	return false, nil
}
