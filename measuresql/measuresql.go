// Package measuresql compiles a scan's measurement plan
// (measure.Plan) into one SQL statement for the engine that holds
// the table, in that engine's dialect, and reads back its per-group
// measurements.
//
// Where it sits: rewrite → measuresql → a backend (backend/duckdb) that
// runs the statement → exec, which adds the noise. The statement returns
// only per-group aggregates (and, for the measurements that need them,
// per-group distinct values with their row counts); no row leaves the
// engine.
//
// What every dialect must give (the backend invariant, docs/privacy.md):
//   - Totality: no printed expression can raise on any value, so whether
//     the statement succeeds never depends on the rows. Columns are read
//     through Dialect.Value (a widening cast; NaN read as NULL, as the
//     reference sees it), compared only with literals of their own class,
//     clipped with CASE (no function that could raise), and summed in the
//     dialect's wide integer type, which cannot overflow for any table of
//     fewer than 2^48 rows.
//   - Exactness: sums are of integers — the values of integer columns, or
//     the values of float columns as fixed-point integers at 2^-F, with F
//     chosen from the bounds so that no sum can overflow (measure.FixedPoint) —
//     never floating-point sums whose rounding depends on the order.
//   - Equality with the reference evaluator (exec's measurement
//     aggregate over the same rows): a filter or key compares a column
//     only with a literal of its own class (an integer column with an
//     integer, a float column with a number a float64 holds exactly, a text
//     column with a string, compared byte by byte), where both engines
//     decide alike; everything else is not compiled (Compile declines and
//     the scan runs through the reference).
//   - Contribution bounding that depends only on each unit's own rows: a
//     unit's groups and rows are ranked by the dialect's hash of the unit,
//     the group keys (and the row's measured values) and a fresh random key
//     per query, ties broken by the values themselves, so adding or removing
//     one unit changes only that unit's kept rows.
package measuresql

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/measure"
)

// Type is a column's class as the compiler sees it.
type Type int

// Column classes. Other columns are never compiled.
const (
	Other   Type = iota
	Integer      // exact integers that fit int64, read through a widening cast (unsigned, booleans as 0/1)
	Int          // a signed integer type the engine reads and sums as it is (no cast)
	Int32        // a signed integer of at most 32 bits, read as it is (arithmetic on it is compiled)
	Real         // binary floats (float4 widened exactly)
	Text         // text, compared byte by byte
	Bool         // booleans, read as the integers 0 and 1
)

// isInt reports whether t holds integers.
func isInt(t Type) bool { return t == Integer || t == Int || t == Int32 || t == Bool }

