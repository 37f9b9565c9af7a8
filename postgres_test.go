package dpsql_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/demo"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/internal/testhooks"
)

// bothPolicy is the owner script both backends get.
const bothPolicy = `
CREATE PRIVACY POLICY ON patients;
ALTER PRIVACY POLICY ON patients SET BOUNDS age (0, 100);
ALTER PRIVACY POLICY ON patients SET BOUNDS income (0, 200000);
ALTER PRIVACY POLICY ON patients SET BOUNDS visits (0, 20);
ALTER PRIVACY POLICY ON patients SET DOMAIN region ('North', 'South', 'East', 'West', 'Central');
ALTER PRIVACY POLICY ON patients SET DOMAIN sex ('F', 'M');
ALTER PRIVACY POLICY ON patients SET DOMAIN diagnosis ('asthma', 'diabetes', 'flu', 'hypertension', 'none');
CREATE PRIVACY POLICY ON t;
ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 100);
ALTER PRIVACY POLICY ON t SET DOMAIN g ('a', 'b', 'c', 'd');
ALTER TABLE lookup SET PUBLIC;
CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid, max_groups_contributed = 2, max_rows_contributed = 3);
ALTER PRIVACY POLICY ON visits SET BOUNDS cost (0, 100);
ALTER PRIVACY POLICY ON visits SET DOMAIN ward ('A', 'B', 'C');
SET BUDGET epsilon = 1e6, delta = 0.5;
`

