// Package measure is the typed measurement plan: what a private scan
// measures per group, over one stored table, in terms every evaluator
// shares — the reference evaluator (exec's measurement aggregate in
// SQLite) and each dialect's compiler (measuresql). It sits below
// rewrite, which makes plans, and below exec and measuresql, which
// evaluate them; it imports nothing of the engine's.
//
// A plan says, per group: which measurements (Spec: a Kind, the argument
// it reads, its clipping bounds), of which columns (Plan.Args), under
// which filter and keys, with which per-unit bounds (l0 groups and l∞
// rows per unit). Sums of float values are taken on a fixed-point grid
// (FixedPoint), so that every evaluator sums the same integers exactly.
package measure

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Kind is what one measurement computes per group. Its value is the
// letter that names it in EXPLAIN (Spec.String).
type Kind byte

// The measurements. Row-level ones are taken over each unit's kept rows
// (at most l∞ per unit and group); per-unit ones (PerUnit) combine all of
// a unit's rows in a group into one value, clipped once; detail ones
// (Detail) are computed from each group's distinct argument values with
// their row counts.
const (
	Rows             Kind = 'n' // rows
	Values           Kind = 'c' // non-NULL values of the argument
	Sum              Kind = 's' // Σ clip(x) to [Lo, Hi]
	Squares          Kind = 'q' // Σ clip(x), Σ clip(x)², and the count: centred squares
	Units            Kind = 'u' // distinct units (partition selection)
	Histogram        Kind = 'h' // a bound search's magnitude histogram
	HistogramSquares Kind = 'H' // the histogram with sums of squares per bucket
	Quantiles        Kind = 'P' // quantile-tree leaf counts of clip(x) over [Lo, Hi]
	QuantileBuckets  Kind = 'T' // counts per fine log-linear bucket (bounds chosen later)
	Distinct         Kind = 'd' // distinct non-NULL values
	UnitSum          Kind = 'S' // Σ over units of clip(the unit's Σ x)
	UnitMean         Kind = 'A' // Σ over units of clip(the unit's mean x)
	UnitRows         Kind = 'R' // Σ over units of clip(the unit's rows)
	UnitValues       Kind = 'K' // Σ over units of clip(the unit's non-NULL values)
	UnitsWithValue   Kind = 'C' // units with a non-NULL value
)

// kinds are the valid kinds: whether each reads an argument, and
// whether it has bounds.
var kinds = map[Kind]struct{ arg, bounds bool }{
	Rows: {}, Values: {arg: true}, Sum: {true, true}, Squares: {true, true}, Units: {},
	Histogram: {arg: true}, HistogramSquares: {arg: true}, Quantiles: {true, true}, QuantileBuckets: {arg: true},
	Distinct: {arg: true}, UnitSum: {true, true}, UnitMean: {true, true}, UnitRows: {false, true},
	UnitValues: {true, true}, UnitsWithValue: {arg: true},
}

// PerUnit reports whether k combines each unit's rows in a group into
// one value (contribution_bounds_per_group).
func (k Kind) PerUnit() bool {
	switch k {
	case UnitSum, UnitMean, UnitRows, UnitValues, UnitsWithValue:
		return true
	}
	return false
}

// Detail reports whether k is computed from the group's distinct values
// of its argument (with their row counts) rather than summed in place.
func (k Kind) Detail() bool {
	switch k {
	case Histogram, HistogramSquares, Quantiles, QuantileBuckets, Distinct:
		return true
	}
	return false
}

// HasBounds reports whether k clips to [Lo, Hi].
func (k Kind) HasBounds() bool { return kinds[k].bounds }

// ReadsArg reports whether k reads an argument.
func (k Kind) ReadsArg() bool { return kinds[k].arg }

// Spec is one measurement: its kind, the argument it reads (an index
// into Plan.Args; -1 for none) and, for kinds with bounds, the clipping
// bounds.
type Spec struct {
	Kind   Kind
	Arg    int
	Lo, Hi float64
}

// String is the spec as EXPLAIN shows it: the kind's letter, the
// argument's index, the bounds ("s0:0:1000", "n", "R:0:2").
func (s Spec) String() string {
	var b strings.Builder
	b.WriteByte(byte(s.Kind))
	if s.Kind.ReadsArg() {
		b.WriteString(strconv.Itoa(s.Arg))
	}
	if s.Kind.HasBounds() {
		b.WriteString(":" + strconv.FormatFloat(s.Lo, 'g', -1, 64) + ":" + strconv.FormatFloat(s.Hi, 'g', -1, 64))
	}
	return b.String()
}

