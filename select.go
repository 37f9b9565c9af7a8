package dpsql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dpsql/dpsql/autobound"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/cache"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/dperr"
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

// intervalOutputs are the outputs of p that get a 95% interval: plain
// aggregates other than APPROX_QUANTILES and JSON reports (which carry
// theirs), and monotone functions of one such aggregate.
func intervalOutputs(p *planner.PrivateQuery) []bool {
	out := make([]bool, len(p.Outputs))
	for j, o := range p.Outputs {
		_, out[j] = exec.OutputAggregate(p, o.Expr)
	}
	return out
}

// FewRowsColumn is the column SET interval_columns = on adds at the end
// of a private query's answer that has intervals: the names of the row's
// columns whose value has too few rows to mean anything (its interval is
// the whole range the bounds allow; the shell's "(few rows)"), NULL when
// none — the mark a client that reads only rows gets.
const FewRowsColumn = "few_rows"

// addIntervalColumns puts <col>_lo and <col>_hi after each output that
// has an interval (SET interval_columns = on), and FewRowsColumn at the
// end; a value without one gets NULLs.
func addIntervalColumns(res *Result, has []bool) {
	if !slices.Contains(has, true) {
		return
	}
	var cols []string
	res.intervalCols = nil
	for j, c := range res.Columns {
		cols = append(cols, c)
		res.intervalCols = append(res.intervalCols, false)
		if j < len(has) && has[j] {
			cols = append(cols, c+"_lo", c+"_hi")
			res.intervalCols = append(res.intervalCols, true, true)
		}
	}
	cols = append(cols, FewRowsColumn)
	res.intervalCols = append(res.intervalCols, true)
	for r, row := range res.Rows {
		var out []any
		var few []string
		for j, v := range row {
			out = append(out, v)
			if j < len(has) && has[j] {
				var lo, hi any
				if iv := res.IntervalAt(r, j); iv != nil {
					lo, hi = iv.Lo, iv.Hi
					if iv.Wide {
						few = append(few, res.Columns[j])
					}
				}
				out = append(out, lo, hi)
			}
		}
		var mark any
		if len(few) > 0 {
			mark = strings.Join(few, ", ")
		}
		res.Rows[r] = append(out, mark)
	}
	for r, ivs := range res.Intervals {
		var out []*Interval
		for j, iv := range ivs {
			out = append(out, iv)
			if j < len(has) && has[j] {
				out = append(out, nil, nil)
			}
		}
		res.Intervals[r] = append(out, nil)
	}
	res.Columns = cols
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
	r, chosen, err := prep.Run(ctx, opt.plan, e.noise)
	if err != nil {
		if err = cancelled(ctx, err, &cost); !errors.Is(err, ErrCancelled) {
			err = &chargedError{err: err, cost: cost} // failed after the charge: say so
		}
		// The ledger says that this charge went unanswered (its ε stays
		// spent); a fresh context: the query's may be why it failed.
		_ = budget.MarkUnanswered(context.Background(), e.ledger, id, "unanswered: "+unansweredWhy(ctx))
		return nil, err
	}
	res := &Result{Columns: r.Columns, Rows: r.Rows, Intervals: interval.Copy(r.Intervals), Cost: cost, Mechanism: opt.charge.Mechanism, Rho: opt.charge.Rho, ErrorBounds: errorBounds(opt.plan), charges: []int64{id}}
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
	if opt.plan.Unit.BoundsWarnings == catalog.BoundsWarningsError {
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
	if why := prep.FellBack(); why != nil {
		// Whether the engine ran out of resources can depend on the rows
		// the query selects: told to whoever holds the file (the shell,
		// the Go API, the server's operator through Notify), never in a
		// served analyst's answer.
		msg := fmt.Sprintf("the engine could not run the compiled measurement (%s); the reference evaluator measured the same rows instead (slower, the same answer)", firstLine(why.Error()))
		if s.analyst == "" {
			res.Notes = append(res.Notes, msg)
		} else if e.notify != nil {
			e.notify(msg)
		}
	}
	if u := opt.plan.Unit; u.Column != "" && res.Intervals != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("the intervals are about the rows contribution bounding kept (at most %d group(s) and %d row(s) per group for each %s): a unit's rows beyond those are not counted", u.MaxGroups, u.MaxRows, u.Column))
	}
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

