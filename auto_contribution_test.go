package dpsql_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/planner"
)

// TestAutoContributionBounds: with max_groups_contributed and
// max_rows_contributed = AUTO, the bounds are chosen per query from the
// units' profile. Under zero noise the profile is exact: 1,000 units each
// with 2 rows in each of 3 groups keep everything at (3, 2) for noise of
// 3 groups·3·2/ε, where any smaller pair drops a third or half of the
// rows — so (3, 2) is chosen and the counts are exact. The engine suite
// runs it on DuckDB's and PostgreSQL's compiled profile too.
func TestAutoContributionBounds(t *testing.T) { testAutoContributionBounds(t, parallel(t)) }

func testAutoContributionBounds(t *testing.T, h *harness) {
	path := h.hardDB(t, `CREATE TABLE v (uid INTEGER, g TEXT, h TEXT);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
		INSERT INTO v SELECT i, g, g FROM n, (SELECT 'a' AS g UNION ALL SELECT 'b' UNION ALL SELECT 'c'), (SELECT 0 UNION ALL SELECT 1);`,
		`CREATE PRIVACY POLICY ON v OPTIONS (privacy_unit_column = uid, max_groups_contributed = AUTO, max_rows_contributed = AUTO);
		ALTER PRIVACY POLICY ON v SET DOMAIN g ('a', 'b', 'c');
		SET BUDGET epsilon = 1e6`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1}) // zero noise
	res := query(t, e, `SELECT g, COUNT(*) FROM v GROUP BY g`)
	if fmt.Sprint(res.Rows) != "[[a 2000] [b 2000] [c 2000]]" {
		t.Errorf("rows %v, want 2,000 per group (nothing dropped)", res.Rows)
	}
	notes := strings.Join(res.Notes, "\n")
	if !strings.Contains(notes, "chosen privately for this query (AUTO): at most 3 group(s) and 2 row(s) per group for each uid") {
		t.Errorf("notes %q", notes)
	}
	if d := res.Dropped; d == nil || d.Affected != 0 || d.Units != 1000 || d.MaxGroups != 3 || d.MaxRows != 2 {
		t.Errorf("dropped %+v, want none of 1,000 units under (3, 2)", d)
	}
	// A query's OPTIONS may leave one bound to the choice: l∞ = 1 is
	// fixed, so l0 = 3 keeps 1 row of each group.
	res = query(t, e, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_rows_contributed = 1) COUNT(*) FROM v`)
	if fmt.Sprint(res.Rows) != "[[1000]]" {
		t.Errorf("rows %v, want 1,000 (one group, one row per unit)", res.Rows)
	}
	// Under partition selection (groups not enumerated) too.
	res = query(t, e, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) h, COUNT(*) FROM v GROUP BY h`)
	if got := enginetest.RowSet(res.Rows); fmt.Sprint(got) != fmt.Sprint(enginetest.RowSet([][]any{{"a", int64(2000)}, {"b", int64(2000)}, {"c", int64(2000)}})) {
		t.Errorf("partition selection: rows %v, want 2,000 per group", res.Rows)
	}
	// The policy says AUTO; EXPLAIN says how the choice is made.
	res = query(t, e, `EXPLAIN SELECT g, COUNT(*) FROM v GROUP BY g`)
	explained := fmt.Sprint(res.Rows)
	if !strings.Contains(explained, "max_groups_contributed and max_rows_contributed = AUTO: chosen privately when the query runs") {
		t.Errorf("EXPLAIN %s", explained)
	}
	res = query(t, e, `SHOW POLICY v`)
	if d := fmt.Sprint(res.Rows); !strings.Contains(d, "[max_groups_contributed  AUTO]") || !strings.Contains(d, "[max_rows_contributed  AUTO]") {
		t.Errorf("SHOW POLICY %s", d)
	}
	// What the choice does not cover is refused before anything is spent.
	for stmt, want := range map[string]string{
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (target_error = 10) COUNT(*) FROM v`: "need an epsilon, not a target_error",
	} {
		_, err := e.Query(context.Background(), stmt)
		var pe *dpsql.Error
		if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &pe) || pe.Kind != planner.ErrUnsupported {
			t.Errorf("%s: %v, want a refusal saying %q", stmt, err, want)
		}
	}
}
