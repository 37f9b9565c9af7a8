package dpsql_test

import (
	"database/sql"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/planner"
)

// TestPeersSpellings: the spellings people bring from SmartNoise and
// BigQuery (VAR_SAMP/STDDEV_SAMP, VAR/STD, TOP n, PI(), IF/IIF) mean what
// they mean there, checked on exact answers under zero noise (issue 10).
func TestPeersSpellings(t *testing.T) { testPeersSpellings(t, parallel(t)) }

func testPeersSpellings(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	// x = i % 100 over 1,000 rows, bounds (0, 100): population variance
	// of 0..99 is (100² − 1)/12.
	pop := (100.0*100 - 1) / 12
	samp := pop * 1000 / 999
	for _, tc := range []struct {
		sql  string
		want []float64
	}{
		{`SELECT VAR_POP(x), VAR(x), VARIANCE(x), VAR_SAMP(x) FROM t`, []float64{pop, pop, pop, samp}},
		{`SELECT STDDEV_POP(x), STD(x), STDDEV(x), STDDEV_SAMP(x) FROM t`, []float64{math.Sqrt(pop), math.Sqrt(pop), math.Sqrt(pop), math.Sqrt(samp)}},
		{`SELECT COUNT(*) * PI() FROM t`, []float64{1000 * math.Pi}},
		{`SELECT COUNT(*) FROM t WHERE IF(x < 50, 1, 0) = 1`, []float64{500}},
		{`SELECT COUNT(*) FROM t WHERE RAND() >= 0 AND RAND() < 1`, []float64{1000}},
		{`SELECT SUM(IIF(x < 50, x, 0), contribution_bounds_per_group => (0, 100)) FROM t`, []float64{10 * 49 * 50 / 2}},
	} {
		r := query(t, e, tc.sql)
		for j, w := range tc.want {
			if got := num(r.Rows[0][j]); math.Abs(got-w) > 1e-6*math.Max(1, math.Abs(w)) {
				t.Errorf("%s: column %d = %v, want %v", tc.sql, j, got, w)
			}
		}
	}
	// TOP n is LIMIT n, after ORDER BY.
	if got := rowsOf(query(t, e, `SELECT TOP 2 g, COUNT(*) AS n FROM t GROUP BY g ORDER BY g DESC`)); got != "d:0 c:250" {
		t.Errorf("TOP 2: %s", got)
	}
	if _, err := e.Query(t.Context(), `SELECT TOP 2 COUNT(*) FROM t LIMIT 1`); err == nil {
		t.Error("TOP with LIMIT was accepted")
	}
	// BigQuery's STRING and VARCHAR are TEXT, compared as text: '50' to '59' lie between '5' and '6'.
	if got := rowsOf(query(t, e, `SELECT COUNT(*) FROM t WHERE CAST(x AS STRING) > '5' AND CAST(x AS VARCHAR) < '6'`)); got != "100" {
		t.Errorf("CAST AS STRING/VARCHAR: %s, want 100 (x = 50..59 as text, 10 rows each)", got)
	}
}

// TestSessionDelta: SET delta = D is the δ of the session's queries that
// give none, spent only by those with partition selection; 0 turns it
// off; bad values are refused (issue 10).
func TestSessionDelta(t *testing.T) { testSessionDelta(t, parallel(t)) }

