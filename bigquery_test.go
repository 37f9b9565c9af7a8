package dpsql_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/planner"
)

// bqDB is a small table with several rows per unit, for hand-computed
// answers under BigQuery's contribution-bound semantics:
//
//	uid 1: (a, 2) (a, 3) (a, 4) (b, 5) (a, 4)
//	uid 2: (a, 1)
//	uid 3: (b, 10) (b, 10) (a, NULL)
func (h *harness) bqDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bq.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE v (uid INTEGER, g TEXT, x INTEGER);
		INSERT INTO v VALUES (1, 'a', 2), (1, 'a', 3), (1, 'a', 4), (1, 'b', 5), (1, 'a', 4), (2, 'a', 1), (3, 'b', 10), (3, 'b', 10), (3, 'a', NULL)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, h.open(t, path, dpsql.Options{Owner: true}), `CREATE PRIVACY POLICY ON v OPTIONS (privacy_unit_column = uid, max_groups_contributed = 2, max_rows_contributed = 5);
		ALTER PRIVACY POLICY ON v SET DOMAIN g ('a', 'b');
		SET BUDGET epsilon = 1000`)
	return path
}

// TestBigQueryContributionBounds: contribution_bounds_per_group clamps
// each unit's combined value in a group (its sum, its mean for AVG, its
// count), as BigQuery does; contribution_bounds_per_row clamps rows.
// Answers computed by hand, under zero noise (issue 10).
func TestBigQueryContributionBounds(t *testing.T) { testBigQueryContributionBounds(t, parallel(t)) }

