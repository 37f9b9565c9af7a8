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
		// An average clipped to [0, 125] never shows past 125 (issue 51's
		// W3: 125 [0, 125] used to show as 130 [0, 130]).
		{125.0, dpsql.Interval{Lo: 0, Hi: 125, Wide: true, Clipped: true, ClipLo: 0, ClipHi: 125}, "125 [0, 125] (few rows)"},
		{123.7, dpsql.Interval{Lo: 0, Hi: 125, Wide: true, Clipped: true, ClipLo: 0, ClipHi: 125}, "120 [0, 125] (few rows)"},
		{-0.4, dpsql.Interval{Lo: -0.5, Hi: 3.4, Clipped: true, ClipLo: -0.5, ClipHi: 3.4}, "0 [-0.5, 3]"},
		{99.0, dpsql.Interval{Lo: 95, Hi: 100, Clipped: true, ClipLo: 0, ClipHi: 100}, "99 [95, 100]"},
		{98.8, dpsql.Interval{Lo: 4, Hi: 99.9, Clipped: true, ClipLo: 0, ClipHi: 99.9}, "99.9 [0, 99.9]"},
		// A sum's interval is not within its values' bounds: rounded freely.
		{1234.0, dpsql.Interval{Lo: 1200, Hi: 1268, Clipped: true, ClipLo: 0, ClipHi: 10}, "1230 ± 30"},
	} {
		if got := dpsql.ValueText(tc.v, &tc.iv); got != tc.want {
			t.Errorf("%v %+v: %q, want %q", tc.v, tc.iv, got, tc.want)
		}
	}
}
