package main

import (
	"io"
	"math"
	"os"
	"strings"

	"github.com/dpsql/dpsql"
)

// barWidth is how many character cells the longest bar takes.
const barWidth = 40

// eighths are the block characters of a bar's last, partial cell (1/8
// to 7/8 of a cell).
var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// unicodeTerminal reports whether the locale says the terminal shows
// UTF-8 (the first of LC_ALL, LC_CTYPE and LANG that is set); bars
// output draws with '#' where it does not.
func unicodeTerminal() bool {
	for _, v := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if s := os.Getenv(v); s != "" {
			s = strings.ToLower(s)
			return strings.Contains(s, "utf-8") || strings.Contains(s, "utf8")
		}
	}
	return false
}

// bars draws a result as horizontal bars, one chart per numeric column:
// each row's label (its first column; the column's name when the result
// has only one), a bar of its value's magnitude on an axis shared by the
// column's rows (the axis reaches the largest value or interval end), and
// the value with its 95% interval beside (dpsql.ValueText: "10540 ± 90",
// "(few rows)" where the interval is the whole range the bounds allow).
// A result with no numeric column after its labels is drawn as a table.
func (p *printer) bars(r *dpsql.Result) error {
	if len(r.Columns) == 0 || len(r.Rows) == 0 {
		return p.asTable(r)
	}
	first := keyColumns(r)
	var numeric []int
	for j := first; j < len(r.Columns); j++ {
		ok := true
		for _, row := range r.Rows {
			switch row[j].(type) {
			case int64, float64, nil:
			default:
				ok = false
			}
		}
		if ok {
			numeric = append(numeric, j)
		}
	}
	if len(numeric) == 0 {
		return p.asTable(r)
	}
	labels := make([]string, len(r.Rows))
	labelWidth := 0
	for i, row := range r.Rows {
		var parts []string
		for j := 0; j < first; j++ {
			parts = append(parts, p.cellText(p.show(row[j])))
		}
		labels[i] = strings.Join(parts, " · ") // every key: two keys' bars stay apart
		labelWidth = max(labelWidth, displayWidth(labels[i]))
	}
	full, negative, blank := "█", "░", " "
	shade, whisker, end := "▒", "─", "┤"
	if p.ascii {
		full, negative = "#", "-"
		shade, whisker, end = "=", "-", "|"
	}
	var sb strings.Builder
	for n, j := range numeric {
		if n > 0 {
			sb.WriteString("\n")
		}
		sb.WriteString(r.Columns[j] + "\n")
		scale := 0.0
		for i, row := range r.Rows {
			x, ok := number(row[j])
			if !ok {
				continue
			}
			scale = math.Max(scale, math.Abs(x))
			if iv := r.IntervalAt(i, j); iv != nil && !iv.Wide {
				scale = math.Max(scale, math.Max(math.Abs(iv.Lo), math.Abs(iv.Hi)))
			}
		}
		for i, row := range r.Rows {
			sb.WriteString(labels[i] + strings.Repeat(" ", labelWidth-displayWidth(labels[i])) + "  ")
			bar := ""
			if x, ok := number(row[j]); ok && scale > 0 && !math.IsInf(scale, 0) {
				cells := int(math.Round(math.Abs(x) / scale * barWidth * 8)) // in eighths
				if x < 0 {
					// A negative value is drawn in another glyph, whole
					// cells: its magnitude, not mistaken for a positive.
					bar = strings.Repeat(negative, (cells+4)/8)
				} else {
					bar = strings.Repeat(full, cells/8)
					if rest := cells % 8; rest > 0 {
						if p.ascii {
							bar += "#"
						} else {
							bar += eighths[rest]
						}
					}
				}
			}
			// Its 95% interval as a whisker on the same axis: the bar shaded
			// from the interval's near end, a line on to its far end (an
			// interval narrower than the bounds' range). A negative value's
			// bar is its magnitude, so its interval [lo, hi] is drawn as the
			// magnitudes [−hi, −lo].
			if x, ok := number(row[j]); ok && scale > 0 && !math.IsInf(scale, 0) && !p.noIntervals {
				if iv := r.IntervalAt(i, j); iv != nil && !iv.Wide {
					near, far := math.Max(0, iv.Lo), iv.Hi
					if x < 0 {
						near, far = math.Max(0, -iv.Hi), -iv.Lo
					}
					cells := []rune(bar)
					if lo := int(math.Round(near / scale * barWidth)); lo < len(cells)-1 {
						bar = string(cells[:lo]) + strings.Repeat(shade, len(cells)-lo)
					}
					if hi := int(math.Round(far / scale * barWidth)); hi > len(cells) {
						bar += strings.Repeat(whisker, hi-len(cells)-1) + end
					}
				}
			}
			sb.WriteString(bar + strings.Repeat(blank, barWidth+1-displayWidth(bar)) + " ")
			text := p.show(row[j])
			if iv := r.IntervalAt(i, j); iv != nil && !p.noIntervals {
				text = dpsql.ValueText(row[j], iv)
			}
			if x, ok := number(row[j]); ok && x < 0 {
				text += " (negative)"
			}
			sb.WriteString(text + "\n")
		}
	}
	sb.WriteString(footer(r))
	_, err := io.WriteString(p.w, sb.String())
	return err
}

// keyColumns is how many leading columns label the bars: the group keys,
// which carry no interval (a noisy aggregate carries one). A result
// without intervals (public, or from the cache of an old version) takes
// its first column as the label, as before, unless it has only one.
func keyColumns(r *dpsql.Result) int {
	noisy := func(j int) bool {
		for i := range r.Rows {
			if r.IntervalAt(i, j) != nil {
				return true
			}
		}
		return false
	}
	someNoisy := false
	for j := range r.Columns {
		someNoisy = someNoisy || noisy(j)
	}
	if !someNoisy {
		return min(1, len(r.Columns)-1)
	}
	k := 0
	for k < len(r.Columns) && !noisy(k) {
		k++
	}
	return k
}

// asTable prints r as table output.
func (p *printer) asTable(r *dpsql.Result) error {
	q := *p
	q.format = "table"
	return q.table(r)
}

// number is a cell's value as a float64 (ok false for NULL).
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, !math.IsNaN(v)
	}
	return 0, false
}
