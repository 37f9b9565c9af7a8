// Package rewrite turns a private query plan into the SQL the backend runs
// and the SQL that post-processes the noisy results.
//
// Where it sits: planner → rewrite → exec. The backend statement scans the
// private table once, through the measurement aggregate, which leaves per
// group the exact cells the plan asked for; exec adds noise to every cell. The
// post-processing statement then reads only the noisy results (a temporary
// table of noisy aggregates and public keys) to apply the select list's
// expressions, HAVING, ORDER BY and LIMIT.
//
// The rules and why each preserves privacy are listed on Private; the
// post-processing statement (NoisyResultsOnly) reads only the temporary
// table of noisy values and public keys: it cannot name the private table.
package rewrite

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/measure"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// ResultTable is the temporary table the post-processing statement reads.
const ResultTable = "_dpsql_result"

// GroupColumn is the last column of the post-processing statement: the
// group's rowid in ResultTable (1 for the first group filled).
const GroupColumn = "_dpsql_group"

// Rewritten is what exec runs for one private query.
type Rewritten struct {
	// Scan is the backend statement: one call of the measurement
	// aggregate (MeasureFunction) over the FROM clause,
	//
	//	dpsql_measure(?1, [unit,] k1..k_Keys, a1..a_m [, weight])
	//
	// whose one parameter is a handle under which exec registers the
	// aggregate's configuration (Measured, MaxGroups, MaxRows, Keys and a
	// fresh random key) and collects its per-group measurements.
	Scan string
	// Measured lists the measurements, in the order of the results.
	Measured []measure.Spec
	// MaxGroups is l0 (0: every row is its own unit, no bounding, and the
	// call has no unit argument); MaxRows is l∞.
	MaxGroups, MaxRows int64
	// Keys is the number of group-key arguments.
	Keys int
	// Dropped asks the aggregate for what bounding dropped over the
	// scan (measure.Dropped; planner.PrivateQuery.Dropped).
	Dropped bool
	// Weighted: the call's last argument is each row's multiplicity
	// (planner.PrivateQuery.WeightSQL); there is no native scan then.
	Weighted bool
	// Native, when set, gives for each measurement the SQL that SQLite
	// computes natively (see nativeScan); the Scan then returns these
	// columns and does not call the measurement aggregate.
	Native []string
	// Measurement, when set, is the scan as a backend-neutral plan, for
	// an engine that runs the whole measurement where the table lives
	// (exec.Measurer); Scan stays the reference and the fallback.
	Measurement *measure.Plan
	// NoPlan says why the scan has no Measurement ("" when it has one).
	NoPlan string
	// HasFallback: the native scan has sums, and FallbackWith prints the
	// scan through the measurement aggregate alone, to run when a native
	// sum comes back as a REAL (nativeScan); then its measurements replace
	// the native ones.
	HasFallback bool
	// CellSource says where each cell of the plan gets its exact value:
	// a measured column (cells with the same measurement, such as SUM and
	// AVG of one column and bounds, share it, so it is computed once per
	// row), or the histogram of a bound search.
	CellSource []Source
	// SearchColumn gives, for each bound search, the measured column that
	// holds its histogram.
	SearchColumn []int
	// UnitsColumn is the measured column counting distinct units per group
	// for partition selection, or -1.
	UnitsColumn int
	// ResultColumns are the columns of ResultTable: k0.. (key values) then
	// a0.. (noisy aggregate values).
	ResultColumns []string
	// Post is the post-processing statement over ResultTable; its last
	// column is GroupColumn.
	Post string

	callArgs []string // the measurement call's arguments after the handle
	tail     string   // FROM and WHERE of the scan
}