func testBigQueryContributionBounds(t *testing.T, h *harness) {
	e := h.open(t, h.bqDB(t), dpsql.Options{Epsilon: 1})
	for _, tc := range []struct {
		sql  string
		want string
	}{
		// Unit sums 18, 1, 20 → clamped to [2, 3]: 3 + 2 + 3.
		{`SELECT SUM(x, contribution_bounds_per_group => (2, 3)) FROM v`, "8"},
		// Rows clamped: 2+3+3+3+3 + 2 + 3+3.
		{`SELECT SUM(x, contribution_bounds_per_row => (2, 3)) FROM v`, "22"},
		// Unit means 3.6, 1, 10 → clamped to [0, 5]: (3.6 + 1 + 5) / 3,
		// where 3.6 is the mean on its grid of 2^-50 (measure.UnitGrid:
		// F = 29, and MeanBits), truncated: 3.6 − 0.4·2^-50.
		{`SELECT AVG(x, contribution_bounds_per_group => (0, 5)) FROM v`, "3.1999999999999997"},
		// Unit counts 5, 1, 3 → clamped to [0, 2]; non-NULL values 5, 1, 2 → [0, 1].
		{`SELECT COUNT(*, contribution_bounds_per_group => (0, 2)), COUNT(x, contribution_bounds_per_group => (0, 1)) FROM v`, "5:3"},
		// Per group: a: unit sums 13 (uid 1), 1 (uid 2), uid 3 has only NULL → 3 + 1;
		// b: 5, 20 → 3 + 3. Means in a: 3.25, 1 (uid 3 has no value); in b:
		// 5 → 4, 10 → 4. Rows per unit in a: 4, 1, 1; in b: 1, 2.
		{`SELECT g, SUM(x, contribution_bounds_per_group => (0, 3)), AVG(x, contribution_bounds_per_group => (0, 4)), COUNT(*, contribution_bounds_per_group => (0, 10)) FROM v GROUP BY g`,
			"a:4:2.125:6 b:6:4:3"},
	} {
		if got := rowsOf(query(t, e, tc.sql)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
	ctx := context.Background()
	for _, tc := range []struct{ sql, msg string }{
		{`SELECT COUNT(*, contribution_bounds_per_row => (0, 1)) FROM v`, "per-row bounds"},
		{`SELECT VAR_POP(x, contribution_bounds_per_group => (0, 1)) FROM v`, "contribution_bounds_per_row"},
		{`SELECT SUM(x, contribution_bounds_per_group => (0, 1), contribution_bounds_per_row => (0, 1)) FROM v`, "one of"},
		{`SELECT COUNT(*, contribution_bounds_per_group => (-1, 1)) FROM v`, "0 ≤ lo"},
		{`SELECT COUNT(DISTINCT uid, contribution_bounds_per_group => (0, 1)) FROM v`, "no bounds"},
	} {
		if _, err := e.Query(ctx, tc.sql); !errors.Is(err, planner.ErrInvalidOption) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v", tc.sql, err)
		}
	}
}

// TestPerUnitBoundsSensitivity: the EXPLAIN of a per-group bound says the
// sensitivity is per unit (min(l0, groups) · max|bound|), not per row
// (min(l0, groups) · l∞ · …).
func TestPerUnitBoundsSensitivity(t *testing.T) { testPerUnitBoundsSensitivity(t, parallel(t)) }

func testPerUnitBoundsSensitivity(t *testing.T, h *harness) {
	e := h.open(t, h.bqDB(t), dpsql.Options{Epsilon: 1})
	for _, tc := range []struct {
		sql              string
		perUnit, perRows string
	}{
		// Two groups (g's domain), l0 = 2, l∞ = 5: per unit 2·3 = 6, per row 2·5·3 = 30.
		{`EXPLAIN SELECT g, SUM(x, contribution_bounds_per_group => (0, 3)), SUM(x, contribution_bounds_per_row => (0, 3)) FROM v GROUP BY g`, "sensitivity 6 (", "sensitivity 30 ("},
		// One group: a unit changes one group, so 1·3 = 3 and 1·5·3 = 15.
		{`EXPLAIN SELECT SUM(x, contribution_bounds_per_group => (0, 3)), SUM(x, contribution_bounds_per_row => (0, 3)) FROM v`, "sensitivity 3 (", "sensitivity 15 ("},
	} {
		r := query(t, e, tc.sql)
		var text string
		for _, row := range r.Rows {
			text += row[0].(string) + " " + row[1].(string) + "\n"
		}
		if !strings.Contains(text, tc.perUnit) || !strings.Contains(text, tc.perRows) {
			t.Errorf("EXPLAIN:\n%s", text)
		}
	}
}

// TestCountDistinctValues: COUNT(DISTINCT x) on a column that is not the
// privacy unit counts the distinct non-NULL values among the rows kept
// after contribution bounding, with sensitivity l0·l∞ (issue 10).
func TestCountDistinctValues(t *testing.T) { testCountDistinctValues(t, parallel(t)) }

func testCountDistinctValues(t *testing.T, h *harness) {
	e := h.open(t, h.bqDB(t), dpsql.Options{Epsilon: 1})
	for _, tc := range []struct{ sql, want string }{
		// x: 2, 3, 4, 5, 4, 1, 10, 10, NULL (l0 = 2, l∞ = 5 keep every row).
		{`SELECT COUNT(DISTINCT x), COUNT(DISTINCT x * 1.0), COUNT(DISTINCT CAST(x AS TEXT)), COUNT(DISTINCT uid) FROM v`, "6:6:6:3"},
		{`SELECT g, COUNT(DISTINCT x) FROM v GROUP BY g`, "a:4 b:2"},
	} {
		if got := rowsOf(query(t, e, tc.sql)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
	// min(l0, groups)·l∞: 2·5 = 10 over g's two groups, 1·5 = 5 without GROUP BY.
	for sql, want := range map[string]string{
		`EXPLAIN SELECT g, COUNT(DISTINCT x) FROM v GROUP BY g`: "COUNT(DISTINCT \"x\"): Laplace, sensitivity 10 (",
		`EXPLAIN SELECT COUNT(DISTINCT x) FROM v`:               "COUNT(DISTINCT \"x\"): Laplace, sensitivity 5 (",
	} {
		r := query(t, e, sql)
		found := false
		for _, row := range r.Rows {
			if s, _ := row[1].(string); strings.HasPrefix(s, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s does not give %q: %v", sql, want, r.Rows)
		}
	}
	// Each row its own unit: sensitivity 1, exact on t.
	e2 := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	if got := rowsOf(query(t, e2, `SELECT g, COUNT(DISTINCT x) FROM t GROUP BY g`)); got != "a:25 b:25 c:25 d:0" {
		t.Errorf("grouped distinct on t: %s", got)
	}
}

// TestPerUnitBoundsNeighboursEmpirically: with real noise, a per-unit
// bounded SUM on D and on D′ (D without a unit that has 30 rows of 100)
// has output distributions within e^ε of each other in every well-filled
// bin; with per-row clipping of those 30 rows the unit would move the sum
// by 150, with its per-unit sum clipped it moves it by 5.
func TestPerUnitBoundsNeighboursEmpirically(t *testing.T) {
	testPerUnitBoundsNeighboursEmpirically(t, parallel(t))
}

func testPerUnitBoundsNeighboursEmpirically(t *testing.T, h *harness) {
	base := `CREATE TABLE v (uid INTEGER, x REAL); INSERT INTO v VALUES (1, 1), (2, 2), (3, 3);`
	var many strings.Builder
	for i := 0; i < 30; i++ {
		many.WriteString(" INSERT INTO v VALUES (9, 100);")
	}
	policy := `CREATE PRIVACY POLICY ON v OPTIONS (privacy_unit_column = uid, max_rows_contributed = 30)`
	d := h.hardDB(t, base+many.String(), policy)
	d2 := h.hardDB(t, base, policy)
	h.empiricalNeighbours(t, d, d2, `SELECT SUM(x, contribution_bounds_per_group => (0, 5)) FROM v`, 1, 2)
}

// TestReportFormatJSON: report_format => 'JSON' releases BigQuery's JSON
// report — the value and its 95% interval (a count's in whole numbers,
// AVG's from its count and sum) — which an outer query reads with
// JSON_EXTRACT. Exact values under zero noise (issue 10).
func TestReportFormatJSON(t *testing.T) {
	h := parallel(t)
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	plain := query(t, e, `SELECT COUNT(*) AS r, AVG(x) AS a FROM t`) // the same cells and ε shares
	half := plain.ErrorBounds["r"]
	if half <= 0 {
		t.Fatalf("no error bound for COUNT(*): %v", plain.ErrorBounds)
	}
	r := query(t, e, `SELECT COUNT(*, report_format => 'JSON') AS r, AVG(x, report_format => 'json') AS a FROM t`)
	want := fmt.Sprintf(`{"result":{"noise_confidence_interval":{"confidence_level":0.95,"lower_bound":%s,"upper_bound":%s},"value":1000}}`,
		strconv.FormatFloat(math.Ceil(1000-half), 'g', -1, 64), strconv.FormatFloat(math.Floor(1000+half), 'g', -1, 64))
	if r.Rows[0][0] != want {
		t.Errorf("COUNT report\n got %v\nwant %s", r.Rows[0][0], want)
	}
	var avg struct {
		Result struct {
			Interval struct {
				Level float64 `json:"confidence_level"`
				Lower float64 `json:"lower_bound"`
				Upper float64 `json:"upper_bound"`
			} `json:"noise_confidence_interval"`
			Value float64 `json:"value"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.Rows[0][1].(string)), &avg); err != nil || avg.Result.Value != 49.5 || avg.Result.Interval.Level != 0.95 ||
		!(avg.Result.Interval.Lower < 49.5 && 49.5 < avg.Result.Interval.Upper) {
		t.Errorf("AVG report: %v (%v)", r.Rows[0][1], err)
	}
	outer := query(t, e, `SELECT JSON_EXTRACT(r, '$.result.value') AS n, JSON_VALUE(r, '$.result.noise_confidence_interval.upper_bound') - JSON_EXTRACT(r, '$.result.value') AS half
		FROM (SELECT COUNT(*, report_format => 'JSON') AS r FROM t) AS q`)
	if got := num(outer.Rows[0][0]); got != 1000 {
		t.Errorf("JSON_EXTRACT value: %v", outer.Rows[0][0])
	}
	alone := math.Floor(1000+query(t, e, `SELECT COUNT(*) AS r FROM t`).ErrorBounds["r"]) - 1000
	if got := num(outer.Rows[0][1]); math.Abs(got-alone) > 1e-9 {
		t.Errorf("JSON_EXTRACT half-width %v, want %v", got, alone)
	}
	// ZetaSQL's compliance tests write "JSON" (a string there).
	if dq := query(t, e, `SELECT COUNT(*, report_format => "JSON") AS r, AVG(x, report_format => 'json') AS a FROM t`); dq.Rows[0][0] != want {
		t.Errorf(`report_format => "JSON": %v`, dq.Rows[0][0])
	}
	for _, bad := range []struct{ sql, msg string }{
		{`SELECT COUNT(*, report_format => 'PROTO') FROM t`, "report_format takes 'JSON'"},
		{`SELECT COUNT(*, report_format => "PROTO") FROM t`, "report_format takes 'JSON'"},
		{`SELECT COUNT(*, report_format => 'JSON') + 1 FROM t`, "must be a select item of its own"},
		{`SELECT COUNT(*) FROM t HAVING SUM(x, report_format => 'JSON') > '0'`, "must be a select item of its own"},
		{`SELECT MEDIAN(x, report_format => 'JSON') FROM t`, "report_format is available on"},
		{`SELECT COUNT(*) FROM t WHERE JSON_EXTRACT(g, g) = 1`, "takes a constant path"},
		{`SELECT JSON_EXTRACT(label, '$..x') FROM lookup`, "takes a constant path"},
	} {
		before := spent(t, e)
		if _, err := e.Query(t.Context(), bad.sql); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: %v, want %q", bad.sql, err, bad.msg)
		}
		if spent(t, e) != before {
			t.Errorf("%s: charged though refused", bad.sql)
		}
	}
	// On private text that is not JSON, JSON_EXTRACT is NULL, never an error.
	if got := rowsOf(query(t, e, `SELECT COUNT(*) FROM t WHERE JSON_EXTRACT(g, '$.a') IS NULL`)); got != "1000" {
		t.Errorf("JSON_EXTRACT over non-JSON text: %s", got)
	}
}
