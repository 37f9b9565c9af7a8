// Package exec runs rewritten queries on the SQLite backend, adds noise to
// the exact cells and post-processes the noisy values.
//
// Where it sits: rewrite → exec → caller. exec is handed a plan whose cost
// has already been committed to the ledger; it never decides what is private.
// The only values it releases are: noisy cells combined into aggregates
// (COUNT rounded and kept ≥ 0, AVG clamped to its bounds), public domain
// values, and the post-processing statement's expressions over those.
package exec

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"slices"
	"strings"

	sqlite "modernc.org/sqlite"

	"github.com/dpsql/dpsql/autobound"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/exactsum"
	"github.com/dpsql/dpsql/internal/sqlrows"
	"github.com/dpsql/dpsql/measure"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/rewrite"
)

// Result is a released table.
type Result struct {
	Columns []string
	Rows    [][]any // values are int64, float64, string or nil
	// Intervals holds, for a private query, each released value's 95%
	// interval (row by row, column by column; nil where an output is not
	// a plain aggregate or the aggregate has none).
	Intervals [][]*Interval
	// Dropped, for a query whose rows are bounded per unit, is the
	// private estimate of what bounding dropped (nil otherwise).
	Dropped *Dropped
}

// ErrBackend reports that the scan of a private table failed. Its text
// carries no detail from the backend, because such details (an overflow in
// some row, say) could depend on private data.
var ErrBackend = errors.New("evaluating the query on the private table failed (details are withheld because they could depend on private data)")

// Public runs a query on public tables (or without a table). Its SQL is
// printed from the plan, and the authorizer lets it read only the tables
// the plan resolved.
func Public(ctx context.Context, db *sql.DB, q *planner.PublicQuery) (*Result, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := authorize(conn, q.Reads); err != nil {
		return nil, err
	}
	defer unauthorize(conn)
	stmt, err := conn.PrepareContext(ctx, q.SQL)
	if err != nil {
		return nil, prepareError(err)
	}
	defer stmt.Close()
	return collect(ctx, stmt)
}

// PublicValues runs a one-column query over public tables only (reads:
// what the authorizer lets it read) and returns its values.
func PublicValues(ctx context.Context, db *sql.DB, sqlText string, reads map[string]map[string]bool) ([]any, error) {
	public := map[string]map[string]bool{}
	for t, cols := range reads {
		if cols["*"] { // public tables are recorded with "*"
			public[t] = cols
		}
	}
	r, err := Public(ctx, db, &planner.PublicQuery{SQL: sqlText, Reads: public})
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(r.Rows))
	for _, row := range r.Rows {
		out = append(out, row[0])
	}
	return out, nil
}

// CheckPublic compiles a public query without running it: a composite
// query's outer statement is checked this way before its DP parts are
// charged, so that one the backend rejects costs nothing.
func CheckPublic(ctx context.Context, db *sql.DB, q *planner.PublicQuery) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := authorize(conn, q.Reads); err != nil {
		return err
	}
	defer unauthorize(conn)
	stmt, err := conn.PrepareContext(ctx, q.SQL)
	if err != nil {
		return prepareError(err)
	}
	return stmt.Close()
}

// ErrRejected reports a statement the backend refused to compile. It is
// returned before any budget is charged, and compiling reads no data, so
// its detail depends only on the schema and the statement.
var ErrRejected = errors.New("the backend rejected the statement")

func prepareError(err error) error {
	return fmt.Errorf("%w: %v", ErrRejected, err)
}

type queryer interface {
	QueryContext(ctx context.Context, args ...any) (*sql.Rows, error)
}

func collect(ctx context.Context, stmt queryer, args ...any) (*Result, error) {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: cols}
	for rows.Next() {
		vals, err := sqlrows.Values(rows, len(cols))
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, vals)
	}
	return res, rows.Err()
}

// authorize installs, on one connection, SQLite's authorizer for an
// analyst's statement: it may select, call functions, read the columns
// the plan resolved (every column of a public table) and the temporary
// result table, and insert into that table; nothing else — in particular
// never sqlite_* or _dpsql_* tables. It is the second line of defence
// behind printing every statement from the resolved plan.
//
// shadows are the tables read through their temporary copies (shadow.go).
func authorize(conn *sql.Conn, reads map[string]map[string]bool, shadows ...string) error {
	allowed := func(table, column, database string) bool {
		if table == rewrite.ResultTable {
			return database == "temp"
		}
		if database == "temp" && slices.ContainsFunc(shadows, func(s string) bool { return catalog.SameName(s, table) }) {
			database = "main" // the copy: the same columns are allowed
		}
		// SQLite names no database when COUNT(*) reads a table's size.
		if catalog.IsInternalName(table) || (database != "main" && !(database == "" && column == "")) {
			return false
		}
		for t, cols := range reads {
			if !catalog.SameName(t, table) {
				continue
			}
			if cols["*"] || column == "" {
				return true
			}
			for c := range cols {
				if catalog.SameName(c, column) {
					return true
				}
			}
		}
		return false
	}
	return conn.Raw(func(dc any) error {
		r, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("exec: the SQLite driver has no authorizer")
		}
		return r.RegisterAuthorizer(func(action sqlite.AuthorizerActionCode, a1, a2, database, _ string) sqlite.AuthorizerReturnCode {
			switch action {
			case sqlite.AuthSelect, sqlite.AuthFunction:
				return sqlite.AuthorizerOK
			case sqlite.AuthRead:
				if allowed(a1, a2, database) {
					return sqlite.AuthorizerOK
				}
			case sqlite.AuthInsert:
				if a1 == rewrite.ResultTable && database == "temp" {
					return sqlite.AuthorizerOK
				}
			}
			if os.Getenv("DPSQL_DEBUG_AUTH") != "" {
				fmt.Fprintln(os.Stderr, "deny", action, a1, a2, database)
			}
			return sqlite.AuthorizerDeny
		})
	})
}

// unauthorize removes the authorizer before the connection goes back to
// the pool.
func unauthorize(conn *sql.Conn) {
	_ = conn.Raw(func(dc any) error {
		if r, ok := dc.(sqlite.AuthorizerRegisterer); ok {
			return r.RegisterAuthorizer(nil)
		}
		return nil
	})
}

// ChosenBound reports the bounds a private search chose for an argument.
type ChosenBound struct {
	Label  string
	Lo, Hi float64
	// Collapsed marks bounds the search closed on both sides at once (at
	// most the first candidate from 0): too few rows stood above its noise
	// threshold, so the answer reflects the bounds more than the data.
	Collapsed bool
	// Threshold is the search's threshold in rows (about: its noise).
	Threshold float64
	// Clipped is the private estimate of how many values the bounds
	// clipped (paid from the search's ε).
	Clipped autobound.Clipped
	// TailExcess is the allowance the intervals of SUM and AVG make for
	// the values beyond Hi (autobound.Result.TailExcess); TailHeavy marks
	// a tail too heavy to extrapolate, which the intervals do not allow
	// for.
	TailExcess float64
	TailHeavy  bool
}

