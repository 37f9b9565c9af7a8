package dpsql

import (
	"slices"
	"strings"

	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/planner"
)

// intervalOutputs are the outputs of p that get a 95% interval: plain
// aggregates other than APPROX_QUANTILES and JSON reports (which carry
// theirs), and monotone functions of one such aggregate.
func intervalOutputs(p *planner.PrivateQuery) []bool {
	out := make([]bool, len(p.Outputs))
	for j, o := range p.Outputs {
		_, out[j] = exec.OutputAggregate(p, o.Expr)
	}
	return out
}

// FewRowsColumn is the column SET interval_columns = on adds at the end
// of a private query's answer that has intervals: the names of the row's
// columns whose value has too few rows to mean anything (its interval is
// the whole range the bounds allow; the shell's "(few rows)"), NULL when
// none — the mark a client that reads only rows gets.
const FewRowsColumn = "few_rows"

// addIntervalColumns puts <col>_lo and <col>_hi after each output that
// has an interval (SET interval_columns = on), and FewRowsColumn at the
// end; a value without one gets NULLs.
func addIntervalColumns(res *Result, has []bool) {
	if !slices.Contains(has, true) {
		return
	}
	var cols []string
	res.intervalCols = nil
	for j, c := range res.Columns {
		cols = append(cols, c)
		res.intervalCols = append(res.intervalCols, false)
		if j < len(has) && has[j] {
			cols = append(cols, c+"_lo", c+"_hi")
			res.intervalCols = append(res.intervalCols, true, true)
		}
	}
	cols = append(cols, FewRowsColumn)
	res.intervalCols = append(res.intervalCols, true)
	for r, row := range res.Rows {
		var out []any
		var few []string
		for j, v := range row {
			out = append(out, v)
			if j < len(has) && has[j] {
				var lo, hi any
				if iv := res.IntervalAt(r, j); iv != nil {
					lo, hi = iv.Lo, iv.Hi
					if iv.Wide {
						few = append(few, res.Columns[j])
					}
				}
				out = append(out, lo, hi)
			}
		}
		var mark any
		if len(few) > 0 {
			mark = strings.Join(few, ", ")
		}
		res.Rows[r] = append(out, mark)
	}
	for r, ivs := range res.Intervals {
		var out []*Interval
		for j, iv := range ivs {
			out = append(out, iv)
			if j < len(has) && has[j] {
				out = append(out, nil, nil)
			}
		}
		res.Intervals[r] = append(out, nil)
	}
	res.Columns = cols
}

// wideIntervals counts the intervals that are the whole range the bounds
// allow (Interval.Wide).
func wideIntervals(ivs [][]*Interval) int {
	n := 0
	for _, row := range ivs {
		for _, iv := range row {
			if iv != nil && iv.Wide {
				n++
			}
		}
	}
	return n
}
