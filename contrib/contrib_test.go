package contrib

import "testing"

func TestBin(t *testing.T) {
	for x, want := range map[int64]int{1: 0, 2: 1, 7: 6, 8: 6, 9: 7, 64: 14, 65: 15, 1 << 40: 15} {
		if got := Bin(x); got != want {
			t.Errorf("Bin(%d) = %d, want %d", x, got, want)
		}
	}
	if Bins() != len(Candidates)+1 || Largest() != 64 {
		t.Errorf("Bins %d, Largest %d", Bins(), Largest())
	}
}

// hist puts counts at candidate values.
func hist(at map[int64]float64) []float64 {
	h := make([]float64, Bins())
	for x, n := range at {
		h[Bin(x)] += n
	}
	return h
}

func TestChoose(t *testing.T) {
	for _, c := range []struct {
		name             string
		groups, rows     map[int64]float64
		q                Query
		wantL0, wantLInf int64
	}{
		// 10,000 units each in 4 groups with 3 rows: bounds (4, 3) keep
		// everything for noise 16 groups·4·3/1; anything less drops
		// thousands of rows.
		{"everyone alike", map[int64]float64{4: 10000}, map[int64]float64{3: 10000}, Query{Groups: 16, CellEpsilon: 1}, 4, 3},
		// A few heavy units are not worth their noise: 10 units of 64
		// groups among 10,000 of 1 (l0 = 1 drops 630 rows and adds noise
		// 64·1; l0 = 64 keeps them for noise 64·64).
		{"a heavy tail is cut", map[int64]float64{1: 10000, 64: 10}, map[int64]float64{1: 10010}, Query{Groups: 64, CellEpsilon: 1}, 1, 1},
		// At a tiny ε the noise dominates: the smallest bounds.
		{"small ε", map[int64]float64{4: 1000}, map[int64]float64{3: 1000}, Query{Groups: 16, CellEpsilon: 0.001}, 1, 1},
		// Unit counts: rows per group do not matter.
		{"unit counts", map[int64]float64{4: 10000}, map[int64]float64{20: 10000}, Query{Groups: 16, CellEpsilon: 1, UnitCounts: true}, 4, 1},
	} {
		got := Choose(hist(c.groups), hist(c.rows), c.q, true, true, 1, 1, 0)
		if got.MaxGroups != c.wantL0 || got.MaxRows != c.wantLInf {
			t.Errorf("%s: chose (%d, %d), want (%d, %d)", c.name, got.MaxGroups, got.MaxRows, c.wantL0, c.wantLInf)
		}
	}
	// A bound the policy fixes stays.
	if got := Choose(hist(map[int64]float64{4: 10000}), hist(map[int64]float64{3: 10000}), Query{Groups: 16, CellEpsilon: 1}, false, true, 2, 7, 0); got.MaxGroups != 2 || got.MaxRows != 3 {
		t.Errorf("fixed l0: chose (%d, %d), want (2, 3)", got.MaxGroups, got.MaxRows)
	}
}
