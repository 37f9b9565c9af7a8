package dpsql

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Released is a result's machine-readable form, shared by the shell's json
// output, the web console and anything else that shows an answer: what
// was released (values, each noisy value's 95% interval and flags), what it
// cost, and how each value reads as text.
type Released struct {
	Columns []string `json:"columns"`
	// Rows hold int64, float64 (NaN and ±Inf as nil), string or nil.
	Rows [][]any `json:"rows"`
	// Text is how each value reads, with its interval ("38.6 ± 0.4", "123
	// [97, 130] (few rows)"): ValueText's.
	Text [][]string `json:"text"`
	// Intervals are BigQuery's noise_confidence_interval, row by row and
	// column by column, nil where a value has none.
	Intervals   [][]*ConfidenceInterval `json:"noise_confidence_intervals"`
	Epsilon     float64                 `json:"epsilon"`
	Delta       float64                 `json:"delta"`
	Mechanism   string                  `json:"mechanism,omitempty"`
	ErrorBounds map[string]float64      `json:"error_bounds_95"`
	Notes       []string                `json:"notes"`
	// Message is what a statement without rows says ("budget set").
	Message string `json:"message,omitempty"`
	// Cached: repeated from the cache, nothing charged.
	Cached bool `json:"cached"`
}

// ConfidenceInterval is BigQuery's noise_confidence_interval, with
// dpsql's flags.
type ConfidenceInterval struct {
	Level float64 `json:"confidence_level"`
	Lower float64 `json:"lower_bound"`
	Upper float64 `json:"upper_bound"`
	// Elements are APPROX_QUANTILES' intervals, one per value.
	Elements []*ConfidenceInterval `json:"elements,omitempty"`
	// ClippedTo is [lo, hi] when the value is computed from values
	// clipped to those bounds; ContributionBounded when contribution
	// bounding may have dropped rows; FewRows when the interval is the
	// whole range the bounds allow (Interval's Clipped, Bounded, Wide).
	ClippedTo           []float64 `json:"clipped_to,omitempty"`
	ContributionBounded bool      `json:"contribution_bounded,omitempty"`
	FewRows             bool      `json:"few_rows,omitempty"`
	// TailAllowance is how far the upper bound reaches above the clipped
	// values' interval to allow for values beyond a privately chosen
	// bound (Interval's Tail).
	TailAllowance float64 `json:"tail_allowance,omitempty"`
}

// Released returns r's machine-readable form.
func (r *Result) Released() *Released {
	out := &Released{Columns: r.Columns, Rows: make([][]any, len(r.Rows)), Text: make([][]string, len(r.Rows)),
		Intervals: r.ConfidenceIntervals(), Epsilon: r.Cost.Epsilon, Delta: r.Cost.Delta, Mechanism: r.Mechanism,
		ErrorBounds: map[string]float64{}, Notes: append([]string{}, r.Notes...), Message: r.Message, Cached: r.Cached}
	for k, v := range r.ErrorBounds {
		out.ErrorBounds[k] = v
	}
	for i, row := range r.Rows {
		out.Rows[i] = make([]any, len(row))
		out.Text[i] = make([]string, len(row))
		for j, v := range row {
			if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				out.Rows[i][j] = nil
			} else {
				out.Rows[i][j] = v
			}
			out.Text[i][j] = ValueText(v, r.IntervalAt(i, j))
		}
	}
	return out
}

// IntervalAt is the interval of row i, column j, or nil.
func (r *Result) IntervalAt(i, j int) *Interval {
	if i < 0 || j < 0 || i >= len(r.Intervals) || j >= len(r.Intervals[i]) {
		return nil
	}
	return r.Intervals[i][j]
}

// ConfidenceIntervals are r's intervals in BigQuery's form, row by row
// and column by column (nil where a value has none, or where an end is
// not finite).
func (r *Result) ConfidenceIntervals() [][]*ConfidenceInterval {
	out := make([][]*ConfidenceInterval, len(r.Rows))
	for i := range r.Rows {
		out[i] = make([]*ConfidenceInterval, len(r.Columns))
		if i >= len(r.Intervals) {
			continue
		}
		for j, iv := range r.Intervals[i] {
			if j >= len(out[i]) {
				break
			}
			if iv != nil && finite(iv.Lo) && finite(iv.Hi) {
				ci := &ConfidenceInterval{Level: 0.95, Lower: iv.Lo, Upper: iv.Hi, ContributionBounded: iv.Bounded, FewRows: iv.Wide, TailAllowance: iv.Tail}
				if iv.Clipped && !math.IsInf(iv.ClipLo, 0) && !math.IsInf(iv.ClipHi, 0) {
					ci.ClippedTo = []float64{iv.ClipLo, iv.ClipHi}
				}
				for _, e := range iv.Each {
					ci.Elements = append(ci.Elements, &ConfidenceInterval{Level: 0.95, Lower: e.Lo, Upper: e.Hi, FewRows: e.Wide})
				}
				out[i][j] = ci
			}
		}
	}
	return out
}

