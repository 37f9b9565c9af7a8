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

// totalityAggs are the aggregates the totality tests run over every
// column (%s), with declared bounds at the edges of what the fixed-point
// sums allow, under CASE, and with per-group bounds.
var totalityAggs = []string{"COUNT(*)", "COUNT(%s)", "SUM(%s)", "AVG(%s)", "VARIANCE(%s)", "STDDEV(%s)", "COUNT(DISTINCT %s)",
	"PERCENTILE_CONT(%s, 0.5)", "SUM(%s, contribution_bounds_per_row => (-9007199254740992, 9007199254740992))",
	"SUM(%s, contribution_bounds_per_row => (-1e300, 1e300))", "AVG(%s, contribution_bounds_per_row => (-1e-300, 1e-300))",
	"SUM(%s, contribution_bounds_per_row => (0.1, 0.7))", "VARIANCE(%s, contribution_bounds_per_row => (-274877906944, 274877906944))",
	"VARIANCE(%s, contribution_bounds_per_row => (-0.5, 1e6))",
	"SUM(CASE WHEN %s > 0 THEN %s WHEN %s IS NULL THEN 2.5 ELSE 1 END, contribution_bounds_per_row => (-5, 5))",
	"COUNT(CASE WHEN %s < 2.5 THEN 1 END)",
	"SUM(%s, contribution_bounds_per_group => (-5, 5))", "COUNT(%s, contribution_bounds_per_group => (0, 1))",
	"SUM(%s, contribution_bounds_per_group => (-0.75, 2.5)), AVG(%s, contribution_bounds_per_group => (-2.5, 1e6))"}

// totalityFilters are the filters they run with (%s: a column).
var totalityFilters = []string{"", " WHERE %s > 0", " WHERE %s = 5", " WHERE %s IN (1, 5)", " WHERE %s IS NULL", " WHERE NOT (%s < 2.5)",
	" WHERE %s = 'abc'", " WHERE %s BETWEEN -1 AND 1", " WHERE %s > 9223372036854775807", " WHERE %s IN (-300, 70000, -9223372036854775808)"}