// chosenBoundNotes are the notes of an answer about bounds it chose
// privately: a warning, with the private estimate of the share of values
// clipped, when that share is autobound.WarnShare or more, when the estimate
// cannot rule out half (too few rows for the ε), or when the bounds
// collapsed; else, with show_bounds, the bounds and the estimate.
// warns reports whether an answer with bounds c carries a warning: they
// collapsed, or the estimated share of values beyond them is WarnShare
// or more, or its 95% figure reaches a half.
func warns(c exec.ChosenBound) bool {
	return c.Collapsed || c.Clipped.Share() >= autobound.WarnShare || c.Clipped.MaxShare() >= 0.5
}

func chosenBoundNotes(c exec.ChosenBound, show bool) []string {
	est := fmt.Sprintf("an estimated %.3g%% of its values lie beyond them (95%%: up to %.3g%%; counted privately, from the query's ε)", 100*c.Clipped.Share(), 100*c.Clipped.MaxShare())
	fix := "declare bounds (ALTER PRIVACY POLICY ... SET BOUNDS, or contribution_bounds_per_row => (lo, hi)) or spend more ε"
	switch {
	case c.Collapsed:
		return []string{fmt.Sprintf("warning: the bounds of %s chosen privately collapsed to [%g, %g]: too few rows stood above the search's noise threshold (about %.3g rows), so the answer reflects the bounds, not the data; %s; %s", c.Label, c.Lo, c.Hi, c.Threshold, est, fix)}
	case warns(c):
		return []string{fmt.Sprintf("warning: the bounds of %s chosen privately, [%g, %g], clip: %s, so the answer may be well below (or above) the data's; %s", c.Label, c.Lo, c.Hi, est, fix)}
	case show:
		return []string{fmt.Sprintf("bounds of %s chosen privately: [%g, %g]; %s", c.Label, c.Lo, c.Hi, est)}
	}
	return nil
}

// prepare compiles p's scan for the backend, measured where the tables
// live when the backend can (exec.Measurer).
func (e *Engine) prepare(ctx context.Context, p *planner.PrivateQuery, rw *rewrite.Rewritten) (*exec.Prepared, error) {
	var measurer exec.Measurer
	if m, ok := e.be.(measuringBackend); ok {
		measurer = m.measurer(e.db)
	}
	return exec.Prepare(ctx, e.db, p, rw, measurer)
}

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

// fromCache is the answer an identical earlier query got, if the cache
// has it and the session uses it.
func (s *Session) fromCache(ctx context.Context, key string) (*Result, bool) {
	if s.cacheOff() {
		return nil, false
	}
	a, ok := s.eng.cachedAnswer(ctx, key)
	if !ok {
		return nil, false
	}
	var notes []string
	for _, n := range a.Notes {
		if !isChargeNote(n) { // what the first answer spent; this one spends nothing
			notes = append(notes, n)
		}
	}
	notes = append(notes, fmt.Sprintf("answered from the cache: the answer released on %s (ε=%g then), nothing charged", a.Created.Format("2006-01-02 15:04:05 UTC"), a.Epsilon))
	return &Result{Columns: a.Columns, Rows: a.Rows, ErrorBounds: a.ErrorBounds, Intervals: interval.Copy(a.Intervals), Notes: notes, Cached: true}, true
}

// toCache keeps a released answer for identical later queries, if the
// tables it read are unchanged since epochs were read.
func (s *Session) toCache(ctx context.Context, key, text string, tables []string, epochs cache.Epochs, res *Result) {
	if s.cacheOff() {
		return
	}
	s.eng.keep(ctx, key, &unstored{statement: text, tables: tables, epochs: epochs, answer: &cache.Answer{Columns: res.Columns, Rows: res.Rows,
		ErrorBounds: res.ErrorBounds, Intervals: interval.Copy(res.Intervals), Notes: res.Notes, Epsilon: res.Cost.Epsilon, Delta: res.Cost.Delta, Created: time.Now().UTC()}})
}

