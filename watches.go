package dpsql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// Threshold watches (docs/dialect.md, "Threshold watches"): CREATE WATCH
// charges the watch's ε and stores its noisy threshold with the charge
// (budget.OpenWatch); a query with OPTIONS (watch = name) is planned
// (its sensitivity checked against the watch's), scanned, and answered
// "above" or "below" under the ledger's lock (budget.AskWatch); SHOW
// WATCHES lists the session's own.

// watchStatement runs CREATE WATCH and DROP WATCH.
func (s *Session) watchStatement(ctx context.Context, st *parser.WatchStmt) (*Result, error) {
	e := s.eng
	if st.Op == "DROP" {
		if err := budget.DropWatch(ctx, e.ledger, s.analyst, st.Name); err != nil {
			return nil, at(st.NamePos, err)
		}
		return &Result{Message: fmt.Sprintf("watch %s dropped (its ε stays spent)", st.Name)}, nil
	}
	w, opts, err := s.watchOptions(st)
	if err != nil {
		return nil, err
	}
	charge := budget.LaplaceCharge(w.Epsilon, 0, []float64{w.Epsilon})
	w, err = budget.OpenWatch(ctx, e.ledger, s.analyst, w, charge, parser.FormatStmt(st), func() (float64, error) {
		return mechanism.SparseThreshold(opts, e.noise)
	})
	if err != nil {
		if errors.Is(err, budget.ErrWatchExists) {
			return nil, at(st.NamePos, err)
		}
		if errors.Is(err, budget.ErrBudgetExhausted) || errors.Is(err, budget.ErrNoBudget) {
			return nil, at(st.StmtPos, err)
		}
		return nil, cancelled(ctx, err, nil)
	}
	eps1, _ := mechanism.SparseSplit(opts.Epsilon, opts.Cutoff, opts.Monotonic)
	res := &Result{Cost: budget.Cost{Epsilon: w.Epsilon}, Mechanism: charge.Mechanism, Rho: charge.Rho, Message: fmt.Sprintf(
		"watch %s opened: each query sent to it (OPTIONS (watch = %s)) answers whether its value is above %g, at no further cost, until %d answer(s) \"above\"; charged ε=%g (threshold noise scale %.4g, query noise scale %.4g; with 95%% probability an \"above\" means at least %.6g and a value of %.6g or more is not answered \"below\", over 100 queries)",
		w.Name, parser.QuoteIdent(w.Name), w.Threshold, w.Cutoff, w.Epsilon, opts.Sensitivity/eps1, mechanism.SparseQueryScale(opts),
		w.Threshold-mechanism.SparseMargin(opts, 100, 0.05), w.Threshold+mechanism.SparseMargin(opts, 100, 0.05))}
	return res, nil
}

// watchOptions reads CREATE WATCH's options: threshold, sensitivity,
// max_above (default 1: AboveThreshold), epsilon (default the session's)
// and monotonic (default false).
func (s *Session) watchOptions(st *parser.WatchStmt) (budget.Watch, mechanism.SparseOptions, error) {
	w := budget.Watch{Name: st.Name, Cutoff: 1, Epsilon: s.settings.Epsilon}
	given := map[string]bool{}
	for _, o := range st.Options {
		bad := func(msg string) error { return &Error{Pos: o.Value.Pos(), Kind: ErrInvalidOption, Msg: msg} }
		v, verr := parser.NumberValue(o.Value)
		given[o.Name] = true
		switch o.Name {
		case "threshold":
			if verr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return w, mechanism.SparseOptions{}, bad("threshold takes a finite number")
			}
			w.Threshold = v
		case "sensitivity":
			if verr != nil || !(v > 0) || math.IsInf(v, 0) {
				return w, mechanism.SparseOptions{}, bad("sensitivity takes a positive finite number: the most one privacy unit may change any query sent to the watch")
			}
			w.Sensitivity = v
		case "max_above":
			if verr != nil || v < 1 || v != math.Trunc(v) || v > planner.MaxGroupsAbove {
				return w, mechanism.SparseOptions{}, bad(fmt.Sprintf("max_above takes a positive integer (at most %d): how many \"above\" answers the watch gives", planner.MaxGroupsAbove))
			}
			w.Cutoff = int(v)
		case "epsilon":
			if verr != nil || !planner.ValidEpsilon(v) {
				return w, mechanism.SparseOptions{}, bad(planner.EpsilonRange)
			}
			w.Epsilon = v
		case "monotonic":
			b, err := parser.LiteralValue(o.Value)
			mono, ok := b.(bool)
			if err != nil || !ok {
				return w, mechanism.SparseOptions{}, bad("monotonic takes TRUE or FALSE")
			}
			w.Monotonic = mono
		default:
			return w, mechanism.SparseOptions{}, &Error{Pos: o.NamePos, Kind: ErrInvalidOption, Msg: fmt.Sprintf("unknown watch option %q (known: threshold, sensitivity, max_above, epsilon, monotonic)", o.Name)}
		}
	}
	for _, need := range []string{"threshold", "sensitivity"} {
		if !given[need] {
			return w, mechanism.SparseOptions{}, &Error{Pos: st.StmtPos, Kind: ErrInvalidOption, Msg: fmt.Sprintf("CREATE WATCH needs OPTIONS (threshold = T, sensitivity = S[, max_above = C, epsilon = E, monotonic = TRUE]): %s is missing", need)}
		}
	}
	if !planner.ValidEpsilon(w.Epsilon) {
		return w, mechanism.SparseOptions{}, &Error{Pos: st.StmtPos, Kind: ErrNoEpsilon, Msg: "no epsilon for this watch: give OPTIONS (epsilon = E) or SET epsilon = E"}
	}
	opts := watchSparse(w)
	if err := mechanism.CheckSparse(opts); err != nil {
		return w, opts, &Error{Pos: st.StmtPos, Kind: ErrInvalidOption, Msg: fmt.Sprintf("the watch cannot be noised with these parameters (%v): use a larger epsilon or a smaller sensitivity", err)}
	}
	return w, opts, nil
}

