package exec

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/dpsql/dpsql/contrib"
	"github.com/dpsql/dpsql/measure"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/planner"
)

// Profile measures, exactly, the units' profile of a query whose
// contribution bounds are AUTO (planner.AutoContribution): where the
// tables live when the engine compiles it, otherwise through the
// reference evaluator. Nothing of it is released: ChooseContribution
// noises it.
func (p *Prepared) Profile(ctx context.Context) (*measure.Profile, error) {
	if p.measurer != nil && p.rw.Measurement != nil && !p.q.Knobs.Reference() {
		m := *p.rw.Measurement
		m.Profile, m.Dropped = true, false
		got, _, err := p.measureCompiled(ctx, &m)
		if err != nil {
			return nil, err
		}
		if got != nil && got.Profile != nil {
			p.q.Knobs.NoteCompiled()
			return got.Profile, nil
		}
	}
	if p.unfilled {
		if err := p.fill(ctx); err != nil {
			return nil, fmt.Errorf("reading the tables for the reference evaluator: %w", err)
		}
	}
	res, _, err := p.measureAs(ctx, p.scan, specsOf(p.rw.Measured), 0, true)
	if err != nil {
		return nil, err
	}
	if res == nil || res.profile == nil {
		return measure.NewProfile(), nil // no row matched
	}
	return res.profile, nil
}

// ChooseContribution noises the profile's two histograms (Laplace,
// sensitivity 1 in L1 each, at half the choice's ε each; telling an
// observer before each bin) and chooses the AUTO bounds of q from them
// (contrib.Choose): post-processing of the noisy histograms.
func ChooseContribution(q *planner.PrivateQuery, prof *measure.Profile, noise mechanism.Noiser) (contrib.Choice, error) {
	a := q.Auto
	each := a.Epsilon / 2
	sens := 1.0
	if q.Knobs != nil && q.Knobs.ProfileHalfSensitivity {
		sens = 0.5 // a re-introduced bug, for the auditor's tests
	}
	observer, _ := noise.(CallObserver)
	noisy := func(h []int64, scale float64, round int) ([]float64, error) {
		out := make([]float64, len(h))
		for i, x := range h {
			if observer != nil {
				observer.ObserveNoiseCall(NoiseCall{Profile: true, Round: round, Cell: i})
			}
			v, err := noise.AddLaplace(float64(x)/scale, sens, each)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	groups, err := noisy(prof.Groups, 1, 0)
	if err != nil {
		return contrib.Choice{}, err
	}
	rows, err := noisy(prof.Rows, math.Ldexp(1, measure.ProfileBits), 1)
	if err != nil {
		return contrib.Choice{}, err
	}
	cells := 0.0
	unitCounts := len(q.Cells) > 0
	for _, c := range q.Cells {
		cells = math.Max(cells, c.Epsilon)
		unitCounts = unitCounts && c.Kind == planner.CountUnits
	}
	if cells == 0 {
		cells = q.Epsilon
	}
	// The groups the noise is spent on: the public domains' (one
	// without GROUP BY); under partition selection, which releases an
	// unknown number, the largest candidate stands for them.
	groupsOf := int64(q.Groups())
	if q.Selection != nil {
		groupsOf = contrib.Largest()
	}
	return contrib.Choose(groups, rows, contrib.Query{Groups: groupsOf, CellEpsilon: cells, UnitCounts: unitCounts},
		a.Groups, a.Rows, q.Unit.MaxGroups, q.Unit.MaxRows, mechanism.LaplaceScale(1, each)), nil
}

// explainBoundingChoices adds EXPLAIN's rows for the AUTO contribution
// bounds' choice and the estimate of what bounding dropped.
func explainBoundingChoices(q *planner.PrivateQuery, add func(step, detail string)) {
	if a := q.Auto; a != nil && !a.Chosen {
		var which []string
		if a.Groups {
			which = append(which, "max_groups_contributed")
		}
		if a.Rows {
			which = append(which, "max_rows_contributed")
		}
		add("auto bounds", fmt.Sprintf("%s = AUTO: chosen privately when the query runs, among %v — first a scan profiles the units (how many groups each has; how many rows its groups have), two histograms of %d bins each with Laplace noise of sensitivity 1 (one unit moves each by at most 1 in L1) at ε=%.6g each (%.6g in all, %g of the query's ε); then the pair with the smallest expected error of the counts (the rows it drops plus the noise it needs over the query's groups) is chosen from them (post-processing), and the query is measured under it with the rest of its ε. The rows below show the plan at the largest candidate (%d): its sensitivities and accuracy follow the bounds chosen",
			strings.Join(which, " and "), contrib.Candidates, contrib.Bins(), a.Epsilon/2, a.Epsilon, planner.AutoFraction, contrib.Largest()))
	}
	if d := q.Dropped; d != nil {
		each := d.Epsilon / 3
		add("dropped", fmt.Sprintf("what bounding dropped, estimated privately for the answer's note: three Laplace counts over the whole scan, each of sensitivity 1 (one unit moves each by at most 1), ε=%.6g each (%.6g in all, %g of the query's ε), scale %.4g, 95%% error ±%.4g: the units, the units that lost a row (more than l0 groups, or more than l∞ rows in one), and Σ of each unit's dropped share 1 − min(groups, l0)·Σ min(rows in a group, l∞) / (groups·rows) (the share expected under the uniform choice of its groups); the answer divides the last two by the first",
			each, d.Epsilon, planner.DroppedFraction, mechanism.LaplaceScale(1, each), mechanism.LaplaceErrorBound(mechanism.LaplaceScale(1, each), 0.05)))
	}
}