// readTables are the tables p reads, sorted.
func readTables(p *planner.PrivateQuery) []string {
	tables := make([]string, 0, len(p.Reads))
	for t := range p.Reads {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	return tables
}

// cached reports whether a DP query would be answered from the cache.
func (s *Session) cached(ctx context.Context, st *parser.SelectStmt, p *planner.PrivateQuery) bool {
	if s.cacheOff() {
		return false
	}
	_, ok := s.eng.cachedAnswer(ctx, s.cacheKey(parser.FormatStmt(st), p))
	return ok
}

// cacheKey is the answer cache's key of a private query (its canonical
// statement) in this session: built from values only (the statement,
// the version's semantics, the query's ε and δ, the settings, the
// analyst), the text earlier versions wrote.
// Each analyst has their own cache: an answer another analyst paid for is
// not given away free (their budgets would not say what each has seen).
//
// With the policies in PostgreSQL, which other processes change, the key
// also holds the policy the plan was made under, so that no answer is
// given again under a changed policy; in a file, the owner's policy
// statements drop the answers they change (cache.Invalidate), and keys
// stay what earlier versions wrote.
func (s *Session) cacheKey(statement string, p *planner.PrivateQuery) string {
	parts := []string{semantics, "epsilon=" + cache.Float(p.Epsilon), "delta=" + cache.Float(p.Delta)}
	parts = append(parts, s.settings.cacheText()...)
	parts = append(parts, "analyst="+s.analyst)
	if _, ok := s.eng.be.(policyKeepingBackend); ok {
		parts = append(parts, "policy="+p.Policy)
	}
	return cache.Key(statement, parts...)
}

// semantics names what accepted statements mean in this version of the
// engine, for the answer cache: an answer cached under another meaning
// (contribution_bounds_per_group clamped rows before version 2, and
// clamps each unit's sum since) is never served for the new one. Change
// it whenever an accepted statement's answer changes meaning.
const semantics = "dpsql-semantics-2"

// wideIntervals counts the intervals that are the whole range the bounds
// allow (Interval.Wide).
func wideIntervals(ivs [][]*Interval) int {
	n := 0
	for _, row := range ivs {
		for _, iv := range row {
			if iv != nil && iv.Wide {
				n++
			}
		}
	}
	return n
}

// textArgumentNotes say when a sum, average or variance reads a TEXT
// column: each value counts as CAST(value AS REAL) — text that is not a
// number counts as 0 — and is clipped to the bounds, which is rarely what
// was meant.
func textArgumentNotes(p *planner.PrivateQuery, cat *catalog.Catalog) []string {
	var notes []string
	seen := map[string]bool{}
	for _, a := range p.Aggregates {
		if a.Kind == planner.AggCount || len(a.Cells) == 0 {
			continue
		}
		ref, ok := p.Cells[a.Cells[0]].Arg.(*parser.ColumnRef)
		if !ok || seen[ref.Name] {
			continue
		}
		for table := range p.Reads {
			t, ok := cat.Table(table)
			if !ok {
				continue
			}
			if col, ok := t.Column(ref.Name); ok && castType(col.Type) == TypeText {
				seen[ref.Name] = true
				notes = append(notes, fmt.Sprintf("%s reads %s, a TEXT column: each value counts as CAST(value AS REAL) — text that is not a number counts as 0 — clipped to the bounds", a.Text, parser.QuoteIdent(col.Name)))
				break
			}
		}
	}
	return notes
}

// clippedNote names the values computed from clipped values and their
// bounds (the first row's: bounds are per aggregate, the same in every
// group), or "".
func clippedNote(res *Result, chosen []exec.ChosenBound) string {
	if len(res.Intervals) == 0 {
		return ""
	}
	var parts []string
	for j, iv := range res.Intervals[0] {
		if iv != nil && iv.Clipped && j < len(res.Columns) {
			part := fmt.Sprintf("%s [%g, %g]", res.Columns[j], iv.ClipLo, iv.ClipHi)
			for _, c := range chosen {
				if c.Lo == iv.ClipLo && c.Hi == iv.ClipHi {
					part += " (chosen privately)" // not declared: a release of the data, with its own note
					break
				}
			}
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "values clipped to bounds: " + strings.Join(parts, ", ") + " (the intervals are about the clipped values)"
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
