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
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dpsql/dpsql/exactsum"
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
)

// isInt reports whether t holds integers.
func isInt(t Type) bool { return t == Integer || t == Int || t == Int32 }

// Dialect prints the few forms the compiler needs in one engine's SQL.
type Dialect interface {
	// Quote quotes an identifier.
	Quote(name string) string
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
	// (a semi-join: each row at most once).
	SemiJoin(from, sub, on string) string
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
	// FullMatch is whether text x, up to its first NUL (where SQLite's
	// LIKE stops reading), matches the RE2 expression re in full.
	FullMatch(x, re string) string
	// RowIdentity names each row of the table with the alias (""
	// for the statement's one table) uniquely, as the mirror that the
	// reference reads names it.
	RowIdentity(table string) string
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
func Compile(m *measure.Plan, types map[string]Type, d Dialect, key uint64) (st *Statement, ok bool) {
	st, why := compile(m, types, d, key)
	return st, why == ""
}

// WhyNot says why the plan is not compiled ("" when it is), for EXPLAIN.
func WhyNot(m *measure.Plan, types map[string]Type, d Dialect) string {
	_, why := compile(m, types, d, 0)
	return why
}

func compile(m *measure.Plan, types map[string]Type, d Dialect, key uint64) (st *Statement, why string) {
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
	return c.compile(), ""
}

// decline stops a compilation that meets a form it does not compile.
type decline string

type compiler struct {
	m     *measure.Plan
	types map[string]Type
	d     Dialect
	key   uint64
	st    Statement
	// outTypes are the classes of the plan's grouping's outputs.
	outTypes []Type
	// keptUnits: unbounded measures the kept rows of bounding (rows carry
	// their unit u), so a unit count is of distinct units.
	keptUnits bool
}

func (c *compiler) typeOf(col string) Type {
	if _, n := measure.SplitColumn(col); n == measure.RowIdentity {
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
		panic(decline("column " + col))
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
			if o.Column == "" {
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
func (c *compiler) argValue(i int) string {
	cs := c.m.Cases[i]
	if cs == nil {
		return c.value(c.m.Args[i])
	}
	t := c.argType(i)
	operand := func(o measure.Operand) string {
		if n, ok := c.number(o.Value, t); ok {
			return n
		}
		if o.Arith != nil {
			if t == Real {
				return c.double(o.Arith)
			}
			return c.arith(o.Arith)
		}
		if o.Column == "" {
			return "NULL"
		}
		if t == Real && isInt(c.typeOf(o.Column)) {
			return c.d.ToDouble(c.value(o.Column))
		}
		return c.value(o.Column)
	}
	if len(cs.Whens) == 0 {
		return operand(cs.Else)
	}
	var b strings.Builder
	b.WriteString("(CASE")
	for _, w := range cs.Whens {
		// A condition that is NULL does not hold, as FALSE does not.
		b.WriteString(" WHEN " + c.filter(w.Cond) + " THEN " + operand(w.Then))
	}
	b.WriteString(" ELSE " + operand(cs.Else) + " END)")
	return b.String()
}

// number prints a constant number (an int64 or a float64) in class t:
// an integer as a double where t is Real, as the reference converts it.
func (c *compiler) number(v any, t Type) (string, bool) {
	switch v := v.(type) {
	case int64:
		if t == Real {
			return c.d.Float(float64(v)), true
		}
		return strconv.FormatInt(v, 10), true
	case float64:
		return c.d.Float(v), true
	}
	return "", false
}

// value reads a column as the reference sees it.
func (c *compiler) value(col string) string {
	return c.d.Value(c.name(col), c.typeOf(col))
}

// name is a column's reference: qualified by its table's alias (t0 for
// the plan's Table, tI for Joins[I-1]) when the plan joins tables.
func (c *compiler) name(col string) string {
	if i, ok := measure.OutputIndex(col); ok {
		return "o" + strconv.Itoa(i)
	}
	t, n := measure.SplitColumn(col)
	table := ""
	if len(c.m.Joins) > 0 {
		table = c.d.Quote("t" + strconv.Itoa(t))
	}
	if n == measure.RowIdentity {
		return c.d.RowIdentity(table)
	}
	if table == "" {
		return c.d.Quote(n)
	}
	return table + "." + c.d.Quote(n)
}

// from is the statement's FROM clause: the table, or the tables joined
// on the plan's equalities, each printed under the next join that has
// both its tables (every join is inner, so where an equality sits does
// not change the rows).
func (c *compiler) from() string {
	m := c.m
	if m.PerUnit != nil {
		return c.grouped()
	}
	if len(m.Joins) == 0 {
		return c.d.Quote(m.Table)
	}
	on := make([][]string, len(m.Joins)+1)
	for _, e := range m.On {
		t0, _ := measure.SplitColumn(e[0])
		t1, _ := measure.SplitColumn(e[1])
		if t0 > len(m.Joins) || t1 > len(m.Joins) {
			panic(decline("a join equality of an unknown table"))
		}
		last := max(t0, t1, 1)
		on[last] = append(on[last], c.equal(e[0], e[1]))
	}
	var b strings.Builder
	b.WriteString(c.d.Quote(m.Table) + " AS " + c.d.Quote("t0"))
	for i, t := range m.Joins {
		b.WriteString(" JOIN " + c.d.Quote(t) + " AS " + c.d.Quote("t"+strconv.Itoa(i+1)) + " ON ")
		if len(on[i+1]) == 0 {
			b.WriteString("TRUE")
			continue
		}
		b.WriteString(strings.Join(on[i+1], " AND "))
	}
	return b.String()
}

// rowsOnce reports whether the plan's unit is the identity of one
// table's rows (measure.RowIdentity: each row of a table without a unit
// column is its own unit, and l0 = l∞ = 1) while every key and measured
// argument reads that table alone, with row-level measurements only.
// Then every copy a join makes of a row has the same keys and values,
// and the reference's bounding keeps exactly one of the copies that pass
// the filter: the same as counting each row once when some combination
// of the other tables' rows matches it and passes — a semi-join, with
// no bounding. It returns the table.
func (c *compiler) rowsOnce() (int, bool) {
	m := c.m
	t, n := measure.SplitColumn(m.Unit)
	if len(m.Joins) == 0 || n != measure.RowIdentity || m.MaxGroups != 1 || m.MaxRows != 1 {
		return 0, false
	}
	for _, sp := range m.Specs {
		switch sp.Kind {
		case measure.Rows, measure.Units, measure.Values, measure.UnitsWithValue, measure.Sum, measure.Squares:
		default:
			if !sp.Kind.Detail() {
				return 0, false
			}
		}
	}
	cols := map[string]bool{}
	for _, k := range m.Keys {
		if k.Case != nil {
			caseColumns(k.Case, cols)
			continue
		}
		cols[k.Column] = true
	}
	for i, a := range m.Args {
		if cs := m.Cases[i]; cs != nil {
			caseColumns(cs, cols)
			continue
		}
		cols[a] = true
	}
	for col := range cols {
		if ct, _ := measure.SplitColumn(col); ct != t {
			return 0, false
		}
	}
	return t, true
}

// semiJoin prints the FROM clause of rowsOnce, table t semi-joined with
// the other tables on the join's equalities and the parts of the plan's
// filter that read them (measured three times faster than EXISTS in
// DuckDB), and the filter of the parts that read t alone ("" for none).
func (c *compiler) semiJoin(t int) (from, filter string) {
	m := c.m
	tables := append([]string{m.Table}, m.Joins...)
	alias := func(i int) string { return c.d.Quote("t" + strconv.Itoa(i)) }
	var inner, outer []string
	for _, e := range m.On {
		inner = append(inner, c.equal(e[0], e[1]))
	}
	for _, f := range conjuncts(m.Where) {
		cols := map[string]bool{}
		filterColumns(f, cols)
		alone := true
		for col := range cols {
			if ct, _ := measure.SplitColumn(col); ct != t {
				alone = false
			}
		}
		if alone {
			outer = append(outer, c.filter(f))
		} else {
			inner = append(inner, c.filter(f))
		}
	}
	var others []string
	for i, name := range tables {
		if i != t {
			others = append(others, c.d.Quote(name)+" AS "+alias(i))
		}
	}
	sub := others[0]
	if len(others) > 1 {
		sub = "(" + strings.Join(others, " CROSS JOIN ") + ")"
	}
	on := "TRUE"
	if len(inner) > 0 {
		on = strings.Join(inner, " AND ")
	}
	return c.d.SemiJoin(c.d.Quote(tables[t])+" AS "+alias(t), sub, on), strings.Join(outer, " AND ")
}

// conjuncts are the parts of a filter that must all hold (nil: none).
func conjuncts(f measure.Filter) []measure.Filter {
	switch a := f.(type) {
	case nil:
		return nil
	case measure.And:
		var out []measure.Filter
		for _, p := range a.Parts {
			out = append(out, conjuncts(p)...)
		}
		return out
	}
	return []measure.Filter{f}
}

// caseColumns adds the columns a CASE reads to cols.
func caseColumns(cs *measure.Case, cols map[string]bool) {
	for _, w := range cs.Whens {
		filterColumns(w.Cond, cols)
	}
	for _, o := range operands(cs) {
		if o.Column != "" {
			cols[o.Column] = true
		}
		arithColumns(o.Arith, cols)
	}
}

// filterColumns adds the columns a filter reads to cols.
func filterColumns(f measure.Filter, cols map[string]bool) {
	switch f := f.(type) {
	case measure.And:
		for _, p := range f.Parts {
			filterColumns(p, cols)
		}
	case measure.Or:
		for _, p := range f.Parts {
			filterColumns(p, cols)
		}
	case measure.Not:
		filterColumns(f.X, cols)
	case measure.Compare:
		if f.Column != "" {
			cols[f.Column] = true
		}
		arithColumns(f.Arith, cols)
	case measure.IsNull:
		cols[f.Column] = true
	case measure.In:
		cols[f.Column] = true
	}
}

// arithColumns adds the columns arithmetic reads to cols.
func arithColumns(a *measure.Arith, cols map[string]bool) {
	if a == nil {
		return
	}
	if a.Column != "" {
		cols[a.Column] = true
	}
	arithColumns(a.X, cols)
	arithColumns(a.Y, cols)
}

// groupingTypes sets the classes of the plan's grouping's outputs: a
// grouped column's, an integer for a count, the column's for a minimum
// or maximum. Grouping by a float is declined (-0 and 0, NaN and NULL
// group apart in one engine and together in the other).
func (c *compiler) groupingTypes() {
	g := c.m.PerUnit
	if len(c.m.Joins) > 0 {
		panic(decline("a grouping over a join"))
	}
	for _, col := range g.By {
		if c.typeOf(col) == Real {
			panic(decline("a subquery grouped by a float column"))
		}
	}
	c.outTypes = make([]Type, len(g.Outputs))
	for i, a := range g.Outputs {
		switch a.Func {
		case "count":
			c.outTypes[i] = Integer
		case "", "min", "max":
			t := c.typeOf(a.Column)
			if isInt(t) {
				t = Integer
			}
			c.outTypes[i] = t
		default:
			panic(decline("a per-unit " + a.Func))
		}
	}
}

// grouped prints the plan's grouping as a subquery d whose columns are
// its outputs (o0, o1, ...), computed as the reference computes them: a
// count of the values it sees (not NULL, not NaN), the least or greatest
// of them (text by bytes).
func (c *compiler) grouped() string {
	g := c.m.PerUnit
	var items, by []string
	for _, col := range g.By {
		by = append(by, c.value(col))
	}
	for i, a := range g.Outputs {
		var e string
		switch a.Func {
		case "":
			e = c.value(a.Column)
		case "count":
			if a.Column == "" {
				e = c.d.Func("count") + "(*)"
				break
			}
			e = c.d.Func("count") + "(" + c.value(a.Column) + ")"
		default:
			e = c.d.Func(a.Func) + "(" + c.value(a.Column) + ")"
		}
		if a.Func != "" && a.Column != "" && c.typeOf(a.Column) == Real {
			e += " FILTER (WHERE NOT " + c.d.IsNaN(c.value(a.Column)) + ")"
		}
		items = append(items, e+" AS o"+strconv.Itoa(i))
	}
	sub := "SELECT " + strings.Join(items, ", ") + " FROM " + c.d.Quote(c.m.Table)
	if g.Where != nil {
		sub += " WHERE " + c.filter(g.Where)
	}
	return "(" + sub + " GROUP BY " + strings.Join(by, ", ") + ") AS d"
}

// equal prints a join's equality of two columns where the engines
// decide it alike: both integers (read as 64-bit), both text (bytes), or
// both floats (NaN, NULL to the reference, equal to nothing; -0 = 0 in
// both). Columns of two classes are declined: the reference converts by
// affinity (5 = '5' holds there) where an engine casts, and may raise.
func (c *compiler) equal(x, y string) string {
	tx, ty := c.typeOf(x), c.typeOf(y)
	switch {
	case isInt(tx) && isInt(ty), tx == Text && ty == Text:
		return c.value(x) + " = " + c.value(y)
	case tx == Real && ty == Real:
		return "(" + c.value(x) + " = " + c.value(y) + " AND NOT " + c.d.IsNaN(c.value(x)) + ")"
	}
	panic(decline("a join of columns of two classes"))
}

// literal prints v for comparison with a column of class t, or declines
// when the two engines could decide the comparison differently.
func (c *compiler) literal(v any, t Type) string {
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
func (c *compiler) exact(v any, t Type) (string, bool) {
	switch v := v.(type) {
	case int64:
		switch t {
		case Integer, Int, Int32:
			return strconv.FormatInt(v, 10), true
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
			return strconv.FormatInt(int64(v), 10), true
		}
	case string:
		if t == Text && utf8.ValidString(v) && !strings.ContainsRune(v, 0) {
			return "'" + strings.ReplaceAll(v, "'", "''") + "'", true
		}
	}
	return "", false
}

// neighbours are, for a number v that no value of the numeric class t
// equals (exact declined), the greatest value of the class below v and
// the least above it, as literals ("" where there is none); ok is false
// when v is not such a number (text against a number, or the reverse,
// which SQLite compares after converting by affinity: not compiled).
// Then x < v is x <= below, x > v is x >= above, x = v holds for no x.
func (c *compiler) neighbours(v any, t Type) (below, above string, ok bool) {
	switch v := v.(type) {
	case float64: // in an integer column: fractional, infinite or beyond int64
		if !isInt(t) || math.IsNaN(v) {
			return "", "", false
		}
		lo, hi := math.Floor(v), math.Ceil(v)
		switch {
		case lo >= 1<<63:
			below = strconv.FormatInt(math.MaxInt64, 10)
		case lo >= -1<<63:
			below = strconv.FormatInt(int64(lo), 10)
		}
		switch {
		case hi < -1<<63:
			above = strconv.FormatInt(math.MinInt64, 10)
		case hi < 1<<63:
			above = strconv.FormatInt(int64(hi), 10)
		}
		return below, above, true
	case int64: // in a float column: an integer beyond 2^53 between two doubles
		if t != Real {
			return "", "", false
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
	return "", "", false
}

// compare prints column op v for any numeric literal v: as it is where
// the column's class holds v, else by v's neighbours in the class.
func (c *compiler) compare(col string, arith *measure.Arith, op string, v any) string {
	var t Type
	var x string
	if arith != nil {
		t, x = c.arithTyped(arith) // an exact 64-bit integer, never NaN; or a double
	} else {
		t, x = c.typeOf(col), c.value(col)
	}
	if lit, ok := c.exact(v, t); ok {
		return c.notNaN(x, t, "("+x+" "+op+" "+lit+")")
	}
	below, above, ok := c.neighbours(v, t)
	if !ok {
		panic(decline(fmt.Sprintf("literal %v", v)))
	}
	var cond string
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

// arithLimit bounds every value integer arithmetic may reach: far below
// 2^63, so that no sum or product overflows in SQLite (which would turn
// it into a float) or in the engine (which would raise).
var arithLimit = new(big.Int).Lsh(big.NewInt(1), 62)

// arith prints integer arithmetic over a row (+, −, × of columns of at
// most 32 bits and integer constants) in 64-bit integers, when every
// value it can reach, by the columns' ranges, stays within ±2^62: then it
// is exact in both engines and cannot raise; otherwise it declines.
func (c *compiler) arith(a *measure.Arith) string {
	sqlText, _, _ := c.arithRange(a)
	return sqlText
}

// floats reports whether arithmetic reads a float column or constant:
// then SQLite computes it, where a float meets it, in doubles.
func (c *compiler) floats(a *measure.Arith) bool {
	switch {
	case a == nil:
		return false
	case a.Op != 0:
		return c.floats(a.X) || c.floats(a.Y)
	case a.Column != "":
		return c.typeOf(a.Column) == Real
	}
	return a.IsFloat
}

// arithTyped prints arithmetic with its class: Int for integer
// arithmetic (arith), Real for arithmetic with a float in it (double).
func (c *compiler) arithTyped(a *measure.Arith) (Type, string) {
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
func (c *compiler) double(a *measure.Arith) string {
	switch {
	case !c.floats(a):
		if a.Op == 0 && a.Column != "" {
			return c.d.ToDouble(c.value(a.Column)) // any integer column: one conversion
		}
		if a.Op == 0 {
			return c.d.Float(float64(a.Const))
		}
		return c.d.ToDouble(c.arith(a))
	case a.Op != 0:
		return "(" + c.double(a.X) + " " + string(a.Op) + " " + c.double(a.Y) + ")"
	case a.Column != "":
		return c.value(a.Column)
	}
	return c.d.Float(a.Float)
}

func (c *compiler) arithRange(a *measure.Arith) (string, *big.Int, *big.Int) {
	var text string
	var lo, hi *big.Int
	switch {
	case a.Op == 0 && a.Column != "":
		if c.typeOf(a.Column) != Int32 {
			panic(decline("arithmetic on a column wider than 32 bits"))
		}
		text, lo, hi = c.d.Widen(c.value(a.Column)), big.NewInt(math.MinInt32), big.NewInt(math.MaxInt32)
	case a.Op == 0 && a.IsFloat:
		panic(decline("a float in integer arithmetic"))
	case a.Op == 0:
		text, lo, hi = strconv.FormatInt(a.Const, 10), big.NewInt(a.Const), big.NewInt(a.Const)
		if a.Const < 0 {
			text = "(" + text + ")"
		}
	default:
		x, xl, xh := c.arithRange(a.X)
		y, yl, yh := c.arithRange(a.Y)
		text = "(" + x + " " + string(a.Op) + " " + y + ")"
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

// bound is x op lit, or where there is no such literal (the class has no
// value on that side), a condition no value meets.
func (c *compiler) bound(x, op, lit string) string {
	if lit == "" {
		return c.known(x, "FALSE")
	}
	return "(" + x + " " + op + " " + lit + ")"
}

// known is the condition whose value is truth (TRUE or FALSE) for every
// value of x, NULL for NULL (as every comparison of NULL is).
func (c *compiler) known(x, truth string) string {
	return "(CASE WHEN " + x + " IS NULL THEN NULL ELSE " + truth + " END)"
}

func (c *compiler) filter(f measure.Filter) string {
	switch f := f.(type) {
	case measure.And:
		return c.join(f.Parts, " AND ")
	case measure.Or:
		return c.join(f.Parts, " OR ")
	case measure.Not:
		return "(NOT " + c.filter(f.X) + ")"
	case measure.Compare:
		return c.compare(f.Column, f.Arith, f.Op, f.Value)
	case measure.IsNull:
		t := c.typeOf(f.Column)
		v := c.value(f.Column)
		if t == Real {
			if f.Not {
				return "(" + v + " IS NOT NULL AND NOT " + c.d.IsNaN(v) + ")"
			}
			return "(" + v + " IS NULL OR " + c.d.IsNaN(v) + ")"
		}
		if f.Not {
			return "(" + v + " IS NOT NULL)"
		}
		return "(" + v + " IS NULL)"
	case measure.In:
		t := c.typeOf(f.Column)
		var vals []string
		for _, v := range f.Values {
			if lit, ok := c.exact(v, t); ok {
				vals = append(vals, lit)
			} else if _, _, ok := c.neighbours(v, t); !ok {
				panic(decline(fmt.Sprintf("literal %v", v)))
			} // else: a number no value of the column equals
		}
		v := c.value(f.Column)
		var in string
		if len(vals) == 0 {
			in = c.known(v, "FALSE") // x IN (values none equals): NULL for NULL, as SQLite
		} else {
			in = "(" + v + " IN (" + strings.Join(vals, ", ") + "))"
		}
		if f.Not {
			in = "(NOT " + in + ")"
		}
		return c.notNaN(v, t, in)
	case measure.Like:
		if c.typeOf(f.Column) != Text {
			panic(decline("LIKE on a column that is not text")) // SQLite matches a number's text
		}
		re, ok := likeRegexp(f.Pattern)
		if !ok {
			panic(decline("a LIKE pattern with NUL or invalid UTF-8"))
		}
		m := c.d.FullMatch(c.value(f.Column), re)
		if f.Not {
			m = "(NOT " + m + ")"
		}
		return m
	}
	panic(decline("filter"))
}

// likeRegexp is an RE2 expression that matches, in full, exactly the
// texts SQLite's LIKE pattern p matches: % any sequence of characters,
// _ one character (a newline too), an ASCII letter in either case (SQLite
// folds ASCII only), every other character itself. ok is false for a
// pattern with NUL or invalid UTF-8.
func likeRegexp(p string) (string, bool) {
	if !utf8.ValidString(p) || strings.IndexByte(p, 0) >= 0 {
		return "", false
	}
	var b strings.Builder
	b.WriteString("(?s)")
	for _, r := range p {
		switch {
		case r == '%':
			b.WriteString(".*")
		case r == '_':
			b.WriteString(".")
		case r < utf8.RuneSelf && unicode.IsLetter(r):
			b.WriteString("[" + string(unicode.ToLower(r)) + string(unicode.ToUpper(r)) + "]")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return b.String(), true
}

func (c *compiler) join(parts []measure.Filter, op string) string {
	var out []string
	for _, p := range parts {
		out = append(out, c.filter(p))
	}
	return "(" + strings.Join(out, op) + ")"
}

// keyExpr is a key as the statement groups by it: the column's value.
// A key with a domain is mapped to its position in Go (Decode): grouping
// by the raw value and mapping each group costs one comparison per group,
// a CASE over the domain one per row. With bounding the rows outside the
// domain must not take a unit's l0 places, so the filter is returned too
// ("" for none); without, their groups are dropped in Go, as the
// reference's WHERE key IN (domain) drops their rows.
func (c *compiler) keyExpr(k measure.Key, bounded bool) (expr, filter string, ko keyOut) {
	var e string
	var t Type
	switch {
	case k.Case != nil:
		e, t = c.keyCase(k.Case)
	case k.Bin != nil:
		e, t = c.bin(c.value(k.Column), c.typeOf(k.Column), k.Bin)
	default:
		e, t = c.value(k.Column), c.typeOf(k.Column)
	}
	if k.Domain == nil {
		if t == Real {
			panic(decline("a float key without a domain")) // -0 and 0 group apart in the reference
		}
		return e, "", keyOut{t: t}
	}
	ko = keyOut{t: t, domain: map[any]int64{}}
	var lits []string
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
		return e, "FALSE", ko
	}
	if bounded {
		filter = c.notNaN(e, t, e+" IN ("+strings.Join(lits, ", ")+")")
	}
	return e, filter, ko
}

// keyCase prints a CASE key of constants, and its class: text when
// every value is a string, an integer when every one is, else (numbers
// of both kinds) a double, as the reference compares them; strings
// among numbers are declined (SQLite compares across classes by its own
// order).
func (c *compiler) keyCase(cs *measure.Case) (string, Type) {
	t := Other
	for _, o := range operands(cs) {
		var u Type
		switch o.Value.(type) {
		case nil:
			if o.Column != "" || o.Arith != nil {
				panic(decline("a CASE key whose value is not a constant"))
			}
			continue
		case string:
			u = Text
		case int64:
			u = Integer
		case float64:
			u = Real
		default:
			panic(decline("a CASE key's value"))
		}
		switch {
		case t == Other || t == u:
			t = u
		case t != Text && u != Text:
			t = Real
		default:
			panic(decline("a CASE key of text and numbers"))
		}
	}
	if t == Other {
		panic(decline("a CASE key of NULLs"))
	}
	lit := func(o measure.Operand) string {
		if v, ok := o.Value.(string); ok {
			return c.literal(v, Text)
		}
		if n, ok := c.number(o.Value, t); ok {
			return n
		}
		return "NULL"
	}
	var b strings.Builder
	b.WriteString("(CASE")
	for _, w := range cs.Whens {
		b.WriteString(" WHEN " + c.filter(w.Cond) + " THEN " + lit(w.Then))
	}
	b.WriteString(" ELSE " + lit(cs.Else) + " END)")
	return b.String(), t
}

// bin prints a binned key over column value x of class t, and its
// class (measure.Bin). Integer bins stay integers (DuckDB's // truncates
// toward zero, as SQLite's integer division; FLOOR and CEIL of an
// integer are itself); a product that could leave 64 bits is NULL (in
// SQLite it would become a float, which no enumerated bin equals: the
// row is dropped either way). Float bins are IEEE divisions, floor or
// ceil, and products, the same in both engines.
func (c *compiler) bin(x string, t Type, b *measure.Bin) (string, Type) {
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
			q = "(" + q + " // " + strconv.FormatInt(w, 10) + ")"
		}
		if b.Mul == nil {
			return q, Integer
		}
		if mulFloat {
			return "(" + c.d.ToDouble(q) + " * " + c.d.Float(b.Mul.(float64)) + ")", Real
		}
		m := b.Mul.(int64)
		if m == math.MinInt64 {
			panic(decline("a bin multiplied by -2^63"))
		}
		if m == 0 {
			return "(CASE WHEN " + q + " IS NULL THEN NULL ELSE 0 END)", Integer
		}
		l := strconv.FormatInt(math.MaxInt64/max(m, -m), 10)
		return "(CASE WHEN " + q + " BETWEEN -" + l + " AND " + l + " THEN " + q + " * " + strconv.FormatInt(m, 10) + " END)", Integer
	}
	f := x
	if isInt(t) {
		f = c.d.ToDouble(x)
	}
	switch w := b.Div.(type) {
	case int64:
		f = "(" + f + " / " + c.d.Float(float64(w)) + ")"
	case float64:
		f = "(" + f + " / " + c.d.Float(w) + ")"
	}
	f = c.d.Func(b.Func) + "(" + f + ")"
	switch m := b.Mul.(type) {
	case int64:
		f = "(" + f + " * " + c.d.Float(float64(m)) + ")"
	case float64:
		f = "(" + f + " * " + c.d.Float(m) + ")"
	}
	return f, Real
}

// notNaN makes a condition on a float value NULL where the value is NaN:
// DuckDB orders NaN above every number and makes NaN <> x true, where the
// reference reads NaN as NULL, whose comparisons are NULL (so that NOT of
// them is NULL too).
func (c *compiler) notNaN(v string, t Type, cond string) string {
	if t != Real {
		return cond
	}
	return "(CASE WHEN " + c.d.IsNaN(v) + " THEN NULL ELSE " + cond + " END)"
}

// clipped prints the argument clipped to [lo, hi] as an integer to sum:
// the value itself for an integer column with integer bounds, else
// round(clip·2^F) (measure.FixedPoint). It returns F.
func (c *compiler) clipped(arg int, lo, hi float64) (string, int) {
	if t := c.argType(arg); isInt(t) && integerBounds(lo, hi) {
		return intClip("a"+strconv.Itoa(arg), lo, hi), 0
	}
	f, ok := measure.FixedPoint(lo, hi)
	if !ok {
		panic(decline("bounds off the fixed-point grid"))
	}
	return c.onGrid(arg, lo, hi, f), f
}

// onGrid prints the numeric argument clipped to [lo, hi] as the integer
// round(clip·2^f), rounded half to even.
func (c *compiler) onGrid(arg int, lo, hi float64, f int) string {
	t := c.argType(arg)
	if !isInt(t) && t != Real {
		panic(decline("a sum of text"))
	}
	a := "a" + strconv.Itoa(arg)
	l, h := c.d.Float(lo), c.d.Float(hi)
	x := a
	if isInt(t) {
		x = c.d.ToDouble(a)
	}
	// NaN (above every number in DuckDB, NULL to the reference) is
	// tested only for values above hi.
	clip := "CASE WHEN " + x + " < " + l + " THEN " + l + " WHEN " + x + " <= " + h + " THEN " + x + " WHEN " + c.d.IsNaN(x) + " THEN NULL WHEN " + x + " > " + h + " THEN " + h + " END"
	return c.d.RoundToInt64("(" + clip + ") * " + c.d.Float(math.Ldexp(1, f)))
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
		unit = "" // each row once: no bounding (rowsOnce)
	}
	for i, sp := range specs {
		if sp.Kind.ReadsArg() && (sp.Arg < 0 || sp.Arg >= len(m.Args)) {
			panic(decline("spec argument"))
		}
		if sp.Kind.Detail() {
			if unit != "" && !c.detailBoundable() {
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
	var keyNames []string
	if unit != "" {
		if c.typeOf(unit) == Real {
			panic(decline("a float unit")) // -0 and 0 are two units in the reference
		}
		cols = append(cols, c.value(unit)+" AS u")
		where = append(where, c.value(unit)+" IS NOT NULL")
	}
	for i, k := range m.Keys {
		e, filter, ko := c.keyExpr(k, unit != "")
		name := "k" + strconv.Itoa(i)
		cols = append(cols, e+" AS "+name)
		keyNames = append(keyNames, name)
		c.st.keys = append(c.st.keys, ko)
		if filter != "" {
			where = append(where, filter)
		}
	}
	for i := range m.Args {
		cols = append(cols, c.argValue(i)+" AS a"+strconv.Itoa(i))
	}
	from := c.from()
	if onceOK {
		var filter string
		if from, filter = c.semiJoin(once); filter != "" {
			where = append([]string{filter}, where...)
		}
	} else if m.Where != nil {
		where = append([]string{c.filter(m.Where)}, where...)
	}
	if len(cols) == 0 {
		cols = append(cols, "1 AS one")
	}
	rows := "SELECT " + strings.Join(cols, ", ") + " FROM " + from
	if len(where) > 0 {
		rows += " WHERE " + strings.Join(where, " AND ")
	}
	if unit == "" {
		c.st.SQL = c.unbounded(rows, keyNames, specs)
	} else if len(c.st.Detail) > 0 {
		c.keptUnits = true
		c.st.SQL = c.unbounded(c.keptRows(rows, keyNames), keyNames, specs)
	} else {
		c.st.SQL = c.bounded(rows, keyNames, specs)
	}
	return &c.st
}

// out adds a spec's output column(s) and records how to read them.
func (c *compiler) out(items *[]string, exprs ...string) int {
	col := len(c.st.keys) + len(c.st.Detail)
	if len(c.st.Detail) > 0 {
		col++ // the weight
	}
	col += len(*items)
	for _, e := range exprs {
		*items = append(*items, c.d.ToText(e))
	}
	return col
}

func (c *compiler) unbounded(rows string, keyNames []string, specs []measure.Spec) string {
	group := append([]string(nil), keyNames...)
	for _, a := range c.st.Detail {
		group = append(group, "a"+strconv.Itoa(a))
	}
	sel := append([]string(nil), group...)
	if len(c.st.Detail) > 0 {
		sel = append(sel, c.d.Func("count")+"(*)")
	}
	var items []string
	units := false
	c.st.outs = make([]specOut, len(specs))
	for i, sp := range specs {
		switch {
		case c.st.DetailSpec[i]:
			continue
		case sp.Kind == measure.Units && c.keptUnits:
			// The group's distinct units, on its first row only (the
			// rows are per distinct value, and Decode adds them up).
			part := ""
			if len(keyNames) > 0 {
				part = "PARTITION BY " + strings.Join(keyNames, ", ") + " "
			}
			first := c.d.Func("row_number") + "() OVER (" + part + "ORDER BY " + strings.Join(group, ", ") + ") = 1"
			c.st.outs[i] = specOut{col: c.out(&items, "CASE WHEN "+first+" THEN "+c.d.Func("max")+"(_nu) ELSE 0 END")}
			units = true
		case sp.Kind == measure.Rows || sp.Kind == measure.Units:
			c.st.outs[i] = specOut{col: c.out(&items, c.d.Func("count")+"(*)")}
		case sp.Kind == measure.Values || sp.Kind == measure.UnitsWithValue:
			// (each row its own unit: a unit with a value is a row with one)
			c.st.outs[i] = specOut{col: c.out(&items, c.count(sp.Arg))}
		case sp.Kind == measure.Sum:
			e, f := c.clipped(sp.Arg, sp.Lo, sp.Hi)
			c.st.outs[i] = specOut{col: c.out(&items, c.d.Func("sum")+"("+e+")"), shift: f}
		case sp.Kind == measure.Squares:
			c.st.outs[i] = c.squares(&items, sp, c.d.Func("sum"))
		case sp.Kind == measure.UnitRows || sp.Kind == measure.UnitValues:
			// Each row is its own unit: it counts clip(1), or for a value
			// the reference does not see, clip(0).
			if !integerBounds(sp.Lo, sp.Hi) {
				panic(decline("per-unit count bounds"))
			}
			one, zero := strconv.FormatFloat(math.Max(sp.Lo, math.Min(sp.Hi, 1)), 'f', 0, 64), strconv.FormatFloat(math.Max(sp.Lo, math.Min(sp.Hi, 0)), 'f', 0, 64)
			cnt := c.d.Func("count") + "(*)"
			e := cnt + " * " + one
			if sp.Kind == measure.UnitValues {
				v := c.count(sp.Arg)
				e = v + " * " + one + " + (" + cnt + " - " + v + ") * " + zero
			}
			c.st.outs[i] = specOut{col: c.out(&items, "CAST("+e+" AS "+c.d.Wide()+")")}
		case sp.Kind == measure.UnitSum:
			if !isInt(c.argType(sp.Arg)) || !integerBounds(sp.Lo, sp.Hi) {
				panic(decline("a per-unit sum of floats"))
			}
			c.st.outs[i] = specOut{col: c.out(&items, c.d.Func("sum")+"("+intClip("a"+strconv.Itoa(sp.Arg), sp.Lo, sp.Hi)+")")}
		default:
			panic(decline("spec " + sp.String()))
		}
	}
	sel = append(sel, items...)
	sqlText := "SELECT " + strings.Join(sel, ", ") + " FROM (" + rows + ") AS r"
	if units {
		var nk, on []string
		for _, k := range keyNames {
			nk = append(nk, k+" AS n"+k)
			on = append(on, "n"+k+" IS NOT DISTINCT FROM "+k)
		}
		if len(on) == 0 {
			on = []string{"TRUE"}
		}
		sqlText = "WITH kr AS (" + rows + ") SELECT " + strings.Join(sel, ", ") + " FROM kr AS r JOIN (SELECT " + strings.Join(append(nk, c.d.Func("count")+"(DISTINCT u) AS _nu"), ", ") +
			" FROM kr" + groupBy(keyNames) + ") AS nu ON " + strings.Join(on, " AND ")
	}
	if len(group) > 0 {
		sqlText += " GROUP BY " + strings.Join(group, ", ")
	}
	return sqlText
}

// count counts the argument's values that the reference sees (not
// NULL, and not NaN, which it reads as NULL).
func (c *compiler) count(arg int) string {
	a := "a" + strconv.Itoa(arg)
	if c.argType(arg) == Real {
		return c.d.Func("count") + "(CASE WHEN NOT " + c.d.IsNaN(a) + " THEN 1 END)"
	}
	return c.d.Func("count") + "(" + a + ")"
}

// squareTerms are a q spec's clipped value and its square, integers in
// the wide type, and the grid's F (the value is the integer·2^-F): an
// integer column with integer bounds of at most 2^38 as it is (F = 0),
// else on the squares' grid (measure.SquaresGrid, as the reference
// rounds), so that both sums are exact and cannot overflow.
func (c *compiler) squareTerms(sp measure.Spec) (clip, square string, f int) {
	if t := c.argType(sp.Arg); isInt(t) && integerBounds(sp.Lo, sp.Hi) && math.Max(math.Abs(sp.Lo), math.Abs(sp.Hi)) <= 1<<38 {
		clip = intClip("a"+strconv.Itoa(sp.Arg), sp.Lo, sp.Hi)
	} else {
		var ok bool
		if f, ok = measure.SquaresGrid(sp.Lo, sp.Hi); !ok {
			panic(decline("squares with bounds of 2^38 or more, or off the squares' grid"))
		}
		clip = c.onGrid(sp.Arg, sp.Lo, sp.Hi, f)
	}
	sq := "CAST(" + clip + " AS " + c.d.Wide() + ")"
	return clip, sq + " * " + sq, f
}

// squares prints a q spec's Σc, Σc² and count.
func (c *compiler) squares(items *[]string, sp measure.Spec, sum string) specOut {
	e, sq, f := c.squareTerms(sp)
	col := c.out(items, sum+"("+e+")", sum+"("+sq+")", c.count(sp.Arg))
	return specOut{col: col, q: true, mid: sp.Lo/2 + sp.Hi/2, shift: f}
}

// integerBounds reports whether lo and hi are integers of at most 2^53
// in magnitude (exact in a double and in a 64-bit integer).
func integerBounds(lo, hi float64) bool {
	return lo == math.Trunc(lo) && hi == math.Trunc(hi) && math.Abs(lo) <= 1<<53 && math.Abs(hi) <= 1<<53
}

// intClip clips integer expression x to integer bounds [lo, hi] with
// CASE (NULL stays NULL).
func intClip(x string, lo, hi float64) string {
	l, h := strconv.FormatInt(int64(lo), 10), strconv.FormatInt(int64(hi), 10)
	return "CASE WHEN " + x + " < " + l + " THEN " + l + " WHEN " + x + " > " + h + " THEN " + h + " ELSE " + x + " END"
}

func (c *compiler) bounded(rows string, keyNames []string, specs []measure.Spec) string {
	m := c.m
	ks := strings.Join(keyNames, ", ")
	part := "u"
	if ks != "" {
		part += ", " + ks
	}
	var rowVals []string
	for i := range m.Args {
		rowVals = append(rowVals, "a"+strconv.Itoa(i))
	}
	// Per unit and group: the row-level measurements over the l∞ rows
	// ranked first, the per-unit ones over all the unit's rows there.
	needRank := false
	var ug, final []string  // ug: per-unit aggregates ("expr AS name")
	var rowAggs [][2]string // row-level aggregates over a unit's kept rows: {expr, name}
	c.st.outs = make([]specOut, len(specs))
	kept := "rn <= " + strconv.FormatInt(m.MaxRows, 10)
	for i, sp := range specs {
		a := "a" + strconv.Itoa(sp.Arg)
		v := "v" + strconv.Itoa(i)
		switch sp.Kind {
		case measure.Rows:
			needRank = true
			rowAggs = append(rowAggs, [2]string{c.d.Func("count") + "(*)", v})
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("sum")+"("+v+")")}
		case measure.Values:
			needRank = true
			rowAggs = append(rowAggs, [2]string{c.count(sp.Arg), v})
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("sum")+"("+v+")")}
		case measure.Sum:
			needRank = true
			e, f := c.clipped(sp.Arg, sp.Lo, sp.Hi)
			rowAggs = append(rowAggs, [2]string{c.d.Func("sum") + "(" + e + ")", v})
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("sum")+"("+v+")"), shift: f}
		case measure.Squares:
			needRank = true
			e, sq, f := c.squareTerms(sp)
			rowAggs = append(rowAggs, [2]string{c.d.Func("sum") + "(" + e + ")", v + "s"}, [2]string{c.d.Func("sum") + "(" + sq + ")", v + "q"},
				[2]string{c.count(sp.Arg), v + "c"})
			col := c.out(&final, c.d.Func("sum")+"("+v+"s)", c.d.Func("sum")+"("+v+"q)", c.d.Func("sum")+"("+v+"c)")
			c.st.outs[i] = specOut{col: col, q: true, mid: sp.Lo/2 + sp.Hi/2, shift: f}
		case measure.Units:
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("count")+"(*)")}
		case measure.UnitSum:
			// Σ over units of clip(the unit's exact sum): integer columns
			// with integer bounds.
			if !isInt(c.argType(sp.Arg)) || !integerBounds(sp.Lo, sp.Hi) {
				panic(decline("a per-unit sum of floats"))
			}
			// Each value as the reference reads it: rounded to a double (an
			// integer beyond 2^53 is), which is an integer below 2^64.
			ug = append(ug, c.d.Func("sum")+"(CAST("+c.d.ToDouble(a)+" AS "+c.d.Wide()+")) AS "+v)
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("sum")+"("+intClip(v, sp.Lo, sp.Hi)+")")}
		case measure.UnitRows, measure.UnitValues:
			if !integerBounds(sp.Lo, sp.Hi) {
				panic(decline("per-unit count bounds"))
			}
			cnt := c.d.Func("count") + "(*)"
			if sp.Kind == measure.UnitValues {
				cnt = c.count(sp.Arg)
			}
			ug = append(ug, cnt+" AS "+v)
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("sum")+"("+intClip(v, sp.Lo, sp.Hi)+")")}
		case measure.UnitsWithValue:
			ug = append(ug, c.count(sp.Arg)+" AS "+v)
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("count")+"(*) FILTER (WHERE "+v+" > 0)")}
		default:
			panic(decline("spec " + sp.String()))
		}
	}
	var with, from string
	if !needRank {
		from = "(SELECT " + part + commaList(ug) + " FROM (" + rows + ") AS r GROUP BY " + part + ") AS ug"
	} else {
		// l∞: per unit and group, the rows ranked first by a keyed hash of
		// their values. Most groups of a unit have at most l∞ rows and keep
		// them all, so the rows are ranked (a window, which sorts) only in
		// the groups that have more: their measurements replace the rest.
		order := c.d.Hash(append([]string{"u"}, append(keyNames, rowVals...)...), c.key)
		if tie := strings.Join(rowVals, ", "); tie != "" {
			order += ", " + tie
		}
		var all, filtered, picked []string
		for _, ra := range rowAggs {
			all = append(all, ra[0]+" AS "+ra[1])
			filtered = append(filtered, ra[0]+" FILTER (WHERE "+kept+") AS "+ra[1])
			picked = append(picked, "CASE WHEN ug._n > "+strconv.FormatInt(m.MaxRows, 10)+" THEN heavy."+ra[1]+" ELSE ug."+ra[1]+" END AS "+ra[1])
		}
		partCols := append([]string{"u"}, keyNames...)
		same := func(a, b string) string {
			var conds []string
			for _, col := range partCols {
				conds = append(conds, a+"."+col+" IS NOT DISTINCT FROM "+b+"."+col)
			}
			return strings.Join(conds, " AND ")
		}
		var unitNames []string
		for _, u := range ug {
			unitNames = append(unitNames, "ug."+u[strings.LastIndex(u, " AS ")+4:])
		}
		l := strconv.FormatInt(m.MaxRows, 10)
		with = "WITH r AS (" + rows + "), " +
			"ug AS (SELECT " + part + ", " + c.d.Func("count") + "(*) AS _n" + commaList(all) + commaList(ug) + " FROM r GROUP BY " + part + "), " +
			"heavy AS (SELECT " + part + commaList(filtered) + " FROM (SELECT r.*, " + c.d.Func("row_number") + "() OVER (PARTITION BY " + part + " ORDER BY " + order + ") AS rn FROM " +
			c.d.SemiJoin("r", "(SELECT "+part+" FROM ug WHERE _n > "+l+") AS h", same("h", "r")) + ") AS r GROUP BY " + part + ") "
		var ugCols []string
		for _, col := range partCols {
			ugCols = append(ugCols, "ug."+col)
		}
		if len(ug) == 0 {
			// Only row-level measurements: the light groups and the heavy
			// ones (a join of every group with the few heavy ones costs more).
			var names []string
			for _, ra := range rowAggs {
				names = append(names, ra[1])
			}
			from = "(SELECT " + part + commaList(names) + " FROM ug WHERE _n <= " + l + " UNION ALL SELECT * FROM heavy) AS ug"
		} else {
			from = "(SELECT " + strings.Join(ugCols, ", ") + commaList(picked) + commaList(unitNames) + " FROM ug LEFT JOIN heavy ON " + same("ug", "heavy") + ") AS ug"
		}
	}
	// Per unit: its l0 groups ranked first.
	gorder := c.d.Hash(append([]string{"u"}, keyNames...), c.key^0x9e3779b97f4a7c15)
	if ks != "" {
		gorder += ", " + ks
	}
	keptSQL := "SELECT * FROM (SELECT *, " + c.d.Func("row_number") + "() OVER (PARTITION BY u ORDER BY " + gorder + ") AS gn FROM " + from + ") AS g WHERE gn <= " + strconv.FormatInt(m.MaxGroups, 10)
	if groups, ok := domainGroups(m.Keys); ok && groups <= m.MaxGroups {
		// No unit can have more groups than l0 (the public domains allow at
		// most that many): every unit keeps all of its groups.
		keptSQL = "SELECT * FROM " + from
	}
	sel := append(append([]string(nil), keyNames...), final...)
	sqlText := with + "SELECT " + strings.Join(sel, ", ") + " FROM (" + keptSQL + ") AS kept"
	if ks != "" {
		sqlText += " GROUP BY " + ks
	}
	return sqlText
}

