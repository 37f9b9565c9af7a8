package measuresql

import (
	"math"
	"math/big"

	"github.com/dpsql/dpsql/measure"
)

// arithLimit bounds every value integer arithmetic may reach: far below
// 2^63, so that no sum or product overflows in SQLite (which would turn
// it into a float) or in the engine (which would raise).
var arithLimit = new(big.Int).Lsh(big.NewInt(1), 62)

// exactDoubles bounds the integers every one of which is a double.
var exactDoubles = new(big.Int).Lsh(big.NewInt(1), 53)

// minInt64 and maxInt64 are the ends of a 64-bit integer.
var minInt64, maxInt64 = big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)

// arith prints integer arithmetic over a row (+, −, × of columns of at
// most 32 bits and integer constants, a division by a non-zero constant
// truncated toward zero, ABS, and FLOOR and CEIL, which leave an integer
// as it is) in 64-bit integers, when every
// value it can reach, by the columns' ranges, stays within ±2^62: then it
// is exact in both engines and cannot raise; otherwise it declines.
func (c *compiler) arith(a *measure.Arith) expr {
	x, _, _ := c.arithRange(a)
	return x
}

// floats reports whether arithmetic reads a float column or constant:
// then SQLite computes it, where a float meets it, in doubles.
func (c *compiler) floats(a *measure.Arith) bool {
	switch {
	case a == nil:
		return false
	case a.Op == 'r' || a.Op == 'R':
		return true // ROUND and CAST AS REAL give a double, of an integer too
	case a.Op == 'i' || a.Op == 'L' || textOp(a.Op):
		return false // integers whatever their operand, or text
	case a.Op == 'K':
		return c.caseClass(a.Case) == Real
	case a.Op != 0:
		return c.floats(a.X) || c.floats(a.Y)
	case !a.Column.IsZero():
		return c.typeOf(a.Column) == Real
	}
	return a.IsFloat
}

// arithTyped prints arithmetic with its class: Int for integer
// arithmetic (arith), Real for arithmetic with a float in it (double).
func (c *compiler) arithTyped(a *measure.Arith) (Type, expr) {
	if c.textual(a) {
		return Text, c.textExpr(a)
	}
	if c.floats(a) {
		return Real, c.double(a)
	}
	return Int, c.arith(a)
}

// double prints arithmetic with a float in it as SQLite computes it: the
// parts without a float in integers (arith, exact), each converted to a
// double where it meets a float (an integer column read as a double is
// the same conversion), the rest in IEEE doubles — DuckDB's +, − and ×
// of doubles, which give ±Inf and NaN rather than raise, as SQLite's do
// (SQLite makes NaN NULL, and every use of a double guards NaN as NULL:
// NaN stays NaN through +, − and ×, so the two agree).
func (c *compiler) double(a *measure.Arith) expr {
	switch {
	case !c.floats(a):
		if a.Op == 0 && !a.Column.IsZero() {
			if !isInt(c.typeOf(a.Column)) {
				// Text in arithmetic: the reference converts it by SQLite's
				// affinity ('%' is 0), where a cast raises.
				panic(decline("arithmetic on a column that is not a number"))
			}
			return c.d.ToDouble(c.value(a.Column)) // any integer column: one conversion
		}
		if a.Op == 0 {
			return c.d.Float(float64(a.Const))
		}
		return c.d.ToDouble(c.arith(a))
	case a.Op == 'K':
		return c.caseExpr(a.Case, Real)
	case a.Op == 'C':
		// The first that is not NULL, a NaN being NULL to the reference:
		// the first operand is bound once (it is read three times).
		if c.textual(a.X) || c.textual(a.Y) {
			panic(decline("COALESCE of text and a number"))
		}
		y := c.double(a.Y)
		return c.once(a.X, func(v expr) expr {
			return ifThen(bare(isNull{x: v, bare: true}, "OR", c.d.IsNaN(v)), y, v)
		})
	case a.Op == 'a':
		// The reference's ABS is ABS(NULLIF(x, -2^63)) (SQLite raises on
		// the integer -2^63): a double equal to -2^63 is NULL there too.
		// The operand is tested and used: a compound one is bound once
		// (Let), so that nested ABS prints and runs in linear space; the
		// ABS of an ABS is never -2^63 and needs no test.
		x := c.double(a.X)
		abs := func(v expr) expr {
			return ifThen(bare(v, "=", c.d.Float(-0x1p63)), raw("NULL"), c.fn("abs", v))
		}
		switch a.X.Op {
		case 0:
			return abs(x)
		case 'a':
			return c.fn("abs", x)
		}
		return c.d.Let(x, abs)
	case a.Op == 'r':
		return c.round(a.X)
	case a.Op == 'R':
		return c.double(a.X) // of a double, itself; of an integer, converted (the first case)
	case a.Op == '%':
		panic(decline("% of a float")) // SQLite takes both sides as integers and gives a double
	case a.Op == 'f' || a.Op == 'c':
		// floor and ceil of a double, as SQLite's (NaN stays NaN, which
		// every use guards as NULL; ±Inf stays itself); they never raise.
		return c.fn(map[byte]string{'f': "floor", 'c': "ceil"}[a.Op], c.double(a.X))
	case a.Op == '/':
		return c.divide(a.X, a.Y)
	case a.Op != 0:
		return c.floatOp(c.double(a.X), a.Op, c.double(a.Y))
	case !a.Column.IsZero():
		return c.value(a.Column)
	}
	return c.d.Float(a.Float)
}

