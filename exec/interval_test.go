package exec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/planner"
)

// TestLaplaceSumHalfWidth: the half-width of a weighted sum of Laplace
// noises leaves alpha in the tails, measured on 400,000 samples per case
// (standard deviation of the measured tail 0.00034: the 0.002 tolerance is
// about 6 of them), equal scales included.
func TestLaplaceSumHalfWidth(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	laplace := func(b float64) float64 {
		u := r.Float64() - 0.5
		return -b * math.Copysign(math.Log(1-2*math.Abs(u)), u)
	}
	many := make([]float64, 40)
	for i := range many {
		many[i] = 1
	}
	mixed := append(append([]float64{}, many[:20]...), 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.3, 0.3, 0.3, 0.3)
	for _, scales := range [][]float64{{1}, {1, 1}, {1, 3}, {2, 0.5, 0.5}, {1, 1, 1}, {10, 0.1}, {1, 1, 1, 1}, many, mixed} {
		h := laplaceSumHalfWidth(scales, 0.05)
		const n = 400000
		out := 0
		for i := 0; i < n; i++ {
			z := 0.0
			for _, b := range scales {
				z += laplace(b)
			}
			if math.Abs(z) > h {
				out++
			}
		}
		if tail := float64(out) / n; math.Abs(tail-0.05) > 0.002 {
			t.Errorf("scales %v: half-width %g leaves %.4f in the tails, want 0.05", scales, h, tail)
		}
	}
}

// TestHalfWidthGaussian: Gaussian noises combine exactly.
func TestHalfWidthGaussian(t *testing.T) {
	h := halfWidth([]float64{3, 4}, []noiseOf{{gaussian: true, scale: 1}, {gaussian: true, scale: 1}}, 0.05)
	if want := 5 * 1.959963984540054; math.Abs(h-want) > 1e-9 {
		t.Errorf("half-width %g, want %g", h, want)
	}
}

// TestCountIntervalHoldsTheReleasedCount: a count's interval is whole
// numbers and always holds the released count (the noisy count rounded),
// also when it is narrower than one (a count at ε = 1000 released as 32561
// came with [32562, 32562]), near zero, and wide.
func TestCountIntervalHoldsTheReleasedCount(t *testing.T) {
	t.Parallel()
	a := &planner.Aggregate{Kind: planner.AggCount, Cells: []int{0}}
	r := rand.New(rand.NewPCG(3, 4))
	for _, scale := range []float64{0.001, 0.05, 0.2, 1, 30} {
		ns := []noiseOf{{scale: scale}}
		for i := 0; i < 20000; i++ {
			c := 32561 + (r.Float64()-0.5)*4
			if i%4 == 0 {
				c = (r.Float64() - 0.7) * 3 // near zero
			}
			iv, ok := aggregateInterval(a, []float64{c}, ns, 0, 0)
			released := math.Max(0, math.Round(c))
			if !ok || iv.Lo > released || released > iv.Hi || iv.Lo != math.Trunc(iv.Lo) || iv.Hi != math.Trunc(iv.Hi) || iv.Lo < 0 {
				t.Fatalf("scale %g, noisy count %v: interval %+v does not hold %v in whole numbers", scale, c, iv, released)
			}
		}
	}
}