// detailBoundable reports whether every measurement of the plan is
// row-level (rows, values, sums, squares), computed from the distinct
// values (Detail), or partition selection's unit count: then, under
// bounding, all of them can be taken over the kept rows (keptRows), per
// group and distinct value, and summed (the unit count once per group).
func (c *compiler) detailBoundable() bool {
	for _, sp := range c.m.Specs {
		switch sp.Kind {
		case measure.Rows, measure.Values, measure.Sum, measure.Squares, measure.Units:
		default:
			if !sp.Kind.Detail() {
				return false
			}
		}
	}
	return true
}

// keptRows prints the rows contribution bounding keeps, as rows: per
// unit its l0 groups ranked first by a keyed hash of (unit, keys), in
// each its l∞ rows ranked first by a keyed hash of the unit, keys and
// values (ties broken by the keys, the values) — the choices the
// bounded form makes, which depend on the unit's own rows alone.
func (c *compiler) keptRows(rows string, keyNames []string) string {
	m := c.m
	part := append([]string{"u"}, keyNames...)
	var rowVals []string
	for i := range m.Args {
		rowVals = append(rowVals, "a"+strconv.Itoa(i))
	}
	order := c.d.Hash(append(append([]string{}, part...), rowVals...), c.key)
	if tie := strings.Join(rowVals, ", "); tie != "" {
		order += ", " + tie
	}
	ranked := "(SELECT r.*, " + c.d.Func("row_number") + "() OVER (PARTITION BY " + strings.Join(part, ", ") + " ORDER BY " + order + ") AS rn FROM (" + rows + ") AS r) AS r"
	kept := "SELECT r.* FROM " + ranked + " WHERE rn <= " + strconv.FormatInt(m.MaxRows, 10)
	if groups, ok := domainGroups(m.Keys); ok && groups <= m.MaxGroups {
		return kept // no unit can have more groups than l0
	}
	gorder := c.d.Hash(part, c.key^0x9e3779b97f4a7c15)
	if ks := strings.Join(keyNames, ", "); ks != "" {
		gorder += ", " + ks
	}
	groups := "(SELECT " + strings.Join(part, ", ") + " FROM (SELECT " + strings.Join(part, ", ") + ", " + c.d.Func("row_number") + "() OVER (PARTITION BY u ORDER BY " + gorder + ") AS gn FROM (" + rows + ") AS r GROUP BY " + strings.Join(part, ", ") + ") AS g WHERE gn <= " + strconv.FormatInt(m.MaxGroups, 10) + ") AS g"
	var same []string
	for _, col := range part {
		same = append(same, "g."+col+" IS NOT DISTINCT FROM r."+col)
	}
	return "SELECT r.* FROM " + c.d.SemiJoin(ranked, groups, strings.Join(same, " AND ")) + " WHERE rn <= " + strconv.FormatInt(m.MaxRows, 10)
}

