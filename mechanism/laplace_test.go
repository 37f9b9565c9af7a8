package mechanism

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// seeded is a deterministic Source for tests only.
type seeded struct{ r *rand.Rand }

func (s seeded) Uint64() uint64 { return s.r.Uint64() }

func newSeeded(seed uint64) Source {
	return seeded{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Each statistical check below allows 4.4 standard errors: with a normal
// approximation its false-failure rate is about 1e-5 per check.
const zTolerance = 4.4

func TestDiscreteLaplaceProbabilities(t *testing.T) {
	// For t = 2, P(k) = (1-q)/(1+q) q^|k| with q = exp(-1/2).
	const n = 200_000
	s := NewSecureNoiser(newSeeded(1))
	counts := map[int64]int{}
	for i := 0; i < n; i++ {
		counts[s.DiscreteLaplace(2)]++
	}
	q := math.Exp(-0.5)
	for k := int64(-4); k <= 4; k++ {
		p := (1 - q) / (1 + q) * math.Pow(q, math.Abs(float64(k)))
		se := math.Sqrt(p * (1 - p) / n)
		got := float64(counts[k]) / n
		if math.Abs(got-p) > zTolerance*se {
			t.Errorf("P(%d) = %.5f, want %.5f ± %.5f", k, got, p, zTolerance*se)
		}
	}
}

func TestLaplaceMeanVarianceAndGrid(t *testing.T) {
	const n = 125_000
	for _, tc := range []struct{ value, sens, eps float64 }{
		{100, 1, 1},
		{-3.3, 125, 0.1},
		{1e6, 99999, 2},
	} {
		s := NewSecureNoiser(newSeeded(uint64(tc.sens)))
		b := LaplaceScale(tc.sens, tc.eps)
		g := Granularity(b)
		base := math.Round(tc.value/g) * g
		var sum, sumSq float64
		for i := 0; i < n; i++ {
			out, err := s.AddLaplace(tc.value, tc.sens, tc.eps)
			if err != nil {
				t.Fatal(err)
			}
			steps := (out - base) / g
			if steps != math.Trunc(steps) {
				t.Fatalf("output %v is off the grid of step %v", out, g)
			}
			d := out - tc.value
			sum += d
			sumSq += d * d
		}
		mean := sum / n
		if se := math.Sqrt(2) * b / math.Sqrt(n); math.Abs(mean) > zTolerance*se {
			t.Errorf("%+v: mean noise %v, want 0 ± %v", tc, mean, zTolerance*se)
		}
		// Var(X²) for Laplace(b) is 20 b⁴.
		msq := sumSq / n
		if se := math.Sqrt(20) * b * b / math.Sqrt(n); math.Abs(msq-2*b*b) > zTolerance*se {
			t.Errorf("%+v: mean square %v, want %v ± %v", tc, msq, 2*b*b, zTolerance*se)
		}
	}
}

func TestLaplaceRejectsBadParameters(t *testing.T) {
	s := NewSecureNoiser(newSeeded(3))
	for _, tc := range []struct{ v, sens, eps float64 }{
		{1, 1, 0}, {1, 1, -1}, {1, 1, math.NaN()}, {1, 1, math.Inf(1)},
		{1, 0, 1}, {1, math.NaN(), 1}, {math.NaN(), 1, 1}, {math.Inf(-1), 1, 1},
	} {
		if _, err := s.AddLaplace(tc.v, tc.sens, tc.eps); !errors.Is(err, ErrInvalidParameter) {
			t.Errorf("AddLaplace(%v, %v, %v): err = %v, want ErrInvalidParameter", tc.v, tc.sens, tc.eps, err)
		}
	}
}

func TestCryptoSourceLooksUniform(t *testing.T) {
	// Each of 64 bit positions is set with probability 1/2.
	const n = 20_000
	src := CryptoSource()
	var ones [64]int
	for i := 0; i < n; i++ {
		x := src.Uint64()
		for b := 0; b < 64; b++ {
			ones[b] += int(x >> b & 1)
		}
	}
	// 64 checks at 5.5σ: false-failure rate about 64·4e-8.
	se := math.Sqrt(0.25 / n)
	for b, c := range ones {
		if f := float64(c) / n; math.Abs(f-0.5) > 5.5*se {
			t.Errorf("bit %d set in %.4f of draws", b, f)
		}
	}
}

// TestLaplaceEmpiricalPrivacy runs the mechanism on neighbouring values
// (differing by the sensitivity) many times and checks, bin by bin, that
// P(bin | x) ≤ e^ε · P(bin | x') within sampling error, in both directions.
// Bins with fewer than 2,000 hits are skipped; each comparison allows 4.4
// standard errors, so a correct mechanism fails with probability about 1e-5
// per bin (under 1e-3 over all bins).
func TestLaplaceEmpiricalPrivacy(t *testing.T) {
	const n = 300_000
	for _, tc := range []struct{ x, sens, eps, width float64 }{
		{10, 1, 1, 0.5},
		{1000, 125, 0.5, 100},
	} {
		s := NewSecureNoiser(newSeeded(uint64(tc.sens) + 7))
		hist := func(v float64) map[int]int {
			h := map[int]int{}
			for i := 0; i < n; i++ {
				out, err := s.AddLaplace(v, tc.sens, tc.eps)
				if err != nil {
					t.Fatal(err)
				}
				h[int(math.Floor((out-tc.x)/tc.width))]++
			}
			return h
		}
		a, b := hist(tc.x), hist(tc.x+tc.sens)
		e := math.Exp(tc.eps)
		checked := 0
		for bin := range a {
			for _, pair := range [][2]int{{a[bin], b[bin]}, {b[bin], a[bin]}} {
				if pair[0] < 2000 || pair[1] < 2000 {
					continue
				}
				p, q := float64(pair[0])/n, float64(pair[1])/n
				se := math.Sqrt(p/n + e*e*q/n)
				if p-e*q > zTolerance*se {
					t.Errorf("%+v: bin %d: P=%.5f > e^ε·P'=%.5f (+%.5f)", tc, bin, p, e*q, zTolerance*se)
				}
				checked++
			}
		}
		if checked < 10 {
			t.Errorf("%+v: only %d bins had enough mass to check", tc, checked)
		}
	}
}
