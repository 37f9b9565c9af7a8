package exec

import (
	"database/sql/driver"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dpsql/dpsql/autobound"
	"github.com/dpsql/dpsql/exactsum"
	"github.com/dpsql/dpsql/measure"
)

// TestWeightedRowsMeasureLikeCopies: a row with weight w is measured
// exactly as w copies of it, for every measurement a scan without
// bounding takes, on values of every kind and magnitude (exact sums
// compared exactly).
func TestWeightedRowsMeasureLikeCopies(t *testing.T) {
	specs := specsOf(measure.MustParse("n", "u", "c0", "s0:-10:1e300", "q0:-3.5:7.25", "P0:0:100", "T0", "h0", "H0", "d0",
		"S0:-5:5", "A0:0:2", "R:0:3", "K0:0:2", "C0", "s1:0:1e15", "q1:-1e200:1e200"))
	r := rand.New(rand.NewPCG(13, 1))
	value := func() driver.Value {
		switch r.IntN(9) {
		case 0:
			return nil
		case 1:
			return r.Int64() >> r.IntN(64)
		case 2:
			return math.Ldexp(r.Float64()-0.5, r.IntN(2000)-1000)
		case 3:
			return []float64{math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 5e-324}[r.IntN(5)]
		case 4:
			return "12.5abc"
		case 5:
			return []byte{0x31, 0x00}
		default:
			return float64(r.IntN(200)) - 50.5
		}
	}
	for trial := 0; trial < 200; trial++ {
		copies := &measureAgg{specs: specs, groups: map[string]*groupAcc{}}
		weighted := &measureAgg{specs: specs, groups: map[string]*groupAcc{}}
		gc, gw := copies.newGroup("", nil), weighted.newGroup("", nil)
		for row := 0; row < 20; row++ {
			vals := []driver.Value{value(), value()}
			w := int64(2 + r.IntN(300))
			if r.IntN(10) == 0 {
				w = 1 << (40 + r.IntN(20)) // more copies than a loop could add
			}
			gw.addWeighted(specs, vals, w)
			if w > 1000 { // too many copies to add one by one
				copiesOf(t, gc, specs, vals, w)
				continue
			}
			for k := int64(0); k < w; k++ {
				gc.addValues(specs, vals)
			}
		}
		sameGroup(t, specs, gc, gw)
	}
}

// copiesOf adds w copies of a row to g without addWeighted: counts by
// addition, sums through big.Float products, histograms and trees by
// counting — an independent computation of what w calls would give.
func copiesOf(t *testing.T, g *groupAcc, specs []spec, vals []driver.Value, w int64) {
	t.Helper()
	one := &measureAgg{specs: specs, groups: map[string]*groupAcc{}}
	g1 := one.newGroup("", nil)
	g1.addValues(specs, vals) // one copy's measurement
	for i := range specs {
		g.n[i] += w * g1.n[i]
		for k := range g1.distinct {
			for v := range g1.distinct[k] {
				g.distinct[k][v] = struct{}{}
			}
		}
		if g1.trees != nil && g1.trees[i] != nil {
			for leaf, c := range g1.trees[i] {
				g.trees[i][leaf] += w * c
			}
		}
		for k := int64(0); k < 62; k++ {
			if w&(1<<k) != 0 { // 2^k copies of each sum: doubling is exact
				g.sum[i].AddAcc(scaledAcc(&g1.sum[i], k))
				g.sq[i].AddAcc(scaledAcc(&g1.sq[i], k))
			}
		}
		if h := g1.hists[i]; h != nil {
			g.hists[i].Zeros += w * h.Zeros
			for s := 0; s < 2; s++ {
				g.hists[i].Over[s] += w * h.Over[s]
				for j := range h.N[s] {
					g.hists[i].N[s][j] += w * h.N[s][j]
					for k := int64(0); k < 62; k++ {
						if w&(1<<k) != 0 {
							g.hists[i].Sum[s][j].AddAcc(scaledAcc(&h.Sum[s][j], k))
							g.hists[i].SumSq[s][j].AddAcc(scaledAcc(&h.SumSq[s][j], k))
						}
					}
				}
			}
		}
	}
}

// scaledAcc returns a·2^k, doubling k times.
func scaledAcc(a *exactsum.Acc, k int64) *exactsum.Acc {
	out := &exactsum.Acc{}
	out.AddAcc(a)
	for ; k > 0; k-- {
		c := &exactsum.Acc{}
		c.AddAcc(out)
		out.AddAcc(c)
	}
	return out
}

func sameGroup(t *testing.T, specs []spec, a, b *groupAcc) {
	t.Helper()
	if !reflect.DeepEqual(a.n, b.n) || !reflect.DeepEqual(a.distinct, b.distinct) || !reflect.DeepEqual(a.trees, b.trees) {
		t.Fatalf("counts differ:\n%v %v %v\n%v %v %v", a.n, a.distinct, a.trees, b.n, b.distinct, b.trees)
	}
	for i := range specs {
		if a.sum[i].Big().Cmp(b.sum[i].Big()) != 0 || a.sq[i].Big().Cmp(b.sq[i].Big()) != 0 {
			t.Fatalf("spec %c: sums differ: %v %v vs %v %v", specs[i].kind, a.sum[i].Big(), a.sq[i].Big(), b.sum[i].Big(), b.sq[i].Big())
		}
		if a.hists[i] != nil && !sameHistogram(a.hists[i], b.hists[i]) {
			t.Fatalf("spec %c: histograms differ", specs[i].kind)
		}
	}
}

func sameHistogram(a, b *autobound.Histogram) bool {
	if a.Zeros != b.Zeros || a.Over != b.Over || a.N != b.N {
		return false
	}
	for s := 0; s < 2; s++ {
		for j := range a.N[s] {
			if a.Sum[s][j].Big().Cmp(b.Sum[s][j].Big()) != 0 || a.SumSq[s][j].Big().Cmp(b.SumSq[s][j].Big()) != 0 {
				return false
			}
		}
	}
	return true
}