// announced tells a noise observer (the auditor) about the two counts of
// bound search i's clipped values before they are drawn.
// (halved re-introduces a bug for the auditor's tests: the counts noised
// at half their sensitivity.)
func announced(noise mechanism.Noiser, search int, halved bool) mechanism.Noiser {
	o, ok := noise.(CallObserver)
	if !ok {
		return noise
	}
	return &announcing{Noiser: noise, observer: o, search: search, halved: halved}
}

type announcing struct {
	mechanism.Noiser
	observer CallObserver
	search   int
	calls    int
	halved   bool
}

func (a *announcing) AddLaplace(v, sens, eps float64) (float64, error) {
	a.observer.ObserveNoiseCall(NoiseCall{Clip: true, Cell: a.search, Round: a.calls})
	a.calls++
	if a.halved {
		sens /= 2
	}
	return a.Noiser.AddLaplace(v, sens, eps)
}

// Prepared is a private query whose statements the backend has compiled,
// under the authorizer, on a connection of its own. Preparing reads no
// data; a statement the backend rejects is rejected here, before any
// budget is charged.
type Prepared struct {
	conn       *sql.Conn
	scan, post *sql.Stmt
	fallback   *sql.Stmt // nil unless the scan has native sums
	slot       int64     // > 0: the statements call slotFunction(slot)
	q          *planner.PrivateQuery
	rw         *rewrite.Rewritten
	measurer   Measurer      // nil: no compiled measurement
	shadows    []shadowTable // copies of virtual tables the scan reads (shadow.go)
	fellBack   error         // the engine's failure, when the reference measured a compiled scan instead
	unfilled   bool          // the shadows are empty: the measurer was to measure
}

// FellBack says why the reference evaluator measured a scan that was
// compiled for the engine holding the table (the engine could not run
// the statement: out of memory under its cap, a full temporary disk);
// nil when it did not. Whether it happens can depend on how many rows
// the query selects, so it is for the operator, not an analyst's answer.
func (p *Prepared) FellBack() error { return p.fellBack }

// A Measurer runs a scan's whole measurement (measure.Plan) in the
// engine that holds its table, as one statement compiled for that engine
// (package measuresql), with key as the query's fresh random key for
// contribution bounding. ok is false when it declines (the plan has a
// form its dialect does not compile: the scan then runs through the
// reference evaluator); the decision depends only on the plan and the
// schema. It runs after the charge, like the scan.
type Measurer interface {
	Measure(ctx context.Context, m *measure.Plan, key uint64) (measured *measure.Measured, ok bool, err error)
	// WhyNot says why Measure would decline m ("": it runs it), from
	// the plan and the schema, before anything is read.
	WhyNot(ctx context.Context, m *measure.Plan) (string, error)
}

// Prepare compiles a private query's scan and post-processing statements.
// The caller must Close the result.
//
// With a Measurer (nil: none), the query's whole measurement runs where
// its tables live when the measurer compiles its plan; the copies of
// the mirrored tables a join reads (shadow) are then filled only if the
// reference evaluator has to measure after all (the engine failed).
func Prepare(ctx context.Context, db *sql.DB, q *planner.PrivateQuery, rw *rewrite.Rewritten, m Measurer) (_ *Prepared, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	p := &Prepared{conn: conn, q: q, rw: rw, measurer: m}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS temp."+rewrite.ResultTable); err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "CREATE TEMP TABLE "+rewrite.ResultTable+" ("+strings.Join(rw.ResultColumns, ", ")+")"); err != nil {
		return nil, err
	}
	if q.TableRefs > 1 {
		if p.shadows, err = shadow(ctx, conn, q.Reads); err != nil {
			return nil, err
		}
	}
	if err := authorize(conn, q.Reads, p.shadowNames()...); err != nil {
		return nil, err
	}
	// A slot function of its own spares passing the handle on every row.
	fn, withHandle := rewrite.MeasureFunction, true
	if p.slot = acquireSlot(); p.slot > 0 {
		fn, withHandle = slotFunction(p.slot), false
	}
	if p.scan, err = conn.PrepareContext(ctx, rw.ScanWith(fn, withHandle)); err != nil {
		return nil, prepareError(err)
	}
	if p.post, err = conn.PrepareContext(ctx, rw.Post); err != nil {
		return nil, prepareError(err)
	}
	if rw.HasFallback {
		if p.fallback, err = conn.PrepareContext(ctx, rw.FallbackWith(fn, withHandle)); err != nil {
			return nil, prepareError(err)
		}
	}
	// Compiled: the engine that holds the tables checks, before the
	// charge, that it can read them (a table it may not read rejects the
	// query, whatever its rows); the copies are filled now unless it
	// measures them itself.
	if p.measurer != nil && rw.Measurement != nil && !q.Knobs.Reference() {
		why, err := p.measurer.WhyNot(ctx, rw.Measurement)
		if err != nil {
			if ctx.Err() != nil {
				return nil, backendError(ctx, err)
			}
			return nil, fmt.Errorf("%w: %v", ErrRejected, err)
		}
		p.unfilled = why == "" && len(p.shadows) > 0
	}
	if !p.unfilled {
		if err := p.fill(ctx); err != nil {
			return nil, fmt.Errorf("%w: reading the tables before the scan: %v", ErrRejected, err)
		}
	}
	return p, nil
}

// fill copies the mirrored tables the scan reads into their shadows
// (without the authorizer, which allows the scan's reads only).
func (p *Prepared) fill(ctx context.Context) error {
	unauthorize(p.conn)
	if err := fillShadows(ctx, p.conn, p.shadows); err != nil {
		return err
	}
	p.unfilled = false
	return authorize(p.conn, p.q.Reads, p.shadowNames()...)
}

func (p *Prepared) shadowNames() []string {
	names := make([]string, len(p.shadows))
	for i, st := range p.shadows {
		names[i] = st.name
	}
	return names
}

// Close releases the connection (removing the authorizer and the result
// table first).
func (p *Prepared) Close() {
	if p.scan != nil {
		p.scan.Close()
	}
	if p.post != nil {
		p.post.Close()
	}
	if p.fallback != nil {
		p.fallback.Close()
	}
	unauthorize(p.conn)
	_, _ = p.conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS temp."+rewrite.ResultTable)
	dropShadows(p.conn, p.shadows)
	p.conn.Close()
	if p.slot > 0 {
		releaseHandle(p.slot)
	}
}

