package exec

import (
	"database/sql/driver"
	"math/big"
	"testing"

	"github.com/dpsql/dpsql/measure"
)

// TestBoundedScanHoldsOneRunOfUnits: fed rows sorted by unit (as the
// bounded scan reads them), the measurement aggregate holds the units of
// one run at a time, so its memory does not grow with the table's units;
// units that SQLite orders as equal (7 and 7.0) share a run and stay two
// units; a unit that comes back after its run fails the scan instead of
// being measured twice.
func TestBoundedScanHoldsOneRunOfUnits(t *testing.T) {
	h := acquireHandle()
	defer releaseHandle(h)
	measureConfigs.Store(h, &measureConfig{key: 1, fixed: true, l0: 1, lInf: 2, nk: 1,
		specs: specsOf([]measure.Spec{{Kind: measure.Rows}, {Kind: measure.Units}})})
	defer measureConfigs.Delete(h)
	defer measuredResults.Delete(h)

	a := &measureAgg{}
	step := func(unit driver.Value, group int64) error {
		return a.Step(nil, []driver.Value{h, unit, group})
	}
	most := 0
	const n = 10000
	for u := int64(0); u < n; u++ {
		for r := int64(0); r < 3; r++ {
			if err := step(u, 0); err != nil {
				t.Fatal(err)
			}
			most = max(most, len(a.units))
		}
	}
	for _, u := range []driver.Value{int64(n), float64(n), float64(n)} {
		if err := step(u, 0); err != nil {
			t.Fatal(err)
		}
		most = max(most, len(a.units))
	}
	if most != 2 {
		t.Errorf("the aggregate held up to %d units at once, want 1 (2 in the run of %d and %d.0)", most, n, n)
	}
	if _, err := a.WindowValue(nil); err != nil {
		t.Fatal(err)
	}
	res, ok := takeMeasured(h)
	if !ok || len(res.groups) != 1 {
		t.Fatalf("measured %+v", res)
	}
	// Each unit keeps l∞ = 2 of its rows: 2n + 1 + 2 rows, n + 2 units.
	got := res.groups[0].values
	if want := big.NewFloat(2*n + 3); got[0].Cmp(want) != 0 {
		t.Errorf("rows %v, want %v", got[0], want)
	}
	if want := big.NewFloat(n + 2); got[1].Cmp(want) != 0 {
		t.Errorf("units %v, want %v", got[1], want)
	}

	b := &measureAgg{}
	for _, u := range []driver.Value{"b", "c", "b"} {
		if err := b.Step(nil, []driver.Value{h, u, int64(0)}); err != nil {
			if u != "b" {
				t.Fatalf("unit %v: %v", u, err)
			}
			return
		}
	}
	t.Error("a unit that came back after its run was measured again")
}
