package measure

import (
	"math/big"
	"math/bits"
)

// DroppedBits is the fixed-point precision of a unit's dropped share:
// each unit adds floor(2^DroppedBits · its share) to Dropped.Share, an
// integer, so every evaluator sums the same integers exactly.
const DroppedBits = 20

// Dropped is what contribution bounding dropped over a whole scan
// (Plan.Dropped), exactly, before noise: Units is how many units have a
// row in the scan; Affected how many of them lost a row to bounding (more
// than l0 groups, or more than l∞ rows in some group); Share is Σ over
// the units of their dropped share (UnitDropped) on the grid of
// 2^-DroppedBits. Each moves by at most 1 (Share by 2^DroppedBits) when
// one unit is added or removed. None depends on which groups or rows the
// bounding's keyed hashes keep, so every engine measures the same.
type Dropped struct {
	Units, Affected int64
	Share           *big.Int
}

// UnitDropped is one unit's part of Dropped: the unit has rows rows in
// groups groups, keptRows = Σ over its groups of min(rows in the group,
// l∞) (its rows once each group keeps at most l∞) and, of those groups,
// maxRows rows in its largest. It is affected when groups > l0 or maxRows
// > l∞; its share is the expected share of its rows bounding drops when
// it keeps l0 of its groups uniformly at random (as the keyed hash
// chooses them): 1 − min(groups, l0)·keptRows / (groups·rows), as
// floor(2^DroppedBits · share).
func UnitDropped(rows, groups, keptRows, maxRows, l0, lInf int64) (affected bool, share int64) {
	if rows <= 0 || groups <= 0 {
		return false, 0
	}
	affected = groups > l0 || maxRows > lInf
	if !affected {
		return false, 0
	}
	m := min(groups, l0)
	// share·2^B = floor(2^B·(g·t − m·s) / (g·t)), exactly: 128-bit
	// products, big integers only where they do not fit 64 bits.
	hi, lo := bits.Mul64(uint64(groups), uint64(rows))
	mh, ml := bits.Mul64(uint64(m), uint64(keptRows))
	if hi == 0 && mh == 0 && lo < 1<<(63-DroppedBits) {
		return true, int64(((lo - ml) << DroppedBits) / lo)
	}
	den := new(big.Int).Mul(big.NewInt(groups), big.NewInt(rows))
	num := new(big.Int).Sub(den, new(big.Int).Mul(big.NewInt(m), big.NewInt(keptRows)))
	num.Lsh(num, DroppedBits)
	return true, num.Quo(num, den).Int64()
}

// Add adds one unit's part (UnitDropped) to d.
func (d *Dropped) Add(affected bool, share int64) {
	if d.Share == nil {
		d.Share = new(big.Int)
	}
	d.Units++
	if affected {
		d.Affected++
		d.Share.Add(d.Share, big.NewInt(share))
	}
}
