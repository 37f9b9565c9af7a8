// Package rewrite turns a private query plan into the SQL the backend runs
// and the SQL that post-processes the noisy results.
//
// Where it sits: planner → rewrite → exec. The backend statement scans the
// private table once and returns, per group of the public domain, the exact
// cells the plan asked for; exec adds noise to every cell. The
// post-processing statement then reads only the noisy results (a temporary
// table of noisy aggregates and public keys) to apply the select list's
// expressions, HAVING, ORDER BY and LIMIT.
//
// Why the rules preserve privacy:
//   - ClipValues: every summed value is clipped to the declared [lo, hi]
//     inside the scan, so one row moves a sum by at most max(|lo|, |hi|),
//     whatever the data.
//   - HistogramForSearch: an argument without declared bounds is measured
//     as a magnitude histogram, from which exec chooses bounds with the
//     sparse vector technique and then reads the clipped sums for exactly
//     those bounds; the histogram itself never leaves exec.
//   - PublicDomainKeys: group keys are mapped to positions in the owner's
//     public domain; rows outside it are dropped, and groups with no rows
//     are filled in by exec, so which groups appear reveals nothing.
//   - NoisyResultsOnly: the post-processing statement reads only the
//     temporary table of noisy values; it cannot name the private table.
package rewrite

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// ResultTable is the temporary table the post-processing statement reads.
const ResultTable = "_dpsql_result"

// Rewritten is what exec runs for one private query.
type Rewritten struct {
	// Scan is the backend statement. Its columns are one key index per
	// GROUP BY column (0-based position in that column's domain), then the
	// distinct measurements the cells need.
	Scan string
	// Measured lists the SQL of the Scan's columns after the keys.
	Measured []string
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
	// Bounded: the Scan is one call of the bounded aggregate, which takes
	// one parameter, a fresh random 64-bit key, and returns it as the handle
	// of its measurements (in the order of Measured).
	Bounded bool
	// ResultColumns are the columns of ResultTable: k0.. (key values) then
	// a0.. (noisy aggregate values).
	ResultColumns []string
	// Post is the post-processing statement over ResultTable.
	Post string
}

// Source is where a cell's exact value comes from: Column ≥ 0 for a
// measured column, else Search ≥ 0 for the histogram of that bound search.
type Source struct {
	Column int
	Search int
}

// HistogramFunction is the SQLite aggregate (registered by exec) that
// returns a value's magnitude histogram (autobound.Histogram, encoded).
const HistogramFunction = "dpsql_histogram"

// KeyColumn names the result column holding GROUP BY key i.
func KeyColumn(i int) string { return "k" + strconv.Itoa(i) }

// AggColumn names the result column holding aggregate i.
func AggColumn(i int) string { return "a" + strconv.Itoa(i) }

