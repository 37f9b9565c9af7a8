package measuresql

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dpsql/dpsql/measure"
)

// compare prints column op v for any numeric literal v: as it is where
// the column's class holds v, else by v's neighbours in the class.
func (c *compiler) compare(col measure.Col, arith *measure.Arith, op string, v any) expr {
	var t Type
	var x expr
	if arith != nil {
		t, x = c.arithTyped(arith) // an exact 64-bit integer, never NaN; or a double
	} else {
		t, x = c.typeOf(col), c.value(col)
	}
	v, cross, ok := affinity(v, t, arith == nil && stored(col))
	if !ok {
		panic(decline(fmt.Sprintf("literal %v", v)))
	}
	if cross {
		// SQLite orders every number before every text.
		truth := raw("FALSE")
		if op == "<>" || (t != Text && (op == "<" || op == "<=")) || (t == Text && (op == ">" || op == ">=")) {
			truth = "TRUE"
		}
		return c.notNaN(x, t, c.known(x, truth))
	}
	if lit, ok := c.exact(v, t); ok {
		return c.notNaN(x, t, paren(x, op, lit))
	}
	below, above, ok := c.neighbours(v, t)
	if !ok {
		panic(decline(fmt.Sprintf("literal %v", v)))
	}
	var cond expr
	switch op {
	case "<", "<=":
		cond = c.bound(x, "<=", below)
	case ">", ">=":
		cond = c.bound(x, ">=", above)
	case "=":
		cond = c.known(x, "FALSE")
	case "<>":
		cond = c.known(x, "TRUE")
	default:
		panic(decline("comparison " + op))
	}
	return c.notNaN(x, t, cond)
}

// compareExprs prints x op y of two expressions: text with text (bytes),
// or numbers, each read as SQLite reads it — exactly, an integer against
// a double too, which the engines compare as doubles: an integer side
// is converted only where every value it can take is a double (within
// ±2^53). A text against a number is declined (SQLite converts a
// column's text by affinity).
func (c *compiler) compareExprs(x *measure.Arith, op string, y *measure.Arith) expr {
	tx, ex := c.arithTyped(x)
	ty, ey := c.arithTyped(y)
	if (tx == Text) != (ty == Text) {
		panic(decline("a comparison of text with a number"))
	}
	switch {
	case tx == Real && ty != Real:
		ey = c.exactDouble(y)
	case ty == Real && tx != Real:
		ex = c.exactDouble(x)
	}
	switch op {
	case "=", "<>", "<", "<=", ">", ">=":
	default:
		panic(decline("comparison " + op))
	}
	cond := paren(ex, op, ey)
	if tx == Real || ty == Real {
		// NaN is NULL to the reference: either side NaN makes it NULL.
		return ifThen(bare(c.d.IsNaN(ex), "OR", c.d.IsNaN(ey)), raw("NULL"), cond)
	}
	return cond
}

// bound is x op lit, or where there is no such literal (the class has no
// value on that side), a condition no value meets.
func (c *compiler) bound(x expr, op string, lit expr) expr {
	if lit == nil {
		return c.known(x, "FALSE")
	}
	return paren(x, op, lit)
}

// known is the condition whose value is truth (TRUE or FALSE) for every
// value of x, NULL for NULL (as every comparison of NULL is).
func (c *compiler) known(x expr, truth raw) expr {
	return ifThen(isNull{x: x, bare: true}, raw("NULL"), truth)
}