// Parse reads a spec as String prints it.
func Parse(text string) (Spec, error) {
	if text == "" {
		return Spec{}, fmt.Errorf("measure: an empty spec")
	}
	k := Kind(text[0])
	info, ok := kinds[k]
	if !ok {
		return Spec{}, fmt.Errorf("measure: unknown kind %q in %q", text[0], text)
	}
	s := Spec{Kind: k, Arg: -1}
	f := strings.Split(text[1:], ":")
	if info.arg {
		a, err := strconv.Atoi(f[0])
		if err != nil || a < 0 {
			return Spec{}, fmt.Errorf("measure: spec %q needs an argument", text)
		}
		s.Arg = a
	} else if f[0] != "" {
		return Spec{}, fmt.Errorf("measure: spec %q reads no argument", text)
	}
	if info.bounds != (len(f) == 3) || (!info.bounds && len(f) != 1) {
		return Spec{}, fmt.Errorf("measure: spec %q: bounds", text)
	}
	if info.bounds {
		var err1, err2 error
		s.Lo, err1 = strconv.ParseFloat(f[1], 64)
		s.Hi, err2 = strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil || math.IsNaN(s.Lo) || math.IsNaN(s.Hi) {
			return Spec{}, fmt.Errorf("measure: spec %q: bounds", text)
		}
	}
	return s, nil
}

// MustParse is Parse for specs written in code; it panics on an error.
func MustParse(texts ...string) []Spec {
	out := make([]Spec, len(texts))
	for i, t := range texts {
		s, err := Parse(t)
		if err != nil {
			panic(err)
		}
		out[i] = s
	}
	return out
}

// Strings prints specs with String.
func Strings(specs []Spec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.String()
	}
	return out
}

// JoinCompare is a comparison X Op Y (<, <=, >, >=) of two columns of
// joined tables (Plan.Compare).
type JoinCompare struct {
	X  Col
	Op string
	Y  Col
}

// Plan is a scan's measurement plan, backend-neutral: what each
// group needs, over one stored table, in terms a dialect printer
// (package measuresql) compiles into one statement that the engine
// holding the table runs, returning only per-group measurements. It is
// made when the scan reads stored tables joined on column equalities
// (one private table, or private tables joined on their units, with
// public ones; no subquery) and every expression it evaluates is a plain column, a
// literal, or a filter of the forms below (rewrite makes it); otherwise
// the scan has no Plan and runs through the measurement aggregate (the
// reference evaluator) only. Whether a Plan exists depends on the query
// and the schema, never on rows.
type Plan struct {
	// Table is the table's canonical name.
	Table string
	// Joins are the stored tables joined to Table, in order (nil: Table
	// alone), by inner joins on the equalities On, each a pair of
	// columns (Column names them). A private table's rows repeat once
	// per match; the bounding per unit keeps the sensitivity.
	Joins []string
	On    [][2]Col
	// Compare are the join's comparisons of columns besides On (a
	// private table joined to a public table of ranges): each must hold.
	Compare []JoinCompare
	// PerUnit, when set, is a first aggregation per unit of Table's
	// rows (a subquery grouped by the unit): the plan's rows are its
	// groups, and every other column field of the plan names one of its
	// outputs (Output).
	PerUnit *Grouping
	// Unit is its privacy-unit column ("": each row its own unit, no
	// bounding). MaxGroups (l0) and MaxRows (l∞) bound each unit then.
	Unit               Col
	MaxGroups, MaxRows int64
	// Keys are the group keys, in the order of the scan's key arguments.
	Keys []Key
	// Where is the scan's filter (nil: none).
	Where Filter
	// Args are the measured columns; a spec's argument i is Args[i],
	// or Cases[i] where Args[i] is "".
	Args []Col
	// Cases are the measured arguments that are searched CASE
	// expressions (by argument index).
	Cases map[int]*Case
	// Specs are the measurements.
	Specs []Spec
	// Dropped asks, with a Unit, for what bounding dropped over the
	// whole scan (Measured.Dropped).
	Dropped bool
	// Profile asks, with a Unit, for the units' profile (Measured.Profile)
	// instead of the specs and bounding: no group is measured.
	Profile bool
}