// watchSparse is a watch's sparse vector run.
func watchSparse(w budget.Watch) mechanism.SparseOptions {
	return mechanism.SparseOptions{Epsilon: w.Epsilon, Sensitivity: w.Sensitivity, Threshold: w.Threshold, Cutoff: w.Cutoff, Monotonic: w.Monotonic}
}

// planInputs are the engine's planning inputs with the session's own
// watches (a query sent to one is checked against its bound).
func (s *Session) planInputs(ctx context.Context) planner.Inputs {
	in := s.eng.planInputs()
	in.Watch = func(name string) (planner.WatchBound, error) {
		w, err := budget.GetWatch(ctx, s.eng.ledger, s.analyst, name)
		if err != nil {
			return planner.WatchBound{}, err
		}
		return planner.WatchBound{Sensitivity: w.Sensitivity, Monotonic: w.Monotonic}, nil
	}
	return in
}

// askWatch answers a query sent to a watch: the exact value is measured,
// then compared under the watch's noise in a transaction that holds the
// ledger's lock; an "above" is counted before the answer leaves.
func (s *Session) askWatch(ctx context.Context, st *parser.SelectStmt, p *planner.PrivateQuery) (*Result, error) {
	e := s.eng
	rw, err := e.rewritePrivate(ctx, p)
	if err != nil {
		return nil, err
	}
	prep, err := e.prepare(ctx, p, rw)
	if err != nil {
		return nil, cancelled(ctx, err, nil)
	}
	defer prep.Close()
	v, err := prep.ExactCell(ctx, p.Watch.Cell)
	if err != nil {
		return nil, cancelled(ctx, err, nil)
	}
	sens := p.Cells[p.Watch.Cell].L1Sensitivity
	w, above, err := budget.AskWatch(ctx, e.ledger, s.analyst, p.Watch.Name, func(w budget.Watch) (bool, error) {
		// The watch read under the lock is the one answered: checked
		// again (it may have been dropped and opened anew since the plan).
		if sens > w.Sensitivity {
			return false, &Error{Pos: st.SelectPos, Kind: ErrInvalidOption, Msg: fmt.Sprintf("a query to watch %q must have sensitivity at most the watch's %g; this one has %g", w.Name, w.Sensitivity, sens)}
		}
		return mechanism.SparseAnswer(watchSparse(w), w.NoisyThreshold, new(big.Float).Set(v), e.noise)
	})
	if err != nil {
		if errors.Is(err, budget.ErrWatchClosed) || errors.Is(err, budget.ErrUnknownWatch) {
			return nil, at(st.SelectPos, err)
		}
		var pe *Error
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, cancelled(ctx, err, nil)
	}
	answer := "below"
	if above {
		answer = "above"
	}
	note := fmt.Sprintf("watch %s: %d of %d \"above\" answer(s) left; nothing charged (the watch was paid for when it opened)", w.Name, w.Left(), w.Cutoff)
	if w.Left() == 0 {
		note = fmt.Sprintf("watch %s: that was its last \"above\" answer; it is closed (nothing charged: the watch was paid for when it opened)", w.Name)
	}
	return &Result{Columns: []string{p.Outputs[0].Name}, Rows: [][]any{{answer}}, Notes: []string{note}}, nil
}

// showWatches is SHOW WATCHES: the session's own watches, what each has
// answered and what is left (never the noisy thresholds).
func (s *Session) showWatches(ctx context.Context) (*Result, error) {
	list, err := budget.Watches(ctx, s.eng.ledger, s.analyst)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: []string{"watch", "threshold", "sensitivity", "max_above", "epsilon", "monotonic", "asked", "above", "left", "state", "created"}}
	for _, w := range list {
		state := "open"
		if w.Left() == 0 {
			state = "closed"
		}
		res.Rows = append(res.Rows, []any{w.Name, w.Threshold, w.Sensitivity, int64(w.Cutoff), w.Epsilon, strings.ToLower(fmt.Sprint(w.Monotonic)), int64(w.Asked), int64(w.Above), int64(w.Left()), state, w.Created})
	}
	return res, nil
}
