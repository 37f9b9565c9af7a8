package exec

import (
	"context"
	"errors"
	"fmt"
	"math"

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
		got, ok, err := p.measurer.Measure(ctx, &m, randomKey(p.q.Knobs.Fixed()))
		switch {
		case err != nil && (ctx.Err() != nil || !errors.Is(err, measure.ErrEngineResources)):
			p.q.Knobs.NoteCompiledFailed()
			return nil, backendError(ctx, err)
		case err != nil:
			p.q.Knobs.NoteCompiledFailed()
			p.fellBack = err
		case ok && got.Profile != nil:
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
