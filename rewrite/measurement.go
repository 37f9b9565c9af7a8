package rewrite

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/measure"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// measurement makes the scan's measurement plan, or says why there is
// none: the first part of the scan that is not one of the plain forms.
func measurement(q *planner.PrivateQuery, specs []measure.Spec, argExprs []parser.Expr) (*measure.Plan, string) {
	j := q.Joined
	switch {
	case j == nil && q.NotJoined != "":
		return nil, q.NotJoined
	case j == nil:
		return nil, "the scan reads a subquery or a WITH query"
	}
	m := &measure.Plan{Table: j.Tables[0], Joins: j.Tables[1:], Specs: specs}
	for _, e := range j.On {
		m.On = append(m.On, [2]measure.Col{planColumn(e[0]), planColumn(e[1])})
	}
	for _, c := range j.Compare {
		m.Compare = append(m.Compare, measure.JoinCompare{X: planColumn(c.X), Op: c.Op, Y: planColumn(c.Y)})
	}
	if j.PerUnit != nil {
		g, why := grouping(q, j)
		if g == nil {
			return nil, why
		}
		m.PerUnit = g
		m.Unit, m.MaxGroups, m.MaxRows = measure.Output(len(g.Outputs)-1), q.Unit.MaxGroups, q.Unit.MaxRows
		m.Dropped = q.Dropped != nil
	} else if q.UnitSQL != "" {
		if j.Unit.Ref == 0 {
			return nil, "the privacy unit is not a column of the table, nor a row identity the engine holding it has"
		}
		m.Unit = planColumn(j.Unit)
		if j.Unit.Column == "" {
			m.Unit = measure.RowIdentity(j.Unit.Ref - 1)
		}
		m.MaxGroups, m.MaxRows = q.Unit.MaxGroups, q.Unit.MaxRows
		m.Dropped = q.Dropped != nil
	}
	for _, k := range q.Keys {
		key, why := keyOf(q, k)
		if why != "" {
			return nil, why
		}
		m.Keys = append(m.Keys, key)
	}
	for i, e := range argExprs {
		col, ok := columnOf(q, e)
		if !ok {
			c, ok := caseOf(q, e)
			if !ok {
				o, isOperand := operandOf(q, e)
				if !isOperand || !o.Column.IsZero() || (o.Arith == nil && o.Value == nil) {
					return nil, "an aggregate's argument is an expression (" + parser.Format(e) + ")"
				}
				c = &measure.Case{Else: o} // arithmetic, or a number
			}
			if m.Cases == nil {
				m.Cases = map[int]*measure.Case{}
			}
			m.Cases[i] = c
		}
		m.Args = append(m.Args, col)
	}
	if where := and(j.Where, q.Where); where != nil {
		f, ok := filterOf(q, where)
		if !ok {
			return nil, "the WHERE clause has an expression the plan does not cover (it covers comparisons of a column or of arithmetic with a literal, IN lists, BETWEEN, LIKE, IS NULL, AND, OR and NOT)"
		}
		m.Where = f
	}
	return m, ""
}

// truthKeyOf translates a key that is a condition (age > 40, s LIKE
// 'a%', x IS NULL): SQLite's 1 where it holds, 0 where it fails and NULL
// where it is unknown, as the CASE WHEN c THEN 1 WHEN NOT c THEN 0 END.
func truthKeyOf(q *planner.PrivateQuery, e parser.Expr) (*measure.Case, bool) {
	switch x := parser.Unparen(e).(type) {
	case *parser.BinaryExpr:
		switch x.Op {
		case "=", "<>", "<", "<=", ">", ">=", "AND", "OR":
		default:
			return nil, false
		}
	case *parser.UnaryExpr:
		if x.Op != "NOT" {
			return nil, false
		}
	case *parser.IsNullExpr, *parser.LikeExpr, *parser.BetweenExpr:
	case *parser.InExpr:
		if x.Sub != nil {
			return nil, false
		}
	default:
		return nil, false
	}
	f, ok := filterOf(q, e)
	if !ok {
		return nil, false
	}
	return &measure.Case{Whens: []measure.When{{Cond: f, Then: measure.Operand{Value: int64(1)}}, {Cond: measure.Not{X: f}, Then: measure.Operand{Value: int64(0)}}}}, true
}

