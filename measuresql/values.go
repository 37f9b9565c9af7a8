package measuresql

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dpsql/dpsql/measure"
)

func (c *compiler) typeOf(col measure.Col) Type {
	if col.Identity {
		return Int
	}
	if i, ok := measure.OutputIndex(col); ok {
		if i >= len(c.outTypes) {
			panic(decline("an output the plan's grouping does not have"))
		}
		return c.outTypes[i]
	}
	t, ok := c.types[col]
	if !ok || t == Other {
		panic(decline("column " + col.String()))
	}
	return t
}

// argType is the class of measured argument i: its column's, or for a
// CASE, Real when some value is a float (a float column or literal: the
// reference reads every value as a double, and so does the CASE then),
// else Integer.
func (c *compiler) argType(i int) Type {
	cs := c.m.Cases[i]
	if cs == nil {
		return c.typeOf(c.m.Args[i])
	}
	t := Other
	for _, o := range operands(cs) {
		u := Integer // an int64 literal, or integer arithmetic
		switch o.Value.(type) {
		case float64:
			u = Real
		case nil:
			if o.Arith != nil {
				if c.floats(o.Arith) {
					u = Real
				}
				break
			}
			if o.Column.IsZero() {
				continue // NULL
			}
			if u = c.typeOf(o.Column); !isInt(u) && u != Real {
				panic(decline("a CASE of text"))
			}
		}
		if u == Real || t == Other {
			t = u
		}
	}
	if t == Other {
		panic(decline("a CASE of NULLs"))
	}
	if isInt(t) {
		t = Integer
	}
	return t
}

// operands are a CASE's values, its ELSE last.
func operands(cs *measure.Case) []measure.Operand {
	var out []measure.Operand
	for _, w := range cs.Whens {
		out = append(out, w.Then)
	}
	return append(out, cs.Else)
}

// argValue reads measured argument i as the reference sees it: its
// column, or its CASE over filters, every value read in the CASE's class
// (argType; an integer among floats rounded to a double, as the reference
// converts it).
func (c *compiler) argValue(i int) expr {
	cs := c.m.Cases[i]
	if cs == nil {
		return c.value(c.m.Args[i])
	}
	t := c.argType(i)
	operand := func(o measure.Operand) expr {
		if n, ok := c.number(o.Value, t); ok {
			return n
		}
		if o.Arith != nil {
			if t == Real {
				return c.double(o.Arith)
			}
			return c.arith(o.Arith)
		}
		if o.Column.IsZero() {
			return raw("NULL")
		}
		if t == Real && isInt(c.typeOf(o.Column)) {
			return c.d.ToDouble(c.value(o.Column))
		}
		return c.value(o.Column)
	}
	if len(cs.Whens) == 0 {
		return operand(cs.Else)
	}
	out := caseOf{els: operand(cs.Else)}
	for _, w := range cs.Whens {
		// A condition that is NULL does not hold, as FALSE does not.
		out.whens = append(out.whens, when{c.filter(w.Cond), operand(w.Then)})
	}
	return out
}

// number prints a constant number (an int64 or a float64) in class t:
// an integer as a double where t is Real, as the reference converts it.
func (c *compiler) number(v any, t Type) (expr, bool) {
	switch v := v.(type) {
	case int64:
		if t == Real {
			return c.d.Float(float64(v)), true
		}
		return num(v), true
	case float64:
		return c.d.Float(v), true
	}
	return nil, false
}

// value reads a column as the reference sees it.
func (c *compiler) value(col measure.Col) expr {
	return c.d.Value(c.name(col), c.typeOf(col))
}

// name is a column's reference: qualified by its table's alias (t0 for
// the plan's Table, tI for Joins[I-1]) when the plan joins tables.
func (c *compiler) name(col measure.Col) expr {
	if i, ok := measure.OutputIndex(col); ok {
		return numbered("o", i)
	}
	table := ""
	if len(c.m.Joins) > 0 {
		table = c.d.Quote(string(numbered("t", col.Table)))
	}
	if col.Identity {
		id := c.d.RowIdentity(table)
		if id == "" {
			panic(decline("a row identity in this dialect"))
		}
		return raw(id)
	}
	if table == "" {
		return raw(c.d.Quote(col.Name))
	}
	return formOf("{}.{}", raw(table), raw(c.d.Quote(col.Name)))
}

// literal prints v for comparison with a column of class t, or declines
// when the two engines could decide the comparison differently.
func (c *compiler) literal(v any, t Type) expr {
	if lit, ok := c.exact(v, t); ok {
		return lit
	}
	panic(decline(fmt.Sprintf("literal %v", v)))
}

// exact prints v as a literal of the column's class t when that class
// holds v exactly (an integer in a float column up to 2^53, or any
// integer a double holds; a float in an integer column when it is an
// integer of int64's range), so that comparing it in the engine decides
// as the reference's exact comparison across classes does.
func (c *compiler) exact(v any, t Type) (expr, bool) {
	switch v := v.(type) {
	case int64:
		switch t {
		case Integer, Int, Int32, Bool:
			return num(v), true
		case Real:
			if f := float64(v); f < 1<<63 && int64(f) == v {
				return c.d.Float(f), true
			}
		}
	case float64:
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
		case t == Real:
			return c.d.Float(v), true
		case isInt(t) && v == math.Trunc(v) && v >= -1<<63 && v < 1<<63:
			return num(int64(v)), true
		}
	case string:
		if t == Text && utf8.ValidString(v) && !strings.ContainsRune(v, 0) {
			return text(v), true
		}
	}
	return nil, false
}