// round prints SQLite's ROUND(x) of one argument: x as a double; within
// ±2^52, (double)(int64)(x ± 0.5) — the sum rounded as a double, then
// truncated toward zero (+ 0.0: a truncated -0.3 is -0, SQLite's +0) —
// and beyond, x itself (it has no fraction; ±Inf too, and NaN, which
// stays NaN). Of an integer that is the integer as a double. A compound
// operand is bound once (Let): it is read four times.
func (c *compiler) round(x *measure.Arith) expr {
	if !c.floats(x) {
		return c.double(x) // the integer as a double
	}
	f := c.d.Float
	return c.once(x, func(v expr) expr {
		// Within ±2^52 the sum cannot overflow: a plain + in every engine.
		inner := paren(v, "+", ifThen(bare(v, "<", f(0)), f(-0.5), f(0.5)))
		outside := bare(bare(bare(v, "<", f(-0x1p52)), "OR", bare(v, ">", f(0x1p52))), "OR", c.d.IsNaN(v))
		return ifThen(outside, v, bare(c.fn("trunc", inner), "+", f(0)))
	})
}

// once is form of x's double, which form reads more than once: a
// column or constant printed in place, anything else bound once (Let),
// so that nested forms print and run in space linear in their depth.
func (c *compiler) once(x *measure.Arith, form func(v expr) expr) expr {
	v := c.double(x)
	if x.Op == 0 {
		return form(v)
	}
	return c.d.Let(v, form)
}

// span is the smallest range holding [lo, hi] (nil: none yet) and [l, h].
func span(lo, hi, l, h *big.Int) (*big.Int, *big.Int) {
	if lo == nil || l.Cmp(lo) < 0 {
		lo = l
	}
	if hi == nil || h.Cmp(hi) > 0 {
		hi = h
	}
	return lo, hi
}

// exactDouble prints integer arithmetic as a double where every value it
// can take is one exactly (within ±2^53), as SQLite compares an integer
// with a double exactly; beyond, it declines.
func (c *compiler) exactDouble(a *measure.Arith) expr {
	x, lo, hi := c.arithRange(a)
	if lo.CmpAbs(exactDoubles) > 0 || hi.CmpAbs(exactDoubles) > 0 {
		panic(decline("an integer beyond 2^53 read as a double"))
	}
	return c.d.ToDouble(x)
}

// floatOp is x op y in doubles (Dialect.FloatOp), or declines.
func (c *compiler) floatOp(x expr, op byte, y expr) expr {
	e, ok := c.d.FloatOp(x, op, y)
	if !ok {
		panic(decline("arithmetic with floats (the engine raises where a float overflows or underflows)"))
	}
	return e
}