// groupBy is a GROUP BY clause of the names ("" for none).
func groupBy(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return " GROUP BY " + strings.Join(names, ", ")
}

// domainGroups is how many groups the keys' public domains allow (ok
// false when a key has none: partition selection).
func domainGroups(keys []measure.Key) (int64, bool) {
	n := int64(1)
	for _, k := range keys {
		if k.Domain == nil {
			return 0, false
		}
		n *= int64(len(k.Domain))
		if n > 1<<40 {
			return n, true
		}
	}
	return n, true
}

// commaList prints items each after a comma ("" for none).
func commaList(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return ", " + strings.Join(items, ", ")
}

// Group is one group's measurements: its keys as the reference's scan
// gives them (a domain position as an int64, or the key's value), one
// exact value per spec (nil for detail specs), and, with Detail, each
// distinct tuple of the detail arguments' values with its row count.
type Group struct {
	Keys    []any
	Values  []*big.Float
	Details [][]any
	Weights []int64
	sums    [][3]*big.Int // per spec: its columns, added over the group's rows
}

// Decode reads the statement's rows (each value as the driver gives it:
// int64, float64, string, nil) into groups, in the order first met.
func (st *Statement) Decode(rows [][]any) ([]*Group, error) {
	var out []*Group
	index := map[string]*Group{}
	nk, nd, width := len(st.keys), len(st.Detail), st.width()
	for _, row := range rows {
		if len(row) < width {
			return nil, fmt.Errorf("measuresql: a row of %d columns, want %d", len(row), width)
		}
		keys := make([]any, nk)
		for i, ko := range st.keys {
			k, err := keyValue(row[i], ko)
			if err != nil {
				return nil, err
			}
			keys[i] = k
		}
		if !st.inDomains(keys) {
			continue // a group outside a public domain (or NULL): dropped
		}
		id := fmt.Sprintf("%#v", keys)
		g := index[id]
		if g == nil {
			g = &Group{Keys: keys, Values: make([]*big.Float, len(st.Specs)), sums: make([][3]*big.Int, len(st.Specs))}
			index[id] = g
			out = append(out, g)
		}
		if nd > 0 {
			w, ok := row[nk+nd].(int64)
			if !ok {
				return nil, fmt.Errorf("measuresql: weight %T", row[nk+nd])
			}
			g.Details = append(g.Details, append([]any(nil), row[nk:nk+nd]...))
			g.Weights = append(g.Weights, w)
		}
		for i, o := range st.outs {
			if st.DetailSpec[i] {
				continue
			}
			for j := 0; j < o.columns(); j++ {
				x, err := bigOf(row[o.col+j])
				if err != nil {
					return nil, err
				}
				if g.sums[i][j] == nil {
					g.sums[i][j] = new(big.Int)
				}
				g.sums[i][j].Add(g.sums[i][j], x)
			}
		}
	}
	for _, g := range out {
		for i, o := range st.outs {
			if !st.DetailSpec[i] {
				g.Values[i] = o.value(g.sums[i])
			}
		}
		g.sums = nil
	}
	return out, nil
}

