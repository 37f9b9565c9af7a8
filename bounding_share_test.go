package dpsql_test

import (
	"fmt"
	"testing"

	"github.com/dpsql/dpsql"
)

// TestBoundingKeepsGroupsAndRowsEvenly: contribution bounding keeps each
// of a unit's groups, and each of its rows in a group, with the same
// chance, whatever the query key. 4,000 units each have one row in group
// x and one in y (at most one group kept), and two rows in group z worth
// 0 and 1 (at most one row kept): the count of x and the sum of z are
// Binomial(4000, ½) under uniform bounding, 2,000 ± 32; each of 8 query
// keys must keep a share within 0.5 ± 0.05 (6 standard deviations: a
// false failure about once in 10⁹ runs). A hash that mixes the unit and
// the group linearly kept 3% to 84% on PostgreSQL.
func TestBoundingKeepsGroupsAndRowsEvenly(t *testing.T) {
	testBoundingKeepsGroupsAndRowsEvenly(t, parallel(t))
}

func testBoundingKeepsGroupsAndRowsEvenly(t *testing.T, h *harness) {
	const units = 4000
	path := h.hardDB(t, fmt.Sprintf(`CREATE TABLE two (uid INTEGER, g TEXT, v INTEGER);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		INSERT INTO two SELECT i, 'x', 0 FROM n UNION ALL SELECT i, 'y', 0 FROM n;
		CREATE TABLE rows2 (uid INTEGER, v INTEGER);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		INSERT INTO rows2 SELECT i, 0 FROM n UNION ALL SELECT i, 1 FROM n;`, units, units),
		`CREATE PRIVACY POLICY ON two OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1);
		ALTER PRIVACY POLICY ON two SET DOMAIN g ('x', 'y');
		CREATE PRIVACY POLICY ON rows2 OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 1);
		ALTER PRIVACY POLICY ON rows2 SET BOUNDS v (0, 1);
		SET BUDGET epsilon = 1e6`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1}) // zero noise: the exact kept counts; a fresh query key each time
	for k := 0; k < 8; k++ {
		res := query(t, e, `SELECT g, COUNT(*) FROM two GROUP BY g`)
		if len(res.Rows) != 2 || res.Rows[0][0] != "x" {
			t.Fatalf("rows %v", res.Rows)
		}
		if x, y := num(res.Rows[0][1]), num(res.Rows[1][1]); x+y != units || x < 0.45*units || x > 0.55*units {
			t.Errorf("query key %d: kept group x for %v units and y for %v of %d (want each about half)", k, x, y, units)
		}
		res = query(t, e, `SELECT SUM(v), COUNT(*) FROM rows2`)
		if s, n := num(res.Rows[0][0]), num(res.Rows[0][1]); n != units || s < 0.45*units || s > 0.55*units {
			t.Errorf("query key %d: kept the row worth 1 for %v units of %v (want about half)", k, s, n)
		}
	}
}
