package totality_test

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
)

// triples is the totality matrix over a column: each aggregate with each
// filter (%s stands for the column; %% for a percent sign), ungrouped and
// grouped by g.
type triples struct {
	aggs, filters []string
	// filterColumn is the column filter fi reads instead of the measured
	// one (nil: the measured one).
	filterColumn func(fi int, c string) string
	// raised tells a compiled outcome in which the engine raised (nil:
	// none is told apart from a different answer).
	raised func(outcome string) bool
}

// compare runs half of column c's (aggregate, filter) pairs on e — by
// the parity of ci + their indices, so that every pair of two of column,
// aggregate and filter still runs — compiled and through the reference
// evaluator (k.ReferenceOnly), and fails t where the outcomes differ.
func (m triples) compare(t *testing.T, e *dpsql.Engine, k *knobs.Knobs, c string, ci int) {
	failures := 0
	for ai, a := range m.aggs {
		for fi, f := range m.filters {
			if (ci+ai+fi)%2 != 0 {
				continue
			}
			agg := strings.ReplaceAll(a, "%s", c)
			fc := c
			if m.filterColumn != nil {
				fc = m.filterColumn(fi, c)
			}
			where := strings.ReplaceAll(strings.ReplaceAll(f, "%s", fc), "%%", "%")
			for _, q := range []string{"SELECT " + agg + " FROM a" + where, "SELECT g, " + agg + " FROM a" + where + " GROUP BY g"} {
				q = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) " + strings.TrimPrefix(q, "SELECT ")
				k.ReferenceOnly = true
				want := enginetest.Outcome(e, q)
				k.ReferenceOnly = false
				got := enginetest.Outcome(e, q)
				if m.raised != nil && m.raised(got) {
					t.Errorf("%s: the engine raised: %s", q, got)
					failures++
				} else if got != want {
					t.Errorf("%s:\ncompiled:  %s\nreference: %s", q, got, want)
					failures++
				}
				if failures > 20 {
					t.Fatal("too many failures")
				}
			}
		}
	}
}