func (c *compiler) arithRange(a *measure.Arith) (expr, *big.Int, *big.Int) {
	if r, ok := c.ranges[a]; ok {
		return r.x, r.lo, r.hi
	}
	x, lo, hi := c.rangeOf(a)
	if c.ranges == nil {
		c.ranges = map[*measure.Arith]printedRange{}
	}
	c.ranges[a] = printedRange{x, lo, hi}
	return x, lo, hi
}

// rangeOf is arithRange's work, for a node not printed before (the
// ranges it returns are never changed in place: they are kept).
func (c *compiler) rangeOf(a *measure.Arith) (expr, *big.Int, *big.Int) {
	var text expr
	var lo, hi *big.Int
	switch {
	case a.Op == 0 && !a.Column.IsZero():
		return c.columnRange(a.Column)
	case textOp(a.Op) || a.IsText:
		panic(decline("text in arithmetic"))
	case a.Op == 'C':
		// COALESCE of integers: the first that is not NULL, within the
		// ranges of both.
		if c.textual(a.X) || c.textual(a.Y) {
			panic(decline("COALESCE of text and a number")) // either class may come out
		}
		x, xl, xh := c.arithRange(a.X)
		y, yl, yh := c.arithRange(a.Y)
		lo, hi = span(xl, xh, yl, yh)
		return call{fn: "COALESCE", args: []expr{x, y}}, lo, hi // syntax in both engines: nothing stored can stand in for it
	case a.Op == 'i':
		return c.castInt(a.X)
	case a.Op == 'K':
		return c.caseRange(a.Case)
	case a.Op == 'L':
		// LENGTH of text: its characters up to its first NUL (SQLite's).
		return c.d.Widen(c.fn("length", c.chars(c.textExpr(a.X)))), big.NewInt(0), big.NewInt(1 << 40)
	case a.Op == '%':
		return c.remainder(a)
	case a.Op == 0 && a.IsFloat:
		panic(decline("a float in integer arithmetic"))
	case a.Op == 0:
		text, lo, hi = num(a.Const), big.NewInt(a.Const), big.NewInt(a.Const)
		if a.Const < 0 {
			text = formOf("({})", text)
		}
	case a.Op == 'f' || a.Op == 'c':
		// FLOOR and CEIL of an integer are that integer, in SQLite.
		return c.arithRange(a.X)
	case a.Op == '/':
		// A division by a non-zero constant, truncated toward zero as
		// SQLite divides integers (the plan never divides by anything
		// else: rewrite declines it).
		if a.Y == nil || a.Y.Op != 0 || !a.Y.Column.IsZero() || a.Y.IsFloat || a.Y.Const == 0 {
			panic(decline("a division by anything but a non-zero integer constant"))
		}
		x, xl, xh := c.arithRange(a.X)
		y := big.NewInt(a.Y.Const)
		lo, hi = new(big.Int).Quo(xl, y), new(big.Int).Quo(xh, y)
		if lo.Cmp(hi) > 0 {
			lo, hi = hi, lo
		}
		if lo.Cmp(minInt64) < 0 || hi.Cmp(maxInt64) > 0 {
			panic(decline("a division of -2^63 by -1")) // SQLite's is a double
		}
		return c.d.TruncDiv(x, num(a.Y.Const)), lo, hi
	case a.Op == 'a':
		x, xl, xh := c.arithRange(a.X)
		text = c.fn("abs", x)
		hi = new(big.Int).Abs(xl)
		if h := new(big.Int).Abs(xh); h.Cmp(hi) > 0 {
			hi = h
		}
		lo = big.NewInt(0)
		if xl.Sign() > 0 {
			lo = xl
		} else if xh.Sign() < 0 {
			lo = new(big.Int).Neg(xh)
		}
	default:
		x, xl, xh := c.arithRange(a.X)
		y, yl, yh := c.arithRange(a.Y)
		text = paren(x, string(a.Op), y)
		switch a.Op {
		case '+':
			lo, hi = new(big.Int).Add(xl, yl), new(big.Int).Add(xh, yh)
		case '-':
			lo, hi = new(big.Int).Sub(xl, yh), new(big.Int).Sub(xh, yl)
		case '*':
			ps := []*big.Int{new(big.Int).Mul(xl, yl), new(big.Int).Mul(xl, yh), new(big.Int).Mul(xh, yl), new(big.Int).Mul(xh, yh)}
			lo, hi = ps[0], ps[0]
			for _, p := range ps[1:] {
				if p.Cmp(lo) < 0 {
					lo = p
				}
				if p.Cmp(hi) > 0 {
					hi = p
				}
			}
		default:
			panic(decline("arithmetic operator " + string(a.Op)))
		}
	}
	if lo.CmpAbs(arithLimit) > 0 || hi.CmpAbs(arithLimit) > 0 {
		panic(decline("arithmetic that could leave ±2^62"))
	}
	return text, lo, hi
}

