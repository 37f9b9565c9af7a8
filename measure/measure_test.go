package measure

import (
	"math"
	"testing"
)

// TestFixedPoint: the largest F with |bound|·2^F ≤ 2^62, bounds on the grid.
func TestFixedPoint(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		f      int
		ok     bool
	}{
		{0, 1000, 52, true}, {-0.5, 100, 55, true}, {0, 1, 61, true}, {0, 0, 0, true},
		{0, 1e300, 62 - 997, true}, {0, 0.1, 65, true}, {0, math.Ldexp(1, -1070), 0, false},
	} {
		f, ok := FixedPoint(c.lo, c.hi)
		if f != c.f || ok != c.ok {
			t.Errorf("FixedPoint(%v, %v) = %d, %v; want %d, %v", c.lo, c.hi, f, ok, c.f, c.ok)
		}
		if ok {
			m := math.Max(math.Abs(c.lo), math.Abs(c.hi))
			if math.Ldexp(m, f) > math.Ldexp(1, 62) {
				t.Errorf("FixedPoint(%v, %v): a term reaches %v", c.lo, c.hi, math.Ldexp(m, f))
			}
		}
	}
}

// TestSpecsRoundTrip: every spec prints as EXPLAIN shows it and parses
// back to itself; malformed specs are refused.
func TestSpecsRoundTrip(t *testing.T) {
	for _, text := range []string{"n", "u", "c0", "s0:-10:1e+300", "q3:-3.5:7.25", "P0:0:100", "T0", "h2", "H0", "d1",
		"S0:-5:5", "A0:0:2", "R:0:3", "K0:0:2", "C0"} {
		s, err := Parse(text)
		if err != nil {
			t.Errorf("%s: %v", text, err)
			continue
		}
		if s.String() != text {
			t.Errorf("%s prints as %s", text, s.String())
		}
		if s.Kind.ReadsArg() != (s.Arg >= 0) {
			t.Errorf("%s: argument %d", text, s.Arg)
		}
	}
	for _, bad := range []string{"", "x0", "s0", "s:0:1", "n0", "c", "s0:a:1", "s0:0:NaN", "R0:0:1", "c0:0:1", "q0:1"} {
		if s, err := Parse(bad); err == nil {
			t.Errorf("%q parsed as %+v", bad, s)
		}
	}
	if !UnitSum.PerUnit() || Sum.PerUnit() || !Distinct.Detail() || Squares.Detail() {
		t.Error("kind classes")
	}
}

// TestSquaresGrid: the largest F with |bound|·2^F < 2^38, never negative,
// bounds on the grid; every integer within the bounds is on it.
func TestSquaresGrid(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		f      int
		ok     bool
	}{
		{0, 1000, 28, true}, {-0.5, 100, 31, true}, {0, 0, 0, true}, {0, 1, 37, true},
		{0, math.Ldexp(1, 37), 0, true}, {0, math.Ldexp(1, 38), 0, false}, {0, 1e300, 0, false},
		{0, 0.1, 0, false}, {-1e6, 1e6, 18, true},
	} {
		f, ok := SquaresGrid(c.lo, c.hi)
		if f != c.f || ok != c.ok {
			t.Errorf("SquaresGrid(%v, %v) = %d, %v; want %d, %v", c.lo, c.hi, f, ok, c.f, c.ok)
		}
		if ok {
			if m := math.Max(math.Abs(c.lo), math.Abs(c.hi)); math.Ldexp(m, f) >= math.Ldexp(1, 38) {
				t.Errorf("SquaresGrid(%v, %v): a term reaches %v", c.lo, c.hi, math.Ldexp(m, f))
			}
			if x := math.Trunc(c.hi); math.Ldexp(x, f) != math.Trunc(math.Ldexp(x, f)) {
				t.Errorf("SquaresGrid(%v, %v): the integer %v is off the grid", c.lo, c.hi, x)
			}
		}
	}
}

// TestUnitGrid: the largest F with |bound|·2^F < 2^32, bounds on the
// grid, and the rows' clamp r = 2^(62−F): a finite double, more than 2^30
// times the larger bound, a term of 2^62 at most.
func TestUnitGrid(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		f      int
		ok     bool
	}{
		{0, 100, 25, true}, {-5, 5, 29, true}, {-0.5, 80, 25, true}, {0, 0, 0, true},
		{0, 0.1, 0, false}, {0, 1e300, 0, false}, {-math.Ldexp(1, 990), 0, 32 - 991, true}, {-math.Ldexp(1, 997), 0, 0, false}, {0, math.MaxFloat64, 0, false},
		{0, math.Ldexp(1, 53), -22, true}, {0, math.Ldexp(1, 53) + 2, 0, false},
	} {
		f, r, ok := UnitGrid(c.lo, c.hi)
		if ok != c.ok || (ok && f != c.f) {
			t.Errorf("UnitGrid(%v, %v) = %d, %v; want %d, %v", c.lo, c.hi, f, ok, c.f, c.ok)
		}
		if !ok {
			continue
		}
		m := math.Max(math.Abs(c.lo), math.Abs(c.hi))
		if math.IsInf(r, 0) || r <= math.Ldexp(m, 30) || math.Ldexp(r, f) != math.Ldexp(1, 62) {
			t.Errorf("UnitGrid(%v, %v): clamp %v at F = %d", c.lo, c.hi, r, f)
		}
		if math.Ldexp(m, f) >= math.Ldexp(1, 32) {
			t.Errorf("UnitGrid(%v, %v): a bound reaches %v", c.lo, c.hi, math.Ldexp(m, f))
		}
	}
}

func TestColumnsAreTyped(t *testing.T) {
	for _, c := range []struct {
		col     Col
		zero    bool
		out     int
		isOut   bool
		printed string
	}{
		{Column(0, "x"), false, -1, false, "x"},
		{Column(2, "a.b"), false, -1, false, "t2.a.b"},
		{Col{}, true, -1, false, ""},
		{Output(0), false, 0, true, "output 0"},
		{Output(7), false, 7, true, "output 7"},
		{RowIdentity(0), false, -1, false, "the row identity of table 0"},
	} {
		i, isOut := OutputIndex(c.col)
		if c.col.IsZero() != c.zero || isOut != c.isOut || (isOut && i != c.out) || c.col.String() != c.printed {
			t.Errorf("%#v: zero %v, output %d %v, %q", c.col, c.col.IsZero(), i, isOut, c.col.String())
		}
	}
	if Column(0, "x") == Column(1, "x") || RowIdentity(1) == Column(1, "") {
		t.Error("columns of different tables, or a row identity and a column, compare equal")
	}
}
