package measuresql

import (
	"math"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/sqlitefn"
)

// SQLite is SQLite's dialect: the measurement run by SQLite's own GROUP
// BY and window functions, which spill to its temporary store, in the
// engine's file, for a table whose columns hold one class each (a STRICT
// table: INTEGER, REAL or TEXT; package backend/sqlite decides which
// tables qualify).
//
// Total forms: the compiler prints SQLite's own comparisons, arithmetic,
// length and substr, which the reference evaluator runs in the same
// engine (a NaN is NULL in SQLite, and no stored value is one); where
// SQLite has no exact primitive that cannot raise, the statement calls
// the small Go functions of package sqlitefn: the keyed hash, exact sums
// beyond 64 bits (SQLite's SUM raises on overflow, and its integer
// arithmetic turns to doubles), wide products, differences and
// quotients, rounding half to even, and RE2 matching. Text literals are
// bound (?n), so no byte of them is parsed as SQL.
//
// What the file holds cannot change the statement's meaning: SQLite
// stores no functions or macros, and the functions the statement calls
// are SQLite's built-ins and those registered by dpsql itself on every
// connection.
//
// The standard forms it keeps read in SQLite as they do elsewhere: CAST AS
// DOUBLE PRECISION, VARCHAR and BIGINT take the affinities REAL, TEXT and
// INTEGER (a wide integer past 64 bits, already text, stays text).
type SQLite struct{ Standard }

// Func is the built-in's name; SUM is sqlitefn's exact sum, and
// translate (the ASCII case mapping the compiler prints UPPER and LOWER
// with) sqlitefn's, as SQLite has none.
func (SQLite) Func(name string) string {
	switch name {
	case "sum":
		return sqlitefn.Sum
	case "translate":
		return sqlitefn.Translate
	}
	return name
}

// Text binds the literal as parameter ?n.
func (SQLite) Text(_ string, n int) (string, bool) { return "?" + strconv.Itoa(n), true }

// Value is the column itself: a STRICT column holds its class only, and
// a REAL never holds a NaN in SQLite.
func (SQLite) Value(x expr, _ Type) expr { return x }

// Float prints a float64 as a REAL literal (a decimal point or an
// exponent, so that SQLite never reads an integer), which SQLite's parser
// rounds correctly for the shortest decimal; infinities are out of
// range literals.
func (SQLite) Float(f float64) expr {
	switch {
	case math.IsInf(f, 1):
		return raw("9e999")
	case math.IsInf(f, -1):
		return raw("(-9e999)")
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	if f < 0 || (f == 0 && math.Signbit(f)) {
		if f == 0 {
			s = "-0.0"
		}
		return raw("(" + s + ")")
	}
	return raw(s)
}

// Hash is sqlitefn's keyed hash.
func (SQLite) Hash(values []expr, key uint64) expr {
	return call{fn: sqlitefn.Hash, args: append([]expr{num(int64(key))}, values...)}
}

// IsNaN is false for a number and NULL for NULL, as isnan is elsewhere:
// SQLite has no NaN (an operation that gives one gives NULL).
func (SQLite) IsNaN(x expr) expr {
	return caseOf{whens: []when{{isNull{x: x, not: true, bare: true}, raw("0")}}}
}

// RoundToInt64 is sqlitefn's rounding half to even (CAST truncates).
func (SQLite) RoundToInt64(x expr) expr { return call{fn: sqlitefn.Round, args: []expr{x}} }

// Wide is INTEGER, read by sqlitefn's functions as wide: a value beyond
// 64 bits travels as its decimal text.
func (SQLite) Wide() string { return "INTEGER" }

// WideDiv is sqlitefn's truncating quotient.
func (SQLite) WideDiv(x, y expr) expr { return call{fn: sqlitefn.Div, args: []expr{x, y}} }

// WideOp is sqlitefn's exact product or difference.
func (SQLite) WideOp(x expr, op byte, y expr) expr {
	fn := sqlitefn.Mul
	if op == '-' {
		fn = sqlitefn.Sub
	}
	return call{fn: fn, args: []expr{x, y}}
}

// NarrowSum is sqlitefn's exact sum clipped to [lo, hi] in the
// aggregate itself: SQLite cannot compare a sum beyond 64 bits (its
// text) with a number.
func (SQLite) NarrowSum(x, lo, hi expr) (expr, bool) {
	return call{fn: sqlitefn.SumClip, args: []expr{x, lo, hi}}, true
}

// Match is sqlitefn's RE2 match.
func (SQLite) Match(x, re expr) expr { return call{fn: sqlitefn.Match, args: []expr{x, re}} }

// RowIdentity is the rowid (backend/sqlite compiles only rowid tables).
func (SQLite) RowIdentity(table string) string {
	if table == "" {
		return "rowid"
	}
	return table + ".rowid"
}

// FloatOp is SQLite's operator on doubles: IEEE, ±Inf on overflow, NULL
// where IEEE gives NaN or for a division by zero, as the reference
// computes it in the same engine.
func (SQLite) FloatOp(x expr, op byte, y expr) (expr, bool) {
	return paren(x, string(op), y), true
}

// Let binds x in a subquery's column.
func (SQLite) Let(x expr, body func(v expr) expr) expr {
	return formOf("(SELECT {} FROM (SELECT {} AS dpsql_v))", body(raw("dpsql_v")), x)
}

// Chars is the text itself: SQLite's length and substr are the
// reference's own.
func (SQLite) Chars(x expr) (expr, bool) { return x, true }
