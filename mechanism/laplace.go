// Package mechanism holds dpsql's differential privacy mechanisms and the
// random samplers under them.
//
// Where it sits: exec asks a Noiser for noisy values of the exact aggregates
// that the rewritten SQL returned; EXPLAIN asks the same mechanisms for their
// noise scales and error bounds. Nothing here touches the database.
//
// Noise is never produced by transforming a uniform float (-b·ln(u) leaks
// through the gaps of floating point, Mironov 2012). Instead the exact value
// is rounded to a power-of-two grid and an integer number of grid steps, drawn
// by an exact discrete Laplace sampler (Canonne, Kamath & Steinke 2020,
// Algorithm 2) fed with uniform bits from crypto/rand, is added. This is the
// construction of Google's secure noise generation, with an exact sampler.
package mechanism

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
)

// Source supplies uniformly random 64-bit words.
type Source interface {
	Uint64() uint64
}

// cryptoSource reads from crypto/rand. It is safe for concurrent use.
type cryptoSource struct{}

func (cryptoSource) Uint64() uint64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		// crypto/rand.Read never fails on supported platforms (Go 1.24+);
		// continuing with predictable noise would be a privacy bug.
		panic("mechanism: crypto/rand failed: " + err.Error())
	}
	return binary.LittleEndian.Uint64(b[:])
}

// CryptoSource returns the production source of randomness, crypto/rand.
func CryptoSource() Source { return cryptoSource{} }

// Noiser adds noise to an exact value. Production code uses
// NewSecureNoiser; tests may supply their own (for example one that adds no
// noise) to check exact answers.
type Noiser interface {
	// AddLaplace returns value plus Laplace noise calibrated to the given
	// L1 sensitivity and epsilon.
	AddLaplace(value, l1Sensitivity, epsilon float64) (float64, error)
	// AddLaplaceExact is AddLaplace for an exact value (an exact sum that
	// float64 may not represent): the value is rounded to the noise grid
	// exactly, so the only rounding before the noise is that one step.
	AddLaplaceExact(value *big.Float, l1Sensitivity, epsilon float64) (float64, error)
	// AddGaussianExact adds discrete Gaussian noise to an exact value,
	// calibrated to be ρ-zCDP for the given L2 sensitivity.
	AddGaussianExact(value *big.Float, l2Sensitivity, rho float64) (float64, error)
	// NewSparse starts a sparse vector technique run.
	NewSparse(opts SparseOptions) (Thresholder, error)
}

// Thresholder answers, query by query, whether a value is above a
// threshold; *Sparse is the private one.
type Thresholder interface {
	Next(q float64) (bool, error)
	// NextExact is Next for an exact value (a sum that float64 may not
	// represent): it is rounded to the noise grid exactly, as
	// AddLaplaceExact does, so two neighbours' values differ on the grid
	// by no more than their exact difference allows.
	NextExact(q *big.Float) (bool, error)
}

// granularityParam fixes the grid: the grid step is the smallest power of two
// at least scale/granularityParam, so a noise sample spans about 2^40 steps.
const granularityParam = 1 << 40

// ErrInvalidParameter reports a NaN, infinite, zero or negative parameter.
var ErrInvalidParameter = errors.New("mechanism: invalid parameter")

// SecureNoiser draws discrete Laplace noise on a power-of-two grid.
type SecureNoiser struct {
	src Source
}

// NewSecureNoiser returns a Noiser drawing from src, or from crypto/rand when
// src is nil. Seeded sources belong in tests only.
func NewSecureNoiser(src Source) *SecureNoiser {
	if src == nil {
		src = CryptoSource()
	}
	return &SecureNoiser{src: src}
}

func checkPositive(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("%w: %s must be positive and finite, got %v", ErrInvalidParameter, name, v)
	}
	return nil
}

// LaplaceScale is the scale b = Δ/ε of the Laplace mechanism.
func LaplaceScale(l1Sensitivity, epsilon float64) float64 { return l1Sensitivity / epsilon }