// keyOf translates a GROUP BY key: a column (of the FROM clause, or a
// subquery's output or derived column), or an expression (exprKey); why
// says why not.
func keyOf(q *planner.PrivateQuery, k planner.GroupKey) (measure.Key, string) {
	switch {
	case k.Output > 0 && k.Expr == nil:
		return measure.Key{Column: measure.Output(k.Output - 1), Domain: k.Domain}, ""
	case k.Expr != nil:
		if key, ok := exprKey(q, k.Expr, k.Domain); ok {
			return key, ""
		}
		return measure.Key{}, "a GROUP BY key is an expression (" + k.Column + ")"
	case k.Derived != nil:
		if col, ok := columnOf(q, k.Derived); ok {
			return measure.Key{Column: col, Domain: k.Domain}, ""
		}
		if key, ok := exprKey(q, k.Derived, k.Domain); ok {
			return key, ""
		}
		return measure.Key{}, "a GROUP BY key is an expression (" + parser.Format(k.Derived) + ")"
	case k.Base == "":
		return measure.Key{}, "a GROUP BY key is an expression (" + k.Column + ")"
	}
	return measure.Key{Column: planColumn(planner.TableColumn{Ref: k.Ref, Column: k.Base}), Domain: k.Domain}, ""
}

// exprKey translates an expression key, in order: a CASE of constants,
// a bin (FLOOR or CEIL of a column), a condition (its 1, 0 or NULL), or
// any other expression arithOf reads, whose value is the key.
func exprKey(q *planner.PrivateQuery, e parser.Expr, domain []any) (measure.Key, bool) {
	if cs, ok := keyCaseOf(q, e); ok {
		return measure.Key{Domain: domain, Case: cs}, true
	}
	if c, bin, ok := binOf(q, e); ok {
		return measure.Key{Column: c, Domain: domain, Bin: bin}, true
	}
	if cs, ok := truthKeyOf(q, e); ok {
		return measure.Key{Domain: domain, Case: cs}, true
	}
	if a, ok := arithOf(q, e); ok && a.Op != 0 {
		return measure.Key{Domain: domain, Arith: a}, true
	}
	return measure.Key{}, false
}

// keyCaseOf translates a CASE key whose values are constants (numbers,
// strings, NULL; TRUE and FALSE as 1 and 0) and whose conditions are
// filters (filterOf) — searched, or CASE x WHEN v ... as x = v.
func keyCaseOf(q *planner.PrivateQuery, e parser.Expr) (*measure.Case, bool) {
	ce, ok := parser.Unparen(e).(*parser.CaseExpr)
	if !ok {
		return nil, false
	}
	return caseWith(q, ce, true, func(x parser.Expr) (measure.Operand, bool) {
		if l, ok := x.(*parser.Literal); ok && l.Kind == parser.NullLit {
			return measure.Operand{}, true
		}
		v, ok := literalOf(q, x)
		return measure.Operand{Value: v}, ok
	})
}

// caseWith translates a CASE: a searched one's conditions are filters, a
// simple one's (CASE x WHEN v ..., where simple allows it) x = v for
// literals v, as SQLite compares them; each value by value.
func caseWith(q *planner.PrivateQuery, ce *parser.CaseExpr, simple bool, value func(parser.Expr) (measure.Operand, bool)) (*measure.Case, bool) {
	if len(ce.Whens) == 0 || ce.Operand != nil && !simple {
		return nil, false
	}
	c := &measure.Case{}
	for _, w := range ce.Whens {
		var cond measure.Filter
		var ok bool
		if ce.Operand != nil {
			_, isLit := literalOf(q, w.Cond)
			cond, ok = compareOf(q, &parser.BinaryExpr{OpPos: ce.Pos(), Op: "=", X: ce.Operand, Y: w.Cond})
			ok = ok && isLit
		} else {
			cond, ok = filterOf(q, w.Cond)
		}
		then, ok2 := value(w.Result)
		if !ok || !ok2 {
			return nil, false
		}
		c.Whens = append(c.Whens, measure.When{Cond: cond, Then: then})
	}
	if ce.Else != nil {
		var ok bool
		if c.Else, ok = value(ce.Else); !ok {
			return nil, false
		}
	}
	return c, true
}

