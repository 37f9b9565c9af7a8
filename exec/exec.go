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

// Private runs the scan, adds noise to every cell of every group (empty
// groups included), and post-processes. The caller must have charged the
// plan's cost before calling.
func Private(ctx context.Context, db *sql.DB, q *planner.PrivateQuery, rw *rewrite.Rewritten, noise mechanism.Noiser) (*Result, error) {
	exact, err := scan(ctx, db, q, rw)
	if err != nil {
		return nil, err
	}
	groups := len(exact) / max(1, len(q.Cells))
	noisy := make([]float64, len(exact))
	for g := 0; g < groups; g++ {
		for i, c := range q.Cells {
			v, err := noise.AddLaplace(exact[g*len(q.Cells)+i], c.L1Sensitivity, c.Epsilon)
			if err != nil {
				return nil, err
			}
			noisy[g*len(q.Cells)+i] = v
		}
	}
	exact = nil // nothing exact survives past this point
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS temp."+rewrite.ResultTable); err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "CREATE TEMP TABLE "+rewrite.ResultTable+" ("+strings.Join(rw.ResultColumns, ", ")+")"); err != nil {
		return nil, err
	}
	defer conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS temp."+rewrite.ResultTable)
	if err := fill(ctx, conn, q, rw, noisy, groups); err != nil {
		return nil, err
	}
	return collect(ctx, conn, rw.Post)
}

// scan runs the backend statement and returns the exact cells as a
// groups×cells matrix in domain order, with zeros for groups without rows.
func scan(ctx context.Context, db *sql.DB, q *planner.PrivateQuery, rw *rewrite.Rewritten) ([]float64, error) {
	groups := q.Groups()
	nc := len(q.Cells)
	exact := make([]float64, groups*nc)
	rows, err := db.QueryContext(ctx, rw.Scan)
	if err != nil {
		return nil, backendError(ctx, err)
	}
	defer rows.Close()
	nk := len(q.Keys)
	nm := 0
	for _, m := range rw.CellColumn {
		nm = max(nm, m+1)
	}
	keys := make([]sql.NullInt64, nk)
	measured := make([]sql.NullFloat64, nm)
	ptrs := make([]any, 0, nk+nm)
	for i := range keys {
		ptrs = append(ptrs, &keys[i])
	}
	for i := range measured {
		ptrs = append(ptrs, &measured[i])
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, backendError(ctx, err)
		}
		g := 0
		for i, k := range keys {
			size := len(q.Keys[i].Domain)
			if !k.Valid || k.Int64 < 0 || int(k.Int64) >= size {
				return nil, fmt.Errorf("exec: key index out of the domain") // an internal invariant, not data-dependent
			}
			g = g*size + int(k.Int64)
		}
		for i, m := range rw.CellColumn {
			exact[g*nc+i] = measured[m].Float64 // NULL (no rows) counts as 0
		}
	}
	if err := rows.Err(); err != nil {
		return nil, backendError(ctx, err)
	}
	for i, c := range q.Cells {
		if c.Kind != planner.CenteredSum {
			continue
		}
		mid := c.Lo/2 + c.Hi/2
		for g := 0; g < groups; g++ {
			exact[g*nc+i] -= mid * exact[g*nc+c.CountCell]
		}
	}
	return exact, nil
}

func backendError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	_ = err // deliberately dropped: see ErrBackend
	return ErrBackend
}

// aggregateValue combines the noisy cells of one aggregate.
func aggregateValue(a *planner.Aggregate, cells []float64) any {
	switch a.Kind {
	case planner.AggCount:
		return int64(math.Max(0, math.Round(cells[a.Cells[0]])))
	case planner.AggSum:
		return cells[a.Cells[0]]
	case planner.AggAvg:
		mid := a.Lo/2 + a.Hi/2
		n := math.Max(1, cells[a.Cells[1]])
		return math.Min(a.Hi, math.Max(a.Lo, mid+cells[a.Cells[0]]/n))
	}
	panic("exec: unknown aggregate kind")
}

// fill writes one row per group into the result table: the group's public
// key values, then its noisy aggregates.
func fill(ctx context.Context, conn *sql.Conn, q *planner.PrivateQuery, rw *rewrite.Rewritten, noisy []float64, groups int) error {
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
		rest := g
		keyVals := make([]any, len(q.Keys))
		for i := len(q.Keys) - 1; i >= 0; i-- {
			size := len(q.Keys[i].Domain)
			keyVals[i] = q.Keys[i].Domain[rest%size]
			rest /= size
		}
		args = append(args, keyVals...)
		cells := noisy[g*nc : (g+1)*nc]
		for _, a := range q.Aggregates {
			args = append(args, aggregateValue(a, cells))
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
			names = append(names, fmt.Sprintf("%s (%d public values)", parser.QuoteIdent(k.Column), len(k.Domain)))
		}
		keys = fmt.Sprintf("GROUP BY %s: %d groups, all released, empty ones included", strings.Join(names, " × "), q.Groups())
	}
	add("table", fmt.Sprintf("%s, private; each row is one privacy unit", parser.QuoteIdent(q.Table.Name)))
	add("groups", keys)
	add("backend SQL", rw.Scan)
	for i, c := range q.Cells {
		scale := mechanism.LaplaceScale(c.L1Sensitivity, c.Epsilon)
		add(fmt.Sprintf("noise c%d", i), fmt.Sprintf("%s: Laplace, sensitivity %g, ε=%.6g, scale %.6g, 95%% error ±%.6g",
			c.Label, c.L1Sensitivity, c.Epsilon, scale, mechanism.LaplaceErrorBound(scale, 0.05)))
	}
	for i, a := range q.Aggregates {
		var how string
		switch a.Kind {
		case planner.AggCount:
			how = fmt.Sprintf("noisy c%d, rounded, at least 0", a.Cells[0])
		case planner.AggSum:
			how = fmt.Sprintf("noisy c%d", a.Cells[0])
		case planner.AggAvg:
			how = fmt.Sprintf("%g + noisy c%d / max(1, noisy c%d), clamped to [%g, %g]", a.Lo/2+a.Hi/2, a.Cells[0], a.Cells[1], a.Lo, a.Hi)
		}
		add(fmt.Sprintf("aggregate a%d", i), a.Text+" = "+how)
	}
	add("post-processing SQL", rw.Post)
	add("privacy cost", fmt.Sprintf("ε=%g, δ=%g (spent only when the query runs)", q.Epsilon, q.Delta))
	return res
}
