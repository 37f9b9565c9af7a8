package dpsql_test

import (
	"testing"

	"github.com/dpsql/dpsql"
)

// TestValueText: a noisy value shows with its 95% interval, to the
// digits the half-width justifies.
func TestValueText(t *testing.T) {
	parallel(t)
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
		if got := dpsql.ValueText(tc.v, &tc.iv); got != tc.want {
			t.Errorf("%v %+v: %q, want %q", tc.v, tc.iv, got, tc.want)
		}
	}
}
