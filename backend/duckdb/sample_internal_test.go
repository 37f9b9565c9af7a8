//go:build cgo

package duckdb

import (
	"errors"
	"testing"

	"github.com/dpsql/dpsql/csvimport"
)

// TestSampleOrEndTakesAFinishedCheckForItsSample: a small CSV file is
// checked before the import waits, so the check's sample and its end are
// both ready at once and select picks either. The import must always take
// the sample, and the outcome now or later from done (it once took the end
// for a failure without an error, and said "imported 0 rows" having stored
// nothing). 200 tries:
// a coin per try, so the old code fails here with probability 1 − 2^-200.
func TestSampleOrEndTakesAFinishedCheckForItsSample(t *testing.T) {
	cols := []csvimport.Column{{Name: "amount"}}
	for i := 0; i < 200; i++ {
		sampled := make(chan []csvimport.Column, 1)
		done := make(chan checkOutcome, 1)
		sampled <- cols
		done <- checkOutcome{c: &csvimport.Checked{Columns: cols, Rows: 3}}
		first, end, err := sampleOrEnd(sampled, done)
		if err != nil || len(first) != 1 || first[0].Name != "amount" || (end == nil && len(done) != 1) || (end != nil && end.c.Rows != 3) {
			t.Fatalf("try %d: sample %v, end %+v, err %v, %d outcome(s) left", i, first, end, err, len(done))
		}
	}
	// A check that failed before its sample: its error.
	sampled, done := make(chan []csvimport.Column, 1), make(chan checkOutcome, 1)
	bad := errors.New("line 3: 1 field, want 2")
	done <- checkOutcome{err: bad}
	if _, _, err := sampleOrEnd(sampled, done); !errors.Is(err, bad) {
		t.Errorf("a failed check gave %v", err)
	}
	// A check that ended well without a sample (no rows): its columns.
	sampled, done = make(chan []csvimport.Column, 1), make(chan checkOutcome, 1)
	done <- checkOutcome{c: &csvimport.Checked{Columns: cols}}
	if first, end, err := sampleOrEnd(sampled, done); err != nil || len(first) != 1 || end == nil {
		t.Errorf("a check without a sample: %v, %+v, %v", first, end, err)
	}
}
