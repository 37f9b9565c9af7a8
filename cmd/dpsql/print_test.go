package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/budget"
)

// TestAlignedFormats: table, box and markdown align wide (CJK) characters
// by their display width, mark embedded line breaks, right-align numbers,
// show NULL apart from the text 'NULL', and keep the cost footer (issue 11).
func TestAlignedFormats(t *testing.T) {
	res := &dpsql.Result{
		Columns: []string{"city", "n", "note"},
		Rows:    [][]any{{"東京", int64(12), "a\nb|c"}, {"Oslo", nil, "NULL"}},
		Cost:    budget.Cost{Epsilon: 0.5},
	}
	for _, tc := range []struct{ format, want string }{
		{"table", "" +
			"city |    n | note\n" +
			"-----+------+-------\n" +
			"東京 |   12 | a↵b|c\n" +
			"Oslo | NULL | 'NULL'\n" +
			"(2 rows; spent ε=0.5)\n"},
		{"box", "" +
			"┌──────┬──────┬────────┐\n" +
			"│ city │    n │ note   │\n" +
			"├──────┼──────┼────────┤\n" +
			"│ 東京 │   12 │ a↵b|c  │\n" +
			"│ Oslo │ NULL │ 'NULL' │\n" +
			"└──────┴──────┴────────┘\n" +
			"(2 rows; spent ε=0.5)\n"},
		{"markdown", "" +
			"| city |    n | note   |\n" +
			"| ---- | ---: | ------ |\n" +
			"| 東京 |   12 | a↵b\\|c |\n" +
			"| Oslo | NULL | 'NULL' |\n" +
			"(2 rows; spent ε=0.5)\n"},
	} {
		var out bytes.Buffer
		pr, err := newPrinter(tc.format, &out)
		if err != nil {
			t.Fatal(err)
		}
		if err := pr.print(res); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.format, out.String(), tc.want)
		}
	}
}

