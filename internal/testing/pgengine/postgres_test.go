package pgengine_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/demo"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

// bothPolicy is the owner script both backends get: the demo's policy
// and more.
var bothPolicy = demo.Setup + `
ALTER PRIVACY POLICY ON patients SET DOMAIN sex ('F', 'M');
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
func (h *harness) bothBackends() (native, pg *dpsql.Engine, srv *pgtest.Server) {
	t := h.t
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
	native = h.open(path, dpsql.Options{Owner: true, Epsilon: 1})
	mustRun(t, native, bothPolicy)
	pg = h.open(filepath.Join(t.TempDir(), "pg.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	mustRun(t, pg, bothPolicy)
	return native, pg, srv
}

// counting returns how many statements contain sub.
// compiledMark is in every compiled measurement sent to PostgreSQL (its
// sums and counts come back as text, measuresql.Standard's ToText) and in
// no statement of the mirror's.
const compiledMark = " AS VARCHAR)"

func counting(sent []string, sub string) int {
	n := 0
	for _, q := range sent {
		if strings.Contains(q, sub) {
			n++
		}
	}
	return n
}

// pgSetup runs setup on the server's database and returns a connection
// to it (closed at the end of the test).
func pgSetup(t *testing.T, srv *pgtest.Server, setup string) *sql.DB {
	t.Helper()
	db, err := srv.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(setup); err != nil {
		t.Fatal(err)
	}
	return db
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
	`SELECT COUNT(*), SUM(x), AVG(x), COUNT(x), SUM(i, contribution_bounds_per_row => (100, 200)) FROM t`,
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
	// Comparisons of integer columns with integers are sent to PostgreSQL
	// (filter pushdown); the others, and every row, SQLite checks.
	`SELECT COUNT(*), SUM(x) FROM t WHERE x > 50 AND i <= 700`,
	`SELECT g, COUNT(*) FROM t WHERE x = 7 OR x = 8 GROUP BY g`,
	`SELECT COUNT(*) FROM t WHERE x IN (3, 5, 99) AND i >= 10`,
	`SELECT COUNT(*) FROM t WHERE x > 49.5 AND x < 51`,
	`SELECT COUNT(*) FROM t WHERE x >= -9223372036854775808 AND x < 9223372036854775807 AND i > -1`,
	`SELECT COUNT(*) FROM t WHERE x > '50'`,
	`SELECT COUNT(*) FROM t WHERE 90 < x`,
	`SELECT COUNT(*) FROM t AS a JOIN lookup AS l ON a.g = l.code WHERE a.x < 20`,
	`SELECT ward, COUNT(*) FROM visits WHERE day >= 3 AND uid < 200 GROUP BY ward`,
	`SELECT COUNT(*), SUM(x) FROM t WHERE y > 50.5 AND y <= 90`,
	`SELECT COUNT(*) FROM t WHERE y = 12 OR y < 0.5`,
	`SELECT COUNT(*) FROM t WHERE y >= -9e999 AND y < 9e999`,
	`SELECT COUNT(*) FROM t WHERE y > 9007199254740993`,
	`SELECT ward, SUM(cost) FROM visits WHERE cost > 40 GROUP BY ward`,
	// OR of filtered branches: a plan merging filtered scans by rowid
	// would drop rows (the cursor's rowids are counters).
	`SELECT COUNT(*), SUM(x) FROM t WHERE (x = 7 AND i > 3 AND i < 900) OR (x = 8 AND i > 4 AND i < 800) OR (g = 'b' AND x < 3)`,
	`SELECT COUNT(*) FROM patients WHERE region >= 'N' AND region < 'T'`,
	`SELECT g, COUNT(*) FROM t WHERE g <> 'z' AND g > 'a' GROUP BY g`,
	`SELECT COUNT(*) FROM t AS a JOIN lookup AS l ON a.g = l.code WHERE l.label > 'B' AND a.g >= 'a'`,
	`SELECT COUNT(*) FROM patients WHERE diagnosis = 'flu' OR region = 'North'`,
	`SELECT COUNT(*) FROM patients WHERE region LIKE 'n%' AND diagnosis LIKE '%u%'`,
	`SELECT COUNT(*) FROM lookup AS l WHERE l.code LIKE 'a%'`,
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
	// The mirrors' hidden columns are the engine's, never the analyst's.
	`SELECT COUNT(*) FROM patients WHERE _dpsql_weight > 1`,
	`SELECT SUM(_dpsql_rowid) FROM patients`,
	`SELECT COUNT(*) FROM t AS a JOIN lookup AS l ON a.g = l.code WHERE a._dpsql_rowid > 5`,
}

func TestPostgresAnswersLikeSQLite(t *testing.T) {
	parallel(t)
	h := newHarness(t)
	h.knobs.FixedRandomness = true // the same rows kept by contribution bounding
	defer func() { h.knobs.FixedRandomness = false }()
	native, pg, _ := h.bothBackends()
	defer func() { h.knobs.PostgresGrouping = 0 }()
	log := h.log
	for _, grouping := range []int{knobs.GroupAlways, knobs.GroupNever} {
		h.knobs.PostgresGrouping = grouping
		log.take()
		// Compiled (GroupAlways), contribution bounding keeps rows by
		// PostgreSQL's keyed hash, not the reference's: the scans of
		// visits, whose units have more rows than the bounds keep, are
		// compared through the mirror only (the engine suite on PostgreSQL
		// tests the compiled choice statistically).
		sameAnswers(t, native, pg, grouping == knobs.GroupAlways)
		sent := log.take()
		if grouped := counting(sent, "COUNT(*) FROM"); (grouping == knobs.GroupAlways) != (grouped > 0) {
			t.Errorf("grouping mode %d: %d grouped scans", grouping, grouped)
		}
		if aggregated := counting(sent, compiledMark); (grouping == knobs.GroupAlways) != (aggregated > 0) {
			t.Errorf("grouping mode %d: %d scans aggregated in PostgreSQL", grouping, aggregated)
		}
	}
}

// sameAnswers runs sameQueries and sameErrors on both engines.
func sameAnswers(t *testing.T, native, pg *dpsql.Engine, compiled bool) {
	t.Helper()
	for _, q := range sameQueries {
		if compiled && strings.Contains(q, "visits") {
			continue
		}
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
		if strings.HasPrefix(q, "EXPLAIN") {
			// The plans are the same but for the scan's source.
			got.Rows, want.Rows = withoutSource(got.Rows), withoutSource(want.Rows)
		}
		if !reflect.DeepEqual(got.Columns, want.Columns) || !reflect.DeepEqual(enginetest.RowSet(got.Rows), enginetest.RowSet(want.Rows)) {
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

// withoutSource drops the EXPLAIN rows that say how the scan reads its
// table: its SQL and, on PostgreSQL, the grouped source, the pushdown and
// the engine that measures.
func withoutSource(rows [][]any) [][]any {
	var out [][]any
	for _, r := range rows {
		if r[0] != "backend SQL" && r[0] != "reference SQL" && r[0] != "source" && r[0] != "pushdown" && r[0] != "engine" {
			out = append(out, r)
		}
	}
	return out
}

// TestPostgresReadsLiveData: the engine reads PostgreSQL at every query
// (no copy in the state file), and a private answer follows a change.
func TestPostgresReadsLiveData(t *testing.T) {
	h := newHarness(t)
	parallel(t)
	_, pg, srv := h.bothBackends()
	before := query(t, pg, `SELECT SUM(age) FROM patients`).Rows[0][0].(float64)
	pgSetup(t, srv, `UPDATE patients SET age = age + 1 WHERE id <= 10`)
	after := query(t, pg, `SELECT SUM(age) FROM patients`).Rows[0][0].(float64)
	if after-before < 9.5 || after-before > 10.5 { // ages ≤ 99 stay inside the bounds (0, 100)
		t.Errorf("SUM(age) went from %v to %v after adding 1 to 10 rows", before, after)
	}
}

// TestPostgresNeverSeesAnalystText: PostgreSQL receives only statements
// dpsql prints — the catalog probes, one SELECT of named columns per scan
// through the mirror, and the compiled measurements (measuresql), in
// which the analyst's strings are bound parameters and numbers are
// printed by dpsql from their values — never the analyst's text.
func TestPostgresNeverSeesAnalystText(t *testing.T) {
	parallel(t)
	h := newHarness(t)
	log := h.log
	_, pg, _ := h.bothBackends()
	for _, q := range []string{
		`SELECT COUNT(*) FROM patients WHERE region = 'zzq-analyst' OR diagnosis LIKE '%zzq%'`,
		`SELECT SUM(income * 7777777) FROM patients WHERE age > 4242424`,
		`SELECT code FROM lookup WHERE label = 'zzq-public'`,
		`SELECT COUNT(*) FROM patients; SELECT pg_sleep(1)`,
		`SELECT COUNT(*), SUM(x), AVG(x, contribution_bounds_per_row => (-7, 7777)) FROM t`,
		`SELECT g, SUM(x) FROM t GROUP BY g`,
		`SELECT COUNT(*) FROM t WHERE g IN ('zzq1', 'zzq2') AND g NOT LIKE 'zzq%'`,
	} {
		_, _ = pg.Query(context.Background(), q)
	}
	sent := log.take()
	col := `("[^"]+"(::text)?|"[^"]+"::text COLLATE "C"|float8send\("[^"]+"::float8\))`
	// Comparisons pushed down: a column, an operator, a parameter.
	cmp := `"[^"]+"(::text COLLATE "C")? (=|<|<=|>|>=) \$[0-9]+::(int8|float8|text)`
	where := `( WHERE ` + cmp + `( AND ` + cmp + `)*)?`
	scan := regexp.MustCompile(`^SELECT (` + col + `(, ` + col + `)*(, tableoid::int8, ctid)? |tableoid::int8, ctid )?FROM "public"\."[a-z]+"` + where + `$`)
	grouped := regexp.MustCompile(`^SELECT (` + col + `, )*COUNT\(\*\) FROM "public"\."[a-z]+"` + where + `( GROUP BY [0-9]+(, [0-9]+)*| HAVING COUNT\(\*\) > 0)$`)
	// A compiled measurement: built-ins by their pg_catalog names, tables
	// by their qualified names, text only as parameters.
	compiled := regexp.MustCompile(`^(SELECT|WITH) .*\(pg_catalog\.(count|sum)\(.* FROM "public"\."[a-z]+"`)
	scans, measurements := 0, 0
	for _, q := range sent {
		if strings.Contains(q, "zzq") || strings.Contains(q, "pg_sleep") || strings.Contains(q, "'%") {
			t.Errorf("analyst text reached PostgreSQL: %s", q)
		}
		if strings.HasPrefix(q, "SELECT a.attname") || strings.HasPrefix(q, "SELECT n.nspname, c.relname") || strings.HasPrefix(q, "SELECT c.relname FROM") || strings.HasPrefix(q, "SELECT c.reltuples") {
			continue
		}
		switch {
		case compiled.MatchString(q):
			measurements++
			// Every quoted string is a typed constant dpsql printed
			// (a float's digits, 'NaN'), never a value from the analyst.
			for _, lit := range regexp.MustCompile(`'[^']*'`).FindAllString(q, -1) {
				if !regexp.MustCompile(`^'(NaN|-?[0-9.e+-]+|Infinity|-Infinity)'$`).MatchString(lit) {
					t.Errorf("a string literal in a compiled statement: %s in %s", lit, q)
				}
			}
		case scan.MatchString(q) || grouped.MatchString(q):
			if strings.Contains(q, "7777") || strings.Contains(q, "4242424") {
				t.Errorf("a constant as text in a scan: %s", q)
			}
			scans++
		default:
			t.Errorf("unexpected statement sent to PostgreSQL: %s", q)
		}
	}
	if scans == 0 || measurements < 4 {
		t.Errorf("%d scans observed, %d compiled measurements", scans, measurements)
	}
}