// bothBackends builds one SQLite database (the demo's patients, t and
// lookup as in newDB, visits with several rows per unit), copies its
// tables into a fresh PostgreSQL server, and returns an owner engine on
// each, both with the zero-noise source and the same policy.
func bothBackends(t *testing.T) (native, pg *dpsql.Engine, srv *pgtest.Server) {
	t.Helper()
	srv = pgtest.StartT(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "native.db")
	if err := demo.Generate(ctx, path); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (i INTEGER, x INTEGER, g TEXT, y REAL);
		WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
		INSERT INTO t SELECT i, i % 100, substr('abcz', i % 4 + 1, 1), CASE WHEN i % 2 = 0 THEN i / 10.0 END FROM n;
		CREATE TABLE lookup (code TEXT, label TEXT);
		INSERT INTO lookup VALUES ('a', 'Alpha'), ('b', 'Beta'), ('A', 'Ward A');
		CREATE TABLE visits (uid INTEGER, ward TEXT, day INTEGER, cost REAL)`); err != nil {
		t.Fatal(err)
	}
	for i, v := range generateVisits(300, 7) {
		ward := v.ward
		if i%5 == 0 {
			ward = "C" // units in two wards, so max_groups_contributed matters
		}
		if _, err := db.Exec(`INSERT INTO visits VALUES (?, ?, ?, ?)`, v.uid, ward, v.day, v.cost+float64(i%7)); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.CopyFromSQLite(ctx, db, "patients", "t", "lookup", "visits"); err != nil {
		t.Fatal(err)
	}
	native = open(t, path, dpsql.Options{Owner: true, Epsilon: 1})
	mustRun(t, native, bothPolicy)
	pg = open(t, filepath.Join(t.TempDir(), "pg.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	mustRun(t, pg, bothPolicy)
	return native, pg, srv
}

// sameQueries are run on both backends; every answer must be identical.
var sameQueries = []string{
	`SELECT COUNT(*) FROM patients`,
	`SELECT region, COUNT(*) AS n, ROUND(AVG(age), 1) AS avg_age FROM patients GROUP BY region ORDER BY n DESC`,
	`SELECT diagnosis, AVG(income), SUM(visits), VAR_POP(age), STDDEV(income) FROM patients WHERE age >= 65 GROUP BY diagnosis`,
	`SELECT sex, COUNT(*) FROM patients WHERE region LIKE 'N%' AND income BETWEEN 1000 AND 50000 GROUP BY sex`,
	`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-5) sex, COUNT(*) FROM patients GROUP BY sex`,
	`SELECT CASE WHEN age < 40 THEN 'young' ELSE 'old' END AS band, COUNT(*) FROM patients GROUP BY band`,
	`SELECT FLOOR(age / 10) * 10 AS decade, COUNT(*) FROM patients GROUP BY decade`,
	`SELECT MEDIAN(age), PERCENTILE_CONT(income, 0.9) FROM patients`,
	`SELECT APPROX_QUANTILES(age, 4) FROM patients`,
	`SELECT AVG(age + 0) FROM patients`,
	`SELECT SUM(income * 2), AVG(LENGTH(diagnosis)) FROM patients`,
	`SELECT COUNT(DISTINCT diagnosis) FROM patients`,
	`SELECT COUNT(*), SUM(x), AVG(y), COUNT(y) FROM t`,
	`SELECT g, SUM(x), AVG(x) FROM t WHERE y IS NULL OR y > 10 GROUP BY g`,
	`SELECT COUNT(*) FROM t AS a JOIN lookup AS l ON a.g = l.code`,
	`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) l.label, COUNT(*) FROM t AS a JOIN lookup AS l ON a.g = l.code GROUP BY l.label`,
	`SELECT code, label FROM lookup WHERE code LIKE 'a%'`,
	`SELECT COUNT(*), SUM(cost), COUNT(DISTINCT uid) FROM visits`,
	`SELECT ward, COUNT(*), AVG(cost) FROM visits GROUP BY ward`,
	`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6, max_rows_contributed = 1) day, COUNT(DISTINCT uid) FROM visits GROUP BY day`,
	`WITH per_unit AS (SELECT uid, SUM(cost) AS total FROM visits GROUP BY uid) SELECT AVG(total) FROM per_unit`,
	`SELECT SUM(cost, contribution_bounds_per_group => (0, 150)) FROM visits`,
	`SELECT (SELECT COUNT(*) FROM patients WHERE age >= 65) * 1.0 / (SELECT COUNT(*) FROM patients) AS share`,
	`SELECT 'young' AS band, COUNT(*) AS n FROM patients WHERE age < 40 UNION ALL SELECT 'old', COUNT(*) FROM patients WHERE age >= 40 ORDER BY n`,
	`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (group_selection_strategy = PUBLIC_GROUPS) l.code, COUNT(v.uid) FROM lookup AS l LEFT JOIN visits AS v ON v.ward = l.code GROUP BY l.code`,
	`SELECT COUNT(*, report_format => 'JSON'), SUM(age, report_format => 'JSON') FROM patients`,
	`SELECT COUNT(*) FROM patients WHERE region IN (SELECT code FROM lookup)`,
	`EXPLAIN SELECT region, AVG(income) FROM patients GROUP BY region`,
	`SHOW TABLES`,
}

// sameErrors must fail alike on both backends.
var sameErrors = []string{
	`SELECT * FROM patients`,
	`SELECT age FROM patients`,
	`SELECT COUNT(*) FROM patients WHERE nosuch = 1`,
	`SELECT COUNT(*) FROM nosuch`,
	`SELECT COUNT(*) FROM patients GROUP BY id`,
	`SELECT MAX(age) FROM patients`,
	`SELECT COUNT(*) FROM _dpsql_postgres`,
}

func TestPostgresAnswersLikeSQLite(t *testing.T) {
	testhooks.FixedRandomness.Store(true) // the same rows kept by contribution bounding
	defer testhooks.FixedRandomness.Store(false)
	native, pg, _ := bothBackends(t)
	for _, q := range sameQueries {
		want, err := native.Query(context.Background(), q)
		if err != nil {
			t.Errorf("SQLite: %s: %v", q, err)
			continue
		}
		got, err := pg.Query(context.Background(), q)
		if err != nil {
			t.Errorf("PostgreSQL: %s: %v", q, err)
			continue
		}
		if !reflect.DeepEqual(got.Columns, want.Columns) || !reflect.DeepEqual(rowSet(got.Rows), rowSet(want.Rows)) {
			t.Errorf("%s:\nPostgreSQL %v %v\nSQLite     %v %v", q, got.Columns, got.Rows, want.Columns, want.Rows)
		}
	}
	for _, q := range sameErrors {
		_, werr := native.Query(context.Background(), q)
		_, gerr := pg.Query(context.Background(), q)
		if werr == nil || gerr == nil || werr.Error() != gerr.Error() {
			t.Errorf("%s:\nPostgreSQL error %v\nSQLite error     %v", q, gerr, werr)
		}
	}
}

// rowSet prints rows in a canonical order (row order without ORDER BY
// follows each backend's scan).
func rowSet(rows [][]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%#v", r)
	}
	sort.Strings(out)
	return out
}
