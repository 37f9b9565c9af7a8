package measure

import (
	"math/big"
	"testing"
)

func TestUnitDropped(t *testing.T) {
	const one = 1 << DroppedBits
	for _, c := range []struct {
		name                               string
		rows, groups, kept, most, l0, lInf int64
		affected                           bool
		share                              int64
	}{
		{"within the bounds", 4, 2, 4, 2, 2, 2, false, 0},
		{"more groups than l0", 6, 3, 4, 4, 2, 2, true, one * 10 / 18},
		{"more rows than l∞ in one group", 3, 1, 2, 3, 2, 2, true, one / 3},
		{"no rows", 0, 0, 0, 0, 1, 1, false, 0},
		// Beyond 2^43 the product takes big integers: the same floor.
		{"a unit of 2^40 rows in 2^10 groups", 1 << 40, 1 << 10, 1 << 20, 1 << 30, 1, 1 << 10, true, (one*(1<<50) - one*(1<<20)) / (1 << 50)},
		{"the largest counts", 1<<62 + 1, 1 << 62, 1 << 62, 1, 1, 1, true, one - 1},
	} {
		affected, share := UnitDropped(c.rows, c.groups, c.kept, c.most, c.l0, c.lInf)
		if affected != c.affected || share != c.share {
			t.Errorf("%s: %v, %d; want %v, %d", c.name, affected, share, c.affected, c.share)
		}
		// The exact floor, by big integers.
		if c.affected {
			num := new(big.Int).Mul(big.NewInt(c.groups), big.NewInt(c.rows))
			den := new(big.Int).Set(num)
			num.Sub(num, new(big.Int).Mul(big.NewInt(min(c.groups, c.l0)), big.NewInt(c.kept)))
			num.Lsh(num, DroppedBits).Quo(num, den)
			if num.Int64() != share {
				t.Errorf("%s: %d, the exact floor is %d", c.name, share, num.Int64())
			}
		}
	}
	var d Dropped
	d.Add(true, one/2)
	d.Add(false, 0)
	if d.Units != 2 || d.Affected != 1 || d.Share.Int64() != one/2 {
		t.Errorf("Add: %+v", d)
	}
}