// Run runs the scan, chooses any bounds that were not declared, adds
// noise to every cell of every group (empty groups included), and
// post-processes. The caller must have charged the plan's cost before
// calling. The chosen bounds are DP releases too and are returned.
//
// plan, when not nil, is the plan to take the noise parameters from: the
// prepared plan, or a variant of it with other noise (PrivateQuery.Gaussian),
// which runs the same statements.
func (p *Prepared) Run(ctx context.Context, plan *planner.PrivateQuery, noise mechanism.Noiser) (*Result, []ChosenBound, error) {
	q, rw := p.q, p.rw
	if plan != nil {
		q = plan
	}
	sc, err := p.runScan(ctx)
	if err != nil {
		return nil, nil, err
	}
	chosen, notes, err := chooseBounds(q, sc, noise)
	if err != nil {
		return nil, nil, err
	}
	dropped, err := noiseDropped(q, sc.dropped, noise)
	if err != nil {
		return nil, nil, err
	}
	if err := selectGroups(sc, q, rw, noise); err != nil {
		return nil, nil, err
	}
	nc := len(q.Cells)
	cells := make([]cellBounds, nc)
	for i, c := range q.Cells {
		cells[i] = cellBounds{lo: c.Lo, hi: c.Hi, sens: c.L1Sensitivity}
		if c.Search >= 0 {
			r := chosen[c.Search]
			cells[i] = cellBounds{lo: r.Lo, hi: r.Hi, sens: planner.SensitivityFor(c.Kind, r.Lo, r.Hi, c.Scale)}
		}
	}
	if err := chooseGroups(sc, q, rw, cells, noise); err != nil {
		return nil, nil, err
	}
	groups := len(sc.values)
	noisy := make([]float64, groups*nc)
	multi := map[int][]float64{}       // APPROX_QUANTILES' values, by noisy index
	quantileIvs := map[int]*Interval{} // percentiles' intervals, by noisy index
	observer, _ := noise.(CallObserver)
	for g := 0; g < groups; g++ {
		exact := sc.exactCells(q, rw, g, cells, chosen)
		for i, c := range q.Cells {
			if observer != nil {
				observer.ObserveNoiseCall(NoiseCall{Key: sc.keys[g], Cell: i, Composed: composed(q)})
			}
			var v float64
			var err error
			if !q.ValuesMeasured() {
				// Only the chosen groups' keys are released: nothing
				// is measured (and nothing reads these cells).
			} else if c.Kind == planner.QuantileTree {
				// Many noisy node counts, one released quantile, or
				// several from the same counts (quantile.go).
				ps := c.Ps
				if len(ps) == 0 {
					ps = []float64{c.P}
				}
				var vs []float64
				leafCounts := sc.trees[g][rw.CellSource[i].Column]
				if c.Search >= 0 { // bounds chosen now: fine buckets to leaves
					leafCounts = leavesFromBuckets(leafCounts, cells[i].lo, cells[i].hi)
				}
				tr := newNoisyTree(leafCounts, cells[i].sens, c.Epsilon, noise)
				for _, p := range ps {
					var q float64
					if q, err = tr.quantile(p, cells[i].lo, cells[i].hi); err != nil {
						break
					}
					vs = append(vs, q)
				}
				if err == nil {
					v = vs[0]
					if len(c.Ps) > 0 {
						multi[g*nc+i] = vs
					}
					// The intervals read more nodes of the same noisy
					// tree: post-processing.
					var iv *Interval
					if iv, err = tr.intervals(ps, cells[i].lo, cells[i].hi, len(c.Ps) > 0); err == nil {
						if c.Search >= 0 {
							widenForBuckets(iv, cells[i].lo, cells[i].hi)
						}
						quantileIvs[g*nc+i] = iv
					}
				}
			} else if c.Gaussian {
				v, err = noise.AddGaussianExact(exact[i], c.L2Sensitivity(cells[i].sens), c.Rho)
			} else {
				v, err = noise.AddLaplaceExact(exact[i], cells[i].sens, c.Epsilon)
			}
			if err != nil {
				return nil, nil, err
			}
			noisy[g*nc+i] = v
		}
	}
	keys := sc.keys
	sc = nil // nothing exact survives past this point
	aggBounds := make([][2]float64, len(q.Aggregates))
	tails := make([]float64, len(q.Aggregates)) // each aggregate's allowance for values beyond a chosen upper bound
	for i, a := range q.Aggregates {
		aggBounds[i] = [2]float64{a.Lo, a.Hi}
		if a.Search >= 0 {
			aggBounds[i] = [2]float64{chosen[a.Search].Lo, chosen[a.Search].Hi}
			tails[i] = notes[a.Search].TailExcess
		}
	}
	ivs := groupIntervals(q, noisy, cellNoise(q, cells), aggBounds, tails, groups, quantileIvs)
	if err := fill(ctx, p.conn, q, rw, noisy, multi, keys, aggBounds, ivs); err != nil {
		return nil, nil, err
	}
	res, err := collect(ctx, p.post)
	if err != nil {
		return nil, nil, err
	}
	res = withIntervals(q, res, ivs)
	res.Dropped = dropped
	return res, notes, nil
}

// chooseBounds runs each bound search of q over the scan's histograms
// (all groups merged): the bounds chosen, and the answer's notes on them.
func chooseBounds(q *planner.PrivateQuery, sc *scanned, noise mechanism.Noiser) ([]autobound.Result, []ChosenBound, error) {
	chosen := make([]autobound.Result, len(q.Searches))
	var notes []ChosenBound
	for i, sr := range q.Searches {
		var all autobound.Histogram
		for g := range sc.hists {
			all.Merge(sc.hists[g][i])
		}
		r, clipped, err := autobound.Choose(&all, sr.Epsilon, sr.Sensitivity, announced(noise, i, q.Knobs != nil && q.Knobs.ClipCountHalfSensitivity))
		if err != nil {
			return nil, nil, err
		}
		chosen[i] = r
		excess, finite := r.TailExcess()
		notes = append(notes, ChosenBound{Label: sr.Label, Lo: r.Lo, Hi: r.Hi, Collapsed: r.Collapsed(),
			Threshold: r.Threshold, Clipped: clipped, TailExcess: excess, TailHeavy: !finite})
	}
	return chosen, notes, nil
}

// groupIntervals computes every group's aggregates' intervals, indexed
// g·len(q.Aggregates) + aggregate (nil: none).
func groupIntervals(q *planner.PrivateQuery, noisy []float64, ns []noiseOf, aggBounds [][2]float64, tails []float64, groups int, quantileIvs map[int]*Interval) []*Interval {
	nc, na := len(q.Cells), len(q.Aggregates)
	out := make([]*Interval, groups*na)
	for g := 0; g < groups; g++ {
		for i, a := range q.Aggregates {
			var iv *Interval
			if a.Kind == planner.AggQuantile {
				iv = quantileIvs[g*nc+a.Cells[0]] // APPROX_QUANTILES: one per value, in Each
			} else if v, ok := aggregateInterval(a, noisy[g*nc:(g+1)*nc], ns, aggBounds[i][0], aggBounds[i][1]); ok {
				withTail(&v, a, tails[i], noisy[g*nc:(g+1)*nc], ns)
				iv = &v
			}
			if iv != nil {
				iv.SetBias(aggregateBias(q, a, aggBounds[i]))
			}
			out[g*na+i] = iv
		}
	}
	return out
}