// Private rewrites a private query.
func Private(q *planner.PrivateQuery) (*Rewritten, error) {
	var sel []string
	for i := range q.Keys {
		sel = append(sel, scanKey(i))
	}
	bounded := q.UnitSQL != ""
	measured := map[string]int{}
	var measuredSQL, specs, args []string
	argIndex := func(e parser.Expr) string {
		a := parser.Format(e)
		for i, x := range args {
			if x == a {
				return strconv.Itoa(i)
			}
		}
		args = append(args, a)
		return strconv.Itoa(len(args) - 1)
	}
	// measure adds a measurement: its SQL for a plain scan, and (with
	// contribution bounding) its spec for the bounded aggregate.
	measure := func(m string, spec func() string) int {
		j, ok := measured[m]
		if !ok {
			j = len(measuredSQL)
			measured[m] = j
			measuredSQL = append(measuredSQL, m)
			sel = append(sel, m+" AS m"+strconv.Itoa(j))
			if bounded {
				specs = append(specs, spec())
			}
		}
		return j
	}
	searchColumn := make([]int, len(q.Searches))
	searchOf := map[string]int{}
	for i, sr := range q.Searches {
		searchColumn[i] = measure(HistogramFunction+"("+parser.Format(sr.Arg)+")", func() string { return "h" + argIndex(sr.Arg) })
		searchOf[sr.Label] = i
	}
	cellSource := make([]Source, len(q.Cells))
	for i, c := range q.Cells {
		src := Source{Column: -1, Search: c.Search}
		if c.Kind == planner.CountValues {
			// A count over an argument that has a histogram is read from it.
			if j, ok := searchOf[parser.Format(c.Arg)]; ok {
				src.Search = j
			}
		}
		if src.Search < 0 {
			src.Column = measure(cellSQL(c), func() string { return cellSpec(c, argIndex) })
		}
		cellSource[i] = src
	}
	r := &Rewritten{CellSource: cellSource, SearchColumn: searchColumn, UnitsColumn: -1}
	if q.Selection != nil {
		// The partition selection counts distinct units per group.
		if bounded {
			r.UnitsColumn = measure("COUNT(DISTINCT "+q.UnitSQL+")", func() string { return "u" })
		} else {
			r.UnitsColumn = measure("COUNT(*)", func() string { return "n" })
		}
	}
	r.Measured = measuredSQL
	var keys, domainNotNull []string
	for i, k := range q.Keys {
		keys = append(keys, scanKey(i))
		if k.Domain != nil {
			domainNotNull = append(domainNotNull, scanKey(i)+" IS NOT NULL")
		}
	}
	var sb strings.Builder
	if !bounded {
		var items []string
		for i, k := range q.Keys {
			items = append(items, keyExpr(k)+" AS "+scanKey(i))
		}
		sb.WriteString("SELECT " + strings.Join(append(items, sel[len(q.Keys):]...), ", ") + " FROM " + q.FromSQL)
		if q.Where != nil {
			sb.WriteString(" WHERE " + parser.Format(q.Where))
		}
		if len(keys) > 0 {
			sb.WriteString(" GROUP BY " + strings.Join(keys, ", "))
			if len(domainNotNull) > 0 {
				sb.WriteString(" HAVING " + strings.Join(domainNotNull, " AND "))
			}
		}
	} else {
		// ContributionBounding: the bounded aggregate keeps, per unit, at
		// most l0 groups and l∞ rows per group and measures those.
		unit := q.UnitSQL
		call := []string{"?1", parser.QuoteString(strings.Join(specs, ";")), strconv.FormatInt(q.Unit.MaxGroups, 10),
			strconv.FormatInt(q.Unit.MaxRows, 10), strconv.Itoa(len(q.Keys)), unit}
		where := []string{unit + " IS NOT NULL"}
		for _, k := range q.Keys {
			call = append(call, keyExpr(k))
			if k.Domain != nil {
				var vals []string
				for _, v := range k.Domain {
					vals = append(vals, SQLLiteral(v))
				}
				where = append(where, k.SQL+" IN ("+strings.Join(vals, ", ")+")")
			}
		}
		call = append(call, args...)
		if q.Where != nil {
			where = append([]string{parser.Format(q.Where)}, where...)
		}
		sb.WriteString("SELECT " + BoundedFunction + "(" + strings.Join(call, ", ") + ") FROM " + q.FromSQL + " WHERE " + strings.Join(where, " AND "))
		r.Bounded = true
	}
	r.Scan = sb.String()
	for i := range q.Keys {
		r.ResultColumns = append(r.ResultColumns, KeyColumn(i))
	}
	for i := range q.Aggregates {
		r.ResultColumns = append(r.ResultColumns, AggColumn(i))
	}
	r.Post = post(q)
	return r, nil
}

// BoundedFunction is the SQLite aggregate (registered by exec) that bounds
// each unit's contribution and measures the kept rows; see exec/bounded.go.
const BoundedFunction = "dpsql_bounded"

func scanKey(i int) string { return "_dpsql_k" + strconv.Itoa(i) }

// keyExpr is a key's value in the scan: its domain position, or the raw
// value for a key chosen by partition selection.
func keyExpr(k planner.GroupKey) string {
	if k.Domain == nil {
		return k.SQL
	}
	return domainIndex(k)
}