// ScanWith prints the Scan calling the measurement aggregate as fn: with
// handle, fn takes the handle ?1 first (MeasureFunction); without, fn is
// bound to a handle of its own and takes only the per-row arguments.
//
// A scan with contribution bounding reads its rows sorted by unit (then
// by group keys and values, each as BINARY orders it), from a subquery
// that SQLite sorts in its temporary store: the aggregate then holds
// the state of one unit at a time, not of every unit in the table, and
// the order in which it meets a unit's rows depends only on that unit's
// rows (so the rows it samples do too).
func (r *Rewritten) ScanWith(fn string, handle bool) string {
	if r.MaxGroups > 0 {
		return r.sortedByUnit(fn, handle)
	}
	if len(r.Native) > 0 {
		return "SELECT " + strings.Join(r.Native, ", ") + r.tail
	}
	return "SELECT " + r.call(fn, handle) + r.tail
}

// sortedByUnit prints the bounded scan over its rows sorted by unit.
func (r *Rewritten) sortedByUnit(fn string, handle bool) string {
	items := make([]string, len(r.callArgs))
	names := make([]string, len(r.callArgs))
	order := make([]string, len(r.callArgs))
	for i, a := range r.callArgs {
		names[i] = "_dpsql_s" + strconv.Itoa(i)
		items[i] = a + " AS " + names[i]
		order[i] = names[i] + " COLLATE BINARY"
	}
	if handle {
		names = append([]string{"?1"}, names...)
	}
	return "SELECT " + fn + "(" + strings.Join(names, ", ") + ") FROM (SELECT " + strings.Join(items, ", ") + r.tail + " ORDER BY " + strings.Join(order, ", ") + ")"
}

// FallbackWith prints the fallback scan the same way ("" when there is
// none).
func (r *Rewritten) FallbackWith(fn string, handle bool) string {
	if !r.HasFallback {
		return ""
	}
	if r.MaxGroups > 0 {
		return r.sortedByUnit(fn, handle)
	}
	return "SELECT " + r.call(fn, handle) + r.tail
}

func (r *Rewritten) call(fn string, handle bool) string {
	args := r.callArgs
	if handle {
		args = append([]string{"?1"}, args...)
	}
	return fn + "(" + strings.Join(args, ", ") + ")"
}

// Source is where a cell's exact value comes from: Column ≥ 0 for a
// measured column, else Search ≥ 0 for the histogram of that bound search.
type Source struct {
	Column int
	Search int
}

// KeyColumn names the result column holding GROUP BY key i.
func KeyColumn(i int) string { return "k" + strconv.Itoa(i) }

// AggColumn names the result column holding aggregate i.
func AggColumn(i int) string { return "a" + strconv.Itoa(i) }

// MeasureFunction is the SQLite aggregate (registered by exec) that bounds
// each unit's contribution and measures what is kept; see exec/measure.go.
const MeasureFunction = "dpsql_measure"

