package planner

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestSensitivityIsAnUpperBound: for random bounds (wide, narrow, far from
// zero, tiny), what one row can move each cell — computed exactly at the
// bounds, where the extremes lie — never exceeds SensitivityFor, and
// SensitivityFor is that exact value rounded up by at most one ulp.
func TestSensitivityIsAnUpperBound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	exact := func(x float64) *big.Float { return new(big.Float).SetPrec(512).SetFloat64(x) }
	for i := 0; i < 20000; i++ {
		lo := (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(40)-20))
		hi := lo + r.Float64()*math.Pow(10, float64(r.IntN(40)-20))
		if !(lo < hi) {
			continue
		}
		scale := float64(1 + r.IntN(1000))
		m := exact(Midpoint(lo, hi))
		for _, k := range []CellKind{ClippedSum, CenteredSum, CenteredSumSq} {
			got := SensitivityFor(k, lo, hi, scale)
			var worst *big.Float
			for _, c := range []float64{lo, hi} {
				v := exact(c)
				switch k {
				case CenteredSum, CenteredSumSq:
					v.Sub(v, m)
					if k == CenteredSumSq {
						v.Mul(v, v)
					}
				}
				v.Abs(v)
				if worst == nil || v.Cmp(worst) > 0 {
					worst = v
				}
			}
			worst.Mul(worst, exact(scale))
			if exact(got).Cmp(worst) < 0 {
				t.Fatalf("kind %d, bounds [%v, %v], scale %v: sensitivity %v below the exact %s", k, lo, hi, scale, got, worst.Text('g', 30))
			}
			if below := math.Nextafter(got, 0); exact(below).Cmp(worst) >= 0 {
				t.Fatalf("kind %d, bounds [%v, %v]: sensitivity %v is more than one ulp above %s", k, lo, hi, got, worst.Text('g', 30))
			}
		}
	}
}