// castInt prints SQLite's CAST(x AS INTEGER): an integer as it is; a
// double truncated toward zero, saturating at the ends of 64 bits (±Inf
// too), and NaN — NULL to the reference — NULL. The double is bound
// once (Let): it is read four times.
// columnRange is an integer column, read as a 64-bit integer, and the
// range of its values.
func (c *compiler) columnRange(col measure.Col) (expr, *big.Int, *big.Int) {
	switch t := c.typeOf(col); {
	case t == Int32:
		return c.d.Widen(c.value(col)), big.NewInt(math.MinInt32), big.NewInt(math.MaxInt32)
	case t == Bool:
		return c.value(col), big.NewInt(0), big.NewInt(1)
	case isInt(t):
		// A 64-bit column: any value; what computes with it is checked
		// against the limit (rangeOf).
		return c.value(col), big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	}
	panic(decline("arithmetic on a column that is not a number"))
}

// remainder is x % c of integers, the sign of x (C's, SQLite's, DuckDB's
// and PostgreSQL's alike), and its range; SQLite's x % -1 is 0 where an
// engine may raise on -2^63 % -1: declined, as c = 0 is (rewrite).
func (c *compiler) remainder(a *measure.Arith) (expr, *big.Int, *big.Int) {
	if a.Y == nil || a.Y.Op != 0 || !a.Y.Column.IsZero() || a.Y.IsFloat || a.Y.Const == 0 || a.Y.Const == -1 || a.Y.Const == math.MinInt64 {
		panic(decline("a remainder by anything but an integer constant other than 0 and -1"))
	}
	x, xl, xh := c.arithRange(a.X)
	m := big.NewInt(max(a.Y.Const, -a.Y.Const) - 1)
	lo, hi := new(big.Int).Neg(m), m
	if xl.Sign() >= 0 {
		lo = big.NewInt(0)
	}
	if xh.Sign() <= 0 {
		hi = big.NewInt(0)
	}
	return paren(x, "%", num(a.Y.Const)), lo, hi
}

func (c *compiler) castInt(x *measure.Arith) (expr, *big.Int, *big.Int) {
	if c.textual(x) {
		panic(decline("CAST of text to INTEGER")) // SQLite reads a numeric prefix
	}
	if !c.floats(x) {
		return c.arithRange(x)
	}
	f := c.d.Float
	text := c.once(x, func(v expr) expr {
		return caseOf{whens: []when{{c.d.IsNaN(v), raw("NULL")}, {bare(v, ">=", f(0x1p63)), raw("9223372036854775807")},
			{bare(v, "<=", f(-0x1p63)), raw("(-9223372036854775807 - 1)")}}, els: c.d.RoundToInt64(c.fn("trunc", v))}
	})
	return text, minInt64, maxInt64
}

// textOp reports whether op is a function whose value is text.
func textOp(op byte) bool { return op == 'U' || op == 'W' || op == 'T' || op == 'S' }