// Private rewrites a private query. Every expression is printed by the
// planner from resolved names (q.SQL), never from the analyst's text.
//
// Why the rules preserve privacy:
//   - ContributionBounding: with a unit column the aggregate keeps, per
//     unit, at most l0 groups and l∞ rows per group and measures those.
//   - NumericClip: every value is converted to a number by a total rule and
//     clipped numerically before it is summed, whatever its storage class.
//   - ExactSums: sums are exact; the value handed to the noise is the exact
//     clipped aggregate.
//   - PublicDomainKeys: group keys are mapped to positions in the owner's
//     public domain; rows outside it are dropped, and groups with no rows
//     are filled in by exec, so which groups appear reveals nothing.
func Private(q *planner.PrivateQuery) (*Rewritten, error) {
	var args []string
	var specs []measure.Spec
	var argExprs []parser.Expr
	argIndex := func(e parser.Expr) int {
		a := q.SQL(e)
		for i, x := range args {
			if x == a {
				return i
			}
		}
		args = append(args, a)
		argExprs = append(argExprs, e)
		return len(args) - 1
	}
	measured := map[measure.Spec]int{}
	measureOf := func(spec measure.Spec) int {
		j, ok := measured[spec]
		if !ok {
			j = len(specs)
			measured[spec] = j
			specs = append(specs, spec)
		}
		return j
	}
	searchColumn := make([]int, len(q.Searches))
	searchOf := map[string]int{}
	for i, sr := range q.Searches {
		kind := measure.Histogram
		for _, c := range q.Cells {
			if c.Search == i && c.Kind == planner.CenteredSumSq {
				kind = measure.HistogramSquares // the histogram keeps sums of squares too
			}
		}
		searchColumn[i] = measureOf(measure.Spec{Kind: kind, Arg: argIndex(sr.Arg)})
		searchOf[sr.Label] = i
	}
	cellSource := make([]Source, len(q.Cells))
	for i, c := range q.Cells {
		src := Source{Column: -1, Search: c.Search}
		if c.Kind == planner.CountValues && !c.PerUnit {
			// A count over an argument that has a histogram is read from it
			// (it counts rows; a per-unit count counts units).
			if j, ok := searchOf[parser.Format(c.Arg)]; ok {
				src.Search = j
			}
		}
		if src.Search < 0 || c.Kind == planner.QuantileTree {
			// A tree with chosen bounds has its own fine buckets (T).
			src.Column = measureOf(cellSpec(c, q.UnitSQL != "", argIndex))
		}
		cellSource[i] = src
	}
	bounded := q.UnitSQL != ""
	r := &Rewritten{CellSource: cellSource, SearchColumn: searchColumn, UnitsColumn: -1, Dropped: bounded && q.Dropped != nil}
	if q.Selection != nil {
		// The partition selection counts distinct units per group.
		if bounded {
			r.UnitsColumn = measureOf(measure.Spec{Kind: measure.Units, Arg: -1})
		} else {
			r.UnitsColumn = measureOf(measure.Spec{Kind: measure.Rows, Arg: -1})
		}
	}
	if len(specs) == 0 {
		specs = append(specs, measure.Spec{Kind: measure.Rows, Arg: -1}) // the aggregate needs at least one measurement
	}
	r.Measured = specs
	r.MaxRows, r.Keys = q.Unit.MaxRows, len(q.Keys)
	call := []string{"?1"}
	var where []string
	if bounded {
		r.MaxGroups = q.Unit.MaxGroups
		call = append(call, q.UnitSQL)
		where = append(where, q.UnitSQL+" IS NOT NULL")
	}
	for _, k := range q.Keys {
		call = append(call, keyExpr(k))
		if k.Domain != nil {
			var vals []string
			for _, v := range k.Domain {
				vals = append(vals, parser.SQLLiteral(v))
			}
			where = append(where, k.SQL+" IN ("+strings.Join(vals, ", ")+")")
		}
	}
	call = append(call, args...)
	if q.WeightSQL != "" {
		r.Weighted = true
		call = append(call, q.WeightSQL)
	}
	if q.Where != nil {
		where = append([]string{q.SQL(q.Where)}, where...)
	}
	r.callArgs = call[1:] // after the handle
	r.tail = " FROM " + q.FromSQL
	if len(where) > 0 {
		r.tail += " WHERE " + strings.Join(where, " AND ")
	}
	if measures, ok := nativeMeasures(specs, argExprs, q); ok && !r.Weighted && nativeScan(q) {
		for _, m := range measures {
			r.Native = append(r.Native, m.sqlite(args))
			if m.Kind == measure.Sum {
				r.HasFallback = true
			}
		}
	}
	r.Measurement, r.NoPlan = measurement(q, specs, argExprs)
	r.Scan = r.ScanWith(MeasureFunction, true)
	for i := range q.Keys {
		r.ResultColumns = append(r.ResultColumns, KeyColumn(i))
	}
	for i := range q.Aggregates {
		r.ResultColumns = append(r.ResultColumns, AggColumn(i))
	}
	r.Post = post(q)
	if err := q.RenderErr(); err != nil {
		return nil, err
	}
	return r, nil
}

// maxNativeBound is the largest |bound| of a native sum. A table has
// fewer than 2^46 rows (SQLite's largest database is 2^48 bytes, and a
// row's cell takes at least 4), so integers clipped to ±2^16 add up to
// less than 2^62: SQLite's integer SUM can neither overflow nor raise.
const maxNativeBound = 1<<16 - 1

