package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/chzyer/readline"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dpsql/dpsql"
)

// printer writes results in one of the output formats.
type printer struct {
	format string
	w      io.Writer
	// noHeaders leaves out the header line of table and csv output
	// (.headers off).
	noHeaders bool
	// null is how table and line output show NULL (.nullvalue; default
	// "NULL"); csv shows it only when set, else an empty field. A text
	// value that reads like the null marker is shown quoted ('NULL'), so
	// the two never look alike.
	null    string
	nullSet bool
	// withCost keeps each result's cost in machine-readable output
	// (--with-cost, .cost on): csv gains cost columns, json wraps each
	// result in an object with its cost, line adds the footer.
	withCost bool
	// noIntervals leaves out each noisy value's 95% interval in table,
	// box, markdown and line output (.intervals off).
	noIntervals bool
	// interactive: the shell's printer; line output (\x) keeps the
	// footer with the rows and what the query spent, as table output does.
	interactive bool
	results     int // results printed so far (csv separates them)
	// ascii: bars output draws with '#' (the locale does not say UTF-8).
	ascii bool
	// charts, when set, also draws each result's chart to an image file
	// (--chart).
	charts *chartFile
}

func newPrinter(format string, w io.Writer) (*printer, error) {
	switch format {
	case "table", "box", "markdown", "csv", "json", "line", "bars":
		return &printer{format: format, w: w, null: "NULL", ascii: !unicodeTerminal()}, nil
	case "jsonl": // what json prints: JSON lines, one document per result
		return &printer{format: "json", w: w, null: "NULL"}, nil
	}
	return nil, fmt.Errorf("unknown format %q (table, box, markdown, csv, json, jsonl, line or bars)", format)
}

// show formats a value for table and line output.
func (p *printer) show(v any) string {
	switch v := v.(type) {
	case nil:
		return p.null
	case string:
		if v == p.null || (v != "" && strings.Trim(v, "'") == p.null) {
			return "'" + strings.ReplaceAll(v, "'", "''") + "'"
		}
	}
	return dpsql.FormatValue(v)
}

func (p *printer) print(r *dpsql.Result) error {
	if err := p.printText(r); err != nil {
		return err
	}
	if p.charts != nil {
		if _, err := p.charts.write(r); err != nil {
			return err
		}
	}
	return nil
}

func (p *printer) printText(r *dpsql.Result) error {
	switch p.format {
	case "bars":
		return p.bars(r)
	case "line":
		return p.printLines(r)
	case "csv":
		return p.printCSV(r)
	case "json":
		return p.printJSON(r)
	}
	return p.table(r)
}

// printLines prints one "column = value" line per column, a blank line
// between rows.
func (p *printer) printLines(r *dpsql.Result) error {
	if r.Columns == nil {
		return p.table(r) // the message, if any
	}
	w := 0
	for _, c := range r.Columns {
		w = max(w, utf8.RuneCountInString(c))
	}
	var sb strings.Builder
	for i, row := range r.Rows {
		if i > 0 {
			sb.WriteString("\n")
		}
		for j, v := range row {
			fmt.Fprintf(&sb, "%*s = %s\n", w, r.Columns[j], p.showAt(r, i, j, v))
		}
	}
	if p.withCost || p.interactive {
		sb.WriteString(footer(r))
	}
	_, err := io.WriteString(p.w, sb.String())
	return err
}

// printCSV prints the rows as CSV, floats in full; with the cost, each noisy
// column's 95% interval (COLUMN_lo95, COLUMN_hi95) and the cost columns.
func (p *printer) printCSV(r *dpsql.Result) error {
	if r.Columns == nil {
		return nil
	}
	if p.results++; p.results > 1 {
		io.WriteString(p.w, "\n") // an empty line between result sets
	}
	cw := csv.NewWriter(p.w)
	costNames, costValues := costColumns(r)
	var ivCols []int
	if !p.withCost {
		costNames, costValues = nil, nil
	} else {
		ivCols = intervalColumns(r)
	}
	if !p.noHeaders {
		head := append([]string(nil), r.Columns...)
		for _, j := range ivCols {
			head = append(head, r.Columns[j]+"_lo95", r.Columns[j]+"_hi95")
		}
		cw.Write(append(head, costNames...))
	}
	for i, row := range r.Rows {
		rec := make([]string, len(row), len(row)+2*len(ivCols)+len(costValues))
		for i, v := range row {
			if v == nil && p.nullSet {
				rec[i] = p.null
			}
			if v != nil {
				rec[i] = dpsql.FormatValue(v)
				if f, ok := v.(float64); ok {
					rec[i] = strconv.FormatFloat(f, 'g', -1, 64) // full precision for machines
				}
			}
		}
		for _, j := range ivCols {
			lo, hi := "", ""
			if iv := r.IntervalAt(i, j); iv != nil {
				lo, hi = strconv.FormatFloat(iv.Lo, 'g', -1, 64), strconv.FormatFloat(iv.Hi, 'g', -1, 64)
			}
			rec = append(rec, lo, hi)
		}
		cw.Write(append(rec, costValues...))
	}
	cw.Flush()
	return cw.Error()
}