// cellSpec names a cell's measurement for the bounded aggregate:
// n (rows), c<i> (non-NULL values of argument i), s<i>:lo:hi (Σ clip),
// q<i>:lo:hi (Σ (clip − midpoint)²), u (distinct units).
func cellSpec(c *planner.Cell, arg func(parser.Expr) string) string {
	b := func() string {
		return ":" + strconv.FormatFloat(c.Lo, 'g', -1, 64) + ":" + strconv.FormatFloat(c.Hi, 'g', -1, 64)
	}
	switch c.Kind {
	case planner.CountRows:
		return "n"
	case planner.CountValues:
		return "c" + arg(c.Arg)
	case planner.ClippedSum, planner.CenteredSum:
		return "s" + arg(c.Arg) + b()
	case planner.CenteredSumSq:
		return "q" + arg(c.Arg) + b()
	case planner.CountUnits:
		return "u"
	}
	panic(fmt.Sprintf("rewrite: unknown cell kind %d", c.Kind))
}

// domainIndex maps a key column to its position in the public domain, or
// NULL for values outside it. Comparison follows SQLite's own rules, so a
// value matches its domain entry exactly as "=" would.
func domainIndex(k planner.GroupKey) string {
	var sb strings.Builder
	sb.WriteString("CASE " + k.SQL)
	for i, v := range k.Domain {
		fmt.Fprintf(&sb, " WHEN %s THEN %d", SQLLiteral(v), i)
	}
	sb.WriteString(" END")
	return sb.String()
}

// SQLLiteral renders a constant as SQL.
func SQLLiteral(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return parser.QuoteString(v)
	case bool:
		if v {
			return "1"
		}
		return "0"
	}
	return parser.QuoteString(fmt.Sprint(v))
}

// clip renders clip(x, lo, hi) as a CASE: a NULL x stays NULL (and is
// skipped by TOTAL), and on SQLite a CASE costs less per row than the
// MIN(MAX(...)) function calls.
func clip(c *planner.Cell) string {
	x := parser.Format(c.Arg)
	lo, hi := SQLLiteral(c.Lo), SQLLiteral(c.Hi)
	return fmt.Sprintf("CASE WHEN %s < %s THEN %s WHEN %s > %s THEN %s ELSE %s END", x, lo, lo, x, hi, hi, x)
}

func cellSQL(c *planner.Cell) string {
	switch c.Kind {
	case planner.CountRows:
		return "COUNT(*)"
	case planner.CountValues:
		return "COUNT(" + parser.Format(c.Arg) + ")"
	case planner.CountUnits:
		return "COUNT(DISTINCT " + parser.Format(c.Arg) + ")"
	case planner.ClippedSum, planner.CenteredSum:
		// A centred sum is Σ clip(x) − mid·COUNT(x); exec subtracts the
		// centre from the exact values, before any noise.
		return "TOTAL(" + clip(c) + ")"
	case planner.CenteredSumSq:
		d := "(" + clip(c) + " - " + SQLLiteral(c.Lo/2+c.Hi/2) + ")"
		return "TOTAL(" + d + " * " + d + ")"
	}
	panic(fmt.Sprintf("rewrite: unknown cell kind %d", c.Kind))
}

// post builds the post-processing statement: the select list, HAVING,
// ORDER BY and LIMIT with aggregates replaced by the noisy result columns
// and group keys by the public key columns.
func post(q *planner.PrivateQuery) string {
	override := func(e parser.Expr) (string, bool) {
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
		items = append(items, parser.FormatWith(o.Expr, override)+" AS "+parser.QuoteIdent(o.Name))
	}
	var sb strings.Builder
	sb.WriteString("SELECT " + strings.Join(items, ", ") + " FROM temp." + ResultTable)
	if q.Having != nil {
		sb.WriteString(" WHERE " + parser.FormatWith(q.Having, override))
	}
	sb.WriteString(" ORDER BY ")
	for _, o := range q.OrderBy {
		sb.WriteString(parser.FormatWith(o.Expr, override))
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
