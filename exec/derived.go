package exec

import (
	"math"
	"strconv"

	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// An output that is a monotone function of one aggregate and constants —
// ROUND(AVG(x)), COUNT(*) / 2, 100 * SUM(x) / 7, CAST(AVG(x) AS INTEGER) —
// gets its aggregate's interval mapped through the function: if the true
// aggregate lies in [lo, hi], the true output lies between the function's
// values there. The level stays 95% because one aggregate enters. Two
// aggregates (SUM(x) / COUNT(*)) would need both intervals at once (90% by
// the union bound) and get none; so do functions not listed here.

// derivedRange is what an expression's true value may be: [Lo, Hi], with
// agg set when it depends on the aggregate (else it is the constant Lo).
type derivedRange struct {
	lo, hi float64
	agg    int // the aggregate it depends on, or -1 for a constant
	wide   bool
	bias   Bias
}

// OutputAggregate returns the aggregate whose interval an output carries,
// directly (a plain aggregate) or mapped through a monotone function, and
// whether it has one. APPROX_QUANTILES and JSON reports carry theirs in
// their value.
func OutputAggregate(q *planner.PrivateQuery, e parser.Expr) (int, bool) {
	r, ok := outputRange(q, e, func(int) *Interval { return &Interval{Lo: 1, Hi: 1} })
	if !ok || r.agg < 0 {
		return -1, false
	}
	return r.agg, true
}

// derivedInterval is output e's interval given its aggregates' intervals,
// or nil.
func derivedInterval(q *planner.PrivateQuery, e parser.Expr, ivOf func(agg int) *Interval) *Interval {
	r, ok := outputRange(q, e, ivOf)
	if !ok || r.agg < 0 {
		return nil
	}
	iv := &Interval{Lo: r.lo, Hi: r.hi, Wide: r.wide}
	iv.SetBias(r.bias)
	return iv
}

func outputRange(q *planner.PrivateQuery, e parser.Expr, ivOf func(agg int) *Interval) (derivedRange, bool) {
	switch e := e.(type) {
	case *parser.ParenExpr:
		return outputRange(q, e.X, ivOf)
	case *parser.Literal:
		if e.Kind != parser.IntLit && e.Kind != parser.FloatLit {
			return derivedRange{}, false
		}
		v, err := strconv.ParseFloat(e.Raw, 64)
		if err != nil || math.IsInf(v, 0) {
			return derivedRange{}, false
		}
		return derivedRange{lo: v, hi: v, agg: -1}, true
	case *parser.UnaryExpr:
		x, ok := outputRange(q, e.X, ivOf)
		switch {
		case !ok:
			return x, false
		case e.Op == "+":
			return x, true
		case e.Op == "-":
			x.lo, x.hi = -x.hi, -x.lo
			return x, true
		}
	case *parser.CastExpr:
		x, ok := outputRange(q, e.X, ivOf)
		if !ok {
			return x, false
		}
		switch e.Type {
		case "INTEGER", "INT64":
			return mapMonotone(x, math.Trunc), true
		case "REAL", "FLOAT64", "DOUBLE", "NUMERIC":
			return x, true
		}
	case *parser.BinaryExpr:
		return binaryRange(q, e, ivOf)
	case *parser.CallExpr:
		if i, ok := q.AggOf[e]; ok {
			a := q.Aggregates[i]
			iv := ivOf(i)
			if a.Quantiles > 0 || a.Report || iv == nil {
				return derivedRange{}, false
			}
			return derivedRange{lo: iv.Lo, hi: iv.Hi, agg: i, wide: iv.Wide, bias: iv.Bias()}, true
		}
		return callRange(q, e, ivOf)
	}
	return derivedRange{}, false
}

// callRange maps ROUND, CEIL, FLOOR and ABS.
func callRange(q *planner.PrivateQuery, e *parser.CallExpr, ivOf func(int) *Interval) (derivedRange, bool) {
	if len(e.Args) == 0 || len(e.Named) > 0 || e.Distinct || e.Star || e.Over != nil {
		return derivedRange{}, false
	}
	x, ok := outputRange(q, e.Args[0], ivOf)
	if !ok {
		return x, false
	}
	switch {
	case e.Name == "ROUND" && len(e.Args) <= 2:
		scale := 1.0
		if len(e.Args) == 2 {
			d, ok := outputRange(q, e.Args[1], ivOf)
			if !ok || d.agg >= 0 || d.lo != math.Trunc(d.lo) || math.Abs(d.lo) > 15 {
				return derivedRange{}, false
			}
			scale = math.Pow(10, d.lo)
		}
		// Outward, whatever the engine's rule for halves.
		x.lo = math.Floor(x.lo*scale) / scale
		x.hi = math.Ceil(x.hi*scale) / scale
		return x, true
	case (e.Name == "CEIL" || e.Name == "CEILING") && len(e.Args) == 1:
		return mapMonotone(x, math.Ceil), true
	case e.Name == "FLOOR" && len(e.Args) == 1:
		return mapMonotone(x, math.Floor), true
	case e.Name == "ABS" && len(e.Args) == 1:
		switch {
		case x.hi <= 0:
			x.lo, x.hi = -x.hi, -x.lo
		case x.lo < 0:
			x.lo, x.hi = 0, math.Max(-x.lo, x.hi)
		}
		return x, true
	}
	return derivedRange{}, false
}

// binaryRange maps +, −, × and ÷ where at most one side depends on the
// aggregate and a divisor's range excludes 0.
func binaryRange(q *planner.PrivateQuery, e *parser.BinaryExpr, ivOf func(int) *Interval) (derivedRange, bool) {
	x, okX := outputRange(q, e.X, ivOf)
	y, okY := outputRange(q, e.Y, ivOf)
	if !okX || !okY || (x.agg >= 0 && y.agg >= 0) {
		return derivedRange{}, false
	}
	out := derivedRange{agg: max(x.agg, y.agg), wide: x.wide || y.wide, bias: x.bias}
	if y.agg >= 0 {
		out.bias = y.bias
	}
	var vs []float64
	switch e.Op {
	case "+":
		vs = []float64{x.lo + y.lo, x.hi + y.hi}
	case "-":
		vs = []float64{x.lo - y.hi, x.hi - y.lo}
	case "*":
		vs = []float64{x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi}
	case "/":
		if !(y.lo > 0 || y.hi < 0) {
			return derivedRange{}, false
		}
		for _, a := range []float64{x.lo, x.hi} {
			for _, b := range []float64{y.lo, y.hi} {
				// Integer operands divide with truncation: both counted.
				vs = append(vs, a/b, math.Trunc(a/b))
			}
		}
	default:
		return derivedRange{}, false
	}
	out.lo, out.hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if math.IsNaN(v) {
			return derivedRange{}, false
		}
		out.lo, out.hi = math.Min(out.lo, v), math.Max(out.hi, v)
	}
	return out, true
}

// mapMonotone applies a non-decreasing f to a range.
func mapMonotone(x derivedRange, f func(float64) float64) derivedRange {
	x.lo, x.hi = f(x.lo), f(x.hi)
	return x
}