func testSessionDelta(t *testing.T, h *harness) {
	path := h.unitsDB(t, generateVisits(200, 3), `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid)`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	ctx := t.Context()
	grouped := `SELECT ward, COUNT(*) FROM visits GROUP BY ward`
	if _, err := e.Query(ctx, grouped); !errors.Is(err, dpsql.ErrNotPrivate) {
		t.Fatalf("without delta: %v", err)
	}
	mustRun(t, e, `SET delta = 1e-6`)
	r, err := e.Query(ctx, grouped)
	if err != nil || r.Cost.Delta != 1e-6 {
		t.Fatalf("with session delta: %v %+v", err, r)
	}
	if r, err := e.Query(ctx, `SELECT COUNT(*) FROM visits`); err != nil || r.Cost.Delta != 0 {
		t.Errorf("a query without partition selection spent δ: %v %+v", err, r)
	}
	if r, err := e.Query(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-7) ward, COUNT(*) FROM visits GROUP BY ward`); err != nil || r.Cost.Delta != 1e-7 {
		t.Errorf("OPTIONS overrides the session: %v %+v", err, r)
	}
	for _, bad := range []string{`SET delta = 1.5`, `SET delta = -1e-6`, `SET delta = 'x'`, `SET delta = 1e-30`} {
		if err := e.Run(ctx, bad, func(*dpsql.Result) error { return nil }); !errors.Is(err, planner.ErrInvalidOption) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	mustRun(t, e, `SET delta = 0`)
	if _, err := e.Query(ctx, grouped); !errors.Is(err, dpsql.ErrNotPrivate) {
		t.Errorf("after SET delta = 0: %v", err)
	}
}

// TestJoinUsing: JOIN ... USING (cols) answers as the same join written
// with ON; an unqualified USING column names the merged column; the
// privacy checks on joins apply unchanged (issue 10).
func TestJoinUsing(t *testing.T) { testJoinUsing(t, parallel(t)) }

func testJoinUsing(t *testing.T, h *harness) {
	path, _ := h.joinDB(t)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE wardinfo (ward TEXT, floor INTEGER); INSERT INTO wardinfo VALUES ('A', 1), ('A', 2), ('B', 3)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, h.open(t, path, dpsql.Options{Owner: true}), `ALTER TABLE wardinfo SET PUBLIC`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	for _, pair := range [][2]string{
		{`SELECT COUNT(*) FROM visits JOIN wardinfo USING (ward)`, `SELECT COUNT(*) FROM visits v JOIN wardinfo w ON v.ward = w.ward`},
		// (Units keep at most 10 rows each, sampled: COUNT does not depend on
		// which, a SUM would.)
		{`SELECT ward, COUNT(*), COUNT(DISTINCT uid) FROM visits JOIN wardinfo USING (ward) GROUP BY ward`,
			`SELECT v.ward, COUNT(*), COUNT(DISTINCT v.uid) FROM visits v JOIN wardinfo w ON v.ward = w.ward GROUP BY v.ward`},
		{`SELECT COUNT(DISTINCT a.uid) FROM visits a JOIN visits b USING (uid)`, `SELECT COUNT(DISTINCT a.uid) FROM visits a JOIN visits b ON a.uid = b.uid`},
		{`SELECT COUNT(*) FROM visits a JOIN visits b USING (uid, ward) WHERE b.day > 3`, `SELECT COUNT(*) FROM visits a JOIN visits b ON a.uid = b.uid AND a.ward = b.ward WHERE b.day > 3`},
	} {
		if got, want := rowsOf(query(t, e, pair[0])), rowsOf(query(t, e, pair[1])); got != want || got == "" {
			t.Errorf("%s\n = %s\nwant (as %s) %s", pair[0], got, pair[1], want)
		}
	}
	for _, bad := range []struct{ sql, msg string }{
		{`SELECT COUNT(*) FROM visits a JOIN visits b USING (ward)`, "only be joined on their privacy unit columns"},
		{`SELECT COUNT(*) FROM visits JOIN wardinfo USING (nosuch)`, "USING (nosuch)"},
		{`SELECT COUNT(*) FROM visits JOIN wardinfo USING (ward, ward)`, "twice"},
		{`SELECT COUNT(*) FROM visits JOIN wardinfo USING ward`, "expected '('"},
	} {
		if _, err := e.Query(t.Context(), bad.sql); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: %v, want %q", bad.sql, err, bad.msg)
		}
	}
}

// TestMainSchemaQualifiedNames: main.t names table t (SQLite's schema
// name for the database itself); other schemas are refused by name.
// Columns take at most a table qualifier (t.x, not main.t.x).
func TestMainSchemaQualifiedNames(t *testing.T) { testMainSchemaQualifiedNames(t, parallel(t)) }

func testMainSchemaQualifiedNames(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	if got := rowsOf(query(t, e, `SELECT COUNT(*) FROM main.t WHERE t.x >= 0`)); got != "1000" {
		t.Errorf("main.t: %s", got)
	}
	if got := rowsOf(query(t, e, `SELECT COUNT(*) FROM main.t JOIN main.lookup ON t.g = lookup.code`)); got != "500" {
		t.Errorf("main.t join: %s", got)
	}
	if _, err := e.Query(t.Context(), `SELECT COUNT(*) FROM pums.t`); err == nil || !strings.Contains(err.Error(), `unknown table "pums.t"`) {
		t.Errorf("other schema: %v", err)
	}
	// A two-part name s.t names the table called "s.t" (SmartNoise's
	// PUMS.PUMS), which the owner imports under that name.
	csv := filepath.Join(t.TempDir(), "pums.csv")
	if err := os.WriteFile(csv, []byte("age,sex\n30,1\n40,0\n50,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	owner := h.open(t, e.Path(), dpsql.Options{Owner: true})
	if _, _, err := owner.ImportCSV(t.Context(), "PUMS.PUMS", csv, csvimport.Options{}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, owner, `CREATE PRIVACY POLICY ON "PUMS.PUMS"`)
	for _, q := range []string{`SELECT COUNT(*) FROM PUMS.PUMS`, `SELECT COUNT(*) FROM main.PUMS.PUMS AS p WHERE p.age > 0`, `SELECT COUNT(*) FROM "PUMS.PUMS"`} {
		if got := rowsOf(query(t, e, q)); got != "3" {
			t.Errorf("%s: %s", q, got)
		}
	}
}

// TestStarInSubqueries: SELECT * in a per-unit subquery stands for the
// table's columns, the unit column among them (so the unit is carried as
// when listed); answers equal the listed form under zero noise.
func TestStarInSubqueries(t *testing.T) { testStarInSubqueries(t, parallel(t)) }

func testStarInSubqueries(t *testing.T, h *harness) {
	path, _ := h.joinDB(t)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	for _, pair := range [][2]string{
		{`SELECT COUNT(*), COUNT(DISTINCT s.uid) FROM (SELECT * FROM visits WHERE day > 3) AS s`,
			`SELECT COUNT(*), COUNT(DISTINCT s.uid) FROM (SELECT uid, ward, day, cost FROM visits WHERE day > 3) AS s`},
		// (A unit's rows all cost the same, so sampled rows do not change the sum.)
		{`WITH w AS (SELECT *, cost * 2 AS c2 FROM visits) SELECT SUM(c2, contribution_bounds_per_row => (0, 1000)) FROM w`,
			`WITH w AS (SELECT uid, ward, day, cost, cost * 2 AS c2 FROM visits) SELECT SUM(c2, contribution_bounds_per_row => (0, 1000)) FROM w`},
	} {
		if got, want := rowsOf(query(t, e, pair[0])), rowsOf(query(t, e, pair[1])); got != want || got == "" {
			t.Errorf("%s\n = %s\nwant %s", pair[0], got, want)
		}
	}
	if _, err := e.Query(t.Context(), `SELECT COUNT(*) FROM (SELECT * FROM visits GROUP BY ward) AS s`); err == nil || !strings.Contains(err.Error(), "per unit") {
		t.Errorf("grouped star subquery without the unit: %v", err)
	}
}

// TestDeltaOne: δ = 1, which BigQuery accepts, is accepted in OPTIONS: a
// query without partition selection spends no δ; one with it is refused
// by the ledger (no total reaches 1), with nothing charged.
func TestDeltaOne(t *testing.T) { testDeltaOne(t, parallel(t)) }

func testDeltaOne(t *testing.T, h *harness) {
	path := h.unitsDB(t, generateVisits(50, 4), `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid)`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	r, err := e.Query(t.Context(), `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1) COUNT(*) FROM visits`)
	if err != nil || r.Cost.Delta != 0 {
		t.Fatalf("delta = 1 without partition selection: %v %+v", err, r)
	}
	before := spent(t, e)
	if _, err := e.Query(t.Context(), `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1) ward, COUNT(*) FROM visits GROUP BY ward`); !errors.Is(err, dpsql.ErrBudgetExhausted) {
		t.Errorf("delta = 1 with partition selection: %v", err)
	}
	if spent(t, e) != before {
		t.Error("a refused query spent budget")
	}
}

// TestUnboundedContributionsRefused: BigQuery's max_groups_contributed =
// NULL (no bound across groups) is refused with a message that says why.
func TestUnboundedContributionsRefused(t *testing.T) {
	testUnboundedContributionsRefused(t, parallel(t))
}

func testUnboundedContributionsRefused(t *testing.T, h *harness) {
	path := h.unitsDB(t, generateVisits(20, 5), `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid)`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	_, err := e.Query(t.Context(), `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_contributed = NULL) COUNT(*) FROM visits`)
	if !errors.Is(err, planner.ErrInvalidOption) || !strings.Contains(err.Error(), "NULL (no bound) is refused") {
		t.Errorf("max_groups_contributed = NULL: %v", err)
	}
}

// TestMinPrivacyUnitsPerGroup: BigQuery's min_privacy_units_per_group = k
// raises partition selection's threshold by k − 1 (zero noise: a group
// needs more than about k units); it needs partition selection.
func TestMinPrivacyUnitsPerGroup(t *testing.T) { testMinPrivacyUnitsPerGroup(t, parallel(t)) }

func testMinPrivacyUnitsPerGroup(t *testing.T, h *harness) {
	var vs []visit
	for u, ward := range []string{"A", "A", "A", "A", "A", "B", "B", "C"} {
		vs = append(vs, visit{uid: u, ward: ward, day: 1, cost: 1})
	}
	e := h.open(t, h.unitsDB(t, vs, `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid)`), dpsql.Options{Epsilon: 1})
	for _, tc := range []struct{ opts, want string }{
		{"", "A:5 B:2"},
		{", min_privacy_units_per_group = 1", "A:5 B:2"},
		{", min_privacy_units_per_group = 3", "A:5"},
		{", min_privacy_units_per_group = 6", ""},
	} {
		q := `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1000, delta = 0.01` + tc.opts + `) ward, COUNT(*) FROM visits GROUP BY ward ORDER BY ward`
		if got := rowsOf(query(t, e, q)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.opts, got, tc.want)
		}
	}
	for _, bad := range []string{
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (min_privacy_units_per_group = 0, delta = 0.01) ward, COUNT(*) FROM visits GROUP BY ward`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (min_privacy_units_per_group = 2) COUNT(*) FROM visits`,
	} {
		if _, err := e.Query(t.Context(), bad); !errors.Is(err, planner.ErrInvalidOption) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