// nativeScan decides whether SQLite can measure a scan itself, exactly
// and more cheaply than a call into Go per row: a scan without units,
// keys, searches or partition selection whose measurements (nativeMeasures) are counts,
// and sums of INTEGER-affinity columns with integer bounds of at most
// maxNativeBound in magnitude. Counts are exact in SQL. A sum is
//
//	SUM(CASE WHEN x BETWEEN lo AND hi THEN x
//	         WHEN x < lo THEN lo
//	         WHEN x IS NULL THEN NULL
//	         WHEN x <= 9e999 THEN hi
//	         ELSE 0.5 END)
//
// (the common case, a value within the bounds, decided by its first
// test: 9% faster at 10M rows than testing lo, then hi, first).
// When every value is an integer, or a number outside the bounds, each
// term is an integer equal to what the measurement aggregate adds (its
// numeric conversion leaves numbers as they are), SQLite's integer SUM is
// exact, and by maxNativeBound it cannot overflow. Every other value makes
// the SUM a REAL: a real inside the bounds is added as it is, and text or
// a blob (which SQLite orders above every number, +∞ included, so the SQL
// clip would not convert it as the aggregate does) adds 0.5. A REAL sum
// sends exec to the fallback (FallbackWith), the same scan through the measurement aggregate
// alone. Either way the value handed to the noise is the same exact
// clipped sum; only the time differs. (Converting each value with CAST AS
// NUMERIC, guarding with MAX(x), or choosing per row with typeof() were
// all measured slower.) The native scan is SQLite's aggregates alone,
// without a call of the measurement aggregate.
func nativeScan(q *planner.PrivateQuery) bool {
	return measuredRowByRow(q) && len(q.Keys) == 0
}

// measuredRowByRow: the scan measures each row on its own (no units to
// bound), with no bound search or partition selection, so counts and
// sums over its rows are its measurements.
func measuredRowByRow(q *planner.PrivateQuery) bool {
	return q.UnitSQL == "" && len(q.Searches) == 0 && q.Selection == nil
}

// nativeMeasures returns the native measurements of specs, if all are
// native.
func nativeMeasures(specs []measure.Spec, argExprs []parser.Expr, q *planner.PrivateQuery) (measures []nativeMeasure, ok bool) {
	for _, sp := range specs {
		switch sp.Kind {
		case measure.Rows:
			measures = append(measures, nativeMeasure{Kind: measure.Rows})
		case measure.Values, measure.Sum:
			i := sp.Arg
			if i < 0 || i >= len(argExprs) {
				return nil, false
			}
			m := nativeMeasure{Kind: sp.Kind, arg: i}
			if sp.Kind == measure.Sum {
				if !nativeBound(sp.Lo) || !nativeBound(sp.Hi) || !q.IntegerColumn(argExprs[i]) {
					return nil, false
				}
				m.Lo, m.Hi = int64(sp.Lo), int64(sp.Hi)
			}
			measures = append(measures, m)
		default:
			return nil, false
		}
	}
	return measures, true
}

// nativeBound reports whether b is an integer of at most maxNativeBound
// in magnitude.
func nativeBound(b float64) bool { return b == math.Trunc(b) && math.Abs(b) <= maxNativeBound }

// nativeMeasure is a native measurement of argument arg of the call:
// Kind Rows counts rows, Values the non-NULL values, Sum sums them
// clipped to [Lo, Hi] (integers of at most maxNativeBound in magnitude).
type nativeMeasure struct {
	Kind   measure.Kind
	Lo, Hi int64
	arg    int
}

// sqlite prints the measurement in SQLite's SQL over the call's
// argument expressions.
func (m nativeMeasure) sqlite(args []string) string {
	switch m.Kind {
	case measure.Rows:
		return "COUNT(*)"
	case measure.Values:
		return "COUNT(" + args[m.arg] + ")"
	}
	x := args[m.arg]
	return fmt.Sprintf("SUM(CASE WHEN %s BETWEEN %d AND %d THEN %s WHEN %s < %d THEN %d WHEN %s IS NULL THEN NULL WHEN %s <= 9e999 THEN %d ELSE 0.5 END)",
		x, m.Lo, m.Hi, x, x, m.Lo, m.Lo, x, x, m.Hi)
}