// aggregateBias is what may make aggregate a's measured data differ from
// the table's: clipping (every aggregate but COUNT) and contribution
// bounding (a privacy unit column, whose rows beyond l0 and l∞ are
// dropped; without one each row is its own unit and none is).
func aggregateBias(q *planner.PrivateQuery, a *planner.Aggregate, bounds [2]float64) Bias {
	b := Bias{Bounded: q.Unit.Column != ""}
	if a.Kind != planner.AggCount {
		b.Clipped, b.ClipLo, b.ClipHi = true, bounds[0], bounds[1]
	}
	return b
}

// withIntervals strips the post-processing's last column (the group's
// rowid in the result table, rewrite.GroupColumn) and gives each output
// that is a plain aggregate its group's interval.
func withIntervals(q *planner.PrivateQuery, res *Result, ivs []*Interval) *Result {
	n := len(res.Columns) - 1
	if n < 0 || res.Columns[n] != rewrite.GroupColumn {
		return res
	}
	na := len(q.Aggregates)
	res.Columns = res.Columns[:n]
	res.Intervals = make([][]*Interval, len(res.Rows))
	for r, row := range res.Rows {
		g, _ := row[n].(int64)
		res.Rows[r] = row[:n]
		res.Intervals[r] = make([]*Interval, n)
		if g < 1 || int(g)*na > len(ivs) {
			continue
		}
		group := ivs[int(g-1)*na : int(g)*na]
		for j := 0; j < n && j < len(q.Outputs); j++ {
			if call, ok := q.Outputs[j].Expr.(*parser.CallExpr); ok {
				if i, ok := q.AggOf[call]; ok {
					res.Intervals[r][j] = group[i]
					continue
				}
			}
			res.Intervals[r][j] = derivedInterval(q, q.Outputs[j].Expr, func(i int) *Interval { return group[i] })
		}
	}
	return res
}

// NoiseCall says what a noise call of Run is for.
type NoiseCall struct {
	// Selection marks partition selection's noisy count of a group's
	// units, which the group must pass (> Threshold) to be released;
	// otherwise the call noises cell Cell (an index in PrivateQuery.Cells).
	Selection bool
	Threshold float64
	Cell      int
	Key       []any // the group's key values
	// Composed, for a cell of a query whose groups were chosen by
	// comparison (a threshold or top-k query), is how many chosen groups
	// the cell's ε is spent on in sequence: they overlap, so their
	// shares add up (0: the groups are disjoint and one ε covers all).
	Composed int
	// Choice marks report noisy max's draw for candidate group Key in
	// round Round: its score's sensitivity is Sensitivity in every
	// group at once (an l∞ bound), in one direction if Monotonic.
	Choice      bool
	Round       int
	Sensitivity float64
	Monotonic   bool
	// Clip marks a count of bound search Cell's values: of all (Round 0,
	// made before the search) or of those beyond its chosen bounds (Round
	// 1); the share clipped the answer reports (autobound.Choose).
	Clip bool
	// Dropped marks count Round of what bounding dropped (Dropped: the
	// units, those that lost a row, their dropped shares), each of
	// sensitivity 1.
	Dropped bool
	// Profile marks bin Cell of histogram Round (0: units by their
	// number of groups, 1: their groups by rows) of the profile that
	// chooses AUTO contribution bounds: each histogram has L1
	// sensitivity 1 (ChooseContribution).
	Profile bool
}

// CallObserver is implemented by test noisers that need to know which
// group and cell each Laplace call is for: the sensitivity auditor
// (internal/testing/audit) aligns the calls made on neighbouring databases by it.
// Run tells an observer before each call. Production noisers do not
// implement it.
type CallObserver interface{ ObserveNoiseCall(NoiseCall) }

type cellBounds struct{ lo, hi, sens float64 }

// scanned holds the exact per-group measurements: measured columns, and
// the histograms of the bound searches.
type scanned struct {
	keys   [][]any                  // [group][key]: released key values
	values [][]*big.Float           // [group][measured column], exact
	hists  [][]*autobound.Histogram // [group][search]
	trees  [][]map[int32]int64      // [group][measured column]: quantile tree leaf counts
	// dropped is what bounding dropped over the scan (exact), when the
	// query estimates it; zero when no row matched.
	dropped measure.Dropped
}

var bigZero = new(big.Float)

// exactCells computes the exact value of every cell of group g.
func (sc *scanned) exactCells(q *planner.PrivateQuery, rw *rewrite.Rewritten, g int, cells []cellBounds, chosen []autobound.Result) []*big.Float {
	out := make([]*big.Float, len(q.Cells))
	counts := make([]int64, len(q.Cells)) // values summed by each sum cell
	for i, c := range q.Cells {
		src := rw.CellSource[i]
		if src.Column >= 0 {
			out[i] = sc.values[g][src.Column]
			if out[i] == nil {
				out[i] = bigZero
			}
			continue
		}
		r := chosen[src.Search]
		m := sc.hists[g][src.Search].MomentsOf(r)
		mid := planner.Midpoint(cells[i].lo, cells[i].hi)
		counts[i] = m.N
		switch c.Kind {
		case planner.CountValues:
			out[i] = new(big.Float).SetInt64(m.N)
		case planner.ClippedSum, planner.CenteredSum:
			out[i] = m.Sum.Big()
		case planner.CenteredSumSq:
			out[i] = exactsum.CentredSquares(m.Sum.Big(), m.SumSq.Big(), m.N, mid)
		}
	}
	// Centre the sums exactly: Σ (clip(x) − m) = Σ clip(x) − m·n, where n is
	// the count of the values summed (the cell CountCell measures exactly
	// those: every non-NULL value is numeric).
	for i, c := range q.Cells {
		if c.Kind == planner.CenteredSum {
			mid := new(big.Float).SetPrec(4096).SetFloat64(planner.Midpoint(cells[i].lo, cells[i].hi))
			n := new(big.Float).SetPrec(4096).Set(out[c.CountCell])
			v := new(big.Float).SetPrec(4096).Set(out[i])
			if q.Knobs != nil && q.Knobs.FloatCentring { // a re-introduced bug, for the auditor's tests
				fv, _ := v.Float64()
				fn, _ := n.Float64()
				fm, _ := mid.Float64()
				out[i] = big.NewFloat(fv - fm*fn)
				continue
			}
			out[i] = v.Sub(v, mid.Mul(mid, n))
		}
	}
	return out
}