// binOf translates a binned key: FLOOR or CEIL (CEILING) of a column,
// or of a column divided by a positive number, optionally multiplied by
// a number on either side (the numeric histograms of keydomain.go).
func binOf(q *planner.PrivateQuery, e parser.Expr) (measure.Col, *measure.Bin, bool) {
	e = parser.Unparen(e)
	if b, ok := e.(*parser.BinaryExpr); ok && b.Op == "*" {
		for _, pair := range [][2]parser.Expr{{b.X, b.Y}, {b.Y, b.X}} {
			m, isNum := literalOf(q, pair[1])
			if _, isText := m.(string); !isNum || isText {
				continue
			}
			if col, bin, ok := binOf(q, pair[0]); ok && bin.Mul == nil {
				bin.Mul = m
				return col, bin, true
			}
		}
		return measure.Col{}, nil, false
	}
	call, ok := e.(*parser.CallExpr)
	if !ok || len(call.Args) != 1 || call.Distinct || call.Star || call.Over != nil || len(call.Named) > 0 {
		return measure.Col{}, nil, false
	}
	bin := &measure.Bin{}
	switch call.Name {
	case "FLOOR":
		bin.Func = "floor"
	case "CEIL", "CEILING":
		bin.Func = "ceil"
	default:
		return measure.Col{}, nil, false
	}
	arg := call.Args[0]
	arg = parser.Unparen(arg)
	if div, ok := arg.(*parser.BinaryExpr); ok && div.Op == "/" {
		w, isNum := literalOf(q, div.Y)
		switch x := w.(type) {
		case int64:
			isNum = isNum && x > 0
		case float64:
			isNum = isNum && x > 0
		default:
			isNum = false
		}
		if !isNum {
			return measure.Col{}, nil, false
		}
		bin.Div, arg = w, div.X
	}
	col, ok := columnOf(q, arg)
	return col, bin, ok
}

// grouping translates a subquery that aggregates per unit: its GROUP BY
// columns, its WHERE, and outputs that are grouped columns or COUNT, MIN
// or MAX of a column (the engines compute those exactly alike; SUM and
// AVG are floating-point sums in the reference, whose rounding another
// engine need not repeat). The unit is added as the last output.
func grouping(q *planner.PrivateQuery, j *planner.Joined) (*measure.Grouping, string) {
	g := &measure.Grouping{}
	grouped := map[measure.Col]bool{}
	for _, e := range j.PerUnit.By {
		col, ok := columnOf(q, e)
		if !ok {
			return nil, "the subquery groups by an expression (" + parser.Format(e) + ")"
		}
		g.By = append(g.By, col)
		grouped[col] = true
	}
	unit := planColumn(j.Unit)
	if j.Unit.Column == "" || !grouped[unit] {
		return nil, "the subquery's unit is not one of its GROUP BY columns"
	}
	for _, e := range j.PerUnit.Outputs {
		if col, ok := columnOf(q, e); ok && grouped[col] {
			g.Outputs = append(g.Outputs, measure.Aggregate{Column: col})
			continue
		}
		call, ok := e.(*parser.CallExpr)
		if !ok || call.Distinct && call.Name != "COUNT" || call.Over != nil || len(call.Named) > 0 || (call.Name != "COUNT" && call.Name != "MIN" && call.Name != "MAX") {
			return nil, "the subquery computes " + parser.Format(e) + " per unit (COUNT, COUNT(DISTINCT), MIN and MAX of columns are compiled)"
		}
		a := measure.Aggregate{Func: strings.ToLower(call.Name)}
		if call.Distinct {
			a.Func = "count_distinct"
		}
		if !call.Star {
			if len(call.Args) != 1 {
				return nil, "the subquery computes " + parser.Format(e) + " per unit"
			}
			if a.Column, ok = columnOf(q, call.Args[0]); !ok {
				return nil, "the subquery aggregates an expression per unit (" + parser.Format(e) + ")"
			}
		} else if a.Func != "count" {
			return nil, "the subquery computes " + parser.Format(e) + " per unit"
		}
		g.Outputs = append(g.Outputs, a)
	}
	if j.PerUnit.Where != nil {
		f, ok := filterOf(q, j.PerUnit.Where)
		if !ok {
			return nil, "the subquery's WHERE clause has an expression the plan does not cover"
		}
		g.Where = f
	}
	g.Outputs = append(g.Outputs, measure.Aggregate{Column: unit})
	return g, ""
}