// textual reports whether a is text: a text column, or UPPER, LOWER,
// TRIM or SUBSTR.
func (c *compiler) textual(a *measure.Arith) bool {
	if a == nil {
		return false
	}
	switch a.Op {
	case 0:
		return a.IsText || !a.Column.IsZero() && c.typeOf(a.Column) == Text
	case 'C':
		return c.textual(a.X) && c.textual(a.Y)
	case 'K':
		return c.caseClass(a.Case) == Text
	}
	return textOp(a.Op)
}

// textExpr prints a text function of text as SQLite computes it: UPPER
// and LOWER change the ASCII letters only (SQLite has no Unicode case
// table), TRIM removes spaces only, each over the whole value (a NUL
// too); SUBSTR counts characters up to the first NUL, where SQLite stops
// reading. Each is compared under the binary collation (Value).
func (c *compiler) textExpr(a *measure.Arith) expr {
	const lower, upper = "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	switch a.Op {
	case 0:
		if !c.textual(a) {
			panic(decline("a text function of a number")) // SQLite prints the number first
		}
		if a.IsText {
			return c.d.Value(text(a.Text), Text)
		}
		return c.value(a.Column)
	case 'K':
		if !c.textual(a) {
			panic(decline("a CASE of numbers where text is read"))
		}
		return c.d.Value(c.caseExpr(a.Case, Text), Text)
	case 'C':
		if !c.textual(a) {
			panic(decline("COALESCE of text and a number"))
		}
		return c.d.Value(call{fn: "COALESCE", args: []expr{c.textExpr(a.X), c.textExpr(a.Y)}}, Text)
	case 'U':
		return c.d.Value(c.fn("translate", c.textExpr(a.X), text(lower), text(upper)), Text)
	case 'W':
		return c.d.Value(c.fn("translate", c.textExpr(a.X), text(upper), text(lower)), Text)
	case 'T':
		return c.d.Value(c.fn("trim", c.textExpr(a.X), text(" ")), Text)
	case 'S':
		args := []expr{c.chars(c.textExpr(a.X)), num(a.From)}
		if a.Len >= 0 {
			args = append(args, num(a.Len))
		}
		return c.d.Value(c.fn("substr", args...), Text)
	}
	panic(decline("a number where text is read"))
}

// chars is text x up to its first NUL, whose length and substrings the
// dialect counts in characters (Dialect.Chars), or declines.
func (c *compiler) chars(x expr) expr {
	s, ok := c.d.Chars(x)
	if !ok {
		panic(decline("a character count in a database whose encoding is not UTF8"))
	}
	return s
}

// divide prints x / y in doubles, y a non-zero constant (rewrite divides
// by nothing else). Where 1/y is a double (y a power of two) it is x ×
// 1/y, the same correctly rounded quotient, which every dialect prints
// (FloatOp's ×). An integer x divided by 1 <= |y| <= 2^1000 can neither
// overflow nor underflow (|x| is 0 or at least 1), so the plain division
// cannot raise either; any other division is FloatOp's.
func (c *compiler) divide(x, y *measure.Arith) expr {
	if y == nil || y.Op != 0 || !y.Column.IsZero() {
		panic(decline("a division by anything but a non-zero constant"))
	}
	d := y.Float
	if !y.IsFloat {
		d = float64(y.Const)
	}
	if d == 0 || math.IsInf(d, 0) || math.IsNaN(d) {
		panic(decline("a division by anything but a non-zero constant"))
	}
	if frac, _ := math.Frexp(d); math.Abs(frac) == 0.5 && !math.IsInf(1/d, 0) && 1/d != 0 {
		if r := 1 / d; math.Abs(r) >= 0x1p-1022 { // a normal reciprocal: exact
			return c.floatOp(c.double(x), '*', c.d.Float(r))
		}
	}
	if !c.floats(x) && math.Abs(d) >= 1 && math.Abs(d) <= 0x1p1000 {
		return paren(c.double(x), "/", c.d.Float(d))
	}
	return c.floatOp(c.double(x), '/', c.d.Float(d))
}