// Col names a column in a plan's column fields: column Name of table
// Table (0: the plan's Table, i: Joins[i-1]); output Out-1 of the plan's
// Grouping when Out > 0 (Output); or, with Identity, table Table's row
// identity (the engine holding the table names its rows). The zero Col
// names no column.
type Col struct {
	Table    int
	Name     string
	Out      int
	Identity bool
}

// IsZero reports whether c names no column.
func (c Col) IsZero() bool { return c == Col{} }

// String is c for messages: the name, table-qualified past the first.
func (c Col) String() string {
	switch {
	case c.Out > 0:
		return "output " + strconv.Itoa(c.Out-1)
	case c.Identity:
		return "the row identity of table " + strconv.Itoa(c.Table)
	case c.Table > 0:
		return "t" + strconv.Itoa(c.Table) + "." + c.Name
	}
	return c.Name
}

// Column names column name of the plan's table t (0: Table, i:
// Joins[i-1]).
func Column(t int, name string) Col { return Col{Table: t, Name: name} }

// Grouping is a first aggregation of a table's rows that pass Where,
// grouped by the columns By (the unit among them): one row per group,
// with the Outputs.
type Grouping struct {
	By      []Col
	Where   Filter
	Outputs []Aggregate
}

// Aggregate is an output of a Grouping: a grouped column (Func ""), or
// Func "count", "count_distinct", "min" or "max" of Column (COUNT(*) with
// Column "").
type Aggregate struct {
	Func   string
	Column Col
}

// Output names output i of the plan's Grouping, as the plan's column
// fields name it.
func Output(i int) Col { return Col{Out: i + 1} }

// OutputIndex is Output's inverse: ok is false for a column that is not
// an output.
func OutputIndex(c Col) (int, bool) { return c.Out - 1, c.Out > 0 }

// RowIdentity names table t's row identity: Unit is RowIdentity(t) when
// each row of table t is its own unit and a join could repeat it.
func RowIdentity(t int) Col { return Col{Table: t, Identity: true} }

// Key is a group key: a column and its public domain (a row's
// key is the position of the first domain value its column equals, as
// SQLite compares them; rows matching none are dropped), or with a nil
// Domain the column's value itself (partition selection).
type Key struct {
	Column Col
	Domain []any
	// Bin, when set, makes the key a bin of the column rather than its
	// value; Case, when set, makes it a CASE whose values are constants
	// (Operand.Value may then be a string too), and Column is unused.
	Bin  *Bin
	Case *Case
	// Arith, when set, makes the key an expression's value (Column
	// unused): a function of a column, grouped by partition selection
	// when Domain is nil.
	Arith *Arith
}

// Bin is a key computed from a column c: Func ("floor" or "ceil") of c,
// or of c / Div, times Mul (Div and Mul int64 or float64 constants,
// Div > 0; nil: none), as SQLite computes it — an integer divided by an
// integer is truncated toward zero, FLOOR and CEIL of an integer are
// that integer, and a float anywhere makes the rest float.
type Bin struct {
	Func     string
	Div, Mul any
}

// Case is CASE WHEN Whens[0].Cond THEN Whens[0].Then ... ELSE Else END,
// as SQL evaluates it: the first condition that holds (TRUE; FALSE and
// NULL do not) gives the value, else Else. A Case without Whens is its
// Else alone (an argument that is arithmetic).
type Case struct {
	Whens []When
	Else  Operand
}

// When is one WHEN cond THEN value of a Case.
type When struct {
	Cond Filter
	Then Operand
}

// Operand is a Case's value: a column (Column set), arithmetic (Arith
// set), a number (Value, an int64 or a float64; a string in a key's or an
// Arith's CASE), or NULL (none).
type Operand struct {
	Column Col
	Arith  *Arith
	Value  any
}

// Filter is a filter on rows: And, Or, Not, Compare, IsNull, In or Like.
type Filter interface{ filter() }

// And holds when every part holds (SQL's three-valued AND).
type And struct{ Parts []Filter }

// Or holds when some part holds.
type Or struct{ Parts []Filter }

// Not negates X (NULL stays NULL).
type Not struct{ X Filter }