// printJSON prints one JSON array of row objects per result, keys in column
// order; with the cost, an object of the rows, the cost, the intervals
// and the notes.
func (p *printer) printJSON(r *dpsql.Result) error {
	if r.Columns == nil {
		return nil
	}
	var sb strings.Builder
	sb.WriteString("[")
	for i, row := range r.Rows {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString("{")
		for j, v := range row {
			if j > 0 {
				sb.WriteString(",")
			}
			k, _ := json.Marshal(r.Columns[j])
			if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				v = nil
			}
			val, err := json.Marshal(v)
			if err != nil {
				return err
			}
			sb.Write(k)
			sb.WriteString(":")
			sb.Write(val)
		}
		sb.WriteString("}")
	}
	sb.WriteString("]")
	if p.withCost {
		b, err := json.Marshal(struct {
			Epsilon     float64                       `json:"epsilon"`
			Delta       float64                       `json:"delta"`
			ErrorBounds map[string]float64            `json:"error_bounds_95"`
			Intervals   [][]*dpsql.ConfidenceInterval `json:"noise_confidence_intervals"`
			Notes       []string                      `json:"notes"`
		}{r.Cost.Epsilon, r.Cost.Delta, nonNil(r.ErrorBounds), r.ConfidenceIntervals(), append([]string{}, r.Notes...)})
		if err != nil {
			return err
		}
		rows := sb.String()
		sb.Reset()
		sb.WriteString(`{"rows":` + rows + "," + string(b[1:]))
	}
	sb.WriteString("\n")
	_, err := io.WriteString(p.w, sb.String())
	return err
}

// displayWidth is how many terminal columns s takes: East Asian wide
// characters take two, combining marks none.
func displayWidth(s string) int { return readline.Runes{}.WidthAll([]rune(s)) }