// caseOf translates a searched CASE whose conditions are filters (filterOf)
// and whose values are columns, numbers or NULL.
func caseOf(q *planner.PrivateQuery, e parser.Expr) (*measure.Case, bool) {
	if x, ok := q.DerivedExpr(e); ok {
		return caseOf(q, x)
	}
	if p, ok := e.(*parser.ParenExpr); ok {
		return caseOf(q, p.X)
	}
	if call, ok := e.(*parser.CallExpr); ok {
		return callCase(q, call)
	}
	ce, ok := e.(*parser.CaseExpr)
	if !ok {
		return nil, false
	}
	return caseWith(q, ce, false, func(x parser.Expr) (measure.Operand, bool) { return operandOf(q, x) })
}

// callCase translates the conditional functions as the CASE they are:
// COALESCE(c1, ..., v) and IFNULL(c, v) over columns (the last argument
// any operand), NULLIF(c, literal), and IF(cond, a, b) (IIF).
func callCase(q *planner.PrivateQuery, call *parser.CallExpr) (*measure.Case, bool) {
	if call.Distinct || call.Star || call.Over != nil || len(call.Named) > 0 || len(call.Args) < 2 {
		return nil, false
	}
	args := call.Args
	switch call.Name {
	case "COALESCE", "IFNULL":
		c := &measure.Case{}
		for _, a := range args[:len(args)-1] {
			col, ok := columnOf(q, a)
			if !ok {
				return nil, false
			}
			c.Whens = append(c.Whens, measure.When{Cond: measure.IsNull{Column: col, Not: true}, Then: measure.Operand{Column: col}})
		}
		var ok bool
		c.Else, ok = operandOf(q, args[len(args)-1])
		return c, ok
	case "NULLIF":
		col, ok1 := columnOf(q, args[0])
		v, ok2 := literalOf(q, args[1])
		if !ok1 || !ok2 {
			return nil, false
		}
		return &measure.Case{Whens: []measure.When{{Cond: measure.Compare{Column: col, Op: "=", Value: v}}}, Else: measure.Operand{Column: col}}, true
	case "IF", "IIF":
		if len(args) != 3 {
			return nil, false
		}
		cond, ok1 := filterOf(q, args[0])
		then, ok2 := operandOf(q, args[1])
		els, ok3 := operandOf(q, args[2])
		if !ok1 || !ok2 || !ok3 {
			return nil, false
		}
		return &measure.Case{Whens: []measure.When{{Cond: cond, Then: then}}, Else: els}, true
	}
	return nil, false
}

// operandOf reads a CASE's value: a base column, a number, or NULL.
func operandOf(q *planner.PrivateQuery, e parser.Expr) (measure.Operand, bool) {
	if x, ok := q.DerivedExpr(e); ok {
		return operandOf(q, x)
	}
	if col, ok := columnOf(q, e); ok {
		return measure.Operand{Column: col}, true
	}
	if l, ok := e.(*parser.Literal); ok && l.Kind == parser.NullLit {
		return measure.Operand{}, true
	}
	if a, ok := arithOf(q, e); ok && a.Op != 0 {
		return measure.Operand{Arith: a}, true
	}
	switch v, ok := literalOf(q, e); v.(type) {
	case int64, float64:
		return measure.Operand{Value: v}, ok
	}
	return measure.Operand{}, false
}

