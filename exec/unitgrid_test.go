package exec

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/measure"
)

// TestUnitSumOnItsGrid: a unit's sum for SUM(x,
// contribution_bounds_per_group), and its mean for AVG, are
// measure.UnitGrid's — each value clamped to ±r and rounded half to even
// onto the grid, the integers summed exactly and clipped to the bounds
// (for the mean, to n times them, then over n on the finer grid,
// truncated toward zero) —
// computed here again in
// big.Int arithmetic over values of every magnitude (±∞, subnormals,
// values past the clamp, many rows whose 128-bit sum carries); and the
// cases the documentation names.
func TestUnitSumOnItsGrid(t *testing.T) {
	bounds := [][2]float64{{0, 10}, {-5, 5}, {-0.5, 80}, {-math.Ldexp(1, 990), 0}, {0, math.Ldexp(1, 53)}, {-1e6, 1e6}}
	r := rand.New(rand.NewPCG(7, 36))
	draw := func(clampAt float64) float64 {
		switch r.IntN(7) {
		case 0:
			return []float64{math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 5e-324, clampAt, -clampAt, math.Nextafter(clampAt, 0)}[r.IntN(8)]
		case 1:
			return math.Ldexp(r.Float64()-0.5, r.IntN(2000)-1000)
		case 2:
			return float64(r.Int64() >> r.IntN(64))
		default:
			return clampAt * (r.Float64() - 0.5) * 2 // near the clamp: sums that carry past 64 bits
		}
	}
	for _, b := range bounds {
		for _, kind := range []measure.Kind{measure.UnitSum, measure.UnitMean} {
			specs := specsOf(measure.MustParse(measure.Spec{Kind: kind, Lo: b[0], Hi: b[1]}.String()))
			sp := &specs[0]
			f, clampAt, ok := measure.UnitGrid(b[0], b[1])
			if !ok || !sp.grid || sp.fixed != f || sp.clamp != clampAt {
				t.Fatalf("bounds %v: spec %+v, grid %d %v %v", b, sp, f, clampAt, ok)
			}
			for trial := 0; trial < 300; trial++ {
				var u unitAcc
				sum := new(big.Int)
				n := 1 + r.IntN(40)
				for row := 0; row < n; row++ {
					x := draw(clampAt)
					u.add(sp, value{f: x, valid: true})
					sum.Add(sum, onGridBig(x, clampAt, f))
				}
				u.add(sp, value{}) // a NULL: no value, no row of the mean
				lo, hi := onGridBig(b[0], clampAt, f), onGridBig(b[1], clampAt, f)
				nb := big.NewInt(int64(n))
				if kind == measure.UnitMean { // clipped to n times the bounds
					lo.Mul(lo, nb)
					hi.Mul(hi, nb)
				}
				if sum.Cmp(lo) < 0 {
					sum = lo
				} else if sum.Cmp(hi) > 0 {
					sum = hi
				}
				scale := f
				if kind == measure.UnitMean { // over n on the finer grid, truncated toward zero
					sum.Quo(sum.Lsh(sum, measure.MeanBits), nb)
					scale += measure.MeanBits
				}
				want, _ := new(big.Float).SetMantExp(new(big.Float).SetInt(sum), -scale).Float64()
				if got, ok := u.combined(sp); !ok || got != want {
					t.Fatalf("%c bounds %v trial %d: %v, want %v", kind, b, trial, got, want)
				}
			}
		}
	}
	// Bounds (0, 10): F = 28, values clamped at 2^34.
	specs := specsOf(measure.MustParse("S0:0:10"))
	for _, c := range []struct {
		rows []float64
		want float64
	}{
		{[]float64{2.5, 1.25}, 3.75},                           // on the grid: exact
		{[]float64{1e300, -1e300, 2.5}, 2.5},                   // both clamped, they cancel
		{[]float64{1e12, -1e12 + 3}, 0},                        // past the clamp, both clamped: the 3 is lost
		{[]float64{math.Inf(1), -5}, 10},                       // +∞ is the clamp: far above the bound
		{[]float64{math.Inf(1), math.Inf(-1), 4}, 4},           // they cancel
		{[]float64{math.Ldexp(1, -30), math.Ldexp(1, -30)}, 0}, // each rounds to 0 (half to even)
		{[]float64{3 * math.Ldexp(1, -29), 0}, math.Ldexp(1, -27)},
	} {
		var u unitAcc
		for _, x := range c.rows {
			u.add(&specs[0], value{f: x, valid: true})
		}
		if got, _ := u.combined(&specs[0]); got != c.want {
			t.Errorf("%v: %v, want %v", c.rows, got, c.want)
		}
	}
}

// onGridBig is round(clamp(x, ±r)·2^f), half to even, exactly.
func onGridBig(x, r float64, f int) *big.Int {
	x = math.Max(-r, math.Min(r, x))
	s := new(big.Float).SetMantExp(big.NewFloat(x), f)
	i, acc := s.Int(nil) // truncated toward zero
	frac := new(big.Float).Sub(s, new(big.Float).SetInt(i))
	half := big.NewFloat(0.5)
	switch c := new(big.Float).Abs(frac).Cmp(half); {
	case acc == big.Exact:
	case c > 0, c == 0 && i.Bit(0) == 1:
		if s.Sign() > 0 {
			i.Add(i, big.NewInt(1))
		} else {
			i.Sub(i, big.NewInt(1))
		}
	}
	return i
}
