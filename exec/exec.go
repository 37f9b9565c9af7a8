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
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dpsql/dpsql/autobound"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/rewrite"
)

// Result is a released table.
type Result struct {
	Columns []string
	Rows    [][]any // values are int64, float64, string or nil
}

// ErrBackend reports that the scan of a private table failed. Its text
// carries no detail from the backend, because such details (an overflow in
// some row, say) could depend on private data.
var ErrBackend = errors.New("evaluating the query on the private table failed (details are withheld because they could depend on private data)")

// Public runs a query on a public table (or without a table) as written.
func Public(ctx context.Context, db *sql.DB, q *planner.PublicQuery) (*Result, error) {
	return collect(ctx, db, parser.FormatStmt(q.Stmt))
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func collect(ctx context.Context, db queryer, query string, args ...any) (*Result, error) {
	rows, err := db.QueryContext(ctx, query, args...)
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
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		res.Rows = append(res.Rows, vals)
	}
	return res, rows.Err()
}

// ChosenBound reports the bounds a private search chose for an argument.
type ChosenBound struct {
	Label  string
	Lo, Hi float64
}

// Private runs the scan, chooses any bounds that were not declared, adds
// noise to every cell of every group (empty groups included), and
// post-processes. The caller must have charged the plan's cost before
// calling. The chosen bounds are DP releases too and are returned.
func Private(ctx context.Context, db *sql.DB, q *planner.PrivateQuery, rw *rewrite.Rewritten, noise mechanism.Noiser) (*Result, []ChosenBound, error) {
	sc, err := scan(ctx, db, q, rw)
	if err != nil {
		return nil, nil, err
	}
	chosen := make([]autobound.Result, len(q.Searches))
	var notes []ChosenBound
	for i, sr := range q.Searches {
		var all autobound.Histogram
		for g := range sc.hists {
			all.Merge(&sc.hists[g][i])
		}
		r, err := autobound.Search(&all, sr.Epsilon, sr.Sensitivity, noise)
		if err != nil {
			return nil, nil, err
		}
		chosen[i] = r
		notes = append(notes, ChosenBound{Label: sr.Label, Lo: r.Lo, Hi: r.Hi})
	}
	if err := selectGroups(sc, q, rw, noise); err != nil {
		return nil, nil, err
	}
	nc := len(q.Cells)
	groups := len(sc.values)
	cells := make([]cellBounds, nc)
	for i, c := range q.Cells {
		cells[i] = cellBounds{lo: c.Lo, hi: c.Hi, sens: c.L1Sensitivity}
		if c.Search >= 0 {
			r := chosen[c.Search]
			cells[i] = cellBounds{lo: r.Lo, hi: r.Hi, sens: c.Scale * planner.SensitivityFor(c.Kind, r.Lo, r.Hi)}
		}
	}
	noisy := make([]float64, groups*nc)
	for g := 0; g < groups; g++ {
		exact := sc.exactCells(q, rw, g, cells, chosen)
		for i, c := range q.Cells {
			v, err := noise.AddLaplace(exact[i], cells[i].sens, c.Epsilon)
			if err != nil {
				return nil, nil, err
			}
			noisy[g*nc+i] = v
		}
	}
	keys := sc.keys
	sc = nil // nothing exact survives past this point
	aggBounds := make([][2]float64, len(q.Aggregates))
	for i, a := range q.Aggregates {
		aggBounds[i] = [2]float64{a.Lo, a.Hi}
		if a.Search >= 0 {
			aggBounds[i] = [2]float64{chosen[a.Search].Lo, chosen[a.Search].Hi}
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS temp."+rewrite.ResultTable); err != nil {
		return nil, nil, err
	}
	if _, err := conn.ExecContext(ctx, "CREATE TEMP TABLE "+rewrite.ResultTable+" ("+strings.Join(rw.ResultColumns, ", ")+")"); err != nil {
		return nil, nil, err
	}
	defer conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS temp."+rewrite.ResultTable)
	if err := fill(ctx, conn, q, rw, noisy, keys, aggBounds); err != nil {
		return nil, nil, err
	}
	res, err := collect(ctx, conn, rw.Post)
	return res, notes, err
}

type cellBounds struct{ lo, hi, sens float64 }

// scanned holds the exact per-group measurements: measured columns, and
// the histograms of the bound searches.
type scanned struct {
	keys   [][]any                 // [group][key]: released key values
	values [][]float64             // [group][measured column]
	hists  [][]autobound.Histogram // [group][search]
}

// exactCells computes the exact value of every cell of group g.
func (sc *scanned) exactCells(q *planner.PrivateQuery, rw *rewrite.Rewritten, g int, cells []cellBounds, chosen []autobound.Result) []float64 {
	out := make([]float64, len(q.Cells))
	for i, c := range q.Cells {
		src := rw.CellSource[i]
		if src.Column >= 0 {
			out[i] = sc.values[g][src.Column]
			continue
		}
		r := chosen[src.Search]
		m := sc.hists[g][src.Search].Moments(r.LoIdx, r.HiIdx)
		mid := cells[i].lo/2 + cells[i].hi/2
		switch c.Kind {
		case planner.CountValues:
			out[i] = m.N
		case planner.ClippedSum, planner.CenteredSum:
			out[i] = m.Sum
		case planner.CenteredSumSq:
			// Σ (x − m)² = Σ x² − 2m Σ x + m² n over the clipped values.
			out[i] = math.Max(0, m.SumSq-2*mid*m.Sum+mid*mid*m.N)
		}
	}
	// Centre the sums: Σ (clip(x) − m) = Σ clip(x) − m·n, from exact values.
	for i, c := range q.Cells {
		if c.Kind == planner.CenteredSum {
			mid := cells[i].lo/2 + cells[i].hi/2
			out[i] -= mid * out[c.CountCell]
		}
	}
	return out
}

// scan runs the backend statement and returns the exact measurements per
// group. With public domains only, the groups are every combination of
// domain values, in domain order, with zeros for groups without rows; with
// partition selection they are the groups the scan met, in its order.
func scan(ctx context.Context, db *sql.DB, q *planner.PrivateQuery, rw *rewrite.Rewritten) (*scanned, error) {
	nm := len(rw.Measured)
	isHist := make([]int, nm)
	for i := range isHist {
		isHist[i] = -1
	}
	for s, col := range rw.SearchColumn {
		isHist[col] = s
	}
	sc := &scanned{}
	addGroup := func(keys []any) int {
		sc.keys = append(sc.keys, keys)
		sc.values = append(sc.values, make([]float64, nm))
		sc.hists = append(sc.hists, make([]autobound.Histogram, len(q.Searches)))
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
			if b, ok := k.([]byte); ok {
				k = string(b)
			}
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
	if rw.Bounded {
		key := int64(randomKey())
		defer boundedResults.Delete(key)
		var handle any
		if err := db.QueryRowContext(ctx, rw.Scan, key).Scan(&handle); err != nil {
			return nil, backendError(ctx, err)
		}
		res, _ := takeBounded(key)
		if res == nil {
			return sc, nil // no row matched
		}
		for _, bg := range res.groups {
			g, err := place(bg.keys)
			if err != nil {
				return nil, err
			}
			copy(sc.values[g], bg.values)
			for s, col := range rw.SearchColumn {
				sc.hists[g][s] = *bg.hists[col]
			}
		}
		return sc, nil
	}
	rows, err := db.QueryContext(ctx, rw.Scan)
	if err != nil {
		return nil, backendError(ctx, err)
	}
	defer rows.Close()
	keys := make([]any, nk)
	vals := make([]any, nm)
	ptrs := make([]any, 0, nk+nm)
	for i := range keys {
		ptrs = append(ptrs, &keys[i])
	}
	for i := range vals {
		ptrs = append(ptrs, &vals[i])
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, backendError(ctx, err)
		}
		g, err := place(keys)
		if err != nil {
			return nil, err
		}
		for j, v := range vals {
			if s := isHist[j]; s >= 0 {
				b, _ := v.([]byte)
				if err := sc.hists[g][s].UnmarshalBinary(b); err != nil {
					return nil, err
				}
				continue
			}
			switch v := v.(type) {
			case int64:
				sc.values[g][j] = float64(v)
			case float64:
				sc.values[g][j] = v
			}
			// NULL (no rows) counts as 0.
		}
	}
	if err := rows.Err(); err != nil {
		return nil, backendError(ctx, err)
	}
	return sc, nil
}

// randomKey draws the per-query key of the contribution-bounding order.
func randomKey() uint64 { return mechanism.CryptoSource().Uint64() }

// selectGroups keeps, under partition selection, only the groups whose
// noisy count of distinct units passes the threshold; the others are
// dropped before anything about them is computed or released.
func selectGroups(sc *scanned, q *planner.PrivateQuery, rw *rewrite.Rewritten, noise mechanism.Noiser) error {
	sel := q.Selection
	if sel == nil {
		return nil
	}
	kept := 0
	for g := range sc.keys {
		n, err := noise.AddLaplace(sc.values[g][rw.UnitsColumn], sel.Sensitivity, sel.Epsilon)
		if err != nil {
			return err
		}
		if n > sel.Threshold {
			sc.keys[kept], sc.values[kept], sc.hists[kept] = sc.keys[g], sc.values[g], sc.hists[g]
			kept++
		}
	}
	sc.keys, sc.values, sc.hists = sc.keys[:kept], sc.values[:kept], sc.hists[:kept]
	return nil
}

func backendError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	_ = err // deliberately dropped: see ErrBackend
	return ErrBackend
}