// filterOf translates a WHERE expression made only of comparisons of a
// column with a literal, IS [NOT] NULL, [NOT] IN lists of literals,
// [NOT] BETWEEN literals, [NOT] LIKE a constant pattern, AND, OR, NOT
// and parentheses.
func filterOf(q *planner.PrivateQuery, e parser.Expr) (measure.Filter, bool) {
	if x, ok := q.DerivedExpr(e); ok {
		return filterOf(q, x)
	}
	if q.Fold != nil && columnFree(e) {
		// A condition the same for every row (-1 IS NOT NULL, 'a' < 'b'):
		// its truth value as the reference has it.
		v, ok := q.Fold(e, true)
		if !ok {
			return nil, false
		}
		t, known := v.(int64)
		return measure.Truth{Known: known, Value: t == 1}, true
	}
	switch e := e.(type) {
	case *parser.ParenExpr:
		return filterOf(q, e.X)
	case *parser.UnaryExpr:
		if e.Op != "NOT" {
			return nil, false
		}
		x, ok := filterOf(q, e.X)
		return measure.Not{X: x}, ok
	case *parser.BinaryExpr:
		switch e.Op {
		case "AND", "OR":
			x, ok1 := filterOf(q, e.X)
			y, ok2 := filterOf(q, e.Y)
			if !ok1 || !ok2 {
				return nil, false
			}
			if e.Op == "AND" {
				return measure.And{Parts: []measure.Filter{x, y}}, true
			}
			return measure.Or{Parts: []measure.Filter{x, y}}, true
		case "=", "<>", "<", "<=", ">", ">=":
			if f, ok := coalesceCompare(q, e.X, e.Op, e.Y); ok {
				return f, true
			}
			if f, ok := coalesceCompare(q, e.Y, flipped[e.Op], e.X); ok {
				return f, true
			}
			return compareOf(q, e)
		}
	case *parser.IsNullExpr:
		if col, ok := columnOf(q, e.X); ok {
			return measure.IsNull{Column: col, Not: e.Not}, true
		}
		a, ok := arithOf(q, e.X)
		return measure.IsNull{Arith: a, Not: e.Not}, ok && a.Op != 0
	case *parser.LikeExpr:
		col, ok := columnOf(q, e.X)
		v, isLit := literalOf(q, e.Pattern)
		pattern, isText := v.(string)
		return measure.Like{Column: col, Pattern: pattern, Not: e.Not}, ok && isLit && isText
	case *parser.InExpr:
		col, ok := columnOf(q, e.X)
		if !ok && e.Sub == nil && len(e.List) > 0 {
			return inOf(q, e)
		}
		if !ok || e.Sub != nil || len(e.List) == 0 {
			return nil, false
		}
		in := measure.In{Column: col, Not: e.Not}
		for _, x := range e.List {
			v, ok := literalOf(q, x)
			if !ok {
				return nil, false
			}
			in.Values = append(in.Values, v)
		}
		return in, true
	case *parser.BetweenExpr:
		col, ok := columnOf(q, e.X)
		lo, ok1 := literalOf(q, e.Lo)
		hi, ok2 := literalOf(q, e.Hi)
		if !ok || !ok1 || !ok2 {
			return nil, false
		}
		var f measure.Filter = measure.And{Parts: []measure.Filter{measure.Compare{Column: col, Op: ">=", Value: lo}, measure.Compare{Column: col, Op: "<=", Value: hi}}}
		if e.Not {
			f = measure.Not{X: f}
		}
		return f, true
	}
	return nil, false
}

// compareOf translates a comparison x op y: of a column or an
// expression (arithOf) with a literal, or of two expressions.
func compareOf(q *planner.PrivateQuery, e *parser.BinaryExpr) (measure.Filter, bool) {
	if col, ok := columnOf(q, e.X); ok {
		if v, ok := literalOf(q, e.Y); ok {
			return measure.Compare{Column: col, Op: e.Op, Value: v}, true
		}
	}
	if col, ok := columnOf(q, e.Y); ok {
		if v, ok := literalOf(q, e.X); ok {
			return measure.Compare{Column: col, Op: flipped[e.Op], Value: v}, true
		}
	}
	x, okX := arithOf(q, e.X)
	y, okY := arithOf(q, e.Y)
	if okX {
		if v, ok := literalOf(q, e.Y); ok {
			return measure.Compare{Arith: x, Op: e.Op, Value: v}, true
		}
	}
	if okY {
		if v, ok := literalOf(q, e.X); ok {
			return measure.Compare{Arith: y, Op: flipped[e.Op], Value: v}, true
		}
	}
	if okX && okY && (x.Op != 0 || !x.Column.IsZero()) && (y.Op != 0 || !y.Column.IsZero()) {
		return measure.Compare{Arith: x, Op: e.Op, Right: y}, true
	}
	return nil, false
}

// inOf translates x IN (v1, ...) of an expression x as x = v1 OR ...
// (NOT: NOT of that), which SQL's three values make the same for
// literals v.
func inOf(q *planner.PrivateQuery, e *parser.InExpr) (measure.Filter, bool) {
	a, ok := arithOf(q, e.X)
	if !ok || a.Op == 0 {
		return nil, false
	}
	var or measure.Or
	for _, x := range e.List {
		v, ok := literalOf(q, x)
		if !ok || v == nil {
			return nil, false
		}
		or.Parts = append(or.Parts, measure.Compare{Arith: a, Op: "=", Value: v})
	}
	if e.Not {
		return measure.Not{X: or}, true
	}
	return or, true
}

