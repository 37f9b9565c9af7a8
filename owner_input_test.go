package dpsql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
)

// TestOwnerBoundsThatWouldBreakLaterAreRefused: bounds no aggregate could
// noise (a span whose square overflows) were accepted and then failed
// every analyst's SUM (issue 51); they are refused when set, with the
// reason, and change nothing. Bounds on a TEXT column (read as numbers:
// a date's year, else mostly 0) are set with a warning.
func TestOwnerBoundsThatWouldBreakLaterAreRefused(t *testing.T) {
	h := parallel(t)
	path := h.newDB(t)
	owner := h.open(t, path, dpsql.Options{Owner: true})
	for _, tc := range []struct{ stmt, want string }{
		{`ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 1e308)`, "too wide"},
		{`ALTER PRIVACY POLICY ON t SET BOUNDS x (-1e200, 1e200)`, "too wide"},
	} {
		if _, err := owner.Query(context.Background(), tc.stmt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.stmt, err, tc.want)
		}
	}
	// Nothing changed: x keeps its bounds (0, 100), g has none.
	r := query(t, owner, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) SUM(x) FROM t`)
	if !strings.Contains(strings.Join(r.Notes, " "), "[0, 100]") {
		t.Errorf("x's bounds changed: %v", r.Notes)
	}
	mustRun(t, owner, `ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 1e150)`) // wide, but every aggregate can be noised
	if r := mustRun(t, owner, `ALTER PRIVACY POLICY ON t SET BOUNDS g (0, 10)`); !strings.Contains(r[0].Message, "warning: column g is TEXT") {
		t.Errorf("bounds on a TEXT column: %q", r[0].Message)
	}
}
