package dpsql_test

import (
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
)

// TestDroppedShareIsExact: what contribution bounding dropped, under zero
// noise, is the definition's exact count on every evaluator (the engine
// suite runs this test on DuckDB's and PostgreSQL's compiled statements
// too). With l0 = 2 and l∞ = 2: unit 1 has rows in a (4), b and c; unit
// 2 one in a; unit 3 three in b; unit 4 one in a and one in b; a row
// without a unit belongs to nobody. Per unit the share is
// 1 − min(g, l0)·Σ min(rows, l∞) / (g·rows), on the grid of 2^-20.
func TestDroppedShareIsExact(t *testing.T) { testDroppedShareIsExact(t, parallel(t)) }

func testDroppedShareIsExact(t *testing.T, h *harness) {
	path := h.hardDB(t, `CREATE TABLE d (uid INTEGER, g TEXT, v INTEGER);
		INSERT INTO d VALUES (1, 'a', 1), (1, 'a', 2), (1, 'a', 3), (1, 'a', 4), (1, 'b', 5), (1, 'c', 6),
			(2, 'a', 1), (3, 'b', 1), (3, 'b', 2), (3, 'b', 3), (4, 'a', 1), (4, 'b', 1), (NULL, 'a', 9);`,
		`CREATE PRIVACY POLICY ON d OPTIONS (privacy_unit_column = uid, max_groups_contributed = 2, max_rows_contributed = 2);
		ALTER PRIVACY POLICY ON d SET DOMAIN g ('a', 'b', 'c');
		ALTER PRIVACY POLICY ON d SET BOUNDS v (0, 10);
		SET BUDGET epsilon = 1e6`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1}) // zero noise
	grid := func(num, den int64) float64 { return float64((num<<20)/den) / (1 << 20) }
	for _, c := range []struct {
		sql             string
		units, affected float64
		share           float64
		unitsPct        string
	}{
		// unit 1: 1 − 2·4/(3·6) = 10/18; unit 3: 1 − 1·2/(1·3) = 1/3.
		{`SELECT g, COUNT(*), SUM(v) FROM d GROUP BY g`, 4, 2, grid(10, 18) + grid(1, 3), "50%"},
		// The same, beside per-unit sums (compiled: counted in the l0
		// choice's window, each unit's part on its first group's row).
		{`SELECT g, SUM(v, contribution_bounds_per_group => (0, 20)) FROM d GROUP BY g`, 4, 2, grid(10, 18) + grid(1, 3), "50%"},
		// One group: unit 1 keeps 2 of 6, unit 3 2 of 3, unit 4 both.
		{`SELECT COUNT(*) FROM d`, 4, 2, grid(4, 6) + grid(1, 3), "50%"},
		// Without c: unit 1 has a (4) and b: 1 − 2·3/(2·5).
		{`SELECT g, AVG(v) FROM d WHERE g <> 'c' GROUP BY g`, 4, 2, grid(2, 5) + grid(1, 3), "50%"},
		// Only unit 2 and 4's a rows, unit 1's a rows (4 > l∞).
		{`SELECT COUNT(DISTINCT uid) FROM d WHERE g = 'a'`, 3, 1, grid(2, 4), "33.3%"},
	} {
		res := query(t, e, c.sql)
		d := res.Dropped
		if d == nil {
			t.Fatalf("%s: no estimate of what bounding dropped", c.sql)
		}
		if d.Units != c.units || d.Affected != c.affected || math.Abs(d.Share-c.share) > 1e-12 {
			t.Errorf("%s: dropped %g units of %g, share %.12g; want %g of %g, %.12g", c.sql, d.Affected, d.Units, d.Share, c.affected, c.units, c.share)
		}
		note := strings.Join(res.Notes, "\n")
		if !strings.Contains(note, "dropped rows of an estimated "+c.unitsPct+" of the units") || !strings.Contains(note, "warning: contribution bounding") {
			t.Errorf("%s: notes %q", c.sql, note)
		}
	}
	// A unit that loses no row: nothing dropped, and no warning.
	if res := query(t, e, `SELECT COUNT(*) FROM d WHERE uid = 2`); res.Dropped == nil || res.Dropped.Affected != 0 || res.Dropped.Units != 1 {
		t.Errorf("one unit without drops: %+v", res.Dropped)
	} else if note := strings.Join(res.Notes, "\n"); strings.Contains(note, "warning: contribution") || !strings.Contains(note, "an estimated 0% of the units") {
		t.Errorf("one unit without drops: notes %q", note)
	}
}

// TestDroppedShareOfChosenGroups: a query whose groups are chosen by
// comparison (max_groups_above, or ORDER BY ... LIMIT) says what bounding
// dropped too, counted exactly under zero noise on every evaluator. A
// threshold query's bounding keeps every group of a unit (l0 = the 3
// candidates of the domain) and at most l∞ = 2 rows in each: unit 1 keeps
// 2 + 1 + 1 of its 6 rows, 1 − 3·4/(3·6) = 6/18; unit 3 keeps 2 of 3,
// 1/3; units 2 and 4 keep all. A top-k read off the noisy histogram
// (one unit changes few groups) bounds as the plain query does, l0 = 2:
// unit 1's share is 1 − 2·4/(3·6) = 10/18.
func TestDroppedShareOfChosenGroups(t *testing.T) { testDroppedShareOfChosenGroups(t, parallel(t)) }

func testDroppedShareOfChosenGroups(t *testing.T, h *harness) {
	path := h.hardDB(t, `CREATE TABLE d (uid INTEGER, g TEXT, v INTEGER);
		INSERT INTO d VALUES (1, 'a', 1), (1, 'a', 2), (1, 'a', 3), (1, 'a', 4), (1, 'b', 5), (1, 'c', 6),
			(2, 'a', 1), (3, 'b', 1), (3, 'b', 2), (3, 'b', 3), (4, 'a', 1), (4, 'b', 1);`,
		`CREATE PRIVACY POLICY ON d OPTIONS (privacy_unit_column = uid, max_groups_contributed = 2, max_rows_contributed = 2);
		ALTER PRIVACY POLICY ON d SET DOMAIN g ('a', 'b', 'c');
		SET BUDGET epsilon = 1e6`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1}) // zero noise
	grid := func(num, den int64) float64 { return float64((num<<20)/den) / (1 << 20) }
	for _, c := range []struct {
		sql   string
		share float64
	}{
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_above = 1) g, COUNT(*) FROM d GROUP BY g HAVING COUNT(*) > 1`, grid(6, 18) + grid(1, 3)},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_above = 2) g FROM d GROUP BY g HAVING COUNT(*) > 1`, grid(6, 18) + grid(1, 3)},
		{`SELECT g, COUNT(*) AS n FROM d GROUP BY g ORDER BY n DESC LIMIT 1`, grid(10, 18) + grid(1, 3)},
	} {
		res := query(t, e, c.sql)
		d := res.Dropped
		if d == nil {
			t.Errorf("%s: no estimate of what bounding dropped", c.sql)
			continue
		}
		if d.Units != 4 || d.Affected != 2 || math.Abs(d.Share-c.share) > 1e-12 {
			t.Errorf("%s: dropped %g units of %g, share %.12g; want 2 of 4, %.12g", c.sql, d.Affected, d.Units, d.Share, c.share)
		}
		if note := strings.Join(res.Notes, "\n"); !strings.Contains(note, "dropped rows of an estimated 50% of the units") {
			t.Errorf("%s: notes %q", c.sql, note)
		}
	}
}