// constArith is a constant of arithmetic: a number, or text (which only
// the text functions and COALESCE take).
func constArith(v any) (*measure.Arith, bool) {
	switch v := v.(type) {
	case int64:
		return &measure.Arith{Const: v}, true
	case float64:
		return &measure.Arith{Float: v, IsFloat: true}, true
	case string:
		return &measure.Arith{Text: v, IsText: true}, true
	}
	return nil, false
}

// arithOf translates arithmetic of columns and numeric literals with +,
// - (binary and unary), *, / by a non-zero constant, ABS, FLOOR, CEIL
// and ROUND (of one argument); the compiler decides from the columns' types whether it is exact
// (measuresql).
func arithOf(q *planner.PrivateQuery, e parser.Expr) (*measure.Arith, bool) {
	if x, ok := q.DerivedExpr(e); ok {
		return arithOf(q, x)
	}
	if _, isCall := e.(*parser.CallExpr); isCall && columnFree(e) {
		// A column-free call (ABS('%'), LENGTH('abc')): the reference's
		// value, computed by the engine (literalOf), not compiled.
		v, ok := literalOf(q, e)
		if !ok {
			return nil, false
		}
		return constArith(v)
	}
	switch e := e.(type) {
	case *parser.ParenExpr:
		return arithOf(q, e.X)
	case *parser.UnaryExpr:
		if e.Op != "-" {
			return nil, false
		}
		if v, ok := literalOf(q, e); ok {
			return constArith(v)
		}
		x, ok := arithOf(q, e.X)
		return &measure.Arith{Op: '-', X: &measure.Arith{}, Y: x}, ok
	case *parser.BinaryExpr:
		if e.Op != "+" && e.Op != "-" && e.Op != "*" && e.Op != "/" && e.Op != "%" {
			return nil, false
		}
		x, ok1 := arithOf(q, e.X)
		y, ok2 := arithOf(q, e.Y)
		if (e.Op == "/" || e.Op == "%") && !nonZeroConst(y) {
			return nil, false // SQLite's NULL for a division by 0: not compiled
		}
		return &measure.Arith{Op: e.Op[0], X: x, Y: y}, ok1 && ok2
	case *parser.CastExpr:
		x, ok := arithOf(q, e.X)
		switch e.Type {
		case "INTEGER":
			return &measure.Arith{Op: 'i', X: x}, ok
		case "INT64":
			// BigQuery's INT64 rounds a double half away from zero
			// (planner/render.go: CAST(ROUND(x) AS INTEGER) of a real).
			return &measure.Arith{Op: 'i', X: &measure.Arith{Op: 'r', X: x}}, ok
		case "REAL", "FLOAT64", "DOUBLE":
			return &measure.Arith{Op: 'R', X: x}, ok
		}
		return nil, false
	case *parser.Literal, *parser.Placeholder:
		v, ok := literalOf(q, e)
		if !ok {
			return nil, false
		}
		return constArith(v)
	case *parser.CallExpr:
		return callArith(q, e)
	case *parser.CaseExpr:
		c, ok := exprCaseOf(q, e)
		return &measure.Arith{Op: 'K', Case: c}, ok
	}
	if col, ok := columnOf(q, e); ok {
		return &measure.Arith{Column: col}, true
	}
	return nil, false
}

// exprCaseOf translates a CASE among expressions (arithOf): searched,
// whose conditions are filters, or simple (CASE x WHEN v ...: x = v, as
// SQLite compares them), whose values are literals (text too), NULL or
// expressions.
func exprCaseOf(q *planner.PrivateQuery, ce *parser.CaseExpr) (*measure.Case, bool) {
	return caseWith(q, ce, true, func(x parser.Expr) (measure.Operand, bool) { return exprOperand(q, x) })
}

// exprOperand reads a value of exprCaseOf's CASE: NULL, a literal (a
// number or a string), or an expression.
func exprOperand(q *planner.PrivateQuery, e parser.Expr) (measure.Operand, bool) {
	if v, ok := literalOf(q, e); ok {
		return measure.Operand{Value: v}, true // nil: NULL
	}
	a, ok := arithOf(q, e)
	return measure.Operand{Arith: a}, ok
}