// Dialect prints the few forms the compiler needs in one engine's SQL.
type Dialect interface {
	// Quote quotes an identifier.
	Quote(name string) string
	// Table is the name by which the statement reads the plan's stored
	// table name.
	Table(name string) string
	// Text is text literal number n (1-based) of the statement, whose
	// value is s: printed in the statement, or a typed placeholder of a
	// parameter (bind: the value goes in Statement.Args).
	Text(s string, n int) (expr string, bind bool)
	// Value reads column name (already quoted) of class t as the
	// reference evaluator sees it, totally: integers as 64-bit integers,
	// floats as doubles with NaN as NULL, text as it is.
	Value(name string, t Type) string
	// Float prints a float64 literal exactly, as a double.
	Float(f float64) string
	// Hash is a 64-bit hash of the values (any class, NULL included)
	// mixed with key; it never raises.
	Hash(values []string, key uint64) string
	// Wide is an exact integer type of at least 127 bits of magnitude.
	Wide() string
	// SemiJoin keeps the rows of from that have a match in sub under on
	// (a semi-join: each row at most once), as a FROM item; or, with
	// exists, the dialect has none, and the statement reads from with
	// EXISTS (SELECT 1 FROM sub WHERE on) among its conditions.
	SemiJoin(from, sub, on string) (item string, exists bool)
	// Func is the name by which the statement calls the built-in
	// function name (sum, count, row_number), in a form that
	// nothing stored in the database can redefine.
	Func(name string) string
	// Widen reads a signed integer of at most 32 bits as a 64-bit
	// integer.
	Widen(x string) string
	// IsNaN is true where the double x is NaN (false for NULL or a
	// number).
	IsNaN(x string) string
	// ToDouble converts an integer x to a double (rounded to nearest).
	ToDouble(x string) string
	// ToText prints an integer x (a sum or a count, at most 128 bits) as
	// decimal text, which the driver returns as a string.
	ToText(x string) string
	// TruncDiv divides 64-bit integer x by the positive integer y,
	// truncating toward zero (as SQLite divides integers).
	TruncDiv(x, y string) string
	// WideDiv divides x, an integer of the wide type, by the positive
	// 64-bit integer y, truncating toward zero.
	WideDiv(x, y string) string
	// Match is whether text x matches the regular expression re, whose
	// value is anchored at both ends: (?s)^(?:...)$ in RE2 and
	// PostgreSQL's advanced expressions alike.
	Match(x, re string) string
	// RowIdentity names each row of the table with the alias (""
	// for the statement's one table) uniquely, as the mirror that the
	// reference reads names it.
	RowIdentity(table string) string
	// FloatOp is x op y (+, −, ×, /) of doubles as IEEE computes it, ±Inf
	// on overflow and 0 on underflow, as the reference does; ok is false
	// when the dialect has no form that cannot raise. The form prints x
	// and y once each (binding them, as Let does, where it tests them
	// more than once), so that nested arithmetic prints in space linear
	// in its depth.
	FloatOp(x string, op byte, y string) (expr string, ok bool)
	// Let is body(v) where v names the value of the double x, which is
	// printed, and evaluated, once per row whatever the number of uses
	// of v in body. body must not itself call Let on an expression that
	// uses v (each binding's names are its own: a nested binding is only
	// ever printed inside an operand, never around a use of an outer
	// name).
	Let(x string, body func(v string) string) string
	// With is the WITH relation name whose body is body; scan marks the
	// scan's rows, read twice (per unit, and again for the units with
	// more rows than l∞).
	With(name, body string, scan bool) string
	// Chars is text x up to its first NUL, as a text whose length and
	// substrings the engine counts in characters (code points) as SQLite
	// counts them; ok is false where it cannot.
	Chars(x string) (string, bool)
	// RoundToInt64 converts a double of magnitude at most 2^62 to a
	// 64-bit integer, rounding half to even; a SUM of such integers is
	// exact (taken in a wide accumulator).
	RoundToInt64(x string) string
}

// Statement is a compiled measurement.
type Statement struct {
	// SQL is the statement; it returns one row per group (per group and
	// distinct detail tuple when Detail is set).
	SQL string
	// Args are the values of its parameters ($1, $2, ...), in order: the
	// text literals of a dialect that binds them (Dialect.Text).
	Args []any
	// Specs are the measurements, as in the plan.
	Specs []measure.Spec
	// Detail lists the plan's argument indices whose distinct values come
	// back per group (with their row count), for the measurements
	// computed from them in Go (histograms, quantile trees, distinct
	// counts); DetailSpec marks those specs.
	Detail     []int
	DetailSpec []bool
	keys       []keyOut
	outs       []specOut
	// dropped is the first of the three columns of what bounding
	// dropped (measure.Dropped), in every row (0: none); Decode reads
	// them into decoded.
	dropped int
	// droppedPerRow: each row holds a part of the three counts (the
	// units whose first group it is), which Decode adds up; else every
	// row holds them all.
	droppedPerRow bool
	decoded       *measure.Dropped
	// profile marks a statement of the units' profile (measure.Plan.Profile):
	// one row of its two histograms, which Decode reads into
	// decodedProfile.
	profile        bool
	decodedProfile *measure.Profile
}

type keyOut struct {
	domain map[any]int64 // raw value → position in the domain (nil: the value is the key)
	t      Type
}

// specOut says how a spec's value is read from its columns: the sum of
// column v (scaled by 2^-shift), or for q the centred squares of
// columns v (Σt), v+1 (Σt²), v+2 (count), c = t·2^-shift.
type specOut struct {
	col   int
	shift int
	q     bool
	mid   float64
}

