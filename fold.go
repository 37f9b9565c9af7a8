package dpsql

import (
	"context"
	"math"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/rewrite"
)

// rewritePrivate rewrites a DP query into its measurement plan; for a
// backend that measures (compiles the plan), with the query's
// column-free expressions computed as constants (folder), which its
// compiler prints as literals.
func (e *Engine) rewritePrivate(ctx context.Context, p *planner.PrivateQuery) (*rewrite.Rewritten, error) {
	if _, ok := e.be.(backend.Measurer); ok {
		p.Fold = e.folder(ctx, p)
	}
	return rewrite.Private(p)
}

// folder computes column-free expressions of p (planner.PrivateQuery's
// Fold) in SQLite as the reference evaluator renders them, under the
// authorizer with no table readable: the values every row would see,
// computed from no row. Each expression is computed once; the rewrite
// calls it from one goroutine.
func (e *Engine) folder(ctx context.Context, p *planner.PrivateQuery) func(parser.Expr, bool) (any, bool) {
	type key struct {
		x     parser.Expr
		truth bool
	}
	type folded struct {
		v  any
		ok bool
	}
	memo := map[key]folded{}
	return func(x parser.Expr, truth bool) (any, bool) {
		k := key{x, truth}
		if f, ok := memo[k]; ok {
			return f.v, f.ok
		}
		v, ok := e.fold(ctx, p.SQL(x), truth)
		memo[k] = folded{v, ok}
		return v, ok
	}
}

// maxFoldedText is the longest text folded into a literal (a longer one,
// which only a contrived expression makes, stays an expression).
const maxFoldedText = 1 << 16

// fold runs one constant expression (SQLite SQL) and returns its value:
// int64, float64 (finite) or string; with truth, its truth value in a
// WHERE clause (int64 1 or 0, nil for NULL). ok is false for anything
// else (NULL as a value, a blob, an infinity, a text over
// maxFoldedText, an error), which the
// rewrite then leaves as an expression.
func (e *Engine) fold(ctx context.Context, sqlText string, truth bool) (any, bool) {
	if truth {
		sqlText = "CASE WHEN (" + sqlText + ") THEN 1 WHEN NOT (" + sqlText + ") THEN 0 END"
	}
	vals, err := exec.PublicValues(ctx, e.db, "SELECT "+sqlText, nil)
	if err != nil || len(vals) != 1 {
		return nil, false
	}
	switch v := vals[0].(type) {
	case nil:
		return nil, truth
	case int64:
		return v, true
	case string:
		return v, len(v) <= maxFoldedText // printed into the backend's statement
	case float64:
		return v, !math.IsInf(v, 0) && !math.IsNaN(v)
	}
	return nil, false
}
