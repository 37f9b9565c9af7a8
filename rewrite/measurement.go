package rewrite

import (
	"math"
	"strconv"

	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// Measurement is a scan's measurement plan, backend-neutral: what each
// group needs, over one stored table, in terms a dialect printer
// (package measuresql) compiles into one statement that the engine
// holding the table runs, returning only per-group measurements. It is
// made when the scan reads exactly one private table (no join, no
// subquery) and every expression it evaluates is a plain column, a
// literal, or a filter of the forms below; otherwise Rewritten.Measurement
// is nil and the scan runs through the measurement aggregate (the
// reference evaluator) only. Whether a Measurement exists depends on the
// plan and the schema, never on rows.
type Measurement struct {
	// Table is the table's canonical name.
	Table string
	// Unit is its privacy-unit column ("": each row its own unit, no
	// bounding). MaxGroups (l0) and MaxRows (l∞) bound each unit then.
	Unit               string
	MaxGroups, MaxRows int64
	// Keys are the group keys, in the order of the scan's key arguments.
	Keys []MeasureKey
	// Where is the scan's filter (nil: none).
	Where Filter
	// Args are the measured columns; a spec's argument i is Args[i].
	Args []string
	// Specs are the measurements, as Rewritten.Measured.
	Specs []string
}

// MeasureKey is a group key: a column and its public domain (a row's
// key is the position of the first domain value its column equals, as
// SQLite compares them; rows matching none are dropped), or with a nil
// Domain the column's value itself (partition selection).
type MeasureKey struct {
	Column string
	Domain []any
}

// Filter is a filter on rows: And, Or, Not, Compare, IsNull or In.
type Filter interface{ filter() }

// And holds when every part holds (SQL's three-valued AND).
type And struct{ Parts []Filter }

// Or holds when some part holds.
type Or struct{ Parts []Filter }

// Not negates X (NULL stays NULL).
type Not struct{ X Filter }

// Compare is Column Op Value, Op one of = <> < <= > >=, Value an int64,
// a float64 or a string.
type Compare struct {
	Column string
	Op     string
	Value  any
}

// IsNull is Column IS NULL (IS NOT NULL with Not).
type IsNull struct {
	Column string
	Not    bool
}

// In is Column IN (Values) (NOT IN with Not); Values as Compare's.
type In struct {
	Column string
	Values []any
	Not    bool
}

func (And) filter()     {}
func (Or) filter()      {}
func (Not) filter()     {}
func (Compare) filter() {}
func (IsNull) filter()  {}
func (In) filter()      {}

// measurement makes the scan's Measurement, or nil when some part of it
// is not one of the plain forms.
func measurement(q *planner.PrivateQuery, specs []string, argExprs []parser.Expr) *Measurement {
	if q.BaseTable == "" || q.TableRefs != 1 || q.WeightSQL != "" {
		return nil
	}
	m := &Measurement{Table: q.BaseTable, Specs: specs}
	if q.UnitSQL != "" {
		if q.UnitColumn == "" {
			return nil
		}
		m.Unit, m.MaxGroups, m.MaxRows = q.UnitColumn, q.Unit.MaxGroups, q.Unit.MaxRows
	}
	for _, k := range q.Keys {
		if k.Base == "" || k.Expr != nil {
			return nil
		}
		m.Keys = append(m.Keys, MeasureKey{Column: k.Base, Domain: k.Domain})
	}
	for _, e := range argExprs {
		col, ok := q.BaseColumn(e)
		if !ok {
			return nil
		}
		m.Args = append(m.Args, col)
	}
	if q.Where != nil {
		f, ok := filterOf(q, q.Where)
		if !ok {
			return nil
		}
		m.Where = f
	}
	return m
}

// filterOf translates a WHERE expression made only of comparisons of a
// column with a literal, IS [NOT] NULL, [NOT] IN lists of literals,
// [NOT] BETWEEN literals, AND, OR, NOT and parentheses.
func filterOf(q *planner.PrivateQuery, e parser.Expr) (Filter, bool) {
	switch e := e.(type) {
	case *parser.ParenExpr:
		return filterOf(q, e.X)
	case *parser.UnaryExpr:
		if e.Op != "NOT" {
			return nil, false
		}
		x, ok := filterOf(q, e.X)
		return Not{X: x}, ok
	case *parser.BinaryExpr:
		switch e.Op {
		case "AND", "OR":
			x, ok1 := filterOf(q, e.X)
			y, ok2 := filterOf(q, e.Y)
			if !ok1 || !ok2 {
				return nil, false
			}
			if e.Op == "AND" {
				return And{Parts: []Filter{x, y}}, true
			}
			return Or{Parts: []Filter{x, y}}, true
		case "=", "<>", "<", "<=", ">", ">=":
			if col, ok := q.BaseColumn(e.X); ok {
				v, ok := literalValue(e.Y)
				return Compare{Column: col, Op: e.Op, Value: v}, ok
			}
			if col, ok := q.BaseColumn(e.Y); ok {
				v, ok := literalValue(e.X)
				return Compare{Column: col, Op: flipped[e.Op], Value: v}, ok
			}
		}
	case *parser.IsNullExpr:
		col, ok := q.BaseColumn(e.X)
		return IsNull{Column: col, Not: e.Not}, ok
	case *parser.InExpr:
		col, ok := q.BaseColumn(e.X)
		if !ok || e.Sub != nil || len(e.List) == 0 {
			return nil, false
		}
		in := In{Column: col, Not: e.Not}
		for _, x := range e.List {
			v, ok := literalValue(x)
			if !ok {
				return nil, false
			}
			in.Values = append(in.Values, v)
		}
		return in, true
	case *parser.BetweenExpr:
		col, ok := q.BaseColumn(e.X)
		lo, ok1 := literalValue(e.Lo)
		hi, ok2 := literalValue(e.Hi)
		if !ok || !ok1 || !ok2 {
			return nil, false
		}
		var f Filter = And{Parts: []Filter{Compare{Column: col, Op: ">=", Value: lo}, Compare{Column: col, Op: "<=", Value: hi}}}
		if e.Not {
			f = Not{X: f}
		}
		return f, true
	}
	return nil, false
}

var flipped = map[string]string{"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

// literalValue reads a numeric or string literal (a bound placeholder,
// a negated number): an int64, a finite float64 or a string.
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
			return v, err == nil
		case parser.FloatLit:
			v, err := strconv.ParseFloat(e.Raw, 64)
			return v, err == nil && !math.IsInf(v, 0)
		case parser.StringLit:
			return e.Raw, true
		}
	}
	return nil, false
}
