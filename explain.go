package dpsql

import (
	"context"
	"errors"
	"fmt"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// explain shows how a SELECT would be answered, and what it would cost,
// without running it: it spends nothing.
func (s *Session) explain(ctx context.Context, st *parser.ExplainStmt, cat *catalog.Catalog) (*Result, error) {
	set, in := s.settings.planner(), s.planInputs(ctx)
	plan, err := planner.PlanSelect(st.Query, cat, set, in)
	assumed := false
	if errors.Is(err, planner.ErrNoEpsilon) {
		// EXPLAIN spends nothing, so it needs no ε: it shows the plan at
		// ε = 1 and says so.
		set.Epsilon, assumed = 1, true
		plan, err = planner.PlanSelect(st.Query, cat, set, in)
	}
	if err != nil {
		set := s.settings.planner()
		comp, cerr := planner.PlanComposite(st.Query, cat, set, in)
		if comp == nil && cerr == nil && set.Epsilon == 0 {
			set.Epsilon, assumed = 1, true
			comp, cerr = planner.PlanComposite(st.Query, cat, set, in)
		}
		if cerr != nil {
			return nil, cerr
		}
		if comp == nil {
			return nil, err
		}
		return s.explainComposite(ctx, comp, assumed)
	}
	switch p := plan.(type) {
	case *planner.PublicQuery:
		return &Result{Columns: []string{"step", "detail"}, Rows: [][]any{
			{"table", "public: the query runs without noise and spends nothing"},
			{"backend SQL", p.SQL},
		}}, nil
	case *planner.PrivateQuery:
		return s.explainPrivate(ctx, st.Query, p, assumed)
	}
	return nil, fmt.Errorf("dpsql: unknown plan %T", plan)
}

// explainComposite explains each DP part of a query over released
// results, then the outer query and the total cost.
func (s *Session) explainComposite(ctx context.Context, c *planner.Composite, assumed bool) (*Result, error) {
	res := &Result{Columns: []string{"step", "detail"}}
	var total budget.Cost
	for i, p := range c.Parts {
		r, err := s.explainPrivate(ctx, p.Stmt, p.Plan, assumed)
		if err != nil {
			return nil, err
		}
		prefix := fmt.Sprintf("DP query %d", i+1)
		res.Rows = append(res.Rows, []any{prefix, parser.FormatStmt(p.Stmt)})
		for _, row := range r.Rows {
			res.Rows = append(res.Rows, []any{prefix + ": " + fmt.Sprint(row[0]), row[1]})
		}
		if !s.cached(ctx, p.Stmt, p.Plan) {
			total.Epsilon += p.Plan.Epsilon
			total.Delta += p.Plan.Delta
		}
	}
	if c.Outer != nil {
		res.Rows = append(res.Rows, []any{"outer query", "post-processing of the released answers (and public tables): no noise, no cost; backend SQL, with each answer as a VALUES list: " + c.Outer.SQL})
	} else {
		r, err := s.explainPrivate(ctx, c.Stmt, c.OuterPrivate, assumed)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, []any{"outer query", "a DP query of its own over the answers above (as public data) and private tables, charged after them"})
		for _, row := range r.Rows {
			if row[0] != "cache" {
				res.Rows = append(res.Rows, []any{"outer query: " + fmt.Sprint(row[0]), row[1]})
			}
		}
		total.Epsilon += c.OuterPrivate.Epsilon
		total.Delta += c.OuterPrivate.Delta
	}
	res.Rows = append(res.Rows, []any{"total", fmt.Sprintf("ε=%g, δ=%g for the DP queries not answered from the cache", total.Epsilon, total.Delta)})
	return res, nil
}

// explainPrivate explains one DP query.
func (s *Session) explainPrivate(ctx context.Context, st *parser.SelectStmt, p *planner.PrivateQuery, assumed bool) (*Result, error) {
	rw, err := s.eng.rewritePrivate(ctx, p)
	if err != nil {
		return nil, err
	}
	r := exec.Explain(p, rw)
	if p.Watch != nil {
		// Nothing is charged: drop exec's cost row and say so.
		rows := r.Rows[:0]
		for _, row := range r.Rows {
			if row[0] != "privacy cost" {
				rows = append(rows, row)
			}
		}
		r.Rows = append(rows, []any{"privacy cost", "nothing: the watch was charged when it opened"})
		return &Result{Columns: r.Columns, Rows: implementationLast(r.Rows)}, nil
	}
	status, err := s.status(ctx)
	if err != nil {
		return nil, err
	}
	opts, why, err := noiseOptions(p, status)
	if err != nil {
		return nil, err
	}
	i, acct, err := status.Choose(charges(opts))
	if err != nil {
		// Unknown or exhausted budget: show the preferred option.
		i, acct = 0, "the budget would refuse it now: "+err.Error()
	}
	if i > 0 {
		why += "; it does not fit the budget now, so the next option runs"
	}
	if opts[i].plan != p {
		r = exec.Explain(opts[i].plan, rw)
	}
	r.Rows = append(r.Rows, []any{"noise choice", why}, []any{"accounting", costNote(opts[i].charge, status) + "; admitted by " + acct})
	if m := s.eng.compiler(); m != nil {
		where, statement, err := m.Explain(ctx, s.eng.db, rw.Measurement, rw.NoPlan)
		if err != nil {
			return nil, err
		}
		r.Rows = append(r.Rows, []any{"engine", where})
		if statement != "" {
			// The statement that runs is the backend's; the reference
			// evaluator's, which the differential tests check it against,
			// follows it.
			for _, row := range r.Rows {
				if row[0] == "backend SQL" {
					r.Rows = append(r.Rows, []any{"reference SQL", "SQLite's reference evaluator, which the differential tests check the backend's statement against: " + fmt.Sprint(row[1])})
					row[1] = statement
				}
			}
		}
	}
	if assumed {
		r.Rows = append(r.Rows, []any{"epsilon", "no epsilon was set: the plan is shown at ε = 1 (SET epsilon = E, or OPTIONS (epsilon = E), to choose)"})
	} else if a, ok := s.eng.cachedAnswer(ctx, s.cacheKey(parser.FormatStmt(st), p)); ok && !s.cacheOff() {
		r.Rows = append(r.Rows, []any{"cache", fmt.Sprintf("an identical query was answered on %s: it would get that answer again, free", a.Created.Format("2006-01-02 15:04:05 UTC"))})
	}
	return &Result{Columns: r.Columns, Rows: implementationLast(r.Rows)}, nil
}

// implementationSteps are EXPLAIN's rows about how the engine measures
// (its statements), which come after every row an analyst reads to judge
// the answer: the noise, the accuracy, the cost (issue 51).
var implementationSteps = map[string]bool{"backend SQL": true, "reference SQL": true, "source": true, "measurements": true, "post-processing SQL": true, "engine": true}

// implementationLast moves the implementation rows to the end, each
// group keeping its order.
func implementationLast(rows [][]any) [][]any {
	var first, last [][]any
	for _, row := range rows {
		if step, _ := row[0].(string); implementationSteps[step] {
			last = append(last, row)
		} else {
			first = append(first, row)
		}
	}
	return append(first, last...)
}
