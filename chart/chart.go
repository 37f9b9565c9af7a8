// Package chart draws released answers as pictures: bars with 95% error
// bars for a key and its aggregates, a line with a 95% band for ordered
// numeric keys. A Spec is built from a result (FromResult) and rendered as
// SVG or PNG (Render) with github.com/go-analyze/charts' painter; the
// shell's --chart option, the web console and the docs' figures share it.
//
// Only released values and their intervals are drawn: a chart says
// nothing a result does not.
package chart

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dpsql/dpsql"
)

// Kind is the form a result is drawn in.
type Kind string

const (
	// None: the result's shape has no chart (no numeric column, no rows,
	// a message); show it as a table.
	None Kind = "table"
	// Bars: one horizontal bar per row, labelled by its key, with its
	// value's 95% interval as a whisker; one panel per numeric column.
	Bars Kind = "bars"
	// Line: rows ordered by a numeric key (histogram bins, years), a line
	// through the values and a band over their intervals; one panel per
	// numeric column.
	Line Kind = "line"
)

// Series is one numeric column's values, row by row as the Spec's
// labels.
type Series struct {
	Name string
	// Value, Lo and Hi are each row's value and 95% interval (NaN where
	// the row has no value or no interval).
	Value, Lo, Hi []float64
	// FewRows marks rows whose interval is the whole range the bounds
	// allow (the value says little).
	FewRows []bool
	// Text is each value as the shell shows it ("10540 ± 90").
	Text []string
}

// Spec is a chart of one result.
type Spec struct {
	Kind Kind
	// Key names the key column ("" when the result has only aggregates),
	// Labels its values as text; Keys its values as numbers (Line only).
	Key    string
	Labels []string
	Keys   []float64
	Series []Series
	// Caption is what the answer spent ("ε=0.1; 95% intervals").
	Caption string
}

// Whiskers is how many intervals the chart draws (rows with an
// interval that is not the whole range the bounds allow, over every
// series): what a test or a page can check.
func (s Spec) Whiskers() int {
	n := 0
	for _, se := range s.Series {
		for i := range se.Value {
			if !math.IsNaN(se.Lo[i]) && !math.IsNaN(se.Hi[i]) && !se.FewRows[i] {
				n++
			}
		}
	}
	return n
}

// FromResult chooses a chart for r from its shape. Its series are the
// columns of noisy values (those with intervals), its keys every other
// column: Line when the only key is numeric (three rows or more, none
// NULL), Bars otherwise (a bar's label joins its keys' values: "North ·
// flu"), None when nothing in r is noisy (SHOW answers, public tables,
// key-only answers).
func FromResult(r *dpsql.Result) Spec {
	if r == nil || len(r.Columns) == 0 || len(r.Rows) == 0 {
		return Spec{Kind: None}
	}
	// Only a private query's noisy values are drawn: a column is a series
	// when some value in it has an interval, and every other column is a
	// key. SHOW answers, public tables and key-only answers (no noisy
	// value, so no interval) are not charts of released values.
	spec := Spec{Kind: Bars}
	var keys []int
	for j := range r.Columns {
		if !noisy(r, j) {
			keys = append(keys, j)
			continue
		}
		if !allNumeric(r, j) {
			continue
		}
		se := Series{Name: r.Columns[j]}
		for i, row := range r.Rows {
			x, ok := number(row[j])
			if !ok {
				x = math.NaN()
			}
			lo, hi, few := math.NaN(), math.NaN(), false
			if iv := r.IntervalAt(i, j); iv != nil && ok && finite(iv.Lo) && finite(iv.Hi) {
				lo, hi, few = iv.Lo, iv.Hi, iv.Wide
			}
			se.Value = append(se.Value, x)
			se.Lo = append(se.Lo, lo)
			se.Hi = append(se.Hi, hi)
			se.FewRows = append(se.FewRows, few)
			se.Text = append(se.Text, dpsql.ValueText(row[j], r.IntervalAt(i, j)))
		}
		spec.Series = append(spec.Series, se)
	}
	if len(spec.Series) == 0 {
		return Spec{Kind: None}
	}
	// A row's label joins its keys' values.
	if len(keys) > 0 {
		names := make([]string, len(keys))
		for n, j := range keys {
			names[n] = r.Columns[j]
		}
		spec.Key = strings.Join(names, " · ")
	}
	for i, row := range r.Rows {
		// A single row without a key: each panel's title names its
		// aggregate, and the bar needs no label (the first column's name
		// labelled the other panels' bars too).
		label := ""
		if len(keys) > 0 {
			parts := make([]string, len(keys))
			for n, j := range keys {
				parts[n] = dpsql.FormatValue(row[j])
			}
			label = strings.Join(parts, " · ")
		} else if len(r.Rows) > 1 {
			label = fmt.Sprintf("row %d", i+1)
		}
		spec.Labels = append(spec.Labels, label)
	}
	if len(keys) == 1 && len(r.Rows) >= 3 {
		at := make([]float64, len(r.Rows))
		numeric := true
		for i, row := range r.Rows {
			x, ok := number(row[keys[0]])
			if !ok {
				numeric = false
				break
			}
			at[i] = x
		}
		if numeric {
			spec.Kind = Line
			spec.Keys = at
			spec.sortByKey()
		}
	}
	spec.Caption = caption(r, spec.Kind)
	return spec
}

// sortByKey orders a Line spec's rows by key.
func (s *Spec) sortByKey() {
	idx := make([]int, len(s.Keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return s.Keys[idx[a]] < s.Keys[idx[b]] })
	perm := func(xs []float64) []float64 {
		out := make([]float64, len(xs))
		for i, k := range idx {
			out[i] = xs[k]
		}
		return out
	}
	labels := make([]string, len(idx))
	for i, k := range idx {
		labels[i] = s.Labels[k]
	}
	s.Labels, s.Keys = labels, perm(s.Keys)
	for n := range s.Series {
		se := &s.Series[n]
		few, text := make([]bool, len(idx)), make([]string, len(idx))
		for i, k := range idx {
			few[i], text[i] = se.FewRows[k], se.Text[k]
		}
		se.Value, se.Lo, se.Hi, se.FewRows, se.Text = perm(se.Value), perm(se.Lo), perm(se.Hi), few, text
	}
}

// caption says what the answer spent and what the error bars (or the
// band) are.
func caption(r *dpsql.Result, kind Kind) string {
	s := "whiskers: 95% intervals"
	if kind == Line {
		s = "band: 95% intervals"
	}
	if r.Cost.Epsilon > 0 {
		spent := fmt.Sprintf("spent ε=%.6g", r.Cost.Epsilon)
		if r.Cost.Delta > 0 {
			spent += fmt.Sprintf(", δ=%.3g", r.Cost.Delta)
		}
		s = spent + "; " + s
	}
	return s
}

// noisy reports whether column j holds released noisy values: some value
// in it has an interval.
func noisy(r *dpsql.Result, j int) bool {
	for i := range r.Rows {
		if r.IntervalAt(i, j) != nil {
			return true
		}
	}
	return false
}

func allNumeric(r *dpsql.Result, j int) bool {
	any := false
	for _, row := range r.Rows {
		switch v := row[j].(type) {
		case int64:
			any = true
		case float64:
			any = any || !math.IsNaN(v)
		case nil:
		default:
			return false
		}
	}
	return any
}

// number is a cell's value as a float64 (ok false for NULL and NaN).
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, finite(v)
	}
	return 0, false
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