// drawBars prints res in --format bars, in ASCII or Unicode glyphs.
func drawBars(t *testing.T, res *dpsql.Result, ascii bool) string {
	t.Helper()
	var b strings.Builder
	p, err := newPrinter("bars", &b)
	if err != nil {
		t.Fatal(err)
	}
	p.ascii = ascii
	if err := p.print(res); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestBars draws a grouped count and an average as bars: one chart per
// numeric column, each bar's length its value's share of the column's
// largest value or interval end (40 cells), the value and its interval
// beside, "(few rows)" where the interval is the whole range; '#' where
// the locale is not UTF-8; a result without numbers as a table.
func TestBars(t *testing.T) {
	res := &dpsql.Result{
		Columns: []string{"Education", "COUNT(*)", "AVG(Age)"},
		Rows:    [][]any{{"HS-grad", int64(10540), 38.6}, {"Doctorate", int64(2635), 47.2}, {"Preschool", int64(0), nil}},
		Intervals: [][]*dpsql.Interval{
			{nil, {Lo: 10450, Hi: 10630}, {Lo: 38.2, Hi: 39}},
			{nil, {Lo: 2545, Hi: 2725}, {Lo: 46, Hi: 48.4}},
			{nil, {Lo: -90, Hi: 90}, {Lo: 17, Hi: 90, Wide: true}},
		},
		Cost: budget.Cost{Epsilon: 1},
	}
	out := drawBars(t, res, false)
	lines := strings.Split(out, "\n")
	// Bars in eighths of a cell: COUNT's axis ends at 10630 (HS-grad's
	// interval), 10540/10630·320 = 317.3 → 39 cells and 5/8, 2635/10630·320
	// = 79.3 → 9 and 7/8; AVG's at 48.4 (the whole-range interval does not
	// count), 38.6/48.4·320 = 255.2 → 31 and 7/8, 47.2/48.4·320 = 312.1 → 39.
	want := []string{
		"COUNT(*)",
		"HS-grad    " + strings.Repeat("█", 39) + "▋" + "  10540 ± 90",
		"Doctorate  " + strings.Repeat("█", 9) + "▉" + strings.Repeat(" ", 31) + " 2640 ± 90",
		"Preschool  " + strings.Repeat(" ", 41) + " 0 ± 90",
		"",
		"AVG(Age)",
		"HS-grad    " + strings.Repeat("█", 31) + "▉" + strings.Repeat(" ", 9) + " 38.6 ± 0.4",
		"Doctorate  " + strings.Repeat("█", 39) + "┤" + " " + " 47.2 ± 1.2", // its interval's upper end, 48.4, is the axis's end
		"Preschool  " + strings.Repeat(" ", 41) + " NULL",
	}
	for i, w := range want {
		if i >= len(lines) || lines[i] != w {
			t.Errorf("line %d:\n got %q\nwant %q\n%s", i, lines[min(i, len(lines)-1)], w, out)
			break
		}
	}
	if !strings.Contains(out, "spent ε=1") {
		t.Errorf("no footer:\n%s", out)
	}
	ascii := drawBars(t, res, true)
	if strings.ContainsAny(ascii, "█▏▊") || !strings.Contains(ascii, "HS-grad    "+strings.Repeat("#", 40)+"  10540 ± 90") {
		t.Errorf("ASCII bars:\n%s", ascii)
	}
	if table := drawBars(t, &dpsql.Result{Columns: []string{"code", "label"}, Rows: [][]any{{"a", "Alpha"}}}, true); !strings.HasPrefix(table, "code | label\n") {
		t.Errorf("a result without numbers is not a table:\n%s", table)
	}
}

// TestBarsLabelsAndSigns (issue 51 W4–W7): a one-row answer with two
// aggregates draws both panels and takes no value for a label; two group
// keys label each bar with both; a negative value is drawn in its own
// glyph, not like a positive one; an interval shows as a whisker, for
// negative values too.
func TestBarsLabelsAndSigns(t *testing.T) {
	draw := func(res *dpsql.Result) string { return drawBars(t, res, false) }
	one := draw(&dpsql.Result{Columns: []string{"s", "n"}, Rows: [][]any{{1234567.891234, int64(500)}},
		Intervals: [][]*dpsql.Interval{{{Lo: 1200000, Hi: 1269000}, {Lo: 490, Hi: 510}}}})
	if !strings.HasPrefix(one, "s\n") || !strings.Contains(one, "\nn\n") || strings.Contains(one, "1234567.89") {
		t.Errorf("one row, two aggregates:\n%s", one)
	}
	two := draw(&dpsql.Result{Columns: []string{"region", "kind", "n"},
		Rows:      [][]any{{"North", "A", int64(10)}, {"North", "B", int64(20)}},
		Intervals: [][]*dpsql.Interval{{nil, nil, {Lo: 8, Hi: 12}}, {nil, nil, {Lo: 18, Hi: 22}}}})
	if !strings.Contains(two, "North · A  ") || !strings.Contains(two, "North · B  ") {
		t.Errorf("two keys:\n%s", two)
	}
	neg := draw(&dpsql.Result{Columns: []string{"g", "s"}, Rows: [][]any{{"a", -100.0}, {"b", 50.0}},
		Intervals: [][]*dpsql.Interval{{nil, {Lo: -110, Hi: -90}}, {nil, {Lo: 40, Hi: 60}}}})
	// −100 in [−110, −90] on an axis to 110: its magnitude in the negative
	// glyph to 90 (33 cells), shaded to 100 (36), a whisker on to 110 (40).
	if want := "a  " + strings.Repeat("░", 33) + strings.Repeat("▒", 3) + strings.Repeat("─", 3) + "┤"; !strings.Contains(neg, want) || strings.Contains(neg, "a  █") || !strings.Contains(neg, "(negative)") {
		t.Errorf("a negative value:\n%s\nwant a line with %s", neg, want)
	}
	// 50 in [30, 70] on an axis to 70: solid to 30 (17 cells), shaded to
	// 50 (28 cells and 5/8), a whisker on to 70 (40 cells).
	w := draw(&dpsql.Result{Columns: []string{"g", "s"}, Rows: [][]any{{"a", 50.0}},
		Intervals: [][]*dpsql.Interval{{nil, {Lo: 30, Hi: 70}}}})
	if want := "a  " + strings.Repeat("█", 17) + strings.Repeat("▒", 12) + strings.Repeat("─", 10) + "┤"; !strings.Contains(w, want) {
		t.Errorf("whiskers:\n%s\nwant a line with %s", w, want)
	}
}
