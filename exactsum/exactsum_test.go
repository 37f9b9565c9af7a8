package exactsum

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// bigSum is the reference: big.Float addition at a precision that cannot
// round (2,200 bits span every float64 exponent).
func bigSum(xs []float64) *big.Float {
	s := new(big.Float).SetPrec(4096)
	for _, x := range xs {
		s.Add(s, new(big.Float).SetPrec(4096).SetFloat64(x))
	}
	return s
}

func TestAccMatchesBigFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := map[string][]float64{
		"cancellation far from zero": {1e15 + 2, -1e15, 1e15 + 1, -1e15 - 1, 0.125, -3},
		"wide exponents":             {1e300, 1e-300, -1e300, 5e-324, 3},
		"empty":                      {},
	}
	var random []float64
	for i := 0; i < 10000; i++ {
		random = append(random, (rng.Float64()-0.5)*math.Ldexp(1, rng.IntN(200)-100))
	}
	cases["random"] = random
	for name, xs := range cases {
		var a Acc
		for _, x := range xs {
			a.Add(x)
		}
		if got, want := a.Big(), bigSum(xs); got.Cmp(want) != 0 {
			t.Errorf("%s: Acc = %s, exact = %s", name, got.Text('g', 40), want.Text('g', 40))
		}
	}
}

func TestAccSquaresAndMerge(t *testing.T) {
	xs := []float64{1e15 + 1, 3.3, -7.25, 1e-3}
	var a, b Acc
	ref := new(big.Float).SetPrec(4096)
	for i, x := range xs {
		bx := new(big.Float).SetPrec(4096).SetFloat64(x)
		ref.Add(ref, new(big.Float).SetPrec(4096).Mul(bx, bx))
		if i%2 == 0 {
			a.AddSquare(x)
		} else {
			b.AddSquare(x)
		}
	}
	a.AddAcc(&b)
	if a.Big().Cmp(ref) != 0 {
		t.Fatalf("Σx² = %s, exact %s", a.Big().Text('g', 50), ref.Text('g', 50))
	}
	var c Acc
	c.AddScaled(0.1, 1000003)
	want := new(big.Float).SetPrec(4096).Mul(new(big.Float).SetPrec(4096).SetFloat64(0.1), big.NewFloat(1000003))
	if c.Big().Cmp(want) != 0 {
		t.Fatalf("AddScaled = %s, exact %s", c.Big().Text('g', 50), want.Text('g', 50))
	}
}

// The reason the package exists: a float64 running sum of values clipped to
// (c, c+2) with c = 1e15 is off by far more than the sensitivity 2.
func TestFloatSumIsNotExactButAccIs(t *testing.T) {
	var f float64
	var a Acc
	xs := []float64{1e15 + 1, 1e15 + 2, -1e15 + 0.25}
	for _, x := range xs {
		f += x
		a.Add(x)
	}
	if a.Big().Cmp(bigSum(xs)) != 0 {
		t.Fatal("Acc not exact")
	}
	if ex, _ := bigSum(xs).Float64(); ex == f {
		t.Log("float sum happened to be exact for this input")
	}
}

// TestAddScaledIsExact: k·x for any finite x — tiny, subnormal, huge —
// and counts up to 2^62, against big.Float.
func TestAddScaledIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	for trial := 0; trial < 2000; trial++ {
		var a Acc
		ref := new(big.Float).SetPrec(8192)
		for i := 0; i < 5; i++ {
			x := math.Ldexp(r.Float64()-0.5, r.IntN(2098)-1074)
			if i == 0 && trial%10 == 0 {
				x = math.MaxFloat64
			}
			k := r.Int64N(1 << uint(1+r.IntN(62)))
			a.AddScaled(x, k)
			ref.Add(ref, new(big.Float).SetPrec(8192).Mul(new(big.Float).SetFloat64(x), new(big.Float).SetInt64(k)))
		}
		if a.Big().Cmp(ref) != 0 {
			t.Fatalf("trial %d: %s, exact %s", trial, a.Big().Text('g', 30), ref.Text('g', 30))
		}
	}
}