// runScan runs the backend statement and returns the exact measurements
// per group. With public domains only, the groups are every combination
// of domain values, in domain order, with zeros for groups without rows;
// with partition selection they are the groups the scan met.
func (p *Prepared) runScan(ctx context.Context) (*scanned, error) {
	q, rw := p.q, p.rw
	nm := len(rw.Measured)
	sc := &scanned{}
	addGroup := func(keys []any) int {
		sc.keys = append(sc.keys, keys)
		sc.values = append(sc.values, make([]*big.Float, nm))
		h := make([]*autobound.Histogram, len(q.Searches))
		for i := range h {
			h[i] = &autobound.Histogram{}
		}
		sc.hists = append(sc.hists, h)
		sc.trees = append(sc.trees, make([]map[int32]int64, nm))
		return len(sc.keys) - 1
	}
	nk := len(q.Keys)
	if q.Selection == nil {
		for g := 0; g < q.Groups(); g++ {
			keys := make([]any, nk)
			rest := g
			for i := nk - 1; i >= 0; i-- {
				size := len(q.Keys[i].Domain)
				keys[i] = q.Keys[i].Domain[rest%size]
				rest /= size
			}
			addGroup(keys)
		}
	}
	// place returns the group of a scanned key tuple: its position among
	// the domain combinations, or a new group under partition selection.
	place := func(keys []any) (int, error) {
		g := 0
		kv := make([]any, nk)
		for i, k := range keys {
			if d := q.Keys[i].Domain; d != nil {
				idx, ok := k.(int64)
				if !ok || idx < 0 || int(idx) >= len(d) {
					return 0, fmt.Errorf("exec: key index out of the domain") // an internal invariant, not data-dependent
				}
				g = g*len(d) + int(idx)
				k = d[idx]
			}
			kv[i] = k
		}
		if q.Selection == nil {
			return g, nil
		}
		return addGroup(kv), nil
	}
	specs := specsOf(rw.Measured)
	res, err := p.compiled(ctx, specs)
	if err != nil {
		return nil, err
	}
	if res == nil && p.unfilled {
		// The engine failed after all: the reference reads the copies.
		if err := p.fill(ctx); err != nil {
			return nil, fmt.Errorf("reading the tables for the reference evaluator: %w", err)
		}
	}
	if res == nil {
		var native []any
		if res, native, err = p.measure(ctx, p.scan, specs, len(rw.Native)); err != nil {
			return nil, err
		}
		if p.fallback != nil && !nativeExact(native) {
			// A native sum met a value that SQL does not clip exactly as the
			// aggregate does: measure through the aggregate alone
			// (rewrite.nativeScan).
			if res, native, err = p.measure(ctx, p.fallback, specs, 0); err != nil {
				return nil, err
			}
		}
		if len(native) > 0 {
			// Native measurements: SQLite's exact values; the aggregate saw no
			// row, and the scan has no keys (one group).
			res = &measured{groups: []*measuredGroup{{values: make([]*big.Float, nm)}}}
			for i, v := range native {
				n, _ := v.(int64) // NULL: no rows
				res.groups[0].values[i] = new(big.Float).SetInt64(n)
			}
		}
	}
	sc.dropped.Share = new(big.Int)
	if res == nil {
		return sc, nil // no row matched
	}
	if q.Dropped != nil && res.dropped == nil && len(res.groups) > 0 {
		return nil, errors.New("exec: the scan did not measure what bounding dropped") // the plan's form, not the rows
	}
	if d := res.dropped; d != nil && q.Dropped != nil {
		sc.dropped = *d
	}
	for _, bg := range res.groups {
		g, err := place(bg.keys)
		if err != nil {
			return nil, err
		}
		copy(sc.values[g], bg.values)
		if bg.trees != nil {
			copy(sc.trees[g], bg.trees)
		}
		for s, col := range rw.SearchColumn {
			sc.hists[g][s] = bg.hists[col]
		}
	}
	return sc, nil
}

// compiled has the scan's whole measurement run where its table lives
// (Measurer), if the query has a Measurement and the measurer does not
// decline; nil otherwise. The measurements that need per-group values
// (histograms, quantile trees, distinct counts) are computed here from
// the values and row counts the engine sent, exactly as the reference
// evaluator measures weighted rows.
func (p *Prepared) compiled(ctx context.Context, specs []spec) (*measured, error) {
	if p.measurer == nil || p.q.Knobs.Reference() {
		return nil, nil
	}
	if p.rw.Measurement == nil {
		p.q.Knobs.NoteNotCompiled(p.rw.NoPlan)
		return nil, nil
	}
	got, ok, err := p.measureCompiled(ctx, p.rw.Measurement)
	if err != nil || got == nil && ok {
		return nil, err // failed, or fell back to the reference
	}
	if !ok {
		if p.q.Knobs != nil {
			why, _ := p.measurer.WhyNot(ctx, p.rw.Measurement)
			p.q.Knobs.NoteNotCompiled("the printer does not compile " + why)
		}
		return nil, nil
	}
	p.q.Knobs.NoteCompiled()
	return fromCompiled(got, specs), nil
}

// measureCompiled has the backend's Measurer run plan m. A failure for
// want of resources (out of memory under the engine's cap, a full
// temporary disk) is recorded as a fall back (FellBack) and returns
// (nil, true, nil): the reference evaluator then measures the same rows,
// so that whether the query succeeds does not hang on the engine's
// resources (tests count these: none may happen in the totality and
// differential tests). Any other failure is the query's, never retried on
// another path (whether, and how, a retry ran could tell of a row).
func (p *Prepared) measureCompiled(ctx context.Context, m *measure.Plan) (*measure.Measured, bool, error) {
	got, ok, err := p.measurer.Measure(ctx, m, randomKey(p.q.Knobs.Fixed()))
	if err == nil {
		return got, ok, nil
	}
	p.q.Knobs.NoteCompiledFailed()
	if ctx.Err() != nil || !errors.Is(err, measure.ErrEngineResources) {
		return nil, false, backendError(ctx, err)
	}
	p.fellBack = err
	return nil, true, nil
}

// nativeExact reports whether native measurements are exact: no sum came
// back as a REAL (rewrite.nativeScan).
func nativeExact(values []any) bool {
	for _, v := range values {
		if _, isReal := v.(float64); isReal {
			return false
		}
	}
	return true
}

// measure runs one scan statement through the measurement aggregate and
// returns its measurements and the scan's first natives columns.
func (p *Prepared) measure(ctx context.Context, stmt *sql.Stmt, specs []spec, natives int) (*measured, []any, error) {
	return p.measureAs(ctx, stmt, specs, natives, false)
}