func finite(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }

// FormatValue shows a value as the shell does: floats to 12 significant
// digits (noisy values carry no meaning further down), NULL as "NULL".
func FormatValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case float64:
		return strconv.FormatFloat(v, 'g', 12, 64)
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return v
	}
	return fmt.Sprint(v)
}

// ValueText shows a released value with its 95% interval (iv nil: the
// value alone, FormatValue's), both to the digits the noise justifies
// (the half-width to one significant digit, two when it starts with 1 or
// 2): "38.6 ± 0.4", or "123 [97, 130]" when the interval is lopsided
// (clamped by the bounds), with "(few rows)" when it is the whole range
// the bounds allow.
func ValueText(v any, iv *Interval) string {
	if iv == nil {
		return FormatValue(v)
	}
	if text, ok := v.(string); ok && iv.Each != nil {
		// APPROX_QUANTILES: a JSON array, each value with its interval.
		var xs []float64
		if err := json.Unmarshal([]byte(text), &xs); err != nil || len(xs) != len(iv.Each) {
			return text
		}
		parts := make([]string, len(xs))
		for k, x := range xs {
			parts[k] = ValueText(x, &iv.Each[k])
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	var x float64
	switch v := v.(type) {
	case int64:
		x = float64(v)
	case float64:
		x = v
	default:
		return FormatValue(v)
	}
	h := math.Max(x-iv.Lo, iv.Hi-x)
	if math.IsNaN(h) || math.IsInf(h, 0) || math.IsInf(x, 0) {
		return FormatValue(v)
	}
	// The last digit shown is at 10^place: the half-width's first
	// significant digit (its second when it starts with 1 or 2).
	place := 0.0
	if h > 0 {
		e := math.Floor(math.Log10(h))
		place = e
		if h/math.Pow(10, e) < 3 {
			place = e - 1
		}
	}
	_, integer := v.(int64)
	if integer {
		place = max(0, place)
	}
	// A value whose interval lies within the bounds its values were
	// clipped to (an average, a percentile) can never be outside them:
	// rounding must not put it or its interval there either (bounds
	// [0, 125] must not show as 130 [0, 130]).
	within := iv.Clipped && iv.Lo >= iv.ClipLo && iv.Hi <= iv.ClipHi
	clamp := func(y float64) float64 {
		if within {
			return math.Max(iv.ClipLo, math.Min(iv.ClipHi, y))
		}
		return y
	}
	f := func(y float64) string {
		if place >= 0 {
			unit := math.Pow(10, place)
			r := math.Round(y/unit)*unit + 0 // + 0: no "-0"
			if c := clamp(r); c != r {
				return strconv.FormatFloat(c, 'f', -1, 64)
			}
			return strconv.FormatFloat(r, 'f', 0, 64)
		}
		r := strconv.FormatFloat(y, 'f', int(-place), 64)
		if rv, err := strconv.ParseFloat(r, 64); err == nil && clamp(rv) != rv {
			return strconv.FormatFloat(clamp(rv), 'f', -1, 64)
		}
		return r
	}
	val := f(x)
	if integer && place == 0 {
		val = FormatValue(v)
	}
	slack := 0.05 * h
	if integer {
		slack = math.Max(slack, 1) // whole-number endpoints
	}
	switch {
	case iv.Wide:
		return fmt.Sprintf("%s [%s, %s] (few rows)", val, f(iv.Lo), f(iv.Hi))
	case math.Abs((x-iv.Lo)-(iv.Hi-x)) <= slack:
		return fmt.Sprintf("%s ± %s", val, f(h))
	}
	return fmt.Sprintf("%s [%s, %s]", val, f(iv.Lo), f(iv.Hi))
}