// callArith translates the scalar functions of arithOf: COALESCE and
// IFNULL of two arguments, ABS, FLOOR,
// CEIL (CEILING), ROUND of one argument or with digits n <= 0 (SQLite
// takes a negative n as 0), LENGTH, UPPER, LOWER, TRIM, and SUBSTR
// from a positive constant position, of a non-negative
// constant length or to the end.
func callArith(q *planner.PrivateQuery, e *parser.CallExpr) (*measure.Arith, bool) {
	op, known := map[string]byte{"ABS": 'a', "FLOOR": 'f', "CEIL": 'c', "CEILING": 'c', "ROUND": 'r',
		"LENGTH": 'L', "UPPER": 'U', "LOWER": 'W', "TRIM": 'T', "SUBSTR": 'S', "COALESCE": 'C', "IFNULL": 'C'}[e.Name]
	if !known || len(e.Args) == 0 || e.Distinct || e.Star || e.Over != nil || len(e.Named) > 0 {
		return nil, false
	}
	x, ok := arithOf(q, e.Args[0])
	a := &measure.Arith{Op: op, X: x}
	constant := func(i int) (int64, bool) {
		v, ok := literalOf(q, e.Args[i])
		n, isInt := v.(int64)
		return n, ok && isInt
	}
	switch {
	case len(e.Args) == 1 && op != 'S' && op != 'C':
		return a, ok
	case op == 'C' && len(e.Args) == 2:
		y, ok2 := arithOf(q, e.Args[1])
		a.Y = y
		return a, ok && ok2
	case op == 'r' && len(e.Args) == 2:
		n, isConst := constant(1)
		return a, ok && isConst && n <= 0 // ROUND(x, n > 0) prints decimals: not compiled
	case op == 'S' && (len(e.Args) == 2 || len(e.Args) == 3):
		from, ok1 := constant(1)
		a.From, a.Len = from, -1
		ok2 := true
		if len(e.Args) == 3 {
			a.Len, ok2 = constant(2)
			ok2 = ok2 && a.Len >= 0
		}
		return a, ok && ok1 && ok2 && from >= 1
	}
	return nil, false
}

// coalesceCompare translates COALESCE(x, c) op v (or IFNULL) for a
// column x of numeric affinity and numbers c and v: x op v where x is
// not NULL, and c op v — a truth the reference computes (filterOf's
// column-free conditions) — where it is. SQLite compares x with a number
// as it compares the expression COALESCE(x, c) with it (numeric affinity
// converts no number; a text column would convert v, the expression not:
// not translated).
func coalesceCompare(q *planner.PrivateQuery, e parser.Expr, op string, v parser.Expr) (measure.Filter, bool) {
	call, isCall := parser.Unparen(e).(*parser.CallExpr)
	if !isCall || (call.Name != "COALESCE" && call.Name != "IFNULL") || len(call.Args) != 2 || call.Distinct || call.Star || call.Over != nil || len(call.Named) > 0 {
		return nil, false
	}
	x, c := call.Args[0], call.Args[1]
	col, isCol := columnOf(q, x)
	_, cNumber := numberOf(q, c)
	vv, vNumber := numberOf(q, v)
	if !isCol || !q.NumericColumn(x) || !columnFree(c) || !cNumber || !vNumber {
		return nil, false
	}
	truth, ok := filterOf(q, &parser.BinaryExpr{OpPos: call.Pos(), Op: op, X: c, Y: v})
	if !ok {
		return nil, false
	}
	return measure.Or{Parts: []measure.Filter{
		measure.And{Parts: []measure.Filter{measure.IsNull{Column: col, Not: true}, measure.Compare{Column: col, Op: op, Value: vv}}},
		measure.And{Parts: []measure.Filter{measure.IsNull{Column: col}, truth}},
	}}, true
}

// numberOf reads a numeric literal: an int64 or a float64.
func numberOf(q *planner.PrivateQuery, e parser.Expr) (any, bool) {
	v, ok := literalOf(q, e)
	switch v.(type) {
	case int64, float64:
		return v, ok
	}
	return nil, false
}