// measureAs is measure, or with profile the units' profile instead
// (measure.Plan.Profile).
func (p *Prepared) measureAs(ctx context.Context, stmt *sql.Stmt, specs []spec, natives int, profile bool) (*measured, []any, error) {
	rw := p.rw
	h := p.slot
	var args []any
	if h == 0 {
		h = acquireHandle()
		defer releaseHandle(h)
		args = []any{h}
	}
	fixed := p.q.Knobs.Fixed()
	measureConfigs.Store(h, &measureConfig{key: int64(randomKey(fixed)), fixed: fixed, specs: specs,
		l0: int(rw.MaxGroups), lInf: int(rw.MaxRows), nk: rw.Keys, weighted: rw.Weighted, dropped: rw.Dropped && !profile, profile: profile})
	defer func() {
		measureConfigs.Delete(h)
		measuredResults.Delete(h)
	}()
	native := make([]any, natives)
	dest := make([]any, natives, natives+1)
	for i := range native {
		dest[i] = &native[i]
	}
	var handle any
	if natives == 0 {
		dest = append(dest, &handle)
	} else {
		args = nil // a native scan is SQLite's aggregates alone: no call, no handle
	}
	if err := stmt.QueryRowContext(ctx, args...).Scan(dest...); err != nil {
		return nil, nil, backendError(ctx, err)
	}
	res, _ := takeMeasured(h)
	return res, native, nil
}

// randomKey draws the per-query key of the contribution-bounding order
// (a constant when the test knob fixed asks for it).
func randomKey(fixed bool) uint64 {
	if fixed {
		return 0x5eed
	}
	return mechanism.CryptoSource().Uint64()
}

// selectGroups keeps, under partition selection, only the groups whose
// noisy count of distinct units passes the threshold; the others are
// dropped before anything about them is computed or released.
func selectGroups(sc *scanned, q *planner.PrivateQuery, rw *rewrite.Rewritten, noise mechanism.Noiser) error {
	sel := q.Selection
	if sel == nil {
		return nil
	}
	// The groups the scan met, in the order of their keys: the order in
	// which the engine met them follows the stored rows (which group's
	// first row comes first), so neither the noise's order nor the
	// released order may follow it.
	order := make([]int, len(sc.keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return compareKeys(sc.keys[i], sc.keys[j]) })
	keys, values, hists, trees := sc.keys, sc.values, sc.hists, sc.trees
	sc.keys, sc.values, sc.hists, sc.trees = make([][]any, len(order)), make([][]*big.Float, len(order)), make([][]*autobound.Histogram, len(order)), make([][]map[int32]int64, len(order))
	for i, g := range order {
		sc.keys[i], sc.values[i], sc.hists[i], sc.trees[i] = keys[g], values[g], hists[g], trees[g]
	}
	kept := 0
	observer, _ := noise.(CallObserver)
	for g := range sc.keys {
		units := sc.values[g][rw.UnitsColumn]
		if units == nil {
			units = bigZero
		}
		if observer != nil {
			observer.ObserveNoiseCall(NoiseCall{Selection: true, Threshold: sel.Threshold, Key: sc.keys[g]})
		}
		n, err := noise.AddLaplaceExact(units, sel.Sensitivity, sel.Epsilon)
		if err != nil {
			return err
		}
		if n > sel.Threshold {
			sc.keys[kept], sc.values[kept], sc.hists[kept], sc.trees[kept] = sc.keys[g], sc.values[g], sc.hists[g], sc.trees[g]
			kept++
		}
	}
	sc.keys, sc.values, sc.hists, sc.trees = sc.keys[:kept], sc.values[:kept], sc.hists[:kept], sc.trees[:kept]
	return nil
}

// compareKeys orders group keys as SQLite orders values: NULL, then
// numbers by value, then text, then blobs, byte by byte; column by column.
func compareKeys(a, b []any) int {
	for i := range min(len(a), len(b)) {
		if c := compareValue(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func compareValue(a, b any) int {
	rank := func(v any) int {
		switch v.(type) {
		case nil:
			return 0
		case int64, float64:
			return 1
		case string:
			return 2
		}
		return 3
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return cmp.Compare(x, y)
		case float64:
			return new(big.Float).SetInt64(x).Cmp(big.NewFloat(y))
		}
	case float64:
		switch y := b.(type) {
		case int64:
			return big.NewFloat(x).Cmp(new(big.Float).SetInt64(y))
		case float64:
			return cmp.Compare(x, y)
		}
	case string:
		return strings.Compare(x, b.(string))
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y)
		}
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func backendError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	_ = err // deliberately dropped: see ErrBackend
	return ErrBackend
}

// maxCount is the largest count released: a noisy count beyond int64 is
// clamped, never wrapped.
const maxCount = 1 << 62

// aggregateValue combines the noisy cells of one aggregate with bounds
// [lo, hi] (declared or chosen).
func aggregateValue(a *planner.Aggregate, cells []float64, lo, hi float64) any {
	switch a.Kind {
	case planner.AggCount:
		return int64(math.Min(maxCount, math.Max(0, math.Round(cells[a.Cells[0]]))))
	case planner.AggSum:
		// Post-processing: bounds of one sign bound the sum's sign.
		v := cells[a.Cells[0]]
		if lo >= 0 {
			v = math.Max(0, v)
		}
		if hi <= 0 {
			v = math.Min(0, v)
		}
		return v
	case planner.AggQuantile:
		return math.Min(hi, math.Max(lo, cells[a.Cells[0]]))
	}
	mid := planner.Midpoint(lo, hi)
	n := math.Max(1, cells[a.Cells[1]])
	meanC := cells[a.Cells[0]] / n // mean of the centred values
	if a.Kind == planner.AggAvg {
		return math.Min(hi, math.Max(lo, mid+meanC))
	}
	half := (hi - lo) / 2
	meanC = math.Min(half, math.Max(-half, meanC))
	v := math.Min(half*half, math.Max(0, cells[a.Cells[2]]/n-meanC*meanC))
	if a.Sample {
		// Bessel's correction with the noisy count (at least 2).
		m := math.Max(2, cells[a.Cells[1]])
		v *= m / (m - 1)
	}
	if a.Kind == planner.AggStddev {
		return math.Sqrt(v)
	}
	return v
}

// countStar is the index of the query's COUNT(*) among its aggregates, or
// −1.
func countStar(q *planner.PrivateQuery) int {
	for i, a := range q.Aggregates {
		if a.Kind == planner.AggCount && a.Text == "COUNT(*)" && !a.Report {
			return i
		}
	}
	return -1
}

// sumWithinCount keeps a noisy SUM inside what its bounds allow for the
// rows the same query's COUNT(*) says there may be: a group's values are
// at most as many as its rows, so its sum lies in [min(0, lo)·N, max(0,
// hi)·N] for N the upper end of COUNT(*)'s 95% interval (the true count is
// above it with probability 2.5%), then kept inside the SUM's own
// interval (where the two disagree, at its end nearest that range).
// Post-processing of released values: free. An empty or nearly empty
// group's SUM then stays near 0 instead of ranging over the noise.
func sumWithinCount(v float64, bounds [2]float64, count, own *Interval) float64 {
	if count == nil || math.IsInf(count.Hi, 0) || math.IsNaN(count.Hi) {
		return v
	}
	n := math.Max(0, count.Hi)
	v = math.Min(math.Max(0, bounds[1])*n, math.Max(math.Min(0, bounds[0])*n, v))
	if own != nil {
		v = math.Min(own.Hi, math.Max(own.Lo, v))
	}
	return v
}

// jsonReport is BigQuery's JSON report of a released value: the value and
// its 95% interval (nil: none), keys in BigQuery's order, which is
// alphabetical.
func jsonReport(v any, iv *Interval) string {
	type interval struct {
		Level float64 `json:"confidence_level"`
		Lower float64 `json:"lower_bound"`
		Upper float64 `json:"upper_bound"`
	}
	type result struct {
		Interval *interval `json:"noise_confidence_interval,omitempty"`
		Value    any       `json:"value"`
	}
	r := result{Value: v}
	if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
		r.Value = nil // JSON has no infinities
	}
	if iv != nil && !math.IsInf(iv.Lo, 0) && !math.IsInf(iv.Hi, 0) && !math.IsNaN(iv.Lo) && !math.IsNaN(iv.Hi) {
		r.Interval = &interval{Level: intervalLevel, Lower: iv.Lo, Upper: iv.Hi}
	}
	b, err := json.Marshal(struct {
		Result result `json:"result"`
	}{r})
	if err != nil {
		return "{}"
	}
	return string(b)
}

