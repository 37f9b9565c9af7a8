package dpsql

import (
	"context"
	"errors"
	"fmt"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/cache"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/interval"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/rewrite"
)

// query answers a SELECT: public, private, or SQL over private answers.
func (s *Session) query(ctx context.Context, st *parser.SelectStmt, cat *catalog.Catalog) (*Result, error) {
	in := s.planInputs(ctx)
	plan, err := planner.PlanSelect(st, cat, s.settings.planner(), in)
	if err != nil {
		comp, cerr := planner.PlanComposite(st, cat, s.settings.planner(), in)
		if cerr != nil {
			return nil, cerr
		}
		if comp == nil {
			return nil, s.adviseDelta(ctx, err)
		}
		return s.composite(ctx, comp, cat)
	}
	switch p := plan.(type) {
	case *planner.PublicQuery:
		r, err := exec.Public(ctx, s.eng.db, p)
		if err != nil {
			return nil, err
		}
		return &Result{Columns: r.Columns, Rows: r.Rows}, nil
	case *planner.PrivateQuery:
		if p.Watch != nil {
			return s.askWatch(ctx, st, p)
		}
		res, err := s.private(ctx, st, p, "")
		if err == nil {
			res.Notes = append(res.Notes, textArgumentNotes(p, cat)...)
			if s.settings.IntervalColumns {
				addIntervalColumns(res, intervalOutputs(p))
			}
		}
		return res, err
	}
	return nil, fmt.Errorf("dpsql: unknown plan %T", plan)
}

// private answers one DP query: from the cache, or charged and then run.
//
// salt joins the cache key: a DP query over other DP queries' answers
// passes those answers, so that it is answered afresh when they change.
func (s *Session) private(ctx context.Context, st *parser.SelectStmt, p *planner.PrivateQuery, salt string) (*Result, error) {
	e := s.eng
	rw, err := e.rewritePrivate(ctx, p)
	if err != nil {
		return nil, err
	}
	// An identical query asked before gets the same released answer,
	// free (post-processing of that release).
	text := parser.FormatStmt(st) // the canonical statement: cache key, ledger and SHOW CACHE
	key := s.cacheKey(text+salt, p)
	if res, ok := s.fromCache(ctx, key); ok {
		return res, nil
	}
	if !s.cacheOff() {
		// The same query asked by another session now is answered once:
		// this one waits for that answer to reach the cache.
		done, err := e.awaitFlight(ctx, key)
		if err != nil {
			return nil, cancelled(ctx, err, nil)
		}
		defer done()
		if res, ok := s.fromCache(ctx, key); ok {
			return res, nil
		}
	}
	// A query the budget refuses is refused before any work whose
	// duration depends on the data (Prepare copies the mirrored tables a
	// join reads).
	if err := s.checkBudget(ctx, st, p, text); err != nil {
		return nil, err
	}
	// The tables' cache counters before any row is read: the answer is
	// cached only if they still hold when it is stored.
	tables := readTables(p)
	epochs, epochsErr := cache.ReadEpochs(ctx, e.db, tables)
	// The backend compiles both statements before anything is charged:
	// a statement it rejects costs nothing.
	prep, err := e.prepare(ctx, p, rw)
	if err != nil {
		return nil, cancelled(ctx, err, nil)
	}
	defer prep.Close()
	opt, _, id, err := s.charge(ctx, st, p, text)
	if err != nil {
		return nil, err
	}
	cost := budget.Cost{Epsilon: p.Epsilon, Delta: p.Delta}
	failed := func(err error) (*Result, error) {
		if err = cancelled(ctx, err, &cost); !errors.Is(err, ErrCancelled) {
			err = &chargedError{err: err, cost: cost} // failed after the charge: say so
		}
		// The ledger says that this charge went unanswered (its ε stays
		// spent); a fresh context: the query's may be why it failed.
		_ = budget.MarkUnanswered(context.Background(), e.ledger, id, "unanswered: "+unansweredWhy(ctx))
		return nil, err
	}
	runPrep, runPlan := prep, opt.plan
	var contribution *autoChoice
	if p.Auto != nil && !p.Auto.Chosen {
		// AUTO contribution bounds: chosen now, from a profile of the
		// units, and the query measured again under them.
		if contribution, err = s.chooseContribution(ctx, st, p, prep, opt); err != nil {
			return failed(err)
		}
		defer contribution.prep.Close()
		runPrep, runPlan = contribution.prep, contribution.plan
	}
	r, chosen, err := runPrep.Run(ctx, runPlan, e.noise)
	if err != nil {
		return failed(err)
	}
	res := &Result{Columns: r.Columns, Rows: r.Rows, Intervals: interval.Copy(r.Intervals), Cost: cost, Mechanism: opt.charge.Mechanism, Rho: opt.charge.Rho, ErrorBounds: errorBounds(runPlan), charges: []int64{id}}
	if opt.reused {
		// The same query was charged, then cancelled before anything
		// was released: that charge pays for this answer.
		res.Cost = budget.Cost{}
		res.Notes = append(res.Notes, fmt.Sprintf("nothing charged: this answer uses the charge of the same query, cancelled earlier before it was answered (ledger entry %d, ε=%g)", id, cost.Epsilon))
	} else if c := opt.charge; c.Mechanism == budget.Gaussian {
		// Short and plain: it comes with every answer under a δ > 0 budget
		// (the exact accounting is in EXPLAIN and SHOW LEDGER).
		res.Notes = append(res.Notes, fmt.Sprintf(chargeNotePrefix+"ε=%.6g (SHOW BUDGET: what is left)", cost.Epsilon))
	}
	for _, c := range chosen {
		res.Notes = append(res.Notes, chosenBoundNotes(c, s.settings.ShowBounds)...)
	}
	if runPlan.Unit.BoundsWarnings == catalog.BoundsWarningsError {
		// The owner refuses answers whose bounds warn: the refusal reads
		// only the bounds and the clipped-share estimate, both released by
		// the search (post-processing), and comes after the charge.
		for _, c := range chosen {
			if warns(c) {
				_ = budget.MarkUnanswered(context.Background(), e.ledger, id, "refused: privately chosen bounds warned (bounds_warnings = 'error')")
				return nil, &chargedError{cost: cost, err: fmt.Errorf("answer refused: the bounds of %s chosen privately, [%g, %g], may have clipped much of the data (an estimated %.3g%% of its values lie beyond them; 95%%: up to %.3g%%), and the owner's policy refuses such answers (bounds_warnings = 'error'); declare bounds (contribution_bounds_per_row => (lo, hi)), or spend more ε",
					c.Label, c.Lo, c.Hi, 100*c.Clipped.Share(), 100*c.Clipped.MaxShare())}
			}
		}
	}
	s.fellBackNote(res, runPrep)
	boundingNotes(res, r.Dropped, runPlan.Unit, contribution)
	if n := clippedNote(res, chosen); n != "" {
		res.Notes = append(res.Notes, n)
	}
	if n := wideIntervals(res.Intervals); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d value(s) come from groups with too few rows for their noisy count to carry them: their interval is the whole range the bounds allow (shown as [lo, hi] (few rows)); read them as unknown", n))
	}
	if epochsErr == nil {
		s.toCache(ctx, key, text, tables, epochs, res)
	}
	return res, nil
}