// nonZeroConst reports whether a is a constant other than 0.
func nonZeroConst(a *measure.Arith) bool {
	return a != nil && a.Op == 0 && a.Column.IsZero() && (a.IsFloat && a.Float != 0 || !a.IsFloat && a.Const != 0)
}

// planColumn names a column of the FROM clause as the plan does
// (measure.Column; Joined counts tables from 1).
func planColumn(tc planner.TableColumn) measure.Col { return measure.Column(tc.Ref-1, tc.Column) }

// columnOf is the plan's name of the stored column e reads, when e is a
// plain reference to one.
func columnOf(q *planner.PrivateQuery, e parser.Expr) (measure.Col, bool) {
	if i, ok := q.DerivedOutput(e); ok {
		return measure.Output(i), true
	}
	if x, ok := q.DerivedExpr(e); ok {
		return columnOf(q, x)
	}
	tc, ok := q.TableColumnOf(e)
	if !ok || tc.Ref < 1 {
		return measure.Col{}, false
	}
	return planColumn(tc), true
}

// and joins two optional filters.
func and(x, y parser.Expr) parser.Expr {
	switch {
	case x == nil:
		return y
	case y == nil:
		return x
	}
	return &parser.BinaryExpr{Op: "AND", X: &parser.ParenExpr{X: x}, Y: &parser.ParenExpr{X: y}}
}

var flipped = map[string]string{"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// literalValue reads a numeric or string literal (a bound placeholder,
// a negated number): an int64, a finite float64 or a string.
// literalOf is a constant's value: a literal (literalValue), or a
// column-free expression the reference evaluates (q.Fold: LENGTH('abc'),
// -(1 + 2), PI()), which reads no data.
func literalOf(q *planner.PrivateQuery, e parser.Expr) (any, bool) {
	if v, ok := literalValue(e); ok {
		return v, true
	}
	if q.Fold == nil || !columnFree(e) {
		return nil, false
	}
	if _, ok := parser.Unparen(e).(*parser.CastExpr); ok {
		return nil, false // a CAST has a type affinity, which a literal has not
	}
	return q.Fold(e, false)
}

// columnFree reports whether e reads no row: no column, subquery,
// aggregate, window or random number, and every parameter bound.
func columnFree(e parser.Expr) bool {
	free := true
	parser.Walk(e, func(x parser.Expr) bool {
		switch x := x.(type) {
		case *parser.ColumnRef, *parser.SubqueryExpr:
			free = false
		case *parser.Placeholder:
			free = free && x.Value != nil
		case *parser.InExpr:
			free = free && x.Sub == nil
		case *parser.CallExpr:
			free = free && x.Over == nil && !x.Star && !parser.IsAggregate(x) && x.Name != "RAND"
		}
		return free
	})
	return free
}

func literalValue(e parser.Expr) (any, bool) {
	switch e := e.(type) {
	case *parser.ParenExpr:
		return literalValue(e.X)
	case *parser.Placeholder:
		if e.Value == nil {
			return nil, false
		}
		return literalValue(e.Value)
	case *parser.UnaryExpr:
		if e.Op != "-" {
			return nil, false
		}
		switch v, ok := literalValue(e.X); x := v.(type) {
		case int64:
			if !ok || x == math.MinInt64 {
				return nil, false
			}
			return -x, true
		case float64:
			return -x, ok
		}
		return nil, false
	case *parser.Literal:
		switch e.Kind {
		case parser.IntLit:
			v, err := strconv.ParseInt(e.Raw, 10, 64)
			if errors.Is(err, strconv.ErrRange) && strings.Trim(e.Raw, "0123456789") == "" {
				// Decimal digits beyond int64 are a REAL in SQLite, as here
				// (−9223372036854775808, an INTEGER there, is the same
				// number: a double holds it exactly).
				f, err := strconv.ParseFloat(e.Raw, 64)
				return f, err == nil && !math.IsInf(f, 0)
			}
			return v, err == nil
		case parser.FloatLit:
			v, err := strconv.ParseFloat(e.Raw, 64)
			return v, err == nil && !math.IsInf(v, 0)
		case parser.StringLit:
			return e.Raw, true
		case parser.BoolLit:
			// SQLite's TRUE and FALSE are the integers 1 and 0.
			if strings.EqualFold(e.Raw, "TRUE") {
				return int64(1), true
			}
			return int64(0), true
		}
	}
	return nil, false
}