// neighbours are, for a number v that no value of the numeric class t
// equals (exact declined), the greatest value of the class below v and
// the least above it, as literals (nil where there is none); ok is false
// when v is not such a number (text against a number, or the reverse,
// which SQLite compares after converting by affinity: not compiled).
// Then x < v is x <= below, x > v is x >= above, x = v holds for no x.
func (c *compiler) neighbours(v any, t Type) (below, above expr, ok bool) {
	switch v := v.(type) {
	case float64: // in an integer column: fractional, infinite or beyond int64
		if !isInt(t) || math.IsNaN(v) {
			return nil, nil, false
		}
		lo, hi := math.Floor(v), math.Ceil(v)
		switch {
		case lo >= 1<<63:
			below = num(int64(math.MaxInt64))
		case lo >= -1<<63:
			below = num(int64(lo))
		}
		switch {
		case hi < -1<<63:
			above = num(int64(math.MinInt64))
		case hi < 1<<63:
			above = num(int64(hi))
		}
		return below, above, true
	case int64: // in a float column: an integer beyond 2^53 between two doubles
		if t != Real {
			return nil, nil, false
		}
		f := float64(v) // the nearest double, an integer
		exact := new(big.Float).SetInt64(v)
		lo, hi := f, f
		if new(big.Float).SetFloat64(f).Cmp(exact) > 0 {
			lo = math.Nextafter(f, math.Inf(-1))
		} else {
			hi = math.Nextafter(f, math.Inf(1))
		}
		return c.d.Float(lo), c.d.Float(hi), true
	}
	return nil, nil, false
}

// count counts the argument's values that the reference sees (not
// NULL, and not NaN, which it reads as NULL).
func (c *compiler) count(arg int) expr {
	a := numbered("a", arg)
	if c.argType(arg) == Real {
		return c.fn("count", caseOf{whens: []when{{c.notIsNaN(a), raw("1")}}, bare: true})
	}
	return c.fn("count", a)
}

// integerBounds reports whether lo and hi are integers of at most 2^53
// in magnitude (exact in a double and in a 64-bit integer).
func integerBounds(lo, hi float64) bool {
	return lo == math.Trunc(lo) && hi == math.Trunc(hi) && math.Abs(lo) <= 1<<53 && math.Abs(hi) <= 1<<53
}

// intClip clips integer expression x to integer bounds [lo, hi] with
// CASE (NULL stays NULL).
func intClip(x expr, lo, hi float64) expr {
	l, h := num(int64(lo)), num(int64(hi))
	return caseOf{whens: []when{{bare(x, "<", l), l}, {bare(x, ">", h), h}}, els: x, bare: true}
}

// stored reports whether a plan column is a stored table's column (which
// has a type affinity in SQLite), not an output of a per-unit subquery's
// aggregate (which has none).
func stored(col measure.Col) bool {
	_, out := measure.OutputIndex(col)
	return !out
}

// sqliteNumber matches a text SQLite reads as a number under numeric
// affinity: the whole text, between spaces, a decimal literal.
var sqliteNumber = regexp.MustCompile(`^[ \t\n\v\f\r]*([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[ \t\n\v\f\r]*$`)

// affinity is literal v as SQLite compares it with a value of class t
// (docs/backends.md, "Comparisons across classes"): a stored column
// (column true) of a numeric class reads a text that is a decimal number
// as that number, and a text column reads an integer as its decimal
// text; an expression's value, or a per-unit aggregate's, converts
// nothing. cross is true when v is then still of the other class — a
// number against a text, which SQLite orders before every text. ok is
// false for what is not reproduced: a float read as text (SQLite's own
// formatting), a number text beyond what a double holds exactly as
// SQLite reads it (more than 15 significant digits, an exponent beyond
// ±300, an integer text beyond 2^53 against a float column or beyond
// int64), text with NUL, and classes other than numbers and text.
func affinity(v any, t Type, column bool) (out any, cross, ok bool) {
	switch x := v.(type) {
	case string:
		switch {
		case t == Text:
			return v, false, true
		case !isInt(t) && t != Real:
			return v, false, false
		case !column:
			return v, true, true
		}
		m := sqliteNumber.FindStringSubmatch(x)
		if m == nil {
			return v, !strings.ContainsRune(x, 0), !strings.ContainsRune(x, 0)
		}
		num := m[1]
		if !strings.ContainsAny(num, ".eE") {
			i, err := strconv.ParseInt(num, 10, 64)
			if err != nil || (t == Real && (i > 1<<53 || i < -1<<53)) {
				return v, false, false
			}
			return i, false, true
		}
		mant, exp, _ := strings.Cut(strings.ToLower(num), "e")
		digits := strings.TrimLeft(strings.NewReplacer(".", "", "+", "", "-", "").Replace(mant), "0")
		if len(strings.TrimRight(digits, "0")) > 15 {
			return v, false, false
		}
		if e, err := strconv.Atoi(exp); exp != "" && (err != nil || e > 300 || e < -300) {
			return v, false, false
		}
		f, err := strconv.ParseFloat(num, 64)
		return f, false, err == nil
	case int64, float64:
		switch {
		case t != Text:
			return v, false, true
		case !column:
			return v, true, true
		}
		if i, isInt := x.(int64); isInt {
			return strconv.FormatInt(i, 10), false, true
		}
		return v, false, false
	}
	return v, false, false
}
