package measuresql

import (
	"math"

	"github.com/dpsql/dpsql/measure"
)

// keyExpr is a key as the statement groups by it: the column's value.
// A key with a domain is mapped to its position in Go (Decode): grouping
// by the raw value and mapping each group costs one comparison per group,
// a CASE over the domain one per row. With bounding the rows outside the
// domain must not take a unit's l0 places, so the filter is returned too
// (nil for none); without, their groups are dropped in Go, as the
// reference's WHERE key IN (domain) drops their rows.
func (c *compiler) keyExpr(k measure.Key, bounded bool) (e, filter expr, ko keyOut) {
	var t Type
	switch {
	case k.Case != nil:
		e, t = c.keyCase(k.Case)
	case k.Arith != nil:
		t, e = c.arithTyped(k.Arith)
		if isInt(t) {
			t = Integer
		}
	case k.Bin != nil:
		e, t = c.bin(c.value(k.Column), c.typeOf(k.Column), k.Bin)
	default:
		e, t = c.value(k.Column), c.typeOf(k.Column)
	}
	if k.Domain == nil {
		if t == Real && !c.integral(k.Arith) {
			panic(decline("a float key without a domain")) // -0 and 0 group apart in the reference
		}
		return e, nil, keyOut{t: t}
	}
	ko = keyOut{t: t, domain: map[any]int64{}}
	var lits []expr
	for i, d := range k.Domain {
		lits = append(lits, c.literal(d, t)) // declines a value of another class
		v := d
		if x, ok := d.(int64); ok && t == Real {
			v = float64(x)
		}
		if f, ok := d.(float64); ok && isInt(t) && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			v = int64(f) // an integral float equals the integer the engine returns
		}
		if f, ok := v.(float64); ok && f == 0 {
			v = 0.0 // −0 equals 0
		}
		if _, dup := ko.domain[v]; !dup {
			ko.domain[v] = int64(i)
		}
	}
	if len(k.Domain) == 0 {
		return e, raw("FALSE"), ko
	}
	if bounded {
		filter = c.notNaN(e, t, formOf("{} IN ({})", e, list{lits, ", "}))
	}
	return e, filter, ko
}

// keyCase prints a CASE key of constants, and its class: text when
// every value is a string, an integer when every one is, else (numbers
// of both kinds) a double, as the reference compares them; strings
// among numbers are declined (SQLite compares across classes by its own
// order).
func (c *compiler) keyCase(cs *measure.Case) (expr, Type) {
	for _, o := range operands(cs) {
		if !o.Column.IsZero() || o.Arith != nil {
			panic(decline("a CASE key whose value is not a constant"))
		}
	}
	t := c.caseClass(cs) // declines text among numbers, and NULLs alone
	if t == Int {
		t = Integer
	}
	lit := func(o measure.Operand) expr {
		if v, ok := o.Value.(string); ok {
			return c.literal(v, Text)
		}
		if n, ok := c.number(o.Value, t); ok {
			return n
		}
		return raw("NULL")
	}
	out := caseOf{els: lit(cs.Else)}
	for _, w := range cs.Whens {
		out.whens = append(out.whens, when{c.filter(w.Cond), lit(w.Then)})
	}
	return out, t
}

// bin prints a binned key over column value x of class t, and its
// class (measure.Bin). Integer bins stay integers (divided with
// truncation toward zero, as SQLite divides integers: Dialect.TruncDiv;
// FLOOR and CEIL of an integer are itself); a product that could leave 64 bits is NULL (in
// SQLite it would become a float, which no enumerated bin equals: the
// row is dropped either way). Float bins are IEEE divisions, floor or
// ceil, and products, the same in both engines.
func (c *compiler) bin(x expr, t Type, b *measure.Bin) (expr, Type) {
	if b.Func != "floor" && b.Func != "ceil" {
		panic(decline("a bin by " + b.Func))
	}
	if !isInt(t) && t != Real {
		panic(decline("a bin of text"))
	}
	_, divFloat := b.Div.(float64)
	_, mulFloat := b.Mul.(float64)
	if isInt(t) && !divFloat {
		q := c.d.Widen(x) // 64-bit arithmetic, whatever the column's width
		if w, ok := b.Div.(int64); ok {
			if w <= 0 {
				panic(decline("a bin width that is not positive"))
			}
			q = c.d.TruncDiv(q, num(w))
		}
		if b.Mul == nil {
			return q, Integer
		}
		if mulFloat {
			return c.floatOp(c.d.ToDouble(q), '*', c.d.Float(b.Mul.(float64))), Real
		}
		m := b.Mul.(int64)
		if m == math.MinInt64 {
			panic(decline("a bin multiplied by -2^63"))
		}
		if m == 0 {
			return c.known(q, "0"), Integer
		}
		l := math.MaxInt64 / max(m, -m)
		return caseOf{whens: []when{{formOf("{} BETWEEN {} AND {}", q, num(-l), num(l)), bare(q, "*", num(m))}}}, Integer
	}
	f := x
	if isInt(t) {
		f = c.d.ToDouble(x)
	}
	switch w := b.Div.(type) {
	case int64:
		f = c.floatOp(f, '/', c.d.Float(float64(w)))
	case float64:
		f = c.floatOp(f, '/', c.d.Float(w))
	}
	f = c.fn(b.Func, f)
	switch m := b.Mul.(type) {
	case int64:
		f = c.floatOp(f, '*', c.d.Float(float64(m)))
	case float64:
		f = c.floatOp(f, '*', c.d.Float(m))
	}
	return f, Real
}

// integral reports whether a is a double whose every value is an
// integer's: ROUND or CAST AS REAL of integer arithmetic, never NaN nor
// −0, so that it groups alike in every engine.
func (c *compiler) integral(a *measure.Arith) bool {
	return a != nil && (a.Op == 'r' || a.Op == 'R') && !c.floats(a.X)
}
