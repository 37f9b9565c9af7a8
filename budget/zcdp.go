package budget

import (
	"math"
)

// Zero-concentrated DP accounting (issue 12, first part): the conversions
// the ledger will use to compose Laplace, Gaussian, sparse-vector and
// partition-selection charges more tightly than by adding ε. A mechanism
// is ρ-zCDP when the Rényi divergence of order α between its outputs on
// neighbours is at most ρ·α for every α > 1 (Bun & Steinke 2016); ρ adds up
// under composition.

// RhoOfPure is the zCDP of an ε-DP mechanism (Laplace, the sparse vector
// technique): ε²/2 (Bun & Steinke 2016, Proposition 1.4).
func RhoOfPure(epsilon float64) float64 { return epsilon * epsilon / 2 }

// RhoOfGaussian is the zCDP of Gaussian noise of scale σ (continuous or
// discrete) on a value of L2 sensitivity Δ: Δ²/(2σ²) (Bun & Steinke 2016,
// Proposition 1.6; Canonne, Kamath & Steinke 2020, Theorem 14).
func RhoOfGaussian(l2Sensitivity, sigma float64) float64 {
	return l2Sensitivity * l2Sensitivity / (2 * sigma * sigma)
}

// ZCDPDelta returns a δ such that ρ-zCDP implies (ε, δ)-DP, by the
// conversion of Canonne, Kamath & Steinke 2020 (Corollary 13):
//
//	δ = inf over α > 1 of exp((α−1)(αρ−ε)) / (α−1) · (1 − 1/α)^α.
//
// Every α gives a valid δ; the order is chosen by bisection on the
// derivative of the exponent, (2α−1)ρ − ε + ln(1 − 1/α), which increases
// with α. The result is rounded up.
func ZCDPDelta(rho, epsilon float64) float64 {
	switch {
	case rho <= 0:
		return 0
	case math.IsNaN(rho) || math.IsInf(rho, 1) || math.IsNaN(epsilon) || epsilon < 0:
		return 1
	}
	lo, hi := bisect(1.0+1e-9, (epsilon+1)/(2*rho)+2, func(a float64) bool { return (2*a-1)*rho-epsilon+math.Log1p(-1/a) < 0 })
	best := 1.0
	for _, a := range []float64{lo, hi} {
		d := math.Exp((a-1)*(a*rho-epsilon)+a*math.Log1p(-1/a)) / (a - 1)
		if !math.IsNaN(d) {
			best = math.Min(best, d)
		}
	}
	return math.Min(1, math.Nextafter(best, 2)*(1+1e-12))
}

// ZCDPEpsilon returns the smallest ε (to a relative 1e-12, rounded up)
// such that ρ-zCDP implies (ε, δ)-DP under ZCDPDelta.
func ZCDPEpsilon(rho, delta float64) float64 {
	if rho <= 0 {
		return 0
	}
	if !(delta > 0 && delta < 1) {
		return math.Inf(1)
	}
	lo, hi := 0.0, rho+2*math.Sqrt(rho*math.Log(1/delta)) // the classic bound holds: a valid start
	for ZCDPDelta(rho, hi) > delta {
		hi *= 2 // (never taken in practice: the tight conversion is below the classic one)
	}
	_, hi = bisect(lo, hi, func(eps float64) bool { return ZCDPDelta(rho, eps) > delta })
	return hi
}

// RhoFor returns the largest ρ (to a relative 1e-12, rounded down) whose
// conversion stays within (ε, δ): the zCDP budget that a total (ε, δ)
// allows.
func RhoFor(epsilon, delta float64) float64 {
	if !(epsilon > 0) || !(delta > 0 && delta < 1) {
		return 0
	}
	lo, hi := 0.0, epsilon // ρ ≤ ε always suffices as an upper start: ZCDPEpsilon(ρ, δ) ≥ ρ
	lo, _ = bisect(lo, hi, func(rho float64) bool { return ZCDPEpsilon(rho, delta) <= epsilon })
	return lo
}

// bisect narrows [lo, hi] to a relative 1e-12 around the point where below
// turns from true (at lo) to false (at hi), and returns the bracket.
func bisect(lo, hi float64, below func(float64) bool) (float64, float64) {
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		if mid := lo + (hi-lo)/2; below(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, hi
}