// aggregateValue combines the noisy cells of one aggregate with bounds
// [lo, hi] (declared or chosen).
func aggregateValue(a *planner.Aggregate, cells []float64, lo, hi float64) any {
	switch a.Kind {
	case planner.AggCount:
		return int64(math.Max(0, math.Round(cells[a.Cells[0]])))
	case planner.AggSum:
		return cells[a.Cells[0]]
	}
	mid := lo/2 + hi/2
	n := math.Max(1, cells[a.Cells[1]])
	meanC := cells[a.Cells[0]] / n // mean of the centred values
	if a.Kind == planner.AggAvg {
		return math.Min(hi, math.Max(lo, mid+meanC))
	}
	half := (hi - lo) / 2
	meanC = math.Min(half, math.Max(-half, meanC))
	v := math.Min(half*half, math.Max(0, cells[a.Cells[2]]/n-meanC*meanC))
	if a.Kind == planner.AggStddev {
		return math.Sqrt(v)
	}
	return v
}

// fill writes one row per group into the result table: the group's public
// key values, then its noisy aggregates.
func fill(ctx context.Context, conn *sql.Conn, q *planner.PrivateQuery, rw *rewrite.Rewritten, noisy []float64, keys [][]any, aggBounds [][2]float64) error {
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
	for g := 0; g < groups; g++ {
		args = append(args, keys[g]...)
		cells := noisy[g*nc : (g+1)*nc]
		for i, a := range q.Aggregates {
			args = append(args, aggregateValue(a, cells, aggBounds[i][0], aggBounds[i][1]))
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
		if sel := q.Selection; sel != nil {
			keys = fmt.Sprintf("GROUP BY %s: groups chosen by partition selection — a group is released only if its count of distinct units (Laplace, sensitivity %g, ε=%.6g) exceeds τ=%.6g; δ=%g", strings.Join(names, " × "), sel.Sensitivity, sel.Epsilon, sel.Threshold, sel.Delta)
		}
	}
	if u := q.Unit; u.Column != "" && q.UnitSQL != "" {
		add("table", fmt.Sprintf("%s, private; privacy unit %s", q.FromName, parser.QuoteIdent(u.Column)))
		add("bounding", fmt.Sprintf("each unit keeps at most %d group(s) and at most %d row(s) per group, chosen in an order keyed at random per query; one unit changes at most %d row(s)", u.MaxGroups, u.MaxRows, u.MaxGroups*u.MaxRows))
	} else {
		add("table", fmt.Sprintf("%s, private; each row is one privacy unit", q.FromName))
		if q.UnitSQL != "" {
			add("bounding", fmt.Sprintf("the join can repeat a row: each private row (%s) is kept at most once", q.UnitSQL))
		}
	}
	add("groups", keys)
	add("backend SQL", rw.Scan)
	for i, sr := range q.Searches {
		opts := mechanism.SparseOptions{Epsilon: sr.Epsilon, Sensitivity: sr.Sensitivity, Cutoff: 2, Monotonic: true}
		add(fmt.Sprintf("bounds search s%d", i), fmt.Sprintf(
			"%s: no declared bounds, chosen privately from one histogram scan (%s): sparse vector technique, cutoff 2, monotonic counts, ε=%.6g (%.3g of the query's ε), query noise scale %.4g, stops where at most about %d noise scales of values lie beyond a candidate; candidates 0 and (1 + k/8)·2^e for e in [%d, %d]",
			sr.Label, rewrite.HistogramFunction, sr.Epsilon, q.BoundsFraction, mechanism.SparseQueryScale(opts), autobound.ThresholdScales, autobound.MinExp, autobound.MaxExp-1))
	}
	for i, c := range q.Cells {
		if c.Search >= 0 {
			add(fmt.Sprintf("noise c%d", i), fmt.Sprintf("%s: Laplace, ε=%.6g, sensitivity from the bounds chosen by s%d", c.Label, c.Epsilon, c.Search))
			continue
		}
		scale := mechanism.LaplaceScale(c.L1Sensitivity, c.Epsilon)
		add(fmt.Sprintf("noise c%d", i), fmt.Sprintf("%s: Laplace, sensitivity %g, ε=%.6g, scale %.6g, 95%% error ±%.6g",
			c.Label, c.L1Sensitivity, c.Epsilon, scale, mechanism.LaplaceErrorBound(scale, 0.05)))
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
		case planner.AggAvg:
			how = fmt.Sprintf("%s + noisy c%d / max(1, noisy c%d), clamped to [%s, %s]", mid, a.Cells[0], a.Cells[1], lo, hi)
		case planner.AggVar, planner.AggStddev:
			how = fmt.Sprintf("noisy c%d / n − (noisy c%d / n)², n = max(1, noisy c%d), clamped to [0, ((%s − %s)/2)²]", a.Cells[2], a.Cells[0], a.Cells[1], hi, lo)
			if a.Kind == planner.AggStddev {
				how = "sqrt of " + how
			}
		}
		add(fmt.Sprintf("aggregate a%d", i), a.Text+" = "+how)
	}
	add("post-processing SQL", rw.Post)
	add("privacy cost", fmt.Sprintf("ε=%g, δ=%g (spent only when the query runs)", q.Epsilon, q.Delta))
	return res
}