// Compile prints the measurement in dialect d. types gives each column's
// class; key is the query's fresh random key. ok is false when some part
// is not compiled (the scan then runs through the reference evaluator).
// The decision depends only on the plan and the schema.
func Compile(m *measure.Plan, types map[measure.Col]Type, d Dialect, key uint64) (st *Statement, ok bool) {
	st, why := compile(m, types, d, key)
	return st, why == ""
}

// WhyNot says why the plan is not compiled ("" when it is), for EXPLAIN.
func WhyNot(m *measure.Plan, types map[measure.Col]Type, d Dialect) string {
	_, why := compile(m, types, d, 0)
	return why
}

// ErrEngineResources is measure.ErrEngineResources, for the backends.
var ErrEngineResources = measure.ErrEngineResources

// MaxStatementBytes caps a compiled statement: a longer one is declined
// before anything runs (the plan's size decides it, never the rows), and
// the reference evaluator measures instead. Statements grow linearly with
// the analyst's expression (each operand printed once, Dialect.Let), so
// only an expression of a similar size reaches it.
const MaxStatementBytes = 1 << 20

func compile(m *measure.Plan, types map[measure.Col]Type, d Dialect, key uint64) (st *Statement, why string) {
	c := &compiler{m: m, types: types, d: d, key: key}
	defer func() {
		if r := recover(); r != nil {
			reason, declined := r.(decline)
			if !declined {
				panic(r)
			}
			st, why = nil, string(reason)
		}
	}()
	st = c.compile()
	st.SQL, st.Args = c.literals(st.SQL)
	if len(st.SQL) > MaxStatementBytes {
		return nil, fmt.Sprintf("a statement of %d bytes (at most %d are sent to an engine)", len(st.SQL), MaxStatementBytes)
	}
	return st, ""
}

// text is a text literal whose value is s: a marker (NUL, its index,
// NUL; no printed name or literal holds a NUL) that literals replaces,
// in order of appearance, by the dialect's literal or placeholder, so
// that the placeholders the statement holds are numbered 1, 2, ... in
// order, whatever the compiler printed and then dropped.
func (c *compiler) text(s string) string {
	c.texts = append(c.texts, s)
	return "\x00" + strconv.Itoa(len(c.texts)-1) + "\x00"
}

// literals replaces the text markers of sql (text) by the dialect's
// literals, and returns the values of the parameters it binds.
func (c *compiler) literals(sql string) (string, []any) {
	if len(c.texts) == 0 {
		return sql, nil
	}
	parts := strings.Split(sql, "\x00")
	var args []any
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 0 {
			b.WriteString(p)
			continue
		}
		k, err := strconv.Atoi(p)
		if err != nil || k >= len(c.texts) {
			panic(decline("a statement with a NUL")) // not reached: names and literals hold none
		}
		expr, bind := c.d.Text(c.texts[k], len(args)+1)
		if bind {
			args = append(args, c.texts[k])
		}
		b.WriteString(expr)
	}
	return b.String(), args
}

// decline stops a compilation that meets a form it does not compile.
type decline string

type compiler struct {
	m     *measure.Plan
	types map[measure.Col]Type
	d     Dialect
	key   uint64
	st    Statement
	// outTypes are the classes of the plan's grouping's outputs.
	outTypes []Type
	// keptUnits: unbounded measures the kept rows of bounding (rows carry
	// their unit u), so a unit count is of distinct units.
	keptUnits bool
	// texts are the text literals printed so far (text).
	texts []string
	// ranges and classes keep what arithRange printed for a node and
	// the class caseClass found for a CASE: a node is read by its
	// parent more than once (its class, then its text), and without
	// them nested CASEs took time exponential in their depth.
	ranges  map[*measure.Arith]printedRange
	classes map[*measure.Case]Type
}

// printedRange is integer arithmetic printed, with the range of its
// values.
type printedRange struct {
	text   string
	lo, hi *big.Int
}