// TestPostgresStateFile: the state file is bound to its PostgreSQL
// source; every open mirrors the tables it lacks (an analyst's too, and
// a state file that does not exist yet is made); reserved names are
// skipped, said so.
func TestPostgresStateFile(t *testing.T) {
	h := newHarness(t)
	parallel(t)
	srv := pgtest.StartT(t)
	db := pgSetup(t, srv, `CREATE TABLE people (id int, age int);
		INSERT INTO people SELECT i, 20 + i % 50 FROM generate_series(1, 500) i;
		CREATE TABLE "_dpsql_budget" (x int);
		CREATE TABLE "Zoo" (x int);
		CREATE TABLE zoo (y int);
		CREATE VIEW risky AS SELECT 1 / (age - 20) AS r FROM people;
		CREATE MATERIALIZED VIEW ages AS SELECT age FROM people`)
	ctx := context.Background()
	state := filepath.Join(t.TempDir(), "people.dpsql")
	var notes []string
	owner, err := dpsql.Open(state, dpsql.Options{Owner: true, Postgres: srv.DSN(), Notify: func(n string) { notes = append(notes, n) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 2 || notes[0] != "mirrored from PostgreSQL (private, each row its own unit, until a policy says otherwise): Zoo, ages, people" ||
		notes[1] != "not mirrored (the name is reserved or taken in the state file, the table is under row-level security, or it is in the schema dpsql, which holds the budget): _dpsql_budget, zoo" {
		t.Errorf("notes: %q", notes)
	}
	if _, err := owner.Query(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM risky`); !errors.Is(err, dpsql.ErrUnknownName) {
		t.Errorf("a view was mirrored (reading it can fail on one row): %v", err)
	}
	mustRun(t, owner, `CREATE PRIVACY POLICY ON zoo; ALTER PRIVACY POLICY ON zoo SET BOUNDS x (0, 10); SET BUDGET epsilon = 10`)
	if _, err := owner.Query(ctx, `SELECT * FROM people`); err == nil {
		t.Error("a table mirrored without a policy answered a raw read")
	}
	owner.Close()
	if _, err := dpsql.Open(state, dpsql.Options{}); err == nil || !strings.Contains(err.Error(), "connection string") {
		t.Errorf("opened a state file without its connection string: %v", err)
	}
	if _, err := dpsql.Open(state, dpsql.Options{Postgres: "host=/nonexistent dbname=x"}); err == nil {
		t.Error("opened with an unreachable PostgreSQL")
	}
	// A table created later is mirrored by the next open, an analyst's
	// too: it is private, each row its own unit, until the owner says
	// otherwise. (The test server's role is called dpsql, so an
	// unqualified CREATE TABLE now lands in the budget's schema: that one
	// is never mirrored.)
	if _, err := db.Exec(`CREATE TABLE public.later (v int); CREATE TABLE stray (v int)`); err != nil {
		t.Fatal(err)
	}
	notes = nil
	analyst := h.open(state, dpsql.Options{Epsilon: 1, Postgres: srv.DSN(), Notify: func(n string) { notes = append(notes, n) }})
	if len(notes) != 2 || !strings.HasSuffix(notes[0], ": later") || !strings.HasSuffix(notes[1], ": dpsql.stray, _dpsql_budget, zoo") {
		t.Errorf("notes of the analyst's open: %q", notes)
	}
	if _, err := analyst.Query(ctx, `SELECT COUNT(*) FROM later`); err != nil {
		t.Errorf("an analyst's open did not mirror a new table: %v", err)
	}
	if _, err := analyst.Query(ctx, `SELECT v FROM later`); !errors.Is(err, dpsql.ErrNotPrivate) {
		t.Errorf("a newly mirrored table is not private: %v", err)
	}
	if _, err := analyst.Query(ctx, `SELECT COUNT(*) FROM stray`); !errors.Is(err, dpsql.ErrUnknownName) {
		t.Errorf("a table in the budget's schema was mirrored: %v", err)
	}
	// An analyst's open of a state file that does not exist makes it.
	mine := h.open(filepath.Join(t.TempDir(), "mine.dpsql"), dpsql.Options{Epsilon: 1, Postgres: srv.DSN()})
	if r := query(t, mine, `SELECT COUNT(*) + 0.5 FROM people`); r.Rows[0][0] != 500.5 {
		t.Errorf("a new analyst's state file: %v", r.Rows)
	}
	r := query(t, analyst, `SELECT COUNT(*), SUM(x) FROM zoo`)
	if r.Rows[0][0] != int64(0) {
		t.Errorf("COUNT(*) of an empty table: %v", r.Rows)
	}
	// The database/sql driver takes the connection string as an option.
	viaDriver, err := sql.Open("dpsql", "file:"+state+"?epsilon=1&postgres="+url.QueryEscape(srv.DSN()))
	if err != nil {
		t.Fatal(err)
	}
	defer viaDriver.Close()
	var n float64
	if err := viaDriver.QueryRow(`SELECT COUNT(*) + 0.5 FROM zoo`).Scan(&n); err != nil {
		t.Errorf("through the driver: %v", err)
	}
	// Each driver connection is an engine with a pool of its own: closing
	// the newest leaves the others working.
	viaDriver.SetMaxIdleConns(0)
	c1, err := viaDriver.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := viaDriver.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.QueryRowContext(ctx, `SELECT COUNT(*) + 0.5 FROM zoo`).Scan(&n); err != nil {
		t.Errorf("second driver connection: %v", err)
	}
	c2.Close()
	if err := c1.QueryRowContext(ctx, `SELECT COUNT(*) + 0.5 FROM zoo`).Scan(&n); err != nil {
		t.Errorf("first driver connection after the second closed: %v", err)
	}
	c1.Close()
	// A mirrored table replaced by a view is refused, not read ("zoo"
	// is the mirror of PostgreSQL's "Zoo").
	if _, err := db.Exec(`ALTER TABLE "Zoo" RENAME TO zoo_old; CREATE VIEW public."Zoo" AS SELECT 1 / (x - 1) AS x FROM zoo_old`); err != nil {
		t.Fatal(err)
	}
	fresh := h.open(state, dpsql.Options{Epsilon: 1, Postgres: srv.DSN()})
	if _, err := fresh.Query(ctx, `SELECT COUNT(*) FROM zoo`); !errors.Is(err, dpsql.ErrUnknownName) || !strings.Contains(err.Error(), "PostgreSQL has no table") {
		t.Errorf("a mirror whose table became a view: %v", err)
	}
	if _, err := fresh.Query(ctx, `SELECT COUNT(*) FROM people`); err != nil {
		t.Errorf("one unreadable mirror broke the others: %v", err)
	}
	owner2 := h.open(state, dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	if _, err := owner2.Query(ctx, `SELECT COUNT(*) FROM zoo_old`); err != nil {
		t.Errorf("the renamed table was not mirrored: %v", err)
	}
}

// TestPostgresTypesAreTotal: every PostgreSQL type reaches SQLite as a
// value SQLite's total expressions handle — numeric beyond float range,
// NaN and ±Infinity, extreme integers, dates, JSON, arrays, bytea — so no
// private query fails (or succeeds) because of what some row holds.
func TestPostgresTypesAreTotal(t *testing.T) {
	h := newHarness(t)
	parallel(t)
	srv := pgtest.StartT(t)
	pgSetup(t, srv, `CREATE TABLE odd (
		n numeric, f double precision, r real, i bigint, s smallint, b boolean, d date, ts timestamptz,
		j jsonb, a int[], bt bytea, iv interval, u uuid, tx text, c char(3), m money);
		INSERT INTO odd VALUES
		('1e400', 'Infinity', 'NaN', 9223372036854775807, 32767, true, '2026-11-23', '2026-11-23 10:00+00',
		 '{"a": [1, 2]}', '{1,2,3}', '\x00ff', '1 day', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'é€😀', 'ab', 12.5),
		('-1e400', '-Infinity', '-Infinity', -9223372036854775808, -32768, false, '0001-01-01 BC', 'infinity',
		 'null', '{}', '', '-178000000 years', NULL, '', NULL, -1),
		('NaN', 'NaN', 1e30, 0, 0, NULL, 'infinity', '-infinity', '"x"', NULL, NULL, NULL, NULL, NULL, NULL, NULL),
		(NULL, 1e308, -1e-30, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'x', 'x', NULL),
		(5, 5, 5, 5, 5, true, '2000-01-01', '2000-01-01', '5', '{5}', '\x05', '5 seconds', NULL, '5', '5', 5)`)
	state := filepath.Join(t.TempDir(), "odd.dpsql")
	eng := h.open(state, dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	cols := []string{"n", "f", "r", "i", "s", "b", "d", "ts", "j", "a", "bt", "iv", "u", "tx", "c", "m"}
	policy := `CREATE PRIVACY POLICY ON odd; SET BUDGET epsilon = 1e6, delta = 0.5;`
	for _, c := range cols {
		policy += fmt.Sprintf(` ALTER PRIVACY POLICY ON odd SET BOUNDS %s (0, 10);`, c)
	}
	mustRun(t, eng, policy)
	for _, c := range cols {
		for _, q := range []string{
			`SELECT COUNT(%[1]s), SUM(%[1]s), AVG(%[1]s), VAR_POP(%[1]s) FROM odd`,
			`SELECT SUM(CAST(%[1]s AS INTEGER) * 3 - 1, contribution_bounds_per_row => (-5, 5)) FROM odd WHERE %[1]s > 0 OR %[1]s < 'z'`,
			`SELECT SUM(LENGTH(%[1]s) / 2, contribution_bounds_per_row => (0, 9)), MEDIAN(%[1]s) FROM odd`,
			`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-3) %[1]s, COUNT(*) FROM odd GROUP BY %[1]s`,
			`SELECT AVG(%[1]s + 0) FROM odd`,
		} {
			q := fmt.Sprintf(q, c)
			if _, err := eng.Query(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	}
	// Clipping sees the values SQLite would store: numeric 1e400 is +Inf
	// (clipped to 10), NaN is NULL (not counted), −1e400 is −Inf (clipped to 0).
	r := query(t, eng, `SELECT COUNT(n), SUM(n), SUM(f), COUNT(f), SUM(i), SUM(b) FROM odd`)
	want := []any{int64(3), float64(15), float64(25), int64(4), float64(15), float64(2)}
	if !reflect.DeepEqual(r.Rows[0], want) {
		t.Errorf("got %#v, want %#v", r.Rows[0], want)
	}
}

// TestPostgresConcurrentSessions: many sessions scan PostgreSQL at once
// (each scan its own PostgreSQL connection) while the ledger in the state
// file admits exactly what the budget allows.
func TestPostgresConcurrentSessions(t *testing.T) {
	h := newHarness(t)
	parallel(t)
	_, pg, _ := h.bothBackends()
	mustRun(t, pg, `SET BUDGET epsilon = 3, delta = 1e-6`)
	answered, refused := raceSessions(t, 40, func(i int) *dpsql.Engine { return pg }, dpsql.SessionOptions{}, func(int) string {
		return `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) region, AVG(income) FROM patients GROUP BY region`
	})
	if answered != 30 || refused != 10 {
		t.Errorf("answered %d, refused %d; want 30 and 10 under ε = 3", answered, refused)
	}
}

// TestPostgresCancel: a private query cancelled during its scan stops
// PostgreSQL's statement too (no scan left running), and says that its
// cost was charged.
func TestPostgresCancel(t *testing.T) {
	parallel(t)
	h := newHarness(t)
	srv := pgtest.StartT(t)
	db := pgSetup(t, srv, `CREATE TABLE big AS SELECT i AS x, random() AS r FROM generate_series(1, 3000000) i`)
	h.knobs.PostgresGrouping = knobs.GroupNever // stream every row: a long scan
	defer func() { h.knobs.PostgresGrouping = 0 }()
	eng := h.open(filepath.Join(t.TempDir(), "big.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	mustRun(t, eng, `CREATE PRIVACY POLICY ON big; ALTER PRIVACY POLICY ON big SET BOUNDS r (0, 1); SET BUDGET epsilon = 10`)
	rollbacks := func() (n int64) {
		if err := db.QueryRow(`SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := rollbacks()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := eng.Query(ctx, `SELECT SUM(r) FROM big`)
	if !errors.Is(err, dpsql.ErrCancelled) || !strings.Contains(err.Error(), "charged") {
		t.Fatalf("cancelled scan: %v", err)
	}
	for i := 0; ; i++ {
		var running int
		if err := db.QueryRow(`SELECT COUNT(*) FROM pg_stat_activity WHERE query LIKE 'SELECT "r"%' AND state = 'active'`).Scan(&running); err != nil {
			t.Fatal(err)
		}
		// The scan was cancelled (its transaction rolled back), not read
		// to its end.
		if running == 0 && rollbacks() > before {
			break
		}
		if i == 50 {
			t.Fatalf("after 5 s: %d scans running, %d rollbacks (PostgreSQL's scan was not cancelled)", running, rollbacks()-before)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPostgresJoinsScanOnce: a join that runs through the mirror (one the
// PostgreSQL printer declines) reads each mirrored table from
// PostgreSQL at most twice (the inner side's second scan is kept and
// replayed), not once per outer row, and answers as on SQLite.
func TestPostgresJoinsScanOnce(t *testing.T) {
	parallel(t)
	h := newHarness(t)
	h.knobs.FixedRandomness = true
	h.knobs.PostgresGrouping = knobs.GroupNever // the mirror's scans are under test, not the compiled join
	defer func() { h.knobs.FixedRandomness, h.knobs.PostgresGrouping = false, 0 }()
	native, pg, _ := h.bothBackends()
	log := h.log
	for _, q := range []string{
		`SELECT COUNT(*) FROM t AS a JOIN lookup AS l ON a.g = l.code`,
		`SELECT COUNT(*) FROM lookup AS l JOIN t AS a ON a.g = l.code`,
		// Which rows bounding keeps depends on the order they arrive in,
		// which differs between the backends' join plans: only counts
		// of a self-join are the same on both.
		`SELECT COUNT(*) FROM visits AS v1 JOIN visits AS v2 ON v1.uid = v2.uid`,
	} {
		log.take()
		want := query(t, native, q)
		got := query(t, pg, q)
		if !reflect.DeepEqual(got.Rows, want.Rows) {
			t.Errorf("%s: PostgreSQL %v, SQLite %v", q, got.Rows, want.Rows)
		}
		sent := log.take()
		// t has no unit column: joined, each row's identity is its unit
		// (read from PostgreSQL); visits has one.
		if identities := counting(sent, "ctid"); strings.Contains(q, " t AS a") != (identities > 0) {
			t.Errorf("%s: %d scans read row identities", q, identities)
		}
		for _, table := range []string{`"public"."t"`, `"public"."lookup"`, `"public"."visits"`} {
			if n := counting(sent, "FROM "+table); n > 2+2 { // two cursors at most per table (a self-join), two scans each
				t.Errorf("%s: %d scans of %s", q, n, table)
			}
		}
	}
}

// TestPostgresConcurrentJoins: many joins at once, each holding a
// PostgreSQL connection per table, more than the pool has: none waits
// for another (a cursor that finds the pool busy opens a connection of
// its own).
func TestPostgresConcurrentJoins(t *testing.T) {
	h := newHarness(t)
	parallel(t)
	_, pg, _ := h.bothBackends()
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := pg.NewSession(dpsql.SessionOptions{Epsilon: 1})
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			if _, err := s.Query(context.Background(), `SELECT COUNT(*) FROM t AS a JOIN lookup AS l ON a.g = l.code`); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// TestPostgresWideTables: on a table of 70 columns (SQLite's colUsed
// has one bit for all columns from the 64th on) the engine still reads
// what each statement needs: a column past the 64th, with identical rows
// counted as rows, alone and joined.
func TestPostgresWideTables(t *testing.T) {
	h := newHarness(t)
	parallel(t)
	srv := pgtest.StartT(t)
	cols := make([]string, 70)
	for i := range cols {
		cols[i] = fmt.Sprintf("c%d int", i)
	}
	pgSetup(t, srv, `CREATE TABLE wide (`+strings.Join(cols, ", ")+`);
		INSERT INTO wide (c0, c65) SELECT i % 3, 5 FROM generate_series(1, 300) i;
		CREATE TABLE codes (code int, label text); INSERT INTO codes VALUES (0, 'zero'), (1, 'one')`)
	eng := h.open(filepath.Join(t.TempDir(), "wide.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	mustRun(t, eng, `CREATE PRIVACY POLICY ON wide; ALTER PRIVACY POLICY ON wide SET BOUNDS c65 (0, 10);
		ALTER TABLE codes SET PUBLIC; SET BUDGET epsilon = 100`)
	for _, c := range []struct {
		q    string
		want []any
	}{
		{`SELECT COUNT(*), SUM(c65), COUNT(c1) FROM wide`, []any{int64(300), float64(1500), int64(0)}},
		{`SELECT COUNT(*), SUM(w.c65) FROM wide AS w JOIN codes AS k ON w.c0 = k.code`, []any{int64(200), float64(1000)}},
	} {
		if r := query(t, eng, c.q); !reflect.DeepEqual(r.Rows[0], c.want) {
			t.Errorf("%s: %#v, want %#v", c.q, r.Rows[0], c.want)
		}
	}
}

// TestPostgresRowLevelSecurity: a table whose row-level security applies
// to dpsql's role is neither mirrored nor read (its policies run per row
// and could fail on one); the same table is fine for a role that bypasses
// them.
func TestPostgresRowLevelSecurity(t *testing.T) {
	h := newHarness(t)
	parallel(t)
	srv := pgtest.StartT(t)
	pgSetup(t, srv, `CREATE TABLE guarded (x int); INSERT INTO guarded SELECT generate_series(1, 10);
		CREATE TABLE open_t (x int); INSERT INTO open_t SELECT generate_series(1, 10);
		ALTER TABLE guarded ENABLE ROW LEVEL SECURITY;
		CREATE POLICY p ON guarded USING (10 / (x - 3) > -100);
		CREATE ROLE reader LOGIN; GRANT SELECT ON guarded, open_t TO reader;
		CREATE SCHEMA dpsql AUTHORIZATION reader`)
	reader := strings.Replace(srv.DSN(), "user=dpsql", "user=reader", 1)
	var notes []string
	eng, err := dpsql.Open(filepath.Join(t.TempDir(), "rls.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, Postgres: reader,
		Notify: func(n string) { notes = append(notes, n) }})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if len(notes) != 2 || !strings.HasSuffix(notes[0], ": open_t") || !strings.HasSuffix(notes[1], ": guarded") {
		t.Errorf("notes: %q", notes)
	}
	mustRun(t, eng, `SET BUDGET epsilon = 10`)
	if _, err := eng.Query(context.Background(), `SELECT COUNT(*) FROM guarded`); !errors.Is(err, dpsql.ErrUnknownName) {
		t.Errorf("a table under row-level security was read: %v", err)
	}
	query(t, eng, `SELECT COUNT(*) FROM open_t`)
	// As the superuser (who bypasses row-level security) it is mirrored.
	super := h.open(filepath.Join(t.TempDir(), "super.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	mustRun(t, super, `SET BUDGET epsilon = 10`)
	query(t, super, `SELECT COUNT(*) FROM guarded`)
}

// TestPostgresBudgetIsSharedConcurrently: the budget of a PostgreSQL database lives
// in it (schema dpsql), so processes with different state files — here
// four engines, each with its own file and connection pool — draw on one
// budget, and never overspend it together: 60 concurrent queries of
// ε = 0.1 under a total of 2 answer exactly 20.
func TestPostgresBudgetIsSharedConcurrently(t *testing.T) {
	h := newHarness(t)
	parallel(t)
	srv := pgtest.StartT(t)
	pgSetup(t, srv, `CREATE TABLE visits (id int, cost double precision);
		INSERT INTO visits SELECT i, i % 100 FROM generate_series(1, 2000) i`)
	dir := t.TempDir()
	var engines []*dpsql.Engine
	for i := range 4 {
		e := h.open(filepath.Join(dir, fmt.Sprintf("state%d.dpsql", i)), dpsql.Options{Owner: true, Epsilon: 0.1, Postgres: srv.DSN()})
		mustRun(t, e, `CREATE PRIVACY POLICY ON visits; ALTER PRIVACY POLICY ON visits SET BOUNDS cost (0, 100)`)
		if i == 0 {
			mustRun(t, e, `SET BUDGET epsilon = 2`)
		}
		engines = append(engines, e)
	}
	st, err := engines[3].Budget(context.Background())
	if err != nil || !st.Set || st.Total.Epsilon != 2 {
		t.Fatalf("another state file's engine does not see the budget: %+v (%v)", st, err)
	}
	answered, refused := raceSessions(t, 60, func(i int) *dpsql.Engine { return engines[i%4] }, dpsql.SessionOptions{Epsilon: 0.1}, func(i int) string {
		return fmt.Sprintf(`SELECT COUNT(*), AVG(cost) FROM visits WHERE id > %d`, i)
	})
	if answered != 20 || refused != 40 {
		t.Errorf("answered %d, refused %d; want 20 and 40 under ε = 2 shared by four state files", answered, refused)
	}
	// The ledger is in PostgreSQL: every charge, with its statement.
	db := pgSetup(t, srv, `SELECT 1`)
	var n int
	var sample string
	if err := db.QueryRow(`SELECT COUNT(*), MIN(statement) FROM dpsql.ledger`).Scan(&n, &sample); err != nil || n != 20 || !strings.Contains(sample, `FROM "visits" WHERE ("id" >`) {
		t.Errorf("PostgreSQL's ledger has %d charges (%v), want 20; one is %q", n, err, sample)
	}
	// A state file holds no budget of its own.
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "state1.dpsql"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '\_dpsql\_budget%' ESCAPE '\' OR name = '_dpsql_ledger'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the state file has %d budget tables (%v)", n, err)
	}
}

// TestPostgresAdoptsTheStateFilesBudget: a state file written when the
// budget lived in it (earlier versions) hands its total and its charges
// to PostgreSQL at the next open, once, and says so.
func TestPostgresAdoptsTheStateFilesBudget(t *testing.T) {
	h := newHarness(t)
	parallel(t)
	srv, state, raw := olderStateFile(h, `CREATE TABLE visits (id int, cost double precision); INSERT INTO visits VALUES (1, 2)`)
	// What an earlier version kept in the file: a total of 3 and a charge
	// of 1.25.
	ctx := context.Background()
	old := budget.SQLite(raw, raw)
	if err := budget.Init(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := budget.SetTotal(ctx, old, budget.Cost{Epsilon: 3}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := budget.ChargeFirst(ctx, old, "", []budget.Charge{budget.LaplaceCharge(1.25, 0, nil)}, "SELECT COUNT(*) FROM visits", nil); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, err := dpsql.Open(state, dpsql.Options{Epsilon: 1, Postgres: srv.DSN()}); !errors.Is(err, dpsql.ErrNoDatabase) {
		t.Errorf("an analyst opened a state file whose charges are not adopted: %v", err)
	}
	for round := range 2 {
		var notes []string
		e := h.open(state, dpsql.Options{Owner: true, Postgres: srv.DSN(), Notify: func(n string) { notes = append(notes, n) }})
		moved := slices.ContainsFunc(notes, func(n string) bool { return strings.HasPrefix(n, "moved the state file's budget into PostgreSQL") })
		if moved != (round == 0) {
			t.Errorf("open %d: notes %q", round, notes)
		}
		st, err := e.Budget(ctx)
		if err != nil || st.Total.Epsilon != 3 || st.Spent.Epsilon != 1.25 {
			t.Errorf("open %d: budget %+v (%v), want 1.25 of 3 spent", round, st, err)
		}
		e.Close()
	}
}

// raceSessions runs n private queries at once, query i in a new session
// of engine(i), and counts those answered and those refused for the
// budget; any other error fails the test.
func raceSessions(t *testing.T, n int, engine func(i int) *dpsql.Engine, opts dpsql.SessionOptions, query func(i int) string) (answered, refused int) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := engine(i).NewSession(opts)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			_, err = s.Query(context.Background(), query(i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				answered++
			case errors.Is(err, dpsql.ErrBudgetExhausted):
				refused++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	return answered, refused
}

// TestPostgresPoliciesAreShared: the policies of a PostgreSQL database
// live in it, so an engine with another state file plans under the
// policy the owner declared through the first — typed domain values
// included — and an answer it cached under an older policy is not given
// again after the policy changed elsewhere.
func TestPostgresPoliciesAreShared(t *testing.T) {
	h := newHarness(t)
	parallel(t)
	srv := pgtest.StartT(t)
	pgSetup(t, srv, `CREATE TABLE sales (shop bigint, price double precision, tag text, unit bigint);
		INSERT INTO sales SELECT i % 4, 20 + i % 5, CASE WHEN i % 3 = 0 THEN 'x' ELSE 'y' END, i / 3 FROM generate_series(1, 600) i`)
	dir := t.TempDir()
	a := h.open(filepath.Join(dir, "a.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	mustRun(t, a, `CREATE PRIVACY POLICY ON sales OPTIONS (max_groups_contributed = 1);
		ALTER PRIVACY POLICY ON sales SET BOUNDS price (0, 10);
		ALTER PRIVACY POLICY ON sales SET DOMAIN shop (0, 1, 2.5);
		ALTER PRIVACY POLICY ON sales SET DOMAIN tag ('x', 'zz');
		SET BUDGET epsilon = 100`)
	b := h.open(filepath.Join(dir, "b.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	const q = `SELECT shop, COUNT(*), SUM(price) FROM sales GROUP BY shop`
	ra, rb := query(t, a, q), query(t, b, q)
	if !reflect.DeepEqual(ra.Rows, rb.Rows) {
		t.Fatalf("two state files answer differently under one policy:\n%v\n%v", ra.Rows, rb.Rows)
	}
	// The domain's values keep their types: 0 and 1 are integers, 2.5 a
	// float (no shop has it: a count of 0); prices are clipped at 10.
	want := [][]any{{int64(0), int64(150), 1500.0}, {int64(1), int64(150), 1500.0}, {2.5, int64(0), 0.0}}
	if !reflect.DeepEqual(rb.Rows, want) {
		t.Errorf("B's answer %v, want %v", rb.Rows, want)
	}
	if r := query(t, b, `SELECT tag, COUNT(*) FROM sales GROUP BY tag`); !reflect.DeepEqual(r.Rows, [][]any{{"x", int64(200)}, {"zz", int64(0)}}) {
		t.Errorf("text domain: %v", r.Rows)
	}
	// An engine with the cache on (and real noise, as in production),
	// on a third state file, caches its answer; the owner then changes
	// the bounds through A, and the answer C cached under the old policy
	// is not given again.
	c, err := dpsql.Open(filepath.Join(dir, "c.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ask := func() *dpsql.Result {
		t.Helper()
		r, err := c.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := ask()
	if again := ask(); again.Cost.Epsilon != 0 || !reflect.DeepEqual(again.Rows, first.Rows) {
		t.Fatalf("the repeat was not answered from C's cache: %+v", again)
	}
	mustRun(t, a, `ALTER PRIVACY POLICY ON sales SET BOUNDS price (0, 100)`)
	if fresh := ask(); fresh.Cost.Epsilon != 1 || slices.ContainsFunc(fresh.Notes, func(n string) bool { return strings.Contains(n, "from the cache") }) {
		t.Errorf("after the bounds changed elsewhere, C answered from its cache: %+v", fresh)
	}
	if r := query(t, b, q); r.Rows[0][2] == 1500.0 {
		t.Errorf("B still clips at the old bounds: %v", r.Rows)
	}
	// Dropping the policy through B is seen by A.
	mustRun(t, b, `DROP PRIVACY POLICY ON sales`)
	if _, err := a.Query(context.Background(), `SELECT shop, COUNT(*) FROM sales GROUP BY shop`); err == nil || !strings.Contains(err.Error(), "δ") && !strings.Contains(err.Error(), "delta") {
		t.Errorf("A still plans with the dropped domain: %v", err)
	}
	// The state files hold no policy.
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "a.dpsql"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name IN ('_dpsql_tables', '_dpsql_bounds', '_dpsql_domains')`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the state file has %d policy tables (%v)", n, err)
	}
}

// TestPostgresAdoptsTheStateFilesPolicies: policies a state file kept
// (earlier versions) move into PostgreSQL at the next open, once, and
// apply from then on.
func TestPostgresAdoptsTheStateFilesPolicies(t *testing.T) {
	h := newHarness(t)
	parallel(t)
	srv, state, raw := olderStateFile(h, `CREATE TABLE sales (shop bigint, price double precision); INSERT INTO sales SELECT i % 2, 50 FROM generate_series(1, 10) i`)
	ctx := context.Background()
	if err := catalog.Init(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO _dpsql_tables (table_name, public, has_policy, unit_column, max_groups, max_rows) VALUES ('sales', 0, 1, NULL, 1, 1);
		INSERT INTO _dpsql_bounds VALUES ('sales', 'price', 0, 10);
		INSERT INTO _dpsql_domains VALUES ('sales', 'shop', 0, 0), ('sales', 'shop', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	// An analyst's open adopts nothing (what a state file says could make
	// a table public) and is refused: read without its policies, a table
	// with a unit would count each row as a unit. The owner's adopts.
	if _, err := dpsql.Open(state, dpsql.Options{Epsilon: 1, Postgres: srv.DSN()}); !errors.Is(err, dpsql.ErrNoDatabase) || !strings.Contains(err.Error(), "the owner opens it once") {
		t.Errorf("an analyst opened a state file whose policies are not adopted: %v", err)
	}
	var n int
	if err := pgSetup(t, srv, `SELECT 1`).QueryRow(`SELECT COUNT(*) FROM dpsql.tables`).Scan(&n); err != nil || n != 0 {
		t.Errorf("an analyst's open adopted policies: %d rows (%v)", n, err)
	}
	for round := range 2 {
		var notes []string
		e := h.open(state, dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN(), Notify: func(n string) { notes = append(notes, n) }})
		moved := slices.Contains(notes, "moved the state file's policies into PostgreSQL (schema dpsql): sales")
		if moved != (round == 0) {
			t.Errorf("open %d: notes %q", round, notes)
		}
		mustRun(t, e, `SET BUDGET epsilon = 10`)
		r := query(t, e, `SELECT shop, SUM(price) FROM sales GROUP BY shop`)
		if !reflect.DeepEqual(r.Rows, [][]any{{int64(0), 50.0}, {int64(1), 50.0}}) {
			t.Errorf("open %d: %v (the adopted bounds clip 50 to 10, five rows per shop)", round, r.Rows)
		}
		e.Close()
	}
	// Once adopted, an analyst opens it.
	h.open(state, dpsql.Options{Epsilon: 1, Postgres: srv.DSN()})
}

// olderStateFile starts a server with the given tables and makes a state
// file for it, opened raw (as SQLite) so that a test can write into it
// what an earlier version kept there.
func olderStateFile(h *harness, setup string) (srv *pgtest.Server, state string, raw *sql.DB) {
	t := h.t
	t.Helper()
	srv = pgtest.StartT(t)
	pgSetup(t, srv, setup)
	state = filepath.Join(t.TempDir(), "old.dpsql")
	h.open(state, dpsql.Options{Owner: true, Postgres: srv.DSN()}).Close()
	raw, err := sql.Open("sqlite", "file:"+state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return srv, state, raw
}

// TestDefaultStateFile: without a named state file, one per user, host,
// port and database, whatever the password or the form of the connection
// string, in the user's cache directory.
func TestDefaultStateFile(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	name := func(dsn string) string {
		t.Helper()
		p, err := dpsql.DefaultStateFile(dsn)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := name("postgres://ann@db.example:5432/shop")
	if !strings.HasPrefix(filepath.Base(base), "shop-") || filepath.Base(filepath.Dir(base)) != "dpsql" {
		t.Errorf("state file %s", base)
	}
	for _, same := range []string{"postgres://ann:secret@db.example/shop", "host=db.example user=ann dbname=shop password=other", "postgresql://ann@db.example:5432/shop?sslmode=disable"} {
		if got := name(same); got != base {
			t.Errorf("%s: %s, want %s", same, got, base)
		}
	}
	for _, other := range []string{"postgres://bob@db.example/shop", "postgres://ann@db.example/shop2", "postgres://ann@db.example:5433/shop", "postgres://ann@elsewhere/shop"} {
		if got := name(other); got == base {
			t.Errorf("%s shares %s", other, base)
		}
	}
	if _, err := dpsql.DefaultStateFile("postgres://%zz"); err == nil {
		t.Error("a malformed connection string was accepted")
	}
	if _, _, err := dpsql.ParseDSN("file:?postgres=" + url.QueryEscape("postgres://ann@db/shop")); err != nil {
		t.Errorf("driver DSN without a state file: %v", err)
	}
	if _, _, err := dpsql.ParseDSN("file:?epsilon=1"); err == nil {
		t.Error("driver DSN without a path or a PostgreSQL database was accepted")
	}
}

// TestPostgresPushesExactComparisons: in a scan through the mirror (one
// the PostgreSQL printer declines), a comparison of an integer column
// with an integer, or of a float column with a number, reaches PostgreSQL
// as a parameter of the scan's WHERE (never as text), once per scan;
// other comparisons do not.
func TestPostgresPushesExactComparisons(t *testing.T) {
	parallel(t)
	h := newHarness(t)
	h.knobs.PostgresGrouping = knobs.GroupNever // the mirror's scans are under test, not the compiled measurement
	defer func() { h.knobs.PostgresGrouping = 0 }()
	log := h.log
	native, pg, _ := h.bothBackends()
	for _, c := range []struct {
		query, where string
	}{
		{`SELECT COUNT(*) FROM t WHERE x > 4242 AND i <= 700`, ` WHERE "x" > $1::int8 AND "i" <= $2::int8`},
		{`SELECT COUNT(*) FROM t WHERE x > 42.5`, ``},
		{`SELECT COUNT(*) FROM t WHERE g = 'a4242'`, ` WHERE "g"::text COLLATE "C" = $1::text`},
		{`SELECT COUNT(*) FROM t WHERE g LIKE '%a4242'`, ``},
		// SQLite turns a LIKE prefix into a range wide enough for its
		// case-insensitive match ('A' ≤ g < 'b' here) and offers it.
		{`SELECT COUNT(*) FROM t WHERE g LIKE 'a%'`, ` WHERE "g"::text COLLATE "C" >= $1::text AND "g"::text COLLATE "C" < $2::text`},
		{`SELECT COUNT(*) FROM visits WHERE day = 4243`, ` WHERE "day" = $1::int8`},
		{`SELECT COUNT(*) FROM t WHERE y < 42.5 AND x > 4242`, ` WHERE "y" < $1::float8 AND "x" > $2::int8`},
		{`SELECT COUNT(*) FROM visits WHERE cost > 4242`, ` WHERE "cost" > $1::float8`},
		// An IN list would make SQLite scan once per value: it is left to
		// SQLite, and the other comparisons are sent, in one scan.
		{`SELECT COUNT(*) FROM t WHERE g IN ('a4242', 'b4242', 'c4242') AND x > 4242`, ` WHERE "x" > $1::int8`},
		{`SELECT COUNT(*) FROM t WHERE x IN (4242, 4243)`, ``},
	} {
		log.take()
		a, b := query(t, native, c.query), query(t, pg, c.query)
		if !reflect.DeepEqual(a.Rows, b.Rows) {
			t.Errorf("%s: %v on SQLite, %v on PostgreSQL", c.query, a.Rows, b.Rows)
		}
		scans := 0
		for _, q := range log.take() {
			if !strings.Contains(q, `FROM "public".`) {
				continue
			}
			scans++
			if strings.Contains(q, "4242") || strings.Contains(q, "42.5") || c.where == "" && strings.Contains(q, "WHERE") || c.where != "" && !strings.Contains(q, c.where) {
				t.Errorf("%s sent %s (want the filter %q)", c.query, q, c.where)
			}
		}
		if scans != 1 {
			t.Errorf("%s: %d scans", c.query, scans)
		}
	}
}

// TestPostgresSchemaNeedsARight: a role that may neither create schemas
// nor finds one made for it is told what the database's owner runs.
func TestPostgresSchemaNeedsARight(t *testing.T) {
	parallel(t)
	srv := pgtest.StartT(t)
	pgSetup(t, srv, `CREATE TABLE sales (x int); CREATE ROLE "Clerk" LOGIN; GRANT SELECT ON sales TO "Clerk"`)
	clerk := strings.Replace(srv.DSN(), "user=dpsql", "user=Clerk", 1)
	_, err := dpsql.Open(filepath.Join(t.TempDir(), "s.dpsql"), dpsql.Options{Owner: true, Postgres: clerk})
	if err == nil || !strings.Contains(err.Error(), `CREATE SCHEMA dpsql AUTHORIZATION "Clerk"`) {
		t.Errorf("open without the right to make the schema: %v", err)
	}
}

// TestPostgresDriverWithoutStateFile: through database/sql, a DSN with no
// path and a PostgreSQL database uses the default state file.
func TestPostgresDriverWithoutStateFile(t *testing.T) {
	srv := pgtest.StartT(t)
	pgSetup(t, srv, `CREATE TABLE sales (x int); INSERT INTO sales SELECT generate_series(1, 100)`)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	db, err := sql.Open("dpsql", "file:?role=owner&epsilon=1&postgres="+url.QueryEscape(srv.DSN()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{`CREATE PRIVACY POLICY ON sales`, `SET BUDGET epsilon = 5`} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	var n float64
	if err := db.QueryRow(`SELECT COUNT(*) + 0.5 FROM sales`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(cache, "dpsql", "postgres-*.dpsql")); len(files) != 1 {
		t.Errorf("state files: %v", files)
	}
}

// TestPostgresMeasuresWhereTheDataIs: a scan of one table whose plan
// the PostgreSQL printer compiles runs in PostgreSQL as one statement
// (measuresql) with the same exact values as the scan through the
// mirror: NULLs skipped, NaN read as NULL, extreme values clipped, keys
// compared as bytes, booleans as 0/1. What the printer does not read as
// the mirror does (a text key with an integer domain) is scanned as
// before.
func TestPostgresMeasuresWhereTheDataIs(t *testing.T) {
	parallel(t)
	h := newHarness(t)
	srv := pgtest.StartT(t)
	pgSetup(t, srv, `CREATE TABLE n (a int2, b int4, c int8, f float8, ok bool, g varchar, k int4, digits text);
		INSERT INTO n SELECT i % 300 - 150, i * 37, i * 1000003 - 900000000, i / 7.0, i % 3 = 0,
			(ARRAY['a', 'b', 'B', 'c', NULL, 'a '])[1 + i % 6], i % 5 - 1, (i % 4)::text FROM generate_series(1, 1500) i;
		INSERT INTO n VALUES (-32768, -2147483648, -9223372036854775808, 'NaN', NULL, 'a', 1, '1'), (32767, 2147483647, 9223372036854775807, 'Infinity', true, 'b', 2, '2'),
			(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), (NULL, 5, NULL, 0.5, false, 'c', 3, '01')`)
	e := h.open(filepath.Join(t.TempDir(), "n.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	mustRun(t, e, `CREATE PRIVACY POLICY ON n;
		ALTER PRIVACY POLICY ON n SET BOUNDS a (-100, 100);
		ALTER PRIVACY POLICY ON n SET BOUNDS b (-5, 60000);
		ALTER PRIVACY POLICY ON n SET BOUNDS c (-1000, 1000);
		ALTER PRIVACY POLICY ON n SET BOUNDS f (0, 1);
		ALTER PRIVACY POLICY ON n SET BOUNDS ok (0, 1);
		ALTER PRIVACY POLICY ON n SET DOMAIN g ('a', 'b', 'c', 'zz');
		ALTER PRIVACY POLICY ON n SET DOMAIN k (1, 2, 3, 0, 9);
		ALTER PRIVACY POLICY ON n SET DOMAIN digits (1, 2);
		ALTER PRIVACY POLICY ON n SET DOMAIN f (0.5);
		SET BUDGET epsilon = 1000`)
	log := h.log
	defer func() { h.knobs.PostgresGrouping = 0 }()
	// Σ clip(c, -1000, 1000), by hand: rows i·1000003 − 900000000 for
	// i = 1..1500 (NULLs skipped), and the two extremes.
	var sumC int64
	for i := int64(1); i <= 1500; i++ {
		sumC += min(max(i*1000003-900000000, -1000), 1000)
	}
	sumC += -1000 + 1000
	for _, c := range []struct {
		query    string
		compiled bool
		check    func(row []any) bool
	}{
		{`SELECT COUNT(*), COUNT(a), SUM(a), AVG(b), SUM(c) FROM n`, true, func(row []any) bool {
			return row[0] == int64(1504) && row[1] == int64(1502) && row[4] == float64(sumC)
		}},
		{`SELECT SUM(c, contribution_bounds_per_row => (-3, 7)), COUNT(c) FROM n`, true, nil},
		// NaN is NULL in SQLite: 1502 values, where PostgreSQL's COUNT
		// counts 1503 (the compiled statement guards it).
		{`SELECT COUNT(f), AVG(f) FROM n`, true, func(row []any) bool { return row[0] == int64(1502) }},
		{`SELECT SUM(ok), COUNT(ok) FROM n`, true, func(row []any) bool { return row[1] == int64(1502) }},
		{`SELECT SUM(c) FROM n WHERE a > 0`, true, nil},
		// Keys with public domains: text compared as bytes ('B', 'a '
		// are not 'b', 'a'), integers exactly; groups without rows and
		// NULL keys as in the scan.
		{`SELECT g, COUNT(*), SUM(c), AVG(a) FROM n GROUP BY g`, true, nil},
		{`SELECT k, g, COUNT(b), SUM(b) FROM n GROUP BY k, g`, true, nil},
		// A NULL key is in no group, though 0 is in k's domain.
		{`SELECT k, COUNT(*) FROM n GROUP BY k`, true, nil},
		// A text column with an integer domain (SQLite compares '1' = 1),
		// a float key: scanned.
		{`SELECT digits, COUNT(*) FROM n GROUP BY digits`, false, func(row []any) bool { return row[1] == int64(376) }},
		{`SELECT f, COUNT(*) FROM n GROUP BY f`, true, nil},
		{`SELECT SUM(c + 0) FROM n`, false, nil},
	} {
		var answers [2][][]any
		for i, mode := range []int{0, knobs.GroupNever} {
			h.knobs.PostgresGrouping = mode
			log.take()
			answers[i] = query(t, e, c.query).Rows
			aggregated := counting(log.take(), compiledMark) > 0
			if aggregated != (c.compiled && mode == 0) {
				t.Errorf("%s (grouping mode %d): aggregated in PostgreSQL: %v", c.query, mode, aggregated)
			}
		}
		if !reflect.DeepEqual(answers[0], answers[1]) {
			t.Errorf("%s: %v aggregated in PostgreSQL, %v scanned", c.query, answers[0], answers[1])
		}
		// EXPLAIN shows the statement that runs: PostgreSQL's when it
		// compiles (the reference evaluator's after it), else the
		// reference evaluator's.
		h.knobs.PostgresGrouping = 0
		var backend, reference string
		for _, row := range query(t, e, "EXPLAIN "+c.query).Rows {
			switch row[0] {
			case "backend SQL":
				backend = row[1].(string)
			case "reference SQL":
				reference = row[1].(string)
			}
		}
		if c.compiled != (strings.Contains(backend, compiledMark) && !strings.Contains(backend, "dpsql_measure(") && strings.Contains(reference, "dpsql_measure(")) {
			t.Errorf("EXPLAIN %s (compiled %v): backend SQL %.100q, reference SQL %.100q", c.query, c.compiled, backend, reference)
		}
		if c.check != nil && !c.check(answers[0][0]) {
			t.Errorf("%s: %v", c.query, answers[0])
		}
	}
}

// TestPostgresNativeAggregatesMatchScans: random tables, policies and
// queries (keys over public domains, counts, sums and averages of int2,
// int4 and int8 columns with random bounds, extremes and NULLs) give
// exactly the same answers, with zero noise, whether PostgreSQL
// aggregates them natively or the rows are scanned through SQLite.
func TestPostgresNativeAggregatesMatchScans(t *testing.T) {
	parallel(t)
	h := newHarness(t)
	srv := pgtest.StartT(t)
	r := rand.New(rand.NewPCG(13, 17))
	extremes := []string{"-32768", "32767", "-2147483648", "2147483647", "-9223372036854775808", "9223372036854775807", "NULL", "0"}
	value := func(max int64, typ string) string {
		switch r.IntN(10) {
		case 0:
			v := extremes[r.IntN(len(extremes))]
			if typ == "int2" && len(v) > 6 || typ == "int4" && len(v) > 11 {
				return "NULL"
			}
			return v
		case 1:
			return "NULL"
		}
		return strconv.FormatInt(r.Int64N(2*max+1)-max, 10)
	}
	letters := []string{"'a'", "'b'", "'B'", "'a '", "''", "'é'", "NULL"}
	var rows []string
	for i := 0; i < 600; i++ {
		rows = append(rows, fmt.Sprintf("(%s, %s, %s, %s, %s)", value(300, "int2"), value(70000, "int4"), value(1<<40, "int8"), letters[r.IntN(len(letters))], value(3, "int4")))
	}
	pgSetup(t, srv, `CREATE TABLE r (a int2, b int4, c int8, g text, k int4); INSERT INTO r VALUES `+strings.Join(rows, ", "))
	e := h.open(filepath.Join(t.TempDir(), "r.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	bound := func() (int64, int64) {
		lo, hi := r.Int64N(131071)-65535, r.Int64N(131071)-65535
		return min(lo, hi), max(lo, hi)
	}
	policy := []string{"CREATE PRIVACY POLICY ON r", "SET BUDGET epsilon = 100000",
		`ALTER PRIVACY POLICY ON r SET DOMAIN g ('a', 'B', '', 'é', 'zz')`, `ALTER PRIVACY POLICY ON r SET DOMAIN k (-3, 0, 1, 2, 7)`}
	for _, col := range []string{"a", "b", "c"} {
		lo, hi := bound()
		policy = append(policy, fmt.Sprintf("ALTER PRIVACY POLICY ON r SET BOUNDS %s (%d, %d)", col, lo, hi))
	}
	mustRun(t, e, strings.Join(policy, ";\n"))
	log := h.log
	defer func() { h.knobs.PostgresGrouping = 0 }()
	aggregated := 0
	for q := 0; q < 80; q++ {
		var keys, items []string
		for _, k := range []string{"g", "k"} {
			if r.IntN(2) == 0 {
				keys = append(keys, k)
			}
		}
		items = append(items, keys...)
		for n := 1 + r.IntN(3); n > 0; n-- {
			col := []string{"a", "b", "c"}[r.IntN(3)]
			switch r.IntN(5) {
			case 0:
				items = append(items, "COUNT(*)")
			case 1:
				items = append(items, "COUNT("+col+")")
			case 2:
				items = append(items, "SUM("+col+")")
			case 3:
				items = append(items, "AVG("+col+")")
			default:
				lo, hi := bound()
				items = append(items, fmt.Sprintf("SUM(%s, contribution_bounds_per_row => (%d, %d))", col, lo, hi))
			}
		}
		stmt := "SELECT " + strings.Join(items, ", ") + " FROM r"
		if len(keys) > 0 {
			stmt += " GROUP BY " + strings.Join(keys, ", ")
		}
		var answers [2][][]any
		for i, mode := range []int{0, knobs.GroupNever} {
			h.knobs.PostgresGrouping = mode
			log.take()
			answers[i] = query(t, e, stmt).Rows
			if mode == 0 && counting(log.take(), compiledMark) > 0 {
				aggregated++
			}
		}
		if !reflect.DeepEqual(enginetest.RowSet(answers[0]), enginetest.RowSet(answers[1])) {
			t.Errorf("%s:\naggregated in PostgreSQL %v\nscanned                  %v", stmt, answers[0], answers[1])
		}
	}
	if aggregated < 60 {
		t.Errorf("only %d of 80 queries were aggregated in PostgreSQL", aggregated)
	}
}
