package dpsql

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/dperr"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// charge commits p's cost to the ledger, before the data is read:
// nothing is released that has not been paid for. It returns the noise
// option the ledger admitted and the budget it was charged to.
func (s *Session) charge(ctx context.Context, st *parser.SelectStmt, p *planner.PrivateQuery, text string) (option, budget.Status, int64, error) {
	e := s.eng
	status, err := s.status(ctx)
	if err != nil {
		return option{}, status, 0, err
	}
	opts, _, err := noiseOptions(p, status)
	if err != nil {
		return option{}, status, 0, err
	}
	waiting := func() {
		if e.notify != nil {
			e.notify("waiting for the database's write lock (another connection or process is writing, such as an owner's import) to record this query's cost; Ctrl-C cancels and charges nothing")
		}
	}
	i, id, reused, err := budget.ChargeOrReuse(ctx, e.ledger, s.analyst, charges(opts), text, waiting)
	if err != nil {
		if errors.Is(err, budget.ErrBudgetExhausted) || errors.Is(err, budget.ErrNoBudget) {
			return option{}, status, 0, at(st.SelectPos, err)
		}
		if readOnly(err) {
			return option{}, status, 0, fmt.Errorf("%w: every private query records its cost in the ledger inside %s before it is answered, so it needs write access to that file and its directory (public queries, EXPLAIN and SHOW work without); nothing was charged", ErrReadOnly, e.path)
		}
		return option{}, status, 0, cancelled(ctx, err, nil)
	}
	opt := opts[i]
	opt.reused = reused
	return opt, status, id, nil
}

// checkBudget refuses, as the charge would, a query none of whose noise
// options fits the budget now; it charges nothing.
func (s *Session) checkBudget(ctx context.Context, st *parser.SelectStmt, p *planner.PrivateQuery, text string) error {
	status, err := s.status(ctx)
	if err != nil {
		return err
	}
	opts, _, err := noiseOptions(p, status)
	if err != nil {
		return err
	}
	if p.Delta > 0 && status.Set && status.Total.Delta == 0 {
		return at(st.SelectPos, &noDeltaError{delta: p.Delta, analyst: status.Analyst})
	}
	if err := status.Admits(charges(opts)); err != nil { // the ledger as status read it: one read, not two
		if errors.Is(err, budget.ErrBudgetExhausted) {
			// The same query cancelled after its charge is answered on
			// that charge (ChargeOrReuse), even on a budget spent since.
			if ok, rerr := budget.HasReusable(ctx, s.eng.ledger, status, charges(opts), text); rerr == nil && ok {
				return nil
			}
		}
		if errors.Is(err, budget.ErrBudgetExhausted) || errors.Is(err, budget.ErrNoBudget) {
			return at(st.SelectPos, err)
		}
		return cancelled(ctx, err, nil)
	}
	return nil
}

// adviseDelta adds to a refusal that suggests OPTIONS (delta = D) that
// the budget the query would spend has δ = 0 (so that advice would be
// refused too), whose budget it is, and what gives it a δ.
func (s *Session) adviseDelta(ctx context.Context, err error) error {
	var de *dperr.Error
	if !errors.Is(err, planner.ErrNeedsDelta) || !errors.As(err, &de) {
		return err
	}
	status, serr := s.status(ctx)
	if serr != nil || !status.Set || status.Total.Delta > 0 {
		return err
	}
	hint := "this database's budget has δ = 0, so OPTIONS (delta = D) would be refused too: the owner declares the domain, or allows a δ (SET BUDGET epsilon = E, delta = D)"
	if status.Analyst != "" {
		hint = fmt.Sprintf("your budget (analyst %s) has δ = 0, so OPTIONS (delta = D) would be refused too: the owner declares the domain, or gives you a δ (ALTER ANALYST %s BUDGET epsilon = E, delta = D)", status.Analyst, parser.QuoteIdent(status.Analyst))
	}
	c := *de
	c.Msg += "; but " + hint // in the message: every surface shows it
	return &c
}

// noDeltaError refuses a query that asks for δ > 0 on a budget whose δ
// is 0: not that the budget ran out, but that it never allowed any δ. It
// says whose budget it is (an analyst's own, or the database's) and what
// gives it a δ.
type noDeltaError struct {
	delta   float64
	analyst string
}

func (e *noDeltaError) Error() string {
	whose, fix := "this database's budget has", "the owner allows a δ (SET BUDGET epsilon = E, delta = D)"
	if e.analyst != "" {
		whose = fmt.Sprintf("your budget (analyst %s) has", e.analyst)
		fix = fmt.Sprintf("the owner gives you a δ (ALTER ANALYST %s BUDGET epsilon = E, delta = D)", parser.QuoteIdent(e.analyst))
	}
	return fmt.Sprintf("the query asks for δ=%g, but %s δ = 0 (pure ε): no query of it may spend δ. Drop delta from OPTIONS; a GROUP BY then needs its column's values declared (ALTER PRIVACY POLICY ... SET DOMAIN), or %s", e.delta, whose, fix)
}

// Unwrap makes it a budget refusal (the exit status and SQLSTATE of one).
func (e *noDeltaError) Unwrap() error { return budget.ErrBudgetExhausted }

// unansweredWhy says why a charged query went unanswered, for the ledger.
func unansweredWhy(ctx context.Context) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timed out"
	case ctx.Err() != nil:
		return "cancelled"
	}
	return "failed"
}

// chargeNotePrefix begins the note that says what a query spent: true
// of the answer that was charged, not of a repeat from the cache.
const chargeNotePrefix = "Gaussian noise: this query spent "

// isChargeNote reports whether note says what its query spent.
func isChargeNote(note string) bool { return strings.HasPrefix(note, chargeNotePrefix) }
