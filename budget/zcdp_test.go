package budget

import (
	"math"
	"testing"
)

// TestZCDPConversionBounds: the conversion is never looser than the classic
// ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016), never claims less than the
// exact privacy profile of the Gaussian mechanism with that ρ (Balle & Wang
// 2018) — which it must upper-bound, since a Gaussian mechanism is exactly
// ρ-zCDP — and stays within a small factor of it.
func TestZCDPConversionBounds(t *testing.T) {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	for _, rho := range []float64{1e-6, 1e-4, 0.0175, 0.1, 0.5, 1, 5} {
		for _, delta := range []float64{1e-12, 1e-9, 1e-6, 1e-3} {
			eps := ZCDPEpsilon(rho, delta)
			if classic := rho + 2*math.Sqrt(rho*math.Log(1/delta)); eps > classic || eps <= 0 {
				t.Errorf("ρ=%g δ=%g: ε=%g, classic %g", rho, delta, eps, classic)
			}
			if d := ZCDPDelta(rho, eps); d > delta*(1+1e-9) {
				t.Errorf("ρ=%g: ZCDPDelta(ZCDPEpsilon(δ=%g)) = %g", rho, delta, d)
			}
			// Gaussian mechanism, Δ = 1, σ = 1/√(2ρ): its exact δ(ε).
			sigma := 1 / math.Sqrt(2*rho)
			exact := phi(1/(2*sigma)-eps*sigma) - math.Exp(eps)*phi(-1/(2*sigma)-eps*sigma)
			if exact > delta*(1+1e-6) {
				t.Errorf("ρ=%g δ=%g: ε=%g claims less than the Gaussian's exact δ(ε) = %g", rho, delta, eps, exact)
			}
			if exact < delta/20 {
				t.Errorf("ρ=%g δ=%g: conversion loose by more than 20× (exact δ(ε) = %g)", rho, delta, exact)
			}
		}
	}
}

// TestZCDPAccountingByHand: values computed by hand from the definitions.
func TestZCDPAccountingByHand(t *testing.T) {
	// Laplace at ε is ε²/2-zCDP; the discrete Gaussian with Δ₂ = 2, σ = 10
	// is 4/200 = 0.02.
	if r := RhoOfPure(0.1) + RhoOfGaussian(2, 10); math.Abs(r-0.025) > 1e-15 {
		t.Errorf("0.1-DP + N(0, 10²) on Δ=2: ρ = %g, want 0.025", r)
	}
	// 100 counting queries within (ε = 1, δ = 1e-6): the classic conversion
	// allows ρ = 0.01750 in all (√ρ = (−√(4 ln 1e6) + √(4 ln 1e6 + 4))/2), so
	// σ = 1/√(2ρ/100) ≈ 53.45 per query; the tight one allows more.
	x := (-math.Sqrt(4*math.Log(1e6)) + math.Sqrt(4*math.Log(1e6)+4)) / 2
	classic := x * x
	rho := RhoFor(1, 1e-6)
	if rho < classic || rho > 1.5*classic {
		t.Errorf("ρ for (1, 1e-6) = %g, classic %g", rho, classic)
	}
	sigma := 1 / math.Sqrt(2*rho/100)
	laplaceSD := math.Sqrt2 * 100 // ε = 0.01 each under basic composition
	t.Logf("100 counts within (1, 1e-6): ρ = %.5f, σ = %.2f per query, %.2f× the Laplace standard deviation %.1f", rho, sigma, sigma/laplaceSD, laplaceSD)
	if sigma > 53.45 || sigma/laplaceSD > 0.45 {
		t.Errorf("σ per query %g", sigma)
	}
	// Monotone and consistent round trips.
	if e := ZCDPEpsilon(rho, 1e-6); e > 1 || e < 0.999999 {
		t.Errorf("ZCDPEpsilon(RhoFor(1, 1e-6)) = %.12g", e)
	}
	if ZCDPDelta(0, 1) != 0 || ZCDPEpsilon(0, 1e-6) != 0 || RhoFor(0, 1e-6) != 0 || RhoFor(1, 0) != 0 {
		t.Error("degenerate cases")
	}
}
