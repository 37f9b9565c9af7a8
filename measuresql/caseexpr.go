package measuresql

import (
	"math/big"

	"github.com/dpsql/dpsql/measure"
)

// A CASE among expressions (measure.Arith's 'K'): its class is its
// values' — text where every value is text, a double where a number is
// a double, else an integer (SQLite's CASE returns each value in its own
// class, and compares them so: a text among numbers is declined). NULL
// values take no part.

// caseClass is the class of a CASE's values (Text, Real or Int).
func (c *compiler) caseClass(cs *measure.Case) Type {
	if t, ok := c.classes[cs]; ok {
		return t
	}
	t := c.classOf(cs)
	if c.classes == nil {
		c.classes = map[*measure.Case]Type{}
	}
	c.classes[cs] = t
	return t
}

// classOf is caseClass's work, for a CASE not classed before.
func (c *compiler) classOf(cs *measure.Case) Type {
	t := Other
	for _, o := range operands(cs) {
		u := c.operandClass(o)
		switch {
		case u == Other:
			continue // NULL
		case t == Other || t == u:
			t = u
		case t != Text && u != Text:
			t = Real
		default:
			panic(decline("a CASE of text and numbers"))
		}
	}
	if t == Other {
		panic(decline("a CASE of NULLs"))
	}
	return t
}

// operandClass is one value's class: Other for NULL.
func (c *compiler) operandClass(o measure.Operand) Type {
	switch o.Value.(type) {
	case string:
		return Text
	case int64:
		return Int
	case float64:
		return Real
	}
	a := operandArith(o)
	switch {
	case a == nil:
		return Other
	case c.textual(a):
		return Text
	case c.floats(a):
		return Real
	}
	if a.Op == 0 && !isInt(c.typeOf(a.Column)) {
		panic(decline("a CASE value of an uncompiled class"))
	}
	return Int
}

// operandArith is a value that is a column or arithmetic as arithmetic
// (nil for a constant or NULL).
func operandArith(o measure.Operand) *measure.Arith {
	if o.Arith != nil {
		return o.Arith
	}
	if !o.Column.IsZero() {
		return &measure.Arith{Column: o.Column}
	}
	return nil
}

// caseExpr prints the CASE with every value read in class t; an integer
// among doubles only where it is one exactly (within ±2^53: SQLite
// keeps the integer, which it compares exactly).
func (c *compiler) caseExpr(cs *measure.Case, t Type) expr {
	out := caseOf{els: c.caseValue(cs.Else, t)}
	for _, w := range cs.Whens {
		out.whens = append(out.whens, when{c.filter(w.Cond), c.caseValue(w.Then, t)})
	}
	return out
}

func (c *compiler) caseValue(o measure.Operand, t Type) expr {
	switch v := o.Value.(type) {
	case string:
		return c.d.Value(text(v), Text)
	case int64:
		if t == Real && (v > 1<<53 || v < -(1<<53)) {
			panic(decline("an integer beyond 2^53 among doubles"))
		}
		n, _ := c.number(v, t)
		return n
	case float64:
		return c.d.Float(v)
	}
	a := operandArith(o)
	switch {
	case a == nil:
		return raw("NULL")
	case t == Text:
		return c.textExpr(a)
	case t == Real && !c.floats(a):
		return c.exactDouble(a)
	case t == Real:
		return c.double(a)
	}
	return c.arith(a)
}

// caseRange prints an integer CASE and the range of its values.
func (c *compiler) caseRange(cs *measure.Case) (expr, *big.Int, *big.Int) {
	if c.caseClass(cs) != Int {
		panic(decline("a CASE of text or doubles in integer arithmetic"))
	}
	var lo, hi *big.Int
	for _, o := range operands(cs) {
		if v, ok := o.Value.(int64); ok {
			lo, hi = span(lo, hi, big.NewInt(v), big.NewInt(v))
		} else if a := operandArith(o); a != nil {
			_, l, h := c.arithRange(a)
			lo, hi = span(lo, hi, l, h)
		}
	}
	return c.caseExpr(cs, Int), lo, hi
}