// keyExpr is a key's value in the scan: its domain position, or the raw
// value for a key chosen by partition selection.
func keyExpr(k planner.GroupKey) string {
	if k.Domain == nil {
		return k.SQL
	}
	return domainIndex(k)
}

// cellSpec names a cell's measurement for the measurement aggregate:
// n (rows), c<i> (non-NULL values of argument i), d<i> (distinct non-NULL
// values of argument i), s<i>:lo:hi (exact Σ clip), q<i>:lo:hi (exact
// Σ (clip − midpoint)²), u (distinct units);
// h<i> and H<i> (with sums of squares) are the histograms of bound searches;
// per unit and group: S<i>:lo:hi (Σ over units of clip(the unit's Σ)),
// A<i>:lo:hi (of clip(the unit's mean)), R:lo:hi and K<i>:lo:hi (of
// clip(the unit's rows / non-NULL values)), C<i> (units with a value).
func cellSpec(c *planner.Cell, unitsBounded bool, arg func(parser.Expr) int) measure.Spec {
	b := func(k measure.Kind, a int) measure.Spec { return measure.Spec{Kind: k, Arg: a, Lo: c.Lo, Hi: c.Hi} }
	plain := func(k measure.Kind, a int) measure.Spec { return measure.Spec{Kind: k, Arg: a} }
	perUnit := c.PerUnit
	if perUnit && !unitsBounded {
		// Every row is its own unit (no bounding): a unit's sum, its mean
		// and whether it has a value are its row's, so the per-row
		// measurements, which the native scan can compute, are the same.
		// A bounded count still clips each row's 1.
		switch c.Kind {
		case planner.ClippedSum, planner.CenteredSum:
			perUnit = false
		case planner.CountValues:
			perUnit = c.Lo < c.Hi
		}
	}
	if perUnit {
		// Per-unit measurements (contribution_bounds_per_group): each
		// unit's rows in a group are combined, then clipped once.
		switch c.Kind {
		case planner.ClippedSum:
			return b(measure.UnitSum, arg(c.Arg)) // Σ_units clip(Σ x)
		case planner.CenteredSum:
			return b(measure.UnitMean, arg(c.Arg)) // Σ_units clip(mean x)
		case planner.CountRows:
			return b(measure.UnitRows, -1) // Σ_units clip(rows)
		case planner.CountValues:
			if c.Lo < c.Hi {
				return b(measure.UnitValues, arg(c.Arg)) // Σ_units clip(non-NULL values)
			}
			return plain(measure.UnitsWithValue, arg(c.Arg)) // units with a non-NULL value
		}
		panic(fmt.Sprintf("rewrite: no per-unit measurement for cell kind %d", c.Kind))
	}
	switch c.Kind {
	case planner.CountRows:
		return plain(measure.Rows, -1)
	case planner.CountValues:
		return plain(measure.Values, arg(c.Arg))
	case planner.ClippedSum, planner.CenteredSum:
		return b(measure.Sum, arg(c.Arg))
	case planner.CenteredSumSq:
		return b(measure.Squares, arg(c.Arg))
	case planner.CountUnits:
		return plain(measure.Units, -1)
	case planner.CountDistinct:
		return plain(measure.Distinct, arg(c.Arg))
	case planner.QuantileTree:
		if c.Search >= 0 {
			return plain(measure.QuantileBuckets, arg(c.Arg)) // counts per fine log-linear bucket (bounds chosen later)
		}
		return b(measure.Quantiles, arg(c.Arg)) // leaf counts of clip(x) over [lo, hi]
	}
	panic(fmt.Sprintf("rewrite: unknown cell kind %d", c.Kind))
}

