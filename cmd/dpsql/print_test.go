package main

import (
	"bytes"
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

// TestIntervalText: a noisy value shows with its 95% interval, to the
// digits the half-width justifies.
func TestIntervalText(t *testing.T) {
	for _, tc := range []struct {
		v    any
		iv   dpsql.Interval
		want string
	}{
		{38.6214, dpsql.Interval{Lo: 38.2, Hi: 39.04}, "38.6 ± 0.4"},
		{39.7712, dpsql.Interval{Lo: 39.70, Hi: 39.84}, "39.77 ± 0.07"},
		{int64(7927), dpsql.Interval{Lo: 7917, Hi: 7937}, "7927 ± 10"},
		{int64(3076), dpsql.Interval{Lo: 3066, Hi: 3087}, "3076 ± 11"},
		{int64(20), dpsql.Interval{Lo: 0, Hi: 80}, "20 [0, 80]"},
		{280657918.0, dpsql.Interval{Lo: 278495288, Hi: 282820548}, "280700000 ± 2200000"},
		{123.7, dpsql.Interval{Lo: 0, Hi: 125, Wide: true}, "120 [0, 130] (few rows)"},
		{"x", dpsql.Interval{Lo: 0, Hi: 1}, "x"},
	} {
		if got := intervalText(tc.v, &tc.iv); got != tc.want {
			t.Errorf("%v %+v: %q, want %q", tc.v, tc.iv, got, tc.want)
		}
	}
}