func (c *compiler) filter(f measure.Filter) expr {
	switch f := f.(type) {
	case measure.And:
		return c.join(f.Parts, " AND ")
	case measure.Or:
		return c.join(f.Parts, " OR ")
	case measure.Not:
		return not(c.filter(f.X))
	case measure.Compare:
		if f.Right != nil {
			return c.compareExprs(f.Arith, f.Op, f.Right)
		}
		return c.compare(f.Column, f.Arith, f.Op, f.Value)
	case measure.IsNull:
		var t Type
		var v expr
		if f.Arith != nil {
			t, v = c.arithTyped(f.Arith)
		} else {
			t, v = c.typeOf(f.Column), c.value(f.Column)
		}
		if t == Real {
			if f.Not {
				return paren(isNull{x: v, not: true, bare: true}, "AND", c.notIsNaN(v))
			}
			return paren(isNull{x: v, bare: true}, "OR", c.d.IsNaN(v))
		}
		return isNull{x: v, not: f.Not}
	case measure.In:
		t := c.typeOf(f.Column)
		var vals []expr
		for _, v := range f.Values {
			v, cross, ok := affinity(v, t, stored(f.Column))
			if !ok {
				panic(decline(fmt.Sprintf("literal %v", v)))
			}
			if cross {
				continue // a number and a text: never equal
			}
			if lit, ok := c.exact(v, t); ok {
				vals = append(vals, lit)
			} else if _, _, ok := c.neighbours(v, t); !ok {
				panic(decline(fmt.Sprintf("literal %v", v)))
			} // else: a number no value of the column equals
		}
		v := c.value(f.Column)
		var cond expr = in{x: v, list: vals}
		if len(vals) == 0 {
			cond = c.known(v, "FALSE") // x IN (values none equals): NULL for NULL, as SQLite
		}
		if f.Not {
			cond = not(cond)
		}
		return c.notNaN(v, t, cond)
	case measure.Truth:
		switch {
		case !f.Known:
			return cast{raw("NULL"), "BOOLEAN"}
		case f.Value:
			return raw("TRUE")
		}
		return raw("FALSE")
	case measure.Like:
		if c.typeOf(f.Column) != Text {
			panic(decline("LIKE on a column that is not text")) // SQLite matches a number's text
		}
		re, ok := likeRegexp(f.Pattern)
		if !ok {
			panic(decline("a LIKE pattern with NUL or invalid UTF-8"))
		}
		m := c.d.Match(c.value(f.Column), text(re))
		if f.Not {
			m = not(m)
		}
		return m
	}
	panic(decline("filter"))
}

// likeRegexp is a regular expression, anchored at both ends (the same
// in RE2 and PostgreSQL's advanced expressions), that matches exactly the
// texts SQLite's LIKE pattern p matches: % any sequence of characters,
// _ one character (a newline too), an ASCII letter in either case (SQLite
// folds ASCII only), every other character itself — over the text up to
// its first NUL, where SQLite stops reading: the wildcards match no NUL,
// and a NUL may end the match with anything after it. ok is false for a
// pattern with NUL or invalid UTF-8.
func likeRegexp(p string) (string, bool) {
	if !utf8.ValidString(p) || strings.IndexByte(p, 0) >= 0 {
		return "", false
	}
	var b strings.Builder
	b.WriteString("(?s)^(?:")
	for _, r := range p {
		switch {
		case r == '%':
			b.WriteString(`[^\x00]*`)
		case r == '_':
			b.WriteString(`[^\x00]`)
		case r < utf8.RuneSelf && unicode.IsLetter(r):
			b.WriteString("[" + string(unicode.ToLower(r)) + string(unicode.ToUpper(r)) + "]")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`(?:\x00.*)?)$`)
	return b.String(), true
}

func (c *compiler) join(parts []measure.Filter, op string) expr {
	var out []expr
	for _, p := range parts {
		out = append(out, c.filter(p))
	}
	return formOf("({})", list{out, op})
}

// notNaN makes a condition on a float value NULL where the value is NaN:
// DuckDB orders NaN above every number and makes NaN <> x true, where the
// reference reads NaN as NULL, whose comparisons are NULL (so that NOT of
// them is NULL too).
func (c *compiler) notNaN(v expr, t Type, cond expr) expr {
	if t != Real {
		return cond
	}
	return ifThen(c.d.IsNaN(v), raw("NULL"), cond)
}
