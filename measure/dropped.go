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

// ProfileBits is the fixed-point precision of a unit's weight in
// Profile.Rows: each of its g groups adds floor(2^ProfileBits / g).
const ProfileBits = 20

// ProfileCandidates are the contribution bounds a Profile's bins end at
// (the candidates dpsql chooses among); each histogram has one bin per
// candidate and one beyond the last.
var ProfileCandidates = []int64{1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64}

// ProfileBin is the bin of a count x ≥ 1: the first candidate at or
// above it, or len(ProfileCandidates) beyond the last.
func ProfileBin(x int64) int {
	for i, c := range ProfileCandidates {
		if x <= c {
			return i
		}
	}
	return len(ProfileCandidates)
}

// Profile is the units' distribution of groups and rows over a scan
// (Plan.Profile), exactly, before noise, for choosing contribution bounds
// privately: Groups[i] is how many units have a number of groups g in bin
// i (ProfileBin); Rows[i] is Σ over the units' groups whose row count
// falls in bin i of floor(2^ProfileBits / g) — so each unit adds at most
// 2^ProfileBits over all bins. One unit moves each histogram by at most 1
// (2^ProfileBits) in L1.
type Profile struct {
	Groups []int64
	Rows   []int64
}

// NewProfile is an empty profile.
func NewProfile() *Profile {
	n := len(ProfileCandidates) + 1
	return &Profile{Groups: make([]int64, n), Rows: make([]int64, n)}
}

// AddUnit adds a unit whose groups have the row counts rows.
func (p *Profile) AddUnit(rows []int64) {
	g := int64(len(rows))
	if g == 0 {
		return
	}
	p.Groups[ProfileBin(g)]++
	w := int64(1<<ProfileBits) / g
	for _, n := range rows {
		p.Rows[ProfileBin(n)] += w
	}
}