// Compare is Column Op Value, or with Arith set, Arith Op Value (or
// Arith Op Right); Op one of = <> < <= > >=, Value an int64, a float64 or
// a string.
type Compare struct {
	Column Col
	Arith  *Arith
	Op     string
	Value  any
	// Right, when set, is compared instead of Value: Arith Op Right.
	Right *Arith
}

// Arith is an expression over a row, evaluated as SQLite evaluates it:
// a column (Column), a constant (Const, or Float when IsFloat; with no Op
// and no Column), X Op Y with Op one of + - * / and % (Y then a non-zero
// integer constant for / and %), or a function of X:
//
//	'a' ABS(X)    'f' FLOOR(X)   'c' CEIL(X)     'r' ROUND(X) (ROUND(X, n) for n <= 0)
//	'i' CAST(X AS INTEGER)       'R' CAST(X AS REAL)
//	'L' LENGTH(X) 'U' UPPER(X)   'W' LOWER(X)    'T' TRIM(X)
//	'S' SUBSTR(X, From, Len)     (From >= 1; Len < 0: to the end)
//	'C' COALESCE(X, Y)           'K' Case (a CASE whose values are any Operand)
//
// A text constant is Text with IsText.
//
// As in SQLite, it is integer arithmetic where both sides are integers
// (a division truncates toward zero; FLOOR and CEIL of an integer are
// that integer) and double arithmetic where either is a float; ROUND and
// CAST AS REAL are doubles, CAST AS INTEGER and LENGTH integers, UPPER,
// LOWER, TRIM and SUBSTR text (of a text X: the compiler declines the
// functions of the other class, which SQLite converts).
type Arith struct {
	Column    Col
	Const     int64
	Float     float64
	IsFloat   bool
	Op        byte
	X, Y      *Arith
	From, Len int64
	Text      string
	IsText    bool
	Case      *Case
}

// IsNull is Column IS NULL (IS NOT NULL with Not), or with Arith set,
// Arith IS NULL.
type IsNull struct {
	Column Col
	Not    bool
	Arith  *Arith
}

// In is Column IN (Values) (NOT IN with Not); Values as Compare's.
type In struct {
	Column Col
	Values []any
	Not    bool
}

// Like is Column LIKE Pattern (NOT LIKE with Not), as SQLite decides
// it: % any sequence, _ one character, ASCII letters in either case, no
// escape character, and a text ending at its first NUL.
type Like struct {
	Column  Col
	Pattern string
	Not     bool
}

// Truth is a filter whose value is the same for every row: a
// column-free condition the reference evaluated (TRUE, FALSE, or NULL
// when Known is false).
type Truth struct{ Known, Value bool }

func (Truth) filter()   {}
func (Like) filter()    {}
func (And) filter()     {}
func (Or) filter()      {}
func (Not) filter()     {}
func (Compare) filter() {}
func (IsNull) filter()  {}
func (In) filter()      {}

// squareBits is the magnitude of one fixed-point term of a sum of
// squares: below 2^38, so that its square is below 2^76 and a 128-bit sum
// of fewer than 2^48 squares stays below 2^124.
const squareBits = 38

// SquaresGrid returns the number of fractional bits F at which the values
// of a column clipped to [lo, hi] enter the sums of a variance (Σc and
// Σc², Squares): each c is round(clip(x)·2^F)·2^-F, rounded half to
// even, with F the largest such that max(|lo|, |hi|)·2^F < 2^38. ok is
// false when F would be negative (bounds of 2^38 or more: integers would
// leave the grid) or lo or hi is not on the grid; the values are then
// taken exactly, and no engine but the reference measures them. Every
// integer within such bounds is on the grid, so integer columns are
// measured exactly; a float moves by at most 2^-39 of the larger bound,
// and stays within the bounds, so the sensitivity holds.
func SquaresGrid(lo, hi float64) (f int, ok bool) { return grid(lo, hi, squareBits, 0) }

// grid is the largest F ≥ minF with max(|lo|, |hi|)·2^F < 2^bits, ok
// when lo and hi are multiples of 2^-F (F at most 1000).
func grid(lo, hi float64, bits, minF int) (f int, ok bool) {
	m := math.Max(math.Abs(lo), math.Abs(hi))
	if m == 0 {
		return 0, true
	}
	_, e := math.Frexp(m) // m < 2^e
	f = bits - e
	if f < minF || f > 1000 {
		return 0, false // bounds too large for the grid, or too close to 0 for a double scale
	}
	for _, b := range []float64{lo, hi} {
		if s := math.Ldexp(b, f); s != math.Trunc(s) {
			return 0, false
		}
	}
	return f, true
}

