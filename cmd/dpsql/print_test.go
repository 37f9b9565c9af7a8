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