// fellBackNote says, when the engine could not run the compiled
// measurement, that the reference evaluator measured instead. Whether the
// engine ran out of resources can depend on the rows the query selects:
// told to whoever holds the file (the shell, the Go API, the server's
// operator through Notify), never in a served analyst's answer.
func (s *Session) fellBackNote(res *Result, prep *exec.Prepared) {
	why := prep.FellBack()
	if why == nil {
		return
	}
	msg := fmt.Sprintf("the engine could not run the compiled measurement (%s); the reference evaluator measured the same rows instead (slower, the same answer)", firstLine(why.Error()))
	if s.analyst == "" {
		res.Notes = append(res.Notes, msg)
	} else if s.eng.notify != nil {
		s.eng.notify(msg)
	}
}

// boundingNotes adds an answer's notes on contribution bounding under u:
// the bounds chosen privately (AUTO), and what bounding dropped — or, for
// a query that does not estimate it, that the intervals are about the
// rows kept.
func boundingNotes(res *Result, dropped *exec.Dropped, u catalog.Unit, contribution *autoChoice) {
	if contribution != nil {
		res.Notes = append(res.Notes, contribution.note(u))
	}
	if dropped != nil {
		res.Dropped = dropped
		res.Notes = append(res.Notes, droppedNote(dropped, u.Column))
	} else if u.Column != "" && res.Intervals != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("the intervals are about the rows contribution bounding kept (at most %d group(s) and %d row(s) per group for each %s): a unit's rows beyond those are not counted", u.MaxGroups, u.MaxRows, u.Column))
	}
}

// prepare compiles p's scan for the backend, measured where the tables
// live when the backend can (exec.Measurer).
func (e *Engine) prepare(ctx context.Context, p *planner.PrivateQuery, rw *rewrite.Rewritten) (*exec.Prepared, error) {
	return exec.Prepare(ctx, e.db, p, rw, e.measurer())
}
