// Package contrib chooses contribution bounds privately: how many groups
// (l0) and how many rows per group (l∞) one privacy unit may contribute
// to a query, from a noisy profile of the units — for the smallest
// expected error of the query's counts.
//
// The profile (measured by the scan, noised by the caller) is two
// histograms over the candidates of Candidates: Groups[i], the units
// whose number of groups g falls in bin i (g ≤ Candidates[i], above the
// one before; the last bin is everything beyond); Rows[i], Σ over each
// unit's groups whose row count n falls in bin i of 1/g (so each unit adds
// 1 in all). One unit moves each histogram by at most 1 in L1, so each
// takes Laplace noise of scale 1/ε and the choice from them is
// post-processing.
package contrib

import (
	"math"

	"github.com/dpsql/dpsql/measure"
)

// Candidates are the bounds dpsql chooses among, for l0 and l∞ alike
// (measure.ProfileCandidates: the profile's bins end at them).
var Candidates = measure.ProfileCandidates

// Bins is the number of bins of each histogram: one per candidate and one
// beyond the last.
func Bins() int { return len(Candidates) + 1 }

// Bin is the bin of a count x ≥ 1 (measure.ProfileBin).
func Bin(x int64) int { return measure.ProfileBin(x) }

// Largest is the largest candidate: the bound a plan is checked at
// before the choice.
func Largest() int64 { return Candidates[len(Candidates)-1] }

// value is the count a bin stands for: the middle of the counts it holds
// (after the candidate before it, up to its own), or twice the last
// candidate beyond it.
func value(i int) float64 {
	switch {
	case i == 0:
		return float64(Candidates[0])
	case i < len(Candidates):
		return float64(Candidates[i-1]+1+Candidates[i]) / 2
	}
	return 2 * float64(Largest())
}

// Query is what the choice needs to know of the query, all public: its
// number of groups (at most that many: 1 without GROUP BY), the ε of
// each of its noisy cells, and whether its counts are of units (only
// COUNT(DISTINCT unit): rows per group do not matter then).
type Query struct {
	Groups      int64
	CellEpsilon float64
	UnitCounts  bool
}

// Choice is the bounds chosen, with what the profile estimates of them.
type Choice struct {
	MaxGroups, MaxRows int64
	// KeptShare is the estimated share of the rows (of the units, for
	// unit counts) the bounds keep; Units the estimated number of units.
	KeptShare, Units float64
}

// Choose returns, among the candidates of the bounds to choose (chooseGroups,
// chooseRows; the others stay at fixedGroups, fixedRows), the pair with the
// smallest expected total error over the query's groups: the rows bounding
// drops (estimated from the noisy histograms, taking a unit's number of
// groups and its groups' sizes as independent) plus the groups' expected
// absolute Laplace noise, Groups·min(l0, Groups)·l∞/CellEpsilon in rows
// (min(l0, Groups)/CellEpsilon in units for unit counts).
func Choose(groups, rows []float64, q Query, chooseGroups, chooseRows bool, fixedGroups, fixedRows int64, noiseScale float64) Choice {
	h0, hr := clean(groups, noiseScale), clean(rows, noiseScale)
	units, gSum := 0.0, 0.0
	for i, h := range h0 {
		units += h
		gSum += h * value(i)
	}
	rowWeight, nSum := 0.0, 0.0
	for i, h := range hr {
		rowWeight += h
		nSum += h * value(i)
	}
	keptGroups := func(l0 int64) float64 { return keptShare(h0, gSum, l0) }   // share of the unit-groups kept
	keptRows := func(lInf int64) float64 { return keptShare(hr, nSum, lInf) } // share of a group's rows kept
	meanRows := 1.0
	if rowWeight > 0 {
		meanRows = nSum / rowWeight
	}
	total := gSum * meanRows // rows (unit-groups for unit counts)
	if q.UnitCounts {
		total = gSum
	}
	l0s, lInfs := []int64{fixedGroups}, []int64{fixedRows}
	if chooseGroups {
		// No more than the query's groups: a larger l0 keeps nothing
		// more (a unit has no more groups) and costs no more noise.
		l0s = nil
		for _, c := range Candidates {
			l0s = append(l0s, c)
			if c >= q.Groups {
				break
			}
		}
	}
	if chooseRows && !q.UnitCounts {
		lInfs = Candidates
	}
	best := Choice{MaxGroups: l0s[0], MaxRows: lInfs[0], Units: units}
	bestErr := math.Inf(1)
	g := float64(max(q.Groups, 1))
	for _, l0 := range l0s {
		for _, lInf := range lInfs {
			kept := keptGroups(l0)
			scale := math.Min(float64(l0), g) / q.CellEpsilon
			if !q.UnitCounts {
				kept *= keptRows(lInf)
				scale *= float64(lInf)
			}
			e := total*(1-kept) + g*scale
			if e < bestErr {
				best, bestErr = Choice{MaxGroups: l0, MaxRows: lInf, KeptShare: kept, Units: units}, e
			}
		}
	}
	if q.UnitCounts && chooseRows {
		best.MaxRows = 1 // rows per group do not change a unit count
	}
	return best
}

// keptShare is the share of a histogram's counts (their sum total, as
// each bin's value weighs them) that a bound keeps: Σ h·min(value, bound)
// over total; 1 for an empty histogram.
func keptShare(h []float64, total float64, bound int64) float64 {
	if total <= 0 {
		return 1
	}
	k := 0.0
	for i, x := range h {
		k += x * math.Min(value(i), float64(bound))
	}
	return k / total
}

// clean turns a noisy histogram into non-negative weights, dropping the
// bins that noise of that scale alone could reach (below scale·ln(bins/β)
// with β = 0.05: some empty bin passes it with probability below β/2):
// otherwise the noise of the many empty bins of large counts reads as a
// tail that bounds should keep.
func clean(h []float64, scale float64) []float64 {
	cut := scale * math.Log(float64(len(h))/0.05)
	out := make([]float64, len(h))
	for i, x := range h {
		if x > cut {
			out[i] = x
		}
	}
	return out
}