// jsonNumbers prints values as a JSON array (APPROX_QUANTILES' answer).
func jsonNumbers(vs []float64) string {
	b, err := json.Marshal(vs)
	if err != nil { // an infinity: quantiles are clamped to finite bounds
		return "[]"
	}
	return string(b)
}

// fill writes one row per group into the result table: the group's public
// key values, then its noisy aggregates.
func fill(ctx context.Context, conn *sql.Conn, q *planner.PrivateQuery, rw *rewrite.Rewritten, noisy []float64, multi map[int][]float64, keys [][]any, aggBounds [][2]float64, ivs []*Interval) error {
	groups := len(keys)
	width := len(rw.ResultColumns)
	const maxParams = 30000
	perStmt := max(1, maxParams/width)
	placeholder := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	nc := len(q.Cells)
	args := make([]any, 0, perStmt*width)
	flush := func(n int) error {
		if n == 0 {
			return nil
		}
		stmt := "INSERT INTO temp." + rewrite.ResultTable + " VALUES " + strings.TrimSuffix(strings.Repeat(placeholder+", ", n), ", ")
		_, err := conn.ExecContext(ctx, stmt, args...)
		args = args[:0]
		return err
	}
	pending := 0
	countRows := countStar(q)
	for g := 0; g < groups; g++ {
		args = append(args, keys[g]...)
		cells := noisy[g*nc : (g+1)*nc]
		for i, a := range q.Aggregates {
			v := aggregateValue(a, cells, aggBounds[i][0], aggBounds[i][1])
			if a.Kind == planner.AggSum && countRows >= 0 {
				v = sumWithinCount(v.(float64), aggBounds[i], ivs[g*len(q.Aggregates)+countRows], ivs[g*len(q.Aggregates)+i])
			}
			if a.Quantiles > 0 {
				v = jsonNumbers(multi[g*nc+a.Cells[0]])
			}
			if a.Report {
				v = jsonReport(v, ivs[g*len(q.Aggregates)+i])
			}
			args = append(args, v)
		}
		pending++
		if pending == perStmt {
			if err := flush(pending); err != nil {
				return err
			}
			pending = 0
		}
	}
	return flush(pending)
}