func (c *compiler) compile() *Statement {
	m := c.m
	c.st.Specs = m.Specs
	specs := m.Specs
	c.st.DetailSpec = make([]bool, len(m.Specs))
	inDetail := map[int]bool{}
	if m.PerUnit != nil {
		c.groupingTypes()
	}
	once, onceOK := c.rowsOnce()
	unit := m.Unit
	if onceOK {
		unit = measure.Col{} // each row once: no bounding (rowsOnce)
	}
	for i, sp := range specs {
		if sp.Kind.ReadsArg() && (sp.Arg < 0 || sp.Arg >= len(m.Args)) {
			panic(decline("spec argument"))
		}
		if sp.Kind.Detail() {
			if !unit.IsZero() && !c.detailBoundable() {
				panic(decline("distinct values under bounding with per-unit measurements"))
			}
			if m.Cases[sp.Arg] != nil {
				panic(decline("an expression (CASE or arithmetic) under a distinct count, a percentile or a bound search"))
			}
			if sp.Kind == measure.Distinct && c.argType(sp.Arg) == Real {
				panic(decline("distinct floats")) // -0 and 0 are two values in the reference
			}
			c.st.DetailSpec[i] = true
			if !inDetail[sp.Arg] {
				inDetail[sp.Arg] = true
				c.st.Detail = append(c.st.Detail, sp.Arg)
			}
		}
	}
	// The rows: unit, keys, measured values.
	var cols, where []string
	var keyNames, keyCols, keyFilters []string
	if !unit.IsZero() {
		if c.typeOf(unit) == Real {
			panic(decline("a float unit")) // -0 and 0 are two units in the reference
		}
		cols = append(cols, c.value(unit)+" AS u")
		where = append(where, c.value(unit)+" IS NOT NULL")
	}
	for i, k := range m.Keys {
		e, filter, ko := c.keyExpr(k, !unit.IsZero())
		name := "k" + strconv.Itoa(i)
		cols = append(cols, e+" AS "+name)
		keyNames, keyCols = append(keyNames, name), append(keyCols, e+" AS "+name)
		c.st.keys = append(c.st.keys, ko)
		if filter != "" {
			where = append(where, filter)
			keyFilters = append(keyFilters, filter)
		}
	}
	for i := range m.Args {
		cols = append(cols, c.argValue(i)+" AS a"+strconv.Itoa(i))
	}
	if m.Profile && !m.Unit.IsZero() {
		c.st.SQL, c.st.profile = c.profile(keyCols, keyFilters, keyNames), true
		return &c.st
	}
	rows := &query{items: cols, from: c.from(), alias: "r"}
	if onceOK {
		var filter []string
		rows.from, filter = c.semiJoin(once)
		where = append(filter, where...)
	} else if m.Where != nil {
		where = append([]string{c.filter(m.Where)}, where...)
	}
	rows.where = where
	if unit.IsZero() {
		c.st.SQL = c.unbounded(rows, keyNames, specs)
	} else if len(c.st.Detail) > 0 {
		c.keptUnits = true
		c.st.SQL = c.unbounded(c.keptRows(rows, keyNames), keyNames, specs)
	} else {
		c.st.SQL = c.bounded(rows, keyNames, specs) // what bounding dropped read beside it
		return &c.st
	}
	if m.Dropped && !m.Unit.IsZero() {
		c.st.SQL = c.withDropped(keyCols, keyFilters, keyNames)
	}
	return &c.st
}

// Shown is the statement as EXPLAIN shows it: compiled as a query would
// be (Compile with key 0 and 1: where the two differ, the statement holds
// the per-query bounding key, drawn afresh for each query and shown as
// 0), with the values of its parameters after it.
func Shown(m *measure.Plan, types map[measure.Col]Type, d Dialect) (string, bool) {
	st, ok := Compile(m, types, d, 0)
	if !ok {
		return "", false
	}
	text := st.SQL
	for i, a := range st.Args {
		text += fmt.Sprintf(" -- $%d = %v", i+1, a)
	}
	if other, _ := Compile(m, types, d, 1); other != nil && other.SQL != st.SQL {
		text += " -- the bounding key, drawn afresh for each query, is shown as 0"
	}
	return text, true
}