// LaplaceErrorBound returns the half-width of the (1-alpha) interval of
// Laplace noise with scale b: P(|noise| > b·ln(1/alpha)) = alpha.
func LaplaceErrorBound(scale, alpha float64) float64 { return scale * math.Log(1/alpha) }

// Granularity returns the grid step used for Laplace noise of scale b.
func Granularity(scale float64) float64 {
	return math.Exp2(math.Ceil(math.Log2(scale / granularityParam)))
}

// AddLaplace rounds value to the grid and adds discrete Laplace noise. The
// rounding can move two neighbouring values apart by one more grid step, so
// the discrete scale t (in grid steps) is calibrated to sensitivity Δ+g:
// t ≥ (Δ/g + 1)/ε, which makes the mechanism ε-DP for sensitivity Δ.
func (n *SecureNoiser) AddLaplace(value, l1Sensitivity, epsilon float64) (float64, error) {
	g, t, err := laplaceGrid(l1Sensitivity, epsilon)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return 0, fmt.Errorf("%w: value is not finite", ErrInvalidParameter)
	}
	k := n.DiscreteLaplace(t)
	return math.Round(value/g)*g + float64(k)*g, nil
}

// laplaceGrid validates the parameters and returns the grid step g and the
// discrete scale t in grid steps: t ≥ (Δ/g + 1)/ε, plus one step that
// covers float rounding in the division.
func laplaceGrid(l1Sensitivity, epsilon float64) (g float64, t uint64, err error) {
	if err := checkPositive("sensitivity", l1Sensitivity); err != nil {
		return 0, 0, err
	}
	if err := checkPositive("epsilon", epsilon); err != nil {
		return 0, 0, err
	}
	b := LaplaceScale(l1Sensitivity, epsilon)
	g = Granularity(b)
	if math.IsInf(b, 0) || g <= 0 || math.IsInf(g, 0) || math.IsNaN(g) {
		return 0, 0, fmt.Errorf("%w: noise scale %v/%v out of range", ErrInvalidParameter, l1Sensitivity, epsilon)
	}
	tf := math.Ceil((l1Sensitivity/g+1)/epsilon) + 1
	if !(tf < 1<<62) {
		return 0, 0, fmt.Errorf("%w: noise scale out of range", ErrInvalidParameter)
	}
	return g, uint64(tf), nil
}

// CheckLaplace reports whether AddLaplace accepts these parameters for
// every finite value: the planner calls it for every cell before the
// charge, so that the noise step cannot fail after it.
func CheckLaplace(l1Sensitivity, epsilon float64) error {
	_, _, err := laplaceGrid(l1Sensitivity, epsilon)
	return err
}

// AddLaplaceExact rounds the exact value to the grid — exactly, in big
// arithmetic — and adds discrete Laplace noise, as AddLaplace does. The
// result is converted to float64 only after the noise (post-processing),
// saturating at ±MaxFloat64.
func (n *SecureNoiser) AddLaplaceExact(value *big.Float, l1Sensitivity, epsilon float64) (float64, error) {
	g, t, err := laplaceGrid(l1Sensitivity, epsilon)
	if err != nil {
		return 0, err
	}
	if value == nil || value.IsInf() {
		return 0, fmt.Errorf("%w: value is not finite", ErrInvalidParameter)
	}
	return onGridPlus(value, g, n.DiscreteLaplace(t)), nil
}

// onGridPlus rounds the exact value to the grid of step g (a power of two)
// — exactly, in big arithmetic — adds k steps of noise, and converts the
// result to float64, saturating at ±MaxFloat64.
func onGridPlus(value *big.Float, g float64, k int64) float64 {
	_, gexp := math.Frexp(g) // g = 0.5·2^gexp
	steps := RoundToGrid(value, gexp-1)
	steps.Add(steps, big.NewInt(k))
	out := new(big.Float).SetPrec(uint(max(64, steps.BitLen()))).SetInt(steps)
	out.SetMantExp(out, gexp-1)
	f, _ := out.Float64()
	return clampFinite(f)
}

