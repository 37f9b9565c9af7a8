package dpsql

import (
	"context"
	"errors"
	"fmt"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/contrib"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// autoChoice is a query's privately chosen contribution bounds and the
// query prepared again under them.
type autoChoice struct {
	choice contrib.Choice
	plan   *planner.PrivateQuery // as charged: Laplace, or Gaussian at the charge's ρ
	prep   *exec.Prepared
	eps    float64 // what the choice spent
}

// chooseContribution chooses the AUTO contribution bounds of p, after its
// charge: the units' profile measured by the prepared scan, noised and
// read by contrib.Choose (planner.AutoContribution), then the statement
// planned again with the chosen bounds — the same ε split, so the cells
// get what was charged for them — and prepared.
func (s *Session) chooseContribution(ctx context.Context, st *parser.SelectStmt, p *planner.PrivateQuery, prep *exec.Prepared, opt option) (*autoChoice, error) {
	e := s.eng
	prof, err := prep.Profile(ctx)
	if err != nil {
		return nil, err
	}
	choice, err := exec.ChooseContribution(opt.plan, prof, e.noise)
	if err != nil {
		return nil, err
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		return nil, err
	}
	in := s.planInputs(ctx)
	in.Contribution = &planner.ContributionChoice{MaxGroups: choice.MaxGroups, MaxRows: choice.MaxRows}
	plan, err := planner.PlanSelect(st, cat, s.settings.planner(), in)
	if err != nil {
		return nil, err
	}
	q, ok := plan.(*planner.PrivateQuery)
	if !ok || q.Policy != p.Policy || q.Auto == nil || !q.Auto.Chosen || q.Epsilon != p.Epsilon {
		return nil, errors.New("the table's privacy policy changed while the query ran: ask again")
	}
	if opt.charge.Mechanism == budget.Gaussian {
		if q, err = q.Gaussian(opt.charge.Rho); err != nil {
			return nil, err
		}
	}
	rw, err := e.rewritePrivate(ctx, q)
	if err != nil {
		return nil, err
	}
	prep2, err := e.prepare(ctx, q, rw)
	if err != nil {
		return nil, err
	}
	return &autoChoice{choice: choice, plan: q, prep: prep2, eps: opt.plan.Auto.Epsilon}, nil
}

// note is the answer's note on the bounds chosen.
func (a *autoChoice) note(u catalog.Unit) string {
	return fmt.Sprintf("contribution bounds chosen privately for this query (AUTO): at most %d group(s) and %d row(s) per group for each %s — the pair of %d candidates with the smallest expected error of its counts (the rows it drops plus the noise it needs), from a noisy profile of the units' groups and rows at ε=%.4g; the profile estimated that they keep %.3g%% of the rows",
		u.MaxGroups, u.MaxRows, u.Column, len(contrib.Candidates)*len(contrib.Candidates), a.eps, 100*a.choice.KeptShare)
}
