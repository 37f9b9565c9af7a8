package exec

import (
	"math"
	"math/big"

	"github.com/dpsql/dpsql/measure"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/planner"
)

// Dropped is the private estimate of what contribution bounding dropped
// over a query's scan (planner.DroppedEstimate): three noisy counts, each
// with ErrorBound as its 95% error bound.
type Dropped struct {
	// Units is the noisy count of units with a row in the scan, Affected
	// of those that lost a row to bounding, Share of Σ each unit's
	// dropped share (measure.UnitDropped).
	Units, Affected, Share float64
	ErrorBound             float64
	// MaxGroups and MaxRows are the bounds (l0, l∞).
	MaxGroups, MaxRows int64
}

// UnitsShare is the estimated share of the units that lost a row, in
// [0, 1]; UnitsRange its 95% range (each count at its error bound).
func (d *Dropped) UnitsShare() float64          { return ratio(d.Affected, d.Units) }
func (d *Dropped) UnitsRange() (lo, hi float64) { return d.ratioRange(d.Affected) }

// RowsShare is the estimated share of a unit's rows that bounding
// dropped, on average over the units, in [0, 1]; RowsRange its 95%
// range.
func (d *Dropped) RowsShare() float64 {
	// An affected unit's share is at most 1: Share ≤ Affected (post-processing).
	return ratio(math.Min(d.Share, math.Max(d.Affected, 0)), d.Units)
}
func (d *Dropped) RowsRange() (lo, hi float64) { return d.ratioRange(d.Share) }

func ratio(x, n float64) float64 {
	if n <= 0 {
		return 0
	}
	return math.Max(0, math.Min(1, x/n))
}

func (d *Dropped) ratioRange(x float64) (lo, hi float64) {
	lo = ratio(x-d.ErrorBound, d.Units+d.ErrorBound)
	if d.Units-d.ErrorBound <= 0 {
		return lo, 1
	}
	return lo, ratio(x+d.ErrorBound, d.Units-d.ErrorBound)
}

// noiseDropped draws the three counts of q.Dropped from the scan's exact
// ones, telling an observer (the auditor) before each.
func noiseDropped(q *planner.PrivateQuery, exact measure.Dropped, noise mechanism.Noiser) (*Dropped, error) {
	est := q.Dropped
	if est == nil {
		return nil, nil
	}
	each := est.Epsilon / 3
	sens := 1.0
	if q.Knobs != nil && q.Knobs.DroppedHalfSensitivity {
		sens = 0.5 // a re-introduced bug, for the auditor's tests
	}
	share := new(big.Float).SetInt(exact.Share)
	share.SetMantExp(share, -measure.DroppedBits)
	observer, _ := noise.(CallObserver)
	var out [3]float64
	for i, v := range []*big.Float{big.NewFloat(float64(exact.Units)), big.NewFloat(float64(exact.Affected)), share} {
		if observer != nil {
			observer.ObserveNoiseCall(NoiseCall{Dropped: true, Round: i})
		}
		n, err := noise.AddLaplaceExact(v, sens, each)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return &Dropped{Units: out[0], Affected: out[1], Share: out[2],
		ErrorBound: mechanism.LaplaceErrorBound(mechanism.LaplaceScale(1, each), 0.05),
		MaxGroups:  q.Unit.MaxGroups, MaxRows: q.Unit.MaxRows}, nil
}