// Explain describes a private query without running it: the backend SQL,
// every noisy cell with its mechanism, sensitivity, ε, scale and 95% error
// bound, and the post-processing SQL. It spends nothing.
func Explain(q *planner.PrivateQuery, rw *rewrite.Rewritten) *Result {
	res := &Result{Columns: []string{"step", "detail"}}
	add := func(step, detail string) { res.Rows = append(res.Rows, []any{step, detail}) }
	keys := "no GROUP BY: one group"
	if len(q.Keys) > 0 {
		var names []string
		for _, k := range q.Keys {
			if k.Domain == nil {
				names = append(names, parser.QuoteIdent(k.Column)+" (private values)")
			} else {
				names = append(names, fmt.Sprintf("%s (%d public values)", parser.QuoteIdent(k.Column), len(k.Domain)))
			}
		}
		keys = fmt.Sprintf("GROUP BY %s: %d groups, all released, empty ones included", strings.Join(names, " × "), q.Groups())
		if q.Threshold != nil || q.TopK != nil {
			keys = choiceGroups(q, names)
		}
		if sel := q.Selection; sel != nil {
			keys = fmt.Sprintf("GROUP BY %s: groups chosen by partition selection — a group is released only if its count of distinct units (Laplace, sensitivity %g, ε=%.6g) exceeds τ=%.6g; δ=%g", strings.Join(names, " × "), sel.Sensitivity, sel.Epsilon, sel.Threshold, sel.Delta)
		}
	}
	if u := q.Unit; (q.Threshold != nil || q.TopK != nil) && q.UnitSQL != "" {
		add("table", fmt.Sprintf("%s, private; privacy unit from %s", q.FromName, q.UnitBase))
		add("bounding", fmt.Sprintf("each unit keeps its rows in every group it falls in (l0 = the %d candidates) and at most %d row(s) per group, chosen in an order keyed at random per query: each group is one query, of what one unit adds to that group", q.Groups(), u.MaxRows))
	} else if u.Column != "" && q.UnitSQL != "" {
		add("table", fmt.Sprintf("%s, private; privacy unit %s (carried from the base column %s)", q.FromName, parser.QuoteIdent(u.Column), q.UnitBase))
		add("bounding", fmt.Sprintf("each unit keeps at most %d group(s) and at most %d row(s) per group, chosen in an order keyed at random per query; one unit changes at most %d row(s) (min(l0, groups)·l∞: it changes at most %d group(s))", u.MaxGroups, u.MaxRows, q.GroupsChanged*u.MaxRows, q.GroupsChanged))
	} else {
		add("table", fmt.Sprintf("%s, private; each row is one privacy unit", q.FromName))
		if q.UnitSQL != "" {
			add("bounding", fmt.Sprintf("the join can repeat a row: each private row (%s) is kept at most once", q.UnitBase))
		}
	}
	explainBoundingChoices(q, add)
	add("groups", keys)
	if q.TargetError > 0 {
		add("target_error", fmt.Sprintf("ε=%.6g is the smallest at which every value's 95%% error is at most %g (Laplace noise, ε shared equally among %d noisy cell(s)%s)", q.Epsilon, q.TargetError, len(q.Cells), map[bool]string{true: " and the partition selection", false: ""}[q.Selection != nil]))
	}
	explainChoice(q, add)
	add("backend SQL", rw.Scan)
	if rw.Weighted {
		add("source", "the table's source groups identical rows and sends each once with its count ("+catalog.WeightColumn+"); each is measured as that many rows, exactly")
	}
	add("measurements", fmt.Sprintf("%s per group (argument i of the call is a<i>; values converted as CAST(x AS REAL), clipped, summed exactly)", strings.Join(measure.Strings(rw.Measured), "; ")))
	for i, sr := range q.Searches {
		w := autobound.WalkFor(sr.Epsilon, sr.Sensitivity)
		share := fmt.Sprintf("%.3g of the query's ε", q.BoundsFraction)
		if len(q.Cells) > 0 && q.Cells[0].Gaussian {
			share = fmt.Sprintf("√(2ρ_k): the searches take %.3g of the query's ρ", q.BoundsFraction)
		}
		walk := fmt.Sprintf("every candidate; the upper bound in two stages, to about %.3g values beyond a candidate and then to about %.3g, widened past the second stop by %.2g times the distance between the two, at most an octave; then the lower bound, down from the upper, where about %.3g values lie at or below a candidate (a positive bound when the column lies well above 0)", autobound.TailScales*w.Scale, w.Threshold, autobound.TailReach, w.Threshold)
		if w.Coarse {
			walk = fmt.Sprintf("one candidate per octave (the threshold is large in rows); it stops where about %.3g values lie beyond a candidate, and the bound is then widened by an octave — unless the noisy count of all values, made first, is at least %.3g: then it walks every candidate in two stages, with cutoff 3, as at a larger ε", w.Threshold, autobound.CountForFine(sr.Epsilon, sr.Sensitivity))
		}
		add(fmt.Sprintf("bounds search s%d", i), fmt.Sprintf(
			"%s: no declared bounds, chosen privately from one histogram scan (%s), ε=%.6g (%s): %.3g of it for the sparse vector technique (cutoff %d, monotonic counts, query noise scale %.4g, walking %s), the rest for two Laplace counts (all values, before the walk, and the values beyond the chosen bounds, after it: the answer's estimate of the share clipped, with a warning from %.3g%%); candidates 0 and (1 + k/8)·2^e for e in [%d, %d]; so that at most 5%% of the values are clipped the column needs about %.3g values (rows kept by contribution bounding) — with fewer, expect a warning and an answer that reflects the bounds more than the data; the 95%% intervals of SUM and AVG reach higher by an allowance for the values beyond the upper bound, a power law through the walk's stops (%g noise scales' worth beyond the last; post-processing, no ε)",
			sr.Label, rewrite.MeasureFunction, sr.Epsilon, share, autobound.SearchShare, w.Cutoff, w.Scale, walk, 100*autobound.WarnShare, autobound.MinExp, autobound.MaxExp-1, autobound.UnitsFor(sr.Epsilon, sr.Sensitivity, 0.05), float64(autobound.TailStopScales)))
	}
	for i, c := range q.Cells {
		name := fmt.Sprintf("noise c%d", i)
		switch {
		case !q.ValuesMeasured():
			add(name, fmt.Sprintf("%s: compared only; its value is not released", c.Label))
			continue
		case c.Gaussian && c.Search >= 0:
			add(name, fmt.Sprintf("%s: discrete Gaussian, ρ=%.6g, L2 sensitivity from the bounds chosen by s%d (L1/√%d)", c.Label, c.Rho, c.Search, max(c.MaxGroups, 1)))
		case c.Gaussian:
			l2 := c.L2Sensitivity(c.L1Sensitivity)
			sigma := mechanism.GaussianSigma(l2, c.Rho)
			add(name, fmt.Sprintf("%s: discrete Gaussian, σ %.6g (its standard deviation), 95%% error ±%.6g; L2 sensitivity %.6g (what one unit can change), ρ=%.6g (its cost in zCDP)",
				c.Label, sigma, c.ErrorBound95(c.L1Sensitivity), l2, c.Rho))
		case c.Search >= 0:
			add(name, fmt.Sprintf("%s: Laplace, ε=%.6g, sensitivity from the bounds chosen by s%d", c.Label, c.Epsilon, c.Search))
		default:
			scale := mechanism.LaplaceScale(c.L1Sensitivity, c.Epsilon)
			add(name, fmt.Sprintf("%s: Laplace, sensitivity %g (what one unit can change), ε=%.6g, scale %.6g, 95%% error ±%.6g",
				c.Label, c.L1Sensitivity, c.Epsilon, scale, c.ErrorBound95(c.L1Sensitivity)))
		}
	}
	for i, a := range q.Aggregates {
		lo, hi, mid := fmt.Sprint(a.Lo), fmt.Sprint(a.Hi), fmt.Sprint(a.Lo/2+a.Hi/2)
		if a.Search >= 0 {
			lo, hi, mid = "lo", "hi", "(lo+hi)/2"
		}
		var how string
		switch a.Kind {
		case planner.AggCount:
			how = fmt.Sprintf("noisy c%d, rounded, at least 0", a.Cells[0])
		case planner.AggSum:
			how = fmt.Sprintf("noisy c%d", a.Cells[0])
		case planner.AggQuantile:
			what := fmt.Sprintf("the %g-quantile", a.P)
			if ps := q.Cells[a.Cells[0]].Ps; len(ps) > 0 {
				what = fmt.Sprintf("the %d quantiles 0, 1/%d, …, 1 (a JSON array), each", len(ps), len(ps)-1)
			}
			how = fmt.Sprintf("%s found by descending the tree of c%d (noisy node counts), clamped to [%s, %s]", what, a.Cells[0], lo, hi)
		case planner.AggAvg:
			how = fmt.Sprintf("%s + noisy c%d / max(1, noisy c%d), clamped to [%s, %s]", mid, a.Cells[0], a.Cells[1], lo, hi)
		case planner.AggVar, planner.AggStddev:
			how = fmt.Sprintf("noisy c%d / n − (noisy c%d / n)², n = max(1, noisy c%d), clamped to [0, ((%s − %s)/2)²]", a.Cells[2], a.Cells[0], a.Cells[1], hi, lo)
			if a.Sample {
				how = "(" + how + ") · m/(m − 1), m = max(2, noisy c" + fmt.Sprint(a.Cells[1]) + ")"
			}
			if a.Kind == planner.AggStddev {
				how = "sqrt of " + how
			}
		}
		add(fmt.Sprintf("aggregate a%d", i), a.Text+" = "+how)
		if q.ValuesMeasured() {
			add(fmt.Sprintf("accuracy a%d", i), predictedError(q, a))
		}
	}
	add("post-processing SQL", rw.Post)
	add("privacy cost", fmt.Sprintf("ε=%g, δ=%g (spent only when the query runs)", q.Epsilon, q.Delta))
	return res
}