// inDomains maps each key with a domain to its position (in place), and
// reports whether every such key is in its domain.
func (st *Statement) inDomains(keys []any) bool {
	for i, ko := range st.keys {
		if ko.domain == nil {
			continue
		}
		v := keys[i]
		if f, ok := v.(float64); ok && f == 0 {
			v = 0.0
		}
		pos, ok := ko.domain[v]
		if !ok || v == nil {
			return false
		}
		keys[i] = pos
	}
	return true
}

// width is the number of columns a row has.
func (st *Statement) width() int {
	w := len(st.keys) + len(st.Detail)
	if len(st.Detail) > 0 {
		w++
	}
	for i, o := range st.outs {
		if !st.DetailSpec[i] {
			w = max(w, o.col+o.columns())
		}
	}
	return w
}

func (o specOut) columns() int {
	if o.q {
		return 3
	}
	return 1
}

// value is the spec's exact value from its summed columns: Σ·2^-shift,
// or for q the centred squares Σ (c − m)² from Σc, Σc² and the count.
func (o specOut) value(s [3]*big.Int) *big.Float {
	for j := range s {
		if s[j] == nil {
			s[j] = new(big.Int)
		}
	}
	if !o.q {
		return new(big.Float).SetMantExp(new(big.Float).SetInt(s[0]), -o.shift)
	}
	// Σc = Σt·2^-F, Σc² = Σt²·2^-2F (exact: a big.Float holds the
	// integers with their exponents).
	sum := new(big.Float).SetMantExp(new(big.Float).SetInt(s[0]), -o.shift)
	sq := new(big.Float).SetMantExp(new(big.Float).SetInt(s[1]), -2*o.shift)
	return exactsum.CentredSquares(sum, sq, s[2].Int64(), o.mid)
}

func keyValue(v any, ko keyOut) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case int64:
		return v, nil
	case int32:
		return int64(v), nil
	case float64:
		if ko.t == Real {
			return v, nil
		}
	case string:
		if ko.t == Text {
			return v, nil
		}
	}
	return nil, fmt.Errorf("measuresql: key %T", v)
}

// bigOf reads an integer column sent as text (NULL: a sum over no value,
// 0).
func bigOf(v any) (*big.Int, error) {
	switch v := v.(type) {
	case nil:
		return new(big.Int), nil
	case string:
		x, ok := new(big.Int).SetString(v, 10)
		if !ok {
			return nil, fmt.Errorf("measuresql: %q is not an integer", v)
		}
		return x, nil
	case int64:
		return big.NewInt(v), nil
	}
	return nil, fmt.Errorf("measuresql: value %T", v)
}
