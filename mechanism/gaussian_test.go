package mechanism

import (
	"math"
	"math/big"
	"testing"
)

// TestDiscreteGaussianProbabilities: for σ² = 9, every P(k) for |k| ≤ 8
// matches exp(−k²/18)/Z (Z summed exactly enough over |k| ≤ 60), each at
// 4.4 standard errors.
func TestDiscreteGaussianProbabilities(t *testing.T) {
	const n = 200_000
	s := NewSecureNoiser(newSeeded(7))
	counts := map[int64]int{}
	for i := 0; i < n; i++ {
		counts[s.DiscreteGaussian(9)]++
	}
	z := 0.0
	for k := -60; k <= 60; k++ {
		z += math.Exp(-float64(k*k) / 18)
	}
	for k := int64(-8); k <= 8; k++ {
		p := math.Exp(-float64(k*k)/18) / z
		se := math.Sqrt(p * (1 - p) / n)
		if got := float64(counts[k]) / n; math.Abs(got-p) > zTolerance*se {
			t.Errorf("P(%d) = %.5f, want %.5f ± %.5f", k, got, p, zTolerance*se)
		}
	}
}

// TestDiscreteGaussianMoments: at the production scale (σ ≈ 2^20 steps)
// the mean is 0 and the variance σ², at 4.4 standard errors; no sample is
// beyond 7σ (probability ≈ 2.6e-12 each).
func TestDiscreteGaussianMoments(t *testing.T) {
	const n = 20_000
	const sigma = 1 << 20
	s := NewSecureNoiser(newSeeded(8))
	var sum, sq float64
	for i := 0; i < n; i++ {
		k := float64(s.DiscreteGaussian(sigma * sigma))
		if math.Abs(k) > 7*sigma {
			t.Fatalf("sample %g beyond 7σ", k)
		}
		sum += k
		sq += k * k
	}
	mean := sum / n
	if math.Abs(mean) > zTolerance*sigma/math.Sqrt(n) {
		t.Errorf("mean %g, want 0 ± %g", mean, zTolerance*sigma/math.Sqrt(n))
	}
	v := sq/n - mean*mean
	if se := sigma * sigma * math.Sqrt(2.0/n); math.Abs(v-sigma*sigma) > zTolerance*se {
		t.Errorf("variance %g, want %g ± %g", v, float64(sigma*sigma), zTolerance*se)
	}
}

// TestAddGaussianExactCalibration: outputs lie on the grid; the scale in
// steps certifies the requested ρ for sensitivity Δ plus one step; the
// empirical standard deviation is σ = Δ/√(2ρ) within 4.4 standard errors
// (plus the grid's relative 2^−20); bad parameters are refused.
func TestAddGaussianExactCalibration(t *testing.T) {
	const n = 20_000
	s := NewSecureNoiser(newSeeded(9))
	for _, tc := range []struct{ sens, rho, value float64 }{{1, 0.5, 10}, {3, 0.01, -1e15 + 0.5}, {0.001, 2, 0}} {
		g, steps, err := gaussianGrid(tc.sens, tc.rho)
		if err != nil {
			t.Fatal(err)
		}
		if r := math.Pow(tc.sens/g+1, 2) / (2 * float64(steps*steps)); r > tc.rho {
			t.Errorf("Δ=%g ρ=%g: the scale certifies only ρ=%g", tc.sens, tc.rho, r)
		}
		want := GaussianSigma(tc.sens, tc.rho)
		var sq float64
		for i := 0; i < n; i++ {
			out, err := s.AddGaussianExact(new(big.Float).SetFloat64(tc.value), tc.sens, tc.rho)
			if err != nil {
				t.Fatal(err)
			}
			if q := out / g; q != math.Round(q) {
				t.Fatalf("output %v is not on the grid %v", out, g)
			}
			d := out - tc.value
			sq += d * d
		}
		got := math.Sqrt(sq / n)
		if se := want / math.Sqrt(2*n); math.Abs(got-want) > zTolerance*se+want*1e-5 {
			t.Errorf("Δ=%g ρ=%g: σ %g, want %g", tc.sens, tc.rho, got, want)
		}
	}
	for _, bad := range [][2]float64{{0, 1}, {1, 0}, {math.Inf(1), 1}, {1, math.NaN()}, {1e300, 1e-300}} {
		if err := CheckGaussian(bad[0], bad[1]); err == nil {
			t.Errorf("CheckGaussian(%v, %v) accepted", bad[0], bad[1])
		}
	}
}

// TestGaussianNeighbours: the empirical hockey-stick divergence between
// the outputs on neighbouring values (v and v + Δ) at ε = 1 stays within
// the δ(1) of the Gaussian mechanism's exact privacy profile (Balle & Wang
// 2018) at ρ = 0.5, plus 4.4 standard errors. Noise of half the scale
// would exceed it by far (δ(1) ≈ 0.51 instead of 0.13).
func TestGaussianNeighbours(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test skipped in -short mode")
	}
	const n = 40_000
	const sens, rho, eps = 1.0, 0.5, 1.0
	sigma := GaussianSigma(sens, rho)
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	delta := phi(sens/(2*sigma)-eps*sigma/sens) - math.Exp(eps)*phi(-sens/(2*sigma)-eps*sigma/sens)
	hist := func(v float64, seed uint64) map[int]float64 {
		s := NewSecureNoiser(newSeeded(seed))
		h := map[int]float64{}
		for i := 0; i < n; i++ {
			out, err := s.AddGaussianExact(new(big.Float).SetFloat64(v), sens, rho)
			if err != nil {
				t.Fatal(err)
			}
			h[int(math.Floor(out/(0.25*sigma)))] += 1.0 / n
		}
		return h
	}
	a, b := hist(0, 10), hist(sens, 11)
	for _, pair := range [][2]map[int]float64{{a, b}, {b, a}} {
		div := 0.0
		for k, p := range pair[0] {
			if d := p - math.Exp(eps)*pair[1][k]; d > 0 {
				div += d
			}
		}
		se := math.Sqrt((1 + math.Exp(2*eps)) / n) // a generous bound on the estimate's spread
		if div > delta+zTolerance*se {
			t.Errorf("hockey-stick divergence at ε=1: %.4f > δ(1) = %.4f (+%.4f)", div, delta, zTolerance*se)
		}
	}
}

// BenchmarkNoisePerCell: the cost of one noisy cell with crypto/rand, for
// Laplace at ε = 0.01 and the discrete Gaussian at ρ = 0.0002 (σ ≈ 50).
func BenchmarkNoisePerCell(b *testing.B) {
	n := NewSecureNoiser(CryptoSource())
	v := big.NewFloat(1234.5)
	b.Run("laplace", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := n.AddLaplaceExact(v, 1, 0.01); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gaussian", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := n.AddGaussianExact(v, 1, 0.0002); err != nil {
				b.Fatal(err)
			}
		}
	})
}