// termBits is the magnitude of one fixed-point term: below 2^62.
const termBits = 62

// unitBits is the magnitude of a per-unit sum's bounds on its grid: below
// 2^32, which leaves each row's value room for 2^30 times the larger
// bound before it is clamped.
const unitBits = 32

// MeanBits are the bits a per-unit mean's grid has beyond its sum's
// (UnitGrid): a mean within bounds below 2^32 on the grid is below
// 2^53, which a double holds exactly.
const MeanBits = 21

// UnitGrid returns the grid of a per-unit sum or mean (UnitSum, UnitMean,
// contribution_bounds_per_group): each row's value x is clamped to
// [−r, r], r = 2^(62−F) (±∞ included; r is more than 2^30 times the
// larger bound), and taken as the integer round(x·2^F), rounded half to
// even; a unit's sum in a group is the exact sum of its rows' integers,
// clipped to [lo·2^F, hi·2^F], and the units' clipped sums are summed
// exactly. A per-unit mean (UnitMean) is the unit's sum of integers
// clipped to [n·lo·2^F, n·hi·2^F], n its number of values, times
// 2^MeanBits, divided by n and truncated toward zero: a mean within the
// bounds on the finer grid 2^-(F+MeanBits). F is the largest with
// max(|lo|, |hi|)·2^F < 2^32 (at least −960, so that r is a finite
// double); ok is false when lo or hi is not a multiple of 2^-F. Each row's term is a 64-bit integer and a unit's sum
// of fewer than 2^60 rows fits 128 bits, so every engine sums the same
// integers exactly; each row moves its unit's sum by at most 2^-33 of the
// larger bound, and the unit's value stays within the bounds, so the
// sensitivity holds.
func UnitGrid(lo, hi float64) (f int, r float64, ok bool) {
	f, ok = grid(lo, hi, unitBits, termBits-1022)
	return f, math.Ldexp(1, termBits-f), ok
}

// FixedPoint returns the number of fractional bits F at which the values
// of a float column clipped to [lo, hi] are summed as integers
// round(clip(x)·2^F), rounded half to even (as a SQL cast of a double to
// a 64-bit integer rounds): the largest F with max(|lo|, |hi|)·2^F ≤ 2^62,
// so that each term is a 64-bit integer, and a sum in a 128-bit type of
// fewer than 2^48 rows stays below 2^110. ok is false when lo or hi is not
// a multiple of 2^-F (rounded values could then leave the bounds, and the
// sensitivity would not hold). Every evaluator, the reference included,
// measures the same integers; relative to the exact sum each term moves
// by at most 2^-63 of the larger bound.
func FixedPoint(lo, hi float64) (f int, ok bool) { return grid(lo, hi, termBits, math.MinInt) }

// Measured is a plan's measurements as an engine computed them (package
// measuresql's statement, decoded): each group's keys and exact values,
// and for the detail specs (DetailSpec) the distinct tuples of the
// detail arguments (Detail: the plan's argument indices) with their row
// counts, which the caller measures itself.
type Measured struct {
	Detail     []int
	DetailSpec []bool
	Groups     []*MeasuredGroup
	// Dropped is what bounding dropped, when the plan asked (nil else).
	Dropped *Dropped
	// Profile is the units' profile, when the plan asked (nil else).
	Profile *Profile
}

// MeasuredGroup is one group's measurements: its keys as the reference's
// scan gives them (a domain position as an int64, or the key's value),
// one exact value per spec (nil for detail specs), and, with Detail, each
// distinct tuple of the detail arguments' values with its row count.
type MeasuredGroup struct {
	Keys    []any
	Values  []*big.Float
	Details [][]any
	Weights []int64
}

// ErrEngineResources wraps an engine's failure to run a compiled
// statement for want of resources (memory under its cap, temporary
// disk): the only failure after which the reference evaluator measures
// the same rows instead. Any other failure of a compiled statement is the
// query's error, never retried on another path (a retry would make the
// path taken, and its timing, tell whether some row made the statement
// fail).
var ErrEngineResources = errors.New("the engine ran out of resources")