// cellText is how a value shows in an aligned cell: embedded line breaks
// and tabs are marked (↵, →) so that a row stays on one line.
func (p *printer) cellText(shown string) string {
	s := strings.NewReplacer("\r\n", "↵", "\n", "↵", "\r", "↵", "\t", "→").Replace(shown)
	if p.format == "markdown" {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	return s
}

// table prints aligned columns (table, box or markdown style), numbers
// right-aligned, and a footer with the privacy cost and the 95% error
// bounds of noisy columns.
func (p *printer) table(r *dpsql.Result) error {
	if r.Columns == nil {
		if r.Message != "" {
			fmt.Fprintln(p.w, r.Message)
		}
		for _, n := range r.Notes { // warnings about what a statement set
			fmt.Fprintln(p.w, "note: "+n)
		}
		return nil
	}
	widths := make([]int, len(r.Columns))
	numeric := make([]bool, len(r.Columns))
	for i, c := range r.Columns {
		if !p.noHeaders {
			widths[i] = displayWidth(c)
		}
		numeric[i] = true
	}
	cells := make([][]string, len(r.Rows))
	for i, row := range r.Rows {
		cells[i] = make([]string, len(row))
		for j, v := range row {
			s := p.cellText(p.showAt(r, i, j, v))
			cells[i][j] = s
			widths[j] = max(widths[j], displayWidth(s))
			switch v.(type) {
			case int64, float64, nil:
			default:
				numeric[j] = false
			}
		}
	}
	if p.format == "markdown" {
		for i := range widths {
			widths[i] = max(widths[i], 3) // room for the alignment row's ---:
		}
	}
	pad := func(s string, w int, right bool) string {
		n := w - displayWidth(s)
		if right {
			return strings.Repeat(" ", n) + s
		}
		return s + strings.Repeat(" ", n)
	}
	var sb strings.Builder
	// A style: text before, between and after the cells of a row, and how
	// to draw the rule under the header (and above and below, for box).
	type style struct{ left, sep, right string }
	row := func(parts []string, st style) {
		line := st.left + strings.Join(parts, st.sep) + st.right
		if p.format == "table" {
			line = strings.TrimRight(line, " ")
		}
		sb.WriteString(line + "\n")
	}
	rule := func(left, sep, right, fill string) {
		parts := make([]string, len(widths))
		for i, w := range widths {
			parts[i] = strings.Repeat(fill, w)
			if p.format == "markdown" && numeric[i] {
				parts[i] = strings.Repeat(fill, w-1) + ":"
			}
			if p.format != "table" {
				parts[i] = fill + parts[i] + fill
			}
			if p.format == "markdown" {
				parts[i] = " " + parts[i][1:len(parts[i])-1] + " "
			}
		}
		row(parts, style{left, sep, right})
	}
	cellStyle := map[string]style{"table": {"", " | ", ""}, "box": {"│ ", " │ ", " │"}, "markdown": {"| ", " | ", " |"}}[p.format]
	if p.format == "box" {
		rule("┌", "┬", "┐", "─")
	}
	parts := make([]string, len(r.Columns))
	if !p.noHeaders {
		for i, c := range r.Columns {
			parts[i] = pad(c, widths[i], numeric[i])
		}
		row(parts, cellStyle)
		switch p.format {
		case "table":
			rule("", "-+-", "", "-")
		case "box":
			rule("├", "┼", "┤", "─")
		case "markdown":
			rule("|", "|", "|", "-")
		}
	}
	for _, cs := range cells {
		for j, s := range cs {
			parts[j] = pad(s, widths[j], numeric[j])
		}
		row(parts, cellStyle)
	}
	if p.format == "box" {
		rule("└", "┴", "┘", "─")
	}
	sb.WriteString(footer(r))
	_, err := io.WriteString(p.w, sb.String())
	return err
}

// footer is the line under a result: its rows, the ε and δ it spent and
// the 95% noise bounds of its plain noisy columns, then any notes.
func footer(r *dpsql.Result) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "(%d row%s", len(r.Rows), map[bool]string{true: "", false: "s"}[len(r.Rows) == 1])
	if r.Cost.Epsilon > 0 || r.Cost.Delta > 0 {
		fmt.Fprintf(&sb, "; spent ε=%.6g", r.Cost.Epsilon)
		if r.Cost.Delta > 0 {
			fmt.Fprintf(&sb, ", δ=%.6g", r.Cost.Delta)
		}
		if names := boundNames(r); len(names) > 0 {
			var parts []string
			for _, n := range names {
				parts = append(parts, fmt.Sprintf("%s ±%.3g", n, r.ErrorBounds[n]))
			}
			sb.WriteString("; 95% noise bound: " + strings.Join(parts, ", "))
		}
	}
	sb.WriteString(")\n")
	for _, n := range r.Notes {
		sb.WriteString("note: " + n + "\n")
	}
	return sb.String()
}

// boundNames are the columns with a 95% noise bound, sorted.
func boundNames(r *dpsql.Result) []string {
	names := make([]string, 0, len(r.ErrorBounds))
	for n := range r.ErrorBounds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// intervalColumns are the columns of r whose values carry a 95% interval
// in some row (the noisy aggregates, declared or chosen bounds alike):
// --with-cost adds <col>_lo95 and <col>_hi95 for each, row by row.
func intervalColumns(r *dpsql.Result) []int {
	var cols []int
	for j := range r.Columns {
		for i := range r.Rows {
			if r.IntervalAt(i, j) != nil {
				cols = append(cols, j)
				break
			}
		}
	}
	return cols
}

// costColumns are the columns --with-cost adds to csv rows: the ε and δ
// the result spent, each noisy column's 95% noise bound, and the
// result's notes (one per line; warnings such as bounds that clip much
// of the data among them), when it has any.
func costColumns(r *dpsql.Result) (names []string, values []string) {
	names = []string{"dpsql_epsilon", "dpsql_delta"}
	values = []string{strconv.FormatFloat(r.Cost.Epsilon, 'g', -1, 64), strconv.FormatFloat(r.Cost.Delta, 'g', -1, 64)}
	for _, n := range boundNames(r) {
		names = append(names, "dpsql_error95("+n+")")
		values = append(values, strconv.FormatFloat(r.ErrorBounds[n], 'g', -1, 64))
	}
	if len(r.Notes) > 0 {
		names = append(names, "dpsql_notes")
		values = append(values, strings.Join(r.Notes, "\n"))
	}
	return names, values
}

func nonNil(m map[string]float64) map[string]float64 {
	if m == nil {
		return map[string]float64{}
	}
	return m
}

// showAt is how value v of row i, column j shows in table and line
// output: with its 95% interval when it has one (and .intervals is on).
func (p *printer) showAt(r *dpsql.Result, i, j int, v any) string {
	iv := r.IntervalAt(i, j)
	if p.noIntervals || iv == nil {
		return p.show(v)
	}
	return dpsql.ValueText(v, iv)
}
