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

// Dialect gives the few forms the compiler needs in one engine's SQL, as
// nodes of the statement's tree (tree.go): each form takes its operands'
// nodes and gives its own, which the printer prints once.
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
	Value(x expr, t Type) expr
	// Float prints a float64 literal exactly, as a double.
	Float(f float64) expr
	// Hash is a 64-bit hash of the values (any class, NULL included)
	// mixed with key; it never raises.
	Hash(values []expr, key uint64) expr
	// Wide is an exact integer type of at least 127 bits of magnitude.
	Wide() string
	// SemiJoin keeps the rows of from that have a match in sub under on
	// (a semi-join: each row at most once), as a FROM item; or, with
	// exists, the dialect has none, and the statement reads from with
	// EXISTS (SELECT 1 FROM sub WHERE on) among its conditions.
	SemiJoin(from, sub, on expr) (item expr, exists bool)
	// Func is the name by which the statement calls the built-in
	// function name (sum, count, row_number), in a form that
	// nothing stored in the database can redefine.
	Func(name string) string
	// Widen reads a signed integer of at most 32 bits as a 64-bit
	// integer.
	Widen(x expr) expr
	// IsNaN is true where the double x is NaN (false for NULL or a
	// number).
	IsNaN(x expr) expr
	// ToDouble converts an integer x to a double (rounded to nearest).
	ToDouble(x expr) expr
	// ToText prints an integer x (a sum or a count, at most 128 bits) as
	// decimal text, which the driver returns as a string.
	ToText(x expr) expr
	// TruncDiv divides 64-bit integer x by the positive integer y,
	// truncating toward zero (as SQLite divides integers).
	TruncDiv(x, y expr) expr
	// WideDiv divides x, an integer of the wide type, by the positive
	// 64-bit integer y, truncating toward zero.
	WideDiv(x, y expr) expr
	// WideOp is x op y (op '*' or '-') of integers of the wide type,
	// exactly.
	WideOp(x expr, op byte, y expr) expr
	// NarrowSum is the exact sum of x clipped to [lo, hi] (integer
	// literals) as one aggregate, for a dialect that cannot compare a wide
	// sum with a number in SQL; ok is false where it can (the compiler
	// then clips the SUM with CASE).
	NarrowSum(x, lo, hi expr) (e expr, ok bool)
	// Match is whether text x matches the regular expression re, whose
	// value is anchored at both ends: (?s)^(?:...)$ in RE2 and
	// PostgreSQL's advanced expressions alike.
	Match(x, re expr) expr
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
	FloatOp(x expr, op byte, y expr) (e expr, ok bool)
	// Let is body(v) where v names the value of the double x, which is
	// printed, and evaluated, once per row whatever the number of uses
	// of v in body. body must not itself call Let on an expression that
	// uses v (each binding's names are its own: a nested binding is only
	// ever printed inside an operand, never around a use of an outer
	// name).
	Let(x expr, body func(v expr) expr) expr
	// With is the WITH relation name whose body is body; scan marks the
	// scan's rows, read twice (per unit, and again for the units with
	// more rows than l∞).
	With(name string, body expr, scan bool) expr
	// Chars is text x up to its first NUL, as a text whose length and
	// substrings the engine counts in characters (code points) as SQLite
	// counts them; ok is false where it cannot.
	Chars(x expr) (expr, bool)
	// RoundToInt64 converts a double of magnitude at most 2^62 to a
	// 64-bit integer, rounding half to even; a SUM of such integers is
	// exact (taken in a wide accumulator).
	RoundToInt64(x expr) expr
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
	q := c.compile()
	st = &c.st
	st.SQL, st.Args = printStatement(d, q)
	if len(st.SQL) > MaxStatementBytes {
		return nil, fmt.Sprintf("a statement of %d bytes (at most %d are sent to an engine)", len(st.SQL), MaxStatementBytes)
	}
	return st, ""
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
	// ranges and classes keep what arithRange printed for a node and
	// the class caseClass found for a CASE: a node is read by its
	// parent more than once (its class, then its text), and without
	// them nested CASEs took time exponential in their depth.
	ranges  map[*measure.Arith]printedRange
	classes map[*measure.Case]Type
}

// printedRange is integer arithmetic's node, with the range of its
// values.
type printedRange struct {
	x      expr
	lo, hi *big.Int
}

// compile builds the statement's tree (and sets c.st's outputs).
func (c *compiler) compile() *query {
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
	var cols, where []expr
	var keyNames []string
	var keyCols, keyFilters []expr
	if !unit.IsZero() {
		if c.typeOf(unit) == Real {
			panic(decline("a float unit")) // -0 and 0 are two units in the reference
		}
		cols = append(cols, as{c.value(unit), "u"})
		where = append(where, isNull{x: c.value(unit), not: true, bare: true})
	}
	for i, k := range m.Keys {
		e, filter, ko := c.keyExpr(k, !unit.IsZero())
		name := string(numbered("k", i))
		cols = append(cols, as{e, name})
		keyNames, keyCols = append(keyNames, name), append(keyCols, as{e, name})
		c.st.keys = append(c.st.keys, ko)
		if filter != nil {
			where = append(where, filter)
			keyFilters = append(keyFilters, filter)
		}
	}
	for i := range m.Args {
		cols = append(cols, as{c.argValue(i), string(numbered("a", i))})
	}
	if m.Profile && !m.Unit.IsZero() {
		c.st.profile = true
		return c.profile(keyCols, keyFilters, keyNames)
	}
	rows := &query{items: cols, from: c.from(), alias: "r"}
	if onceOK {
		var filter []expr
		rows.from, filter = c.semiJoin(once)
		where = append(filter, where...)
	} else if m.Where != nil {
		where = append([]expr{c.filter(m.Where)}, where...)
	}
	rows.where = where
	var q *query
	if unit.IsZero() {
		q = c.unbounded(rows, keyNames, specs)
	} else if len(c.st.Detail) > 0 {
		c.keptUnits = true
		q = c.unbounded(c.keptRows(rows, keyNames), keyNames, specs)
	} else {
		return c.bounded(rows, keyNames, specs) // what bounding dropped read beside it
	}
	if m.Dropped && !m.Unit.IsZero() {
		q = c.withDropped(q, keyCols, keyFilters, keyNames)
	}
	return q
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
