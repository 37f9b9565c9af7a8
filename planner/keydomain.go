package planner

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/parser"
)

// Expression group keys (numeric histograms and CASE buckets).
//
// GROUP BY may name an expression of the row, not only a column. When the
// expression's possible values follow from the policy alone — the
// owner's declared bounds or public domains, and constants of the
// statement — the planner enumerates them, and the key is handled exactly
// as a column with a public domain: every value is output, empty bins
// included, and rows whose key falls outside the enumeration (values
// outside the declared bounds, NULLs) are dropped before measuring.
//
// Why it is private: the enumeration is computed from the statement and
// the catalog, never from the data, so which groups appear reveals
// nothing; each row still lands in at most one group, so the cells'
// sensitivities are those of a public-domain GROUP BY. A superset of the
// values the expression can take is harmless (its extra bins are empty
// whatever the data); a value the expression can take but the enumeration
// lacks only drops rows.
//
// The forms enumerated:
//
//	FLOOR(c / w) [* m]   c a column with declared bounds (lo, hi), w > 0
//	                     and m constants: the integers k from floor(lo/w)
//	                     to floor(hi/w) (and trunc(hi/w), SQLite's
//	                     integer division of integers), times m
//	m * FLOOR(c / w)     the same
//	FLOOR(c) [* m], CEIL(c / w) [* m], ROUND(c) [* m]   likewise
//	CASE ... THEN v1 ... [ELSE vn] END   the distinct non-NULL constants v
//
// Anything else needs OPTIONS (delta = D): its groups are then chosen by
// partition selection, as for a column without a domain.

// maxKeyDomain caps the values one expression key may enumerate: the
// backend statement lists them (CASE ... WHEN v THEN i), so a key of
// millions of bins would make a statement of millions of terms.
const maxKeyDomain = 10_000

// keyDomain enumerates the values of a GROUP BY expression from the
// policy alone; ok is false when it cannot (then err says why, for the
// refusal, or is nil).
func (b *builder) keyDomain(e parser.Expr) (dom []any, ok bool, err error) {
	e = parser.Unparen(e)
	switch x := e.(type) {
	case *parser.CaseExpr:
		return caseDomain(x)
	case *parser.BinaryExpr:
		if x.Op != "*" {
			return nil, false, nil
		}
		for _, pair := range [][2]parser.Expr{{x.X, x.Y}, {x.Y, x.X}} {
			m, isConst := numericConstant(pair[1])
			if !isConst {
				continue
			}
			steps, ok, err := b.stepDomain(pair[0])
			if err != nil || !ok {
				return nil, false, err
			}
			for i, k := range steps {
				steps[i] = scaled(k, m)
			}
			return steps, true, nil
		}
	case *parser.CallExpr:
		return b.stepDomain(x)
	}
	return nil, false, nil
}

// stepDomain enumerates FLOOR(c / w), FLOOR(c), CEIL(c / w), CEIL(c) and
// ROUND(c) for a column c with declared bounds, as int64 values.
func (b *builder) stepDomain(e parser.Expr) ([]any, bool, error) {
	call, isCall := parser.Unparen(e).(*parser.CallExpr)
	if !isCall || len(call.Args) == 0 || (call.Name != "FLOOR" && call.Name != "CEIL" && call.Name != "CEILING" && call.Name != "ROUND") {
		return nil, false, nil
	}
	if call.Name == "ROUND" && len(call.Args) == 2 {
		if d, isConst := numericConstant(call.Args[1]); !isConst || d != 0 {
			return nil, false, nil // SQLite rounds to digits ≥ 0 only
		}
	}
	arg := parser.Unparen(call.Args[0])
	width := 1.0
	if div, isDiv := arg.(*parser.BinaryExpr); isDiv && div.Op == "/" && call.Name != "ROUND" {
		w, isConst := numericConstant(div.Y)
		if !isConst || !(w > 0) || math.IsInf(w, 0) {
			return nil, false, nil
		}
		arg, width = parser.Unparen(div.X), w
	}
	ref, isRef := arg.(*parser.ColumnRef)
	if !isRef {
		return nil, false, nil
	}
	col, err := b.column(ref)
	if err != nil {
		return nil, false, err
	}
	if col.bounds == nil {
		return nil, false, nil
	}
	// c/w is monotonic in c, so over c in [Lo, Hi] it stays in [Lo/w,
	// Hi/w] (the same IEEE division SQLite does). SQLite divides two
	// integers by truncating toward 0, which the range must cover too:
	// trunc lies between floor and ceil.
	l, h := col.bounds.Lo/width, col.bounds.Hi/width
	var lo, hi float64
	switch call.Name {
	case "FLOOR":
		lo, hi = math.Floor(l), math.Max(math.Floor(h), math.Trunc(h))
	case "CEIL", "CEILING":
		lo, hi = math.Min(math.Ceil(l), math.Trunc(l)), math.Ceil(h)
	case "ROUND":
		lo, hi = math.Round(l), math.Round(h) // half away from zero, as SQLite
	}
	if n := hi - lo + 1; n > maxKeyDomain || math.IsNaN(n) {
		return nil, false, errorf(call.NamePos, ErrUnsupported,
			"GROUP BY %s would enumerate %.0f bins over the declared bounds (%g, %g) of %q; at most %d are allowed: use wider bins",
			parser.Format(e), n, col.bounds.Lo, col.bounds.Hi, col.name, maxKeyDomain)
	}
	var dom []any
	for k := lo; k <= hi; k++ {
		dom = append(dom, int64(k))
	}
	return dom, true, nil
}

// caseDomain enumerates a CASE whose results are all constants.
func caseDomain(x *parser.CaseExpr) ([]any, bool, error) {
	results := make([]parser.Expr, 0, len(x.Whens)+1)
	for _, w := range x.Whens {
		results = append(results, w.Result)
	}
	if x.Else != nil {
		results = append(results, x.Else)
	}
	var dom []any
	seen := map[string]bool{}
	for _, r := range results {
		v, err := parser.LiteralValue(r)
		if err != nil {
			return nil, false, nil
		}
		if v == nil {
			continue // a NULL key is dropped, as for a column
		}
		if b, isBool := v.(bool); isBool {
			v = map[bool]int64{false: 0, true: 1}[b]
		}
		if f, isFloat := v.(float64); isFloat && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			v = int64(f) // 2.0 and 2 are one group, as SQLite compares them
		}
		k := fmt.Sprintf("%T:%v", v, v)
		if !seen[k] {
			seen[k] = true
			dom = append(dom, v)
		}
	}
	return dom, len(dom) > 0, nil
}

// scaled is k·m as the backend computes it: an integer when m is one,
// else a float.
func scaled(k any, m float64) any {
	n := k.(int64)
	if m == math.Trunc(m) && math.Abs(m) < 1<<31 && math.Abs(float64(n)) < 1<<31 {
		return n * int64(m)
	}
	return float64(n) * m
}

// numericConstant is the value of a finite numeric constant expression.
func numericConstant(e parser.Expr) (float64, bool) {
	v, err := parser.NumberValue(e)
	return v, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
}