// domainIndex maps a key column to its position in the public domain, or
// NULL for values outside it. Comparison follows SQLite's own rules, so a
// value matches its domain entry exactly as "=" would (with the column's
// affinity and collation), and the first entry it equals wins.
//
// A small domain is one CASE with a WHEN per value. A large one (a CASE
// of 2,000 values made a row cost 1,000 comparisons) is a binary search by
// IN lists: "is the value one of the first half?", then of that half's
// first half, and so on, under a guard "one of the domain at all?". SQLite
// builds each constant IN list once per statement as an index with the
// comparison's affinity and collation, so a row costs about log₂(n) IN
// tests of O(log n) each, by the same "=" as the CASE: a value equal to
// an entry of the first half goes there, so the first entry it equals is
// still the one found.
func domainIndex(k planner.GroupKey) string {
	if len(k.Domain) == 0 {
		return "NULL" // an empty public domain: no group
	}
	lits := make([]string, len(k.Domain))
	for i, v := range k.Domain {
		lits[i] = parser.SQLLiteral(v)
	}
	if len(lits) <= flatDomain {
		return flatCase(k.SQL, lits, 0)
	}
	return "CASE WHEN " + k.SQL + " IN (" + strings.Join(lits, ", ") + ") THEN " + searchTree(k.SQL, lits, 0) + " END"
}

// flatDomain is the largest domain mapped by one flat CASE.
const flatDomain = 16

// flatCase is CASE x WHEN lits[0] THEN base ... END.
func flatCase(x string, lits []string, base int) string {
	var sb strings.Builder
	sb.WriteString("CASE " + x)
	for i, l := range lits {
		fmt.Fprintf(&sb, " WHEN %s THEN %d", l, base+i)
	}
	sb.WriteString(" END")
	return sb.String()
}

// searchTree is the position of x among lits (offset by base), for an x
// known to equal one of them.
func searchTree(x string, lits []string, base int) string {
	if len(lits) <= flatDomain {
		return flatCase(x, lits, base)
	}
	half := len(lits) / 2
	return "CASE WHEN " + x + " IN (" + strings.Join(lits[:half], ", ") + ") THEN " + searchTree(x, lits[:half], base) +
		" ELSE " + searchTree(x, lits[half:], base+half) + " END"
}

// post builds the post-processing statement: the select list, HAVING,
// ORDER BY and LIMIT with aggregates replaced by the noisy result columns
// and group keys by the public key columns.
func post(q *planner.PrivateQuery) string {
	override := func(e parser.Expr) (string, bool) {
		if i, ok := q.KeyExprOf[e]; ok {
			return KeyColumn(i), true
		}
		switch e := e.(type) {
		case *parser.CallExpr:
			if i, ok := q.AggOf[e]; ok {
				return AggColumn(i), true
			}
		case *parser.ColumnRef:
			if i, ok := q.KeyOf[e]; ok {
				return KeyColumn(i), true
			}
		}
		return "", false
	}
	var items []string
	for _, o := range q.Outputs {
		items = append(items, q.PostSQL(o.Expr, override)+" AS "+parser.QuoteIdent(o.Name))
	}
	var sb strings.Builder
	// The group's row in the result table comes last: exec takes it off
	// and gives each released value its group's interval.
	items = append(items, "rowid AS "+parser.QuoteIdent(GroupColumn))
	sb.WriteString("SELECT " + strings.Join(items, ", ") + " FROM temp." + ResultTable)
	if q.Having != nil {
		sb.WriteString(" WHERE " + q.PostSQL(q.Having, override))
	}
	sb.WriteString(" ORDER BY ")
	for _, o := range q.OrderBy {
		sb.WriteString(q.PostSQL(o.Expr, override))
		if o.Desc {
			sb.WriteString(" DESC")
		}
		sb.WriteString(", ")
	}
	sb.WriteString("rowid") // ties and the default keep the domain's order
	if q.Limit != nil {
		sb.WriteString(" LIMIT " + parser.Format(q.Limit))
		if q.Offset != nil {
			sb.WriteString(" OFFSET " + parser.Format(q.Offset))
		}
	}
	return sb.String()
}