// RoundToGrid returns round(value / 2^e) to the nearest integer, ties away
// from zero, exactly.
func RoundToGrid(value *big.Float, e int) *big.Int {
	// Enough bits to hold x and x ± 1/2 exactly: from the higher of x's top
	// bit and 2^0 down to the lower of its last bit and 2^-1.
	xe := value.MantExp(nil) - e
	prec := value.MinPrec() + uint(max(xe, -xe)) + 4
	if prec < 64 {
		prec = 64
	}
	x := new(big.Float).SetPrec(prec).SetMantExp(value, -e) // exact: scaling by a power of two
	half := new(big.Float).SetPrec(prec).SetFloat64(0.5)
	if x.Sign() < 0 {
		x.Sub(x, half)
	} else {
		x.Add(x, half)
	}
	i, _ := x.Int(nil) // truncates toward zero
	return i
}

func clampFinite(f float64) float64 {
	if math.IsInf(f, 1) {
		return math.MaxFloat64
	}
	if math.IsInf(f, -1) {
		return -math.MaxFloat64
	}
	return f
}

// DiscreteLaplace draws k with P(k) ∝ exp(-|k|/t), exactly (Canonne, Kamath
// & Steinke 2020, Algorithm 2 with s = 1).
func (n *SecureNoiser) DiscreteLaplace(t uint64) int64 {
	if t == 0 {
		panic("mechanism: discrete Laplace scale must be positive")
	}
	for {
		u := n.uniformBelow(t)
		if !n.bernoulliExpNeg(u, t) {
			continue
		}
		var v uint64
		for n.bernoulliExpNeg(1, 1) {
			v++
		}
		hi, x := bits.Mul64(t, v)
		x, carry := bits.Add64(x, u, 0)
		if hi != 0 || carry != 0 || x > math.MaxInt64 {
			continue // astronomically unlikely; rejecting keeps the law exact on the rest
		}
		neg := n.src.Uint64()&1 == 1
		if neg && x == 0 {
			continue
		}
		if neg {
			return -int64(x)
		}
		return int64(x)
	}
}

// uniformBelow returns a uniform integer in [0, m), by rejection.
func (n *SecureNoiser) uniformBelow(m uint64) uint64 {
	threshold := -m % m // 2^64 mod m
	for {
		x := n.src.Uint64()
		if x >= threshold {
			return x % m
		}
	}
}

// bernoulliRat returns true with probability num/den (num ≤ den), where den
// is given as a 128-bit number hi:lo.
func (n *SecureNoiser) bernoulliRat(num, denHi, denLo uint64) bool {
	if denHi == 0 {
		return n.uniformBelow(denLo) < num
	}
	den := new(big.Int).Lsh(new(big.Int).SetUint64(denHi), 64)
	den.Or(den, new(big.Int).SetUint64(denLo))
	return n.uniformBelowBig(den).Cmp(new(big.Int).SetUint64(num)) < 0
}

func (n *SecureNoiser) uniformBelowBig(m *big.Int) *big.Int {
	nbits := m.BitLen()
	words := (nbits + 63) / 64
	for {
		r := new(big.Int)
		for i := 0; i < words; i++ {
			r.Lsh(r, 64)
			r.Or(r, new(big.Int).SetUint64(n.src.Uint64()))
		}
		r.Rsh(r, uint(words*64-nbits))
		if r.Cmp(m) < 0 {
			return r
		}
	}
}

// bernoulliExpNeg returns true with probability exp(-num/den), exactly
// (Canonne, Kamath & Steinke 2020, Algorithm 1).
func (n *SecureNoiser) bernoulliExpNeg(num, den uint64) bool {
	for num > den {
		if !n.bernoulliExpNegUnit(1, 1) {
			return false
		}
		num -= den
	}
	return n.bernoulliExpNegUnit(num, den)
}

// bernoulliExpNegUnit handles gamma = num/den in [0, 1]: draw A_k ~
// Bernoulli(gamma/k) for k = 1, 2, ... until one is false; return whether
// that k is odd.
func (n *SecureNoiser) bernoulliExpNegUnit(num, den uint64) bool {
	k := uint64(1)
	for {
		hi, lo := bits.Mul64(den, k)
		if !n.bernoulliRat(num, hi, lo) {
			return k%2 == 1
		}
		k++
	}
}
