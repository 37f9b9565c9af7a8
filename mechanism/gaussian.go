package mechanism

import (
	"fmt"
	"math"
	"math/big"
)

// The Gaussian mechanism, for zero-concentrated DP accounting (issue 12):
// the exact value is rounded to a power-of-two grid, as for Laplace noise,
// and an integer number of grid steps drawn from the discrete Gaussian
// N_Z(0, σ²) — exactly, by Canonne, Kamath & Steinke 2020, Algorithm 3 —
// is added. Adding discrete Gaussian noise of scale σ to a value of
// sensitivity Δ (in grid steps) is Δ²/(2σ²)-zCDP (CKS20, Theorem 14);
// the grid rounding can move two neighbouring values one step further
// apart, so σ is calibrated to Δ + g.

// gaussianGridBits sets the grid: the step is the smallest power of two at
// least σ/2^gaussianGridBits, so σ spans about 2^20 steps (σ² stays within
// 64 bits, which keeps the sampler's rationals small).
const gaussianGridBits = 20

// GaussianSigma is the scale σ = Δ/√(2ρ) of the Gaussian mechanism that is
// ρ-zCDP for L2 sensitivity Δ (before the grid's one step).
func GaussianSigma(l2Sensitivity, rho float64) float64 { return l2Sensitivity / math.Sqrt(2*rho) }

// GaussianErrorBound is the half-width of the (1−alpha) interval of
// Gaussian noise of scale σ: σ·√2·erfc⁻¹(alpha).
func GaussianErrorBound(sigma, alpha float64) float64 {
	return sigma * math.Sqrt2 * math.Erfcinv(alpha)
}

// gaussianGrid validates the parameters and returns the grid step g and σ
// in grid steps, an integer s with s ≥ (Δ/g + 1)/√(2ρ): the mechanism is
// then (Δ/g + 1)²/(2s²) ≤ ρ -zCDP for values of sensitivity Δ.
func gaussianGrid(l2Sensitivity, rho float64) (g float64, s uint64, err error) {
	if err := checkPositive("sensitivity", l2Sensitivity); err != nil {
		return 0, 0, err
	}
	if err := checkPositive("rho", rho); err != nil {
		return 0, 0, err
	}
	sigma := GaussianSigma(l2Sensitivity, rho)
	g = math.Exp2(math.Ceil(math.Log2(sigma / (1 << gaussianGridBits))))
	if math.IsInf(sigma, 0) || g <= 0 || math.IsInf(g, 0) || math.IsNaN(g) {
		return 0, 0, fmt.Errorf("%w: noise scale %v/√(2·%v) out of range", ErrInvalidParameter, l2Sensitivity, rho)
	}
	sf := math.Ceil((l2Sensitivity/g+1)/math.Sqrt(2*rho)) + 1 // + 1: float rounding in the division
	if !(sf < 1<<31) {
		return 0, 0, fmt.Errorf("%w: noise scale out of range", ErrInvalidParameter)
	}
	return g, uint64(sf), nil
}

// CheckGaussian reports whether AddGaussianExact accepts these parameters
// for every finite value (the planner checks before the charge).
func CheckGaussian(l2Sensitivity, rho float64) error {
	_, _, err := gaussianGrid(l2Sensitivity, rho)
	return err
}

// AddGaussianExact rounds the exact value to the grid, exactly, and adds
// discrete Gaussian noise calibrated to be ρ-zCDP for L2 sensitivity Δ.
// The result becomes a float64 only after the noise, saturating at
// ±MaxFloat64.
func (n *SecureNoiser) AddGaussianExact(value *big.Float, l2Sensitivity, rho float64) (float64, error) {
	g, s, err := gaussianGrid(l2Sensitivity, rho)
	if err != nil {
		return 0, err
	}
	if value == nil || value.IsInf() {
		return 0, fmt.Errorf("%w: value is not finite", ErrInvalidParameter)
	}
	return onGridPlus(value, g, n.DiscreteGaussian(s*s)), nil
}

// DiscreteGaussian draws k with P(k) ∝ exp(−k²/(2σ²)) for the integer
// variance parameter sigma2 = σ², exactly (Canonne, Kamath & Steinke 2020,
// Algorithm 3): with t = ⌊σ⌋ + 1, draw Y from the discrete Laplace of
// scale t and accept it with probability exp(−(|Y| − σ²/t)²/(2σ²)).
func (n *SecureNoiser) DiscreteGaussian(sigma2 uint64) int64 {
	if sigma2 == 0 {
		panic("mechanism: discrete Gaussian variance must be positive")
	}
	t := isqrt(sigma2) + 1 // ⌊σ⌋ + 1
	s2 := new(big.Int).SetUint64(sigma2)
	bt := new(big.Int).SetUint64(t)
	// γ = (|Y|·t − σ²)² / (2·σ²·t²)
	den := new(big.Int).Mul(bt, bt)
	den.Mul(den, s2)
	den.Lsh(den, 1)
	num := new(big.Int)
	for {
		y := n.DiscreteLaplace(t)
		a := y
		if a < 0 {
			a = -a
		}
		num.SetUint64(uint64(a))
		num.Mul(num, bt)
		num.Sub(num, s2)
		num.Mul(num, num)
		if n.bernoulliExpNegBig(num, den) {
			return y
		}
	}
}

// isqrt returns ⌊√x⌋.
func isqrt(x uint64) uint64 {
	r := uint64(math.Sqrt(float64(x)))
	for r*r > x {
		r--
	}
	for (r+1)*(r+1) <= x {
		r++
	}
	return r
}

// bernoulliExpNegBig returns true with probability exp(−num/den), exactly,
// for big non-negative num and positive den: exp(−1) once per whole unit
// of num/den, then the fractional part (CKS20, Algorithm 1).
func (n *SecureNoiser) bernoulliExpNegBig(num, den *big.Int) bool {
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	for i := int64(0); q.Cmp(big.NewInt(i)) > 0; i++ {
		if !n.bernoulliExpNegUnit(1, 1) {
			return false
		}
	}
	// exp(−r/den), r/den in [0, 1): A_k ~ Bernoulli(r/(den·k)) until one is
	// false; true when that k is odd.
	kden := new(big.Int)
	for k := int64(1); ; k++ {
		kden.Mul(den, big.NewInt(k))
		if n.uniformBelowBig(kden).Cmp(r) >= 0 {
			return k%2 == 1
		}
	}
}
