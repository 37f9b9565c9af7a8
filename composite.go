package dpsql

import (
	"context"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

func dpQueries(n int) string {
	if n == 1 {
		return "1 DP query"
	}
	return fmt.Sprintf("%d DP queries", n)
}

// composite answers SQL over released results: each DP part in turn, as
// if asked alone (cache, charge, noise), then the outer query on their
// noisy rows. The parts' summed cost is checked against the budget before
// the first is charged.
func (s *Session) composite(ctx context.Context, c *planner.Composite, cat *catalog.Catalog) (*Result, error) {
	// The outer query is compiled (with empty answers) before anything is
	// charged.
	if err := s.compileOuter(ctx, c); err != nil {
		return nil, err
	}
	if err := s.fitsTogether(ctx, c); err != nil {
		return nil, err
	}
	in := s.planInputs(ctx)
	in.Released = map[*parser.SelectStmt]*planner.Released{}
	res := &Result{}
	cached := true // every part (and a private outer query) repeated from the cache
	for i, p := range c.Parts {
		r, err := s.private(ctx, p.Stmt, p.Plan, "")
		if err != nil {
			s.withhold(res)
			if i > 0 {
				return nil, &chargedError{err: fmt.Errorf("DP query %d of %d inside this query: %w (the %d before it were charged ε=%g, δ=%g and their answers withheld)", i+1, len(c.Parts), err, i, res.Cost.Epsilon, res.Cost.Delta), cost: res.Cost, said: true}
			}
			return nil, err
		}
		res.addCharge(r, fmt.Sprintf("DP query %d: ", i+1))
		cached = cached && r.Cached
		in.Released[p.Key] = &planner.Released{Columns: r.Columns, Rows: r.Rows}
	}
	plan, err := planner.PlanSelect(c.Stmt, cat, s.settings.planner(), in)
	if err != nil {
		return nil, s.withheld(res, err)
	}
	switch outer := plan.(type) {
	case *planner.PublicQuery:
		r, err := exec.Public(ctx, s.eng.db, outer)
		if err != nil {
			return nil, s.withheld(res, err)
		}
		res.Columns, res.Rows = r.Columns, r.Rows
		res.Notes = append(res.Notes, fmt.Sprintf("SQL over the answers of %s: ε=%g, δ=%g in all; the outer query is post-processing and costs nothing", dpQueries(len(c.Parts)), res.Cost.Epsilon, res.Cost.Delta))
	case *planner.PrivateQuery:
		r, err := s.private(ctx, c.Stmt, outer, releasedSalt(c, in.Released))
		if err != nil {
			s.withhold(res)
			return nil, &chargedError{err: fmt.Errorf("the outer DP query: %w (the %s inside it were charged ε=%g, δ=%g and their answers withheld)", err, dpQueries(len(c.Parts)), res.Cost.Epsilon, res.Cost.Delta), cost: res.Cost, said: true}
		}
		res.Columns, res.Rows, res.ErrorBounds, res.Intervals = r.Columns, r.Rows, r.ErrorBounds, r.Intervals
		res.addCharge(r, "outer DP query: ")
		cached = cached && r.Cached
		res.Notes = append(res.Notes, fmt.Sprintf("a DP query over the answers of %s: ε=%g, δ=%g in all (each charged in turn)", dpQueries(len(c.Parts)), res.Cost.Epsilon, res.Cost.Delta))
	default:
		return nil, fmt.Errorf("dpsql: the outer query planned as %T", plan)
	}
	res.Cached = cached && len(c.Parts) > 0
	return res, nil
}

// withhold records in the ledger that the parts res charged were not
// released: a later part of their statement failed, and their answers
// were withheld with it (their ε stays spent).
func (s *Session) withhold(res *Result) {
	for _, id := range res.charges {
		// A fresh context: the statement's may be why it failed.
		_ = budget.MarkUnanswered(context.Background(), s.eng.ledger, id, "unanswered: withheld (a later part of its statement failed)")
	}
}

// withheld marks the parts res charged as withheld (withhold) and says in
// err what they cost.
func (s *Session) withheld(res *Result, err error) error {
	s.withhold(res)
	if len(res.charges) == 0 {
		return err
	}
	return &chargedError{err: fmt.Errorf("%w (the %s inside it were charged ε=%g, δ=%g and their answers withheld)", err, dpQueries(len(res.charges)), res.Cost.Epsilon, res.Cost.Delta), cost: res.Cost, said: true}
}

// compileOuter compiles a composite's outer query, with empty answers,
// so that one the backend rejects costs nothing.
func (s *Session) compileOuter(ctx context.Context, c *planner.Composite) error {
	if c.Outer != nil {
		if err := exec.CheckPublic(ctx, s.eng.db, c.Outer); err != nil {
			return cancelled(ctx, err, nil)
		}
		return nil
	}
	rw, err := s.eng.rewritePrivate(ctx, c.OuterPrivate)
	if err != nil {
		return err
	}
	prep, err := exec.Prepare(ctx, s.eng.db, c.OuterPrivate, rw, nil)
	if err != nil {
		return cancelled(ctx, err, nil)
	}
	prep.Close()
	return nil
}

// fitsTogether refuses a composite whose DP parts (those not answered
// from the cache) cost more together than the budget has left.
func (s *Session) fitsTogether(ctx context.Context, c *planner.Composite) error {
	st, err := s.status(ctx)
	if err != nil {
		return err
	}
	var need budget.Cost
	for _, p := range c.Parts {
		if !s.cached(ctx, p.Stmt, p.Plan) {
			need.Epsilon += p.Plan.Epsilon
			need.Delta += p.Plan.Delta
		}
	}
	if c.OuterPrivate != nil {
		need.Epsilon += c.OuterPrivate.Epsilon
		need.Delta += c.OuterPrivate.Delta
	}
	if left := st.Remaining(); st.Set && (need.Epsilon > left.Epsilon*(1+1e-9) || need.Delta > left.Delta*(1+1e-9)) {
		msg := fmt.Sprintf("%s: the DP queries of this statement cost ε=%g, δ=%g together, more than the remaining ε=%g, δ=%g; nothing was charged", budget.ErrBudgetExhausted, need.Epsilon, need.Delta, left.Epsilon, left.Delta)
		return &Error{Pos: c.Stmt.Pos(), Kind: budget.ErrBudgetExhausted, Msg: msg}
	}
	return nil
}

// releasedSalt prints the answers a DP query over other DP queries'
// answers was planned with, for its cache key.
func releasedSalt(c *planner.Composite, released map[*parser.SelectStmt]*planner.Released) string {
	var sb strings.Builder
	for _, p := range c.Parts {
		r := released[p.Key]
		sb.WriteString("\x00")
		for _, row := range r.Rows {
			for _, v := range row {
				sb.WriteString(parser.SQLLiteral(v) + ",")
			}
			sb.WriteString(";")
		}
	}
	return sb.String()
}
