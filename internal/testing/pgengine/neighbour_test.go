package pgengine_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

// neighbourTables are two PostgreSQL databases that differ by one unit
// (uid 7 of people and orders): D has it, D′ does not. The public lookup
// table has int2/int4/float4/numeric/text columns with values at their
// types' edges and NULLs; people has the same types, and unit 7 holds
// values no other unit has (age 37, small −7, name 'zed', big 5e9 — more
// than an int4 holds).
const neighbourTables = `
CREATE TABLE people (uid int8, age int4, small int2, w float4, amount numeric, name text, big int8);
INSERT INTO people SELECT i, 20 + i % 10, i % 5, (i % 7)::float4 / 10, i * 1.5, 'p' || i, i * 1000 FROM generate_series(1, 30) i WHERE i <> 7;
INSERT INTO people SELECT i, 21, 1, 0.5, 3, 'q', 21 FROM generate_series(31, 33) i;
CREATE TABLE orders (uid int8, qty int4, price float4);
INSERT INTO orders SELECT i % 30 + 1, i % 50, i / 3.0 FROM generate_series(1, 90) i WHERE i % 30 + 1 <> 7;
CREATE TABLE lookup (k int4, v int4, s int2, f float4, n numeric, t text);
INSERT INTO lookup SELECT i, i * 1000, i, i + 0.1, i, 'k' || i FROM generate_series(0, 100) i;
INSERT INTO lookup VALUES (NULL, NULL, NULL, NULL, NULL, NULL), (37, 2147483647, 32767, 3.4028235e38, 1e100, 'zed'),
  (-7, -2147483648, -32768, -3.4028235e38, -1e100, ''), (5, 0, 0, 'NaN', 'NaN', 'k5'), (5, 5, 5, 'Infinity', 0, 'k5');
`

// unitSeven is what D adds to D′.
const unitSeven = `
INSERT INTO people VALUES (7, 37, -7, 0.1, 12.5, 'zed', 5000000000);
INSERT INTO orders VALUES (7, 3, 2.5), (7, 4, 0.1);
`

// neighbourQueries join the private tables to the public one and to each
// other, with constants at and beyond each type's edges, NULLs, and
// predicates that only unit 7 passes.
var neighbourQueries = []string{
	// The review's attack: a constant wider than an int4 column, on the
	// inner side of a join that only unit 7's row reaches.
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.v > 3000000000 AND p.age = 37`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.v < -2147483649 AND p.age = 37`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.v <= 2147483647 AND p.age = 37`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.v >= -2147483648 AND p.name = 'zed'`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.small = l.k WHERE l.s > 40000 AND p.small = -7`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.small = l.k WHERE l.s >= -32768 AND p.small = -7`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.s = 32768 AND p.age = 37`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.v > 9223372036854775807 AND p.age = 37`,
	// float4: beyond its range, and a value float4 rounds.
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.f > 1e39 AND p.age = 37`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.f < 3.4028236e38 AND p.age = 37`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.f > 37.1 AND p.age = 37`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.f > 1e308 * 10 AND p.age = 37`,
	// numeric and text.
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.n > 1e300 AND p.age = 37`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.name = l.t WHERE l.t >= '' AND p.name = 'zed'`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.name = l.t WHERE l.t < 'zzzz' || char(0) AND p.age = 37`,
	// NULLs.
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.v > NULL AND p.age = 37`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.t IS NULL AND p.age = 37`,
	// The private row's own value reaches the inner side's comparison:
	// 5e9 does not fit lookup.v.
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.big = l.v WHERE p.age = 37`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.w = l.f WHERE p.age = 37`,
	// Two private tables; the public one first; a subquery.
	`SELECT COUNT(*) FROM people p JOIN orders o ON p.uid = o.uid WHERE o.qty > 3000000000 AND p.age = 37`,
	`SELECT COUNT(*) FROM orders o JOIN people p ON p.uid = o.uid WHERE o.price > 1e39 AND p.small = -7`,
	`SELECT COUNT(*) FROM lookup l JOIN people p ON p.age = l.k WHERE l.v > 3000000000 AND p.age = 37`,
	`SELECT COUNT(*) FROM (SELECT uid, COUNT(*) AS n FROM orders WHERE qty = 4 GROUP BY uid) AS o JOIN people p ON p.uid = o.uid WHERE p.age = 37`,
	`SELECT l.t, COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.s < 70000 AND p.name = 'zed' GROUP BY l.t`,
	// One table: its constants alone reach PostgreSQL.
	`SELECT COUNT(*) FROM people WHERE age > 3000000000 OR name = 'zed'`,
	`SELECT COUNT(*) FROM people WHERE w > 1e39 AND small = -7`,
}

// TestPostgresOutcomeIgnoresPrivateRows runs each of neighbourQueries on
// neighbouring PostgreSQL databases (D with unit 7, D′ without) and
// checks the backend invariant: the outcome — an answer, or an error and
// its text — is the same on both, and so is the list of statements sent
// to PostgreSQL (every one, in order; their parameters are not compared).
// Before the invariant held, a pushed constant wider than its column
// failed the inner scan that only unit 7's row started, and the inner
// scan was sent only on D.
func TestPostgresOutcomeIgnoresPrivateRows(t *testing.T) {
	parallel(t)
	h := newHarness(t)
	srv := pgtest.StartT(t)
	ctx := context.Background()
	withUnit, err := srv.CreateDatabase(ctx, "with_unit")
	if err != nil {
		t.Fatal(err)
	}
	without, err := srv.CreateDatabase(ctx, "without_unit")
	if err != nil {
		t.Fatal(err)
	}
	engines := map[string]*dpsql.Engine{}
	for name, dsn := range map[string]string{"D": withUnit, "D'": without} {
		setup := neighbourTables
		if name == "D" {
			setup += unitSeven
		}
		pgExec(t, dsn, setup)
		e := h.open(filepath.Join(t.TempDir(), "state.dpsql"), dpsql.Options{Owner: true, Epsilon: 1e-6, NoCache: true, Postgres: dsn})
		mustRun(t, e, `CREATE PRIVACY POLICY ON people OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 2);
			CREATE PRIVACY POLICY ON orders OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 2);
			ALTER TABLE lookup SET PUBLIC;
			ALTER PRIVACY POLICY ON people SET DOMAIN name ('zed', 'k5');
			SET BUDGET epsilon = 1000, delta = 1e-6`)
		engines[name] = e
	}
	log := h.log
	for _, q := range neighbourQueries {
		var outcome, sent [2]string
		for i, name := range []string{"D", "D'"} {
			log.take()
			spentBefore := spent(t, engines[name])
			_, err := engines[name].Query(ctx, q)
			outcome[i] = "answered"
			if err != nil {
				outcome[i] = "error: " + err.Error()
			}
			if charged := spent(t, engines[name]) > spentBefore; err != nil && charged && !strings.Contains(err.Error(), "withheld") {
				t.Errorf("%s on %s: %v, and charged", q, name, err)
			}
			// Each query's hash key is fresh: the statements agree but for it.
			sent[i] = hashKey.ReplaceAllString(strings.Join(slices.DeleteFunc(log.take(), isCatalogRead), "\n"), "$1, KEY)")
		}
		if outcome[0] != outcome[1] {
			t.Errorf("%s\n  on D:  %s\n  on D′: %s", q, outcome[0], outcome[1])
		}
		if sent[0] != sent[1] {
			t.Errorf("%s sends different statements\n  on D:\n%s\n  on D′:\n%s", q, sent[0], sent[1])
		}
	}
}

// hashKey is the fresh key of a compiled statement's hash.
var hashKey = regexp.MustCompile(`(hash_record_extended\(ROW\([^()]*\)), -?[0-9]+\)`)

// isCatalogRead reports a statement about PostgreSQL's catalog (columns,
// statistics) rather than a scan of a table.
func isCatalogRead(q string) bool {
	return strings.HasPrefix(q, "SELECT a.attname") || strings.HasPrefix(q, "SELECT c.reltuples")
}

// pgExec runs statements on a PostgreSQL database.
func pgExec(t *testing.T, dsn, script string) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(script); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", script, err))
	}
}

// TestPostgresFloat4KeepsSQLitesRows: a comparison pushed on a float4
// column compares in float8, as SQLite compares the widened value: 0.1
// stored as float4 is 0.100000001…, greater than the double 0.1, so all
// 1,000 rows pass (compared in float4, none did).
func TestPostgresFloat4KeepsSQLitesRows(t *testing.T) {
	parallel(t)
	h := newHarness(t)
	srv := pgtest.StartT(t)
	pgSetup(t, srv, `CREATE TABLE f4 (x float4); INSERT INTO f4 SELECT 0.1 FROM generate_series(1, 1000)`)
	e := h.open(filepath.Join(t.TempDir(), "f4.dpsql"), dpsql.Options{Owner: true, Postgres: srv.DSN()})
	mustRun(t, e, `ALTER TABLE f4 SET PUBLIC`)
	log := h.log
	for q, want := range map[string]int64{
		`SELECT COUNT(*) FROM f4 WHERE x > 0.1`:                  1000,
		`SELECT COUNT(*) FROM f4 WHERE x = 0.1`:                  0,
		`SELECT COUNT(*) FROM f4 WHERE x <= 0.10000000149011612`: 1000,
	} {
		if got := query(t, e, q).Rows[0][0]; got != want {
			t.Errorf("%s: %v, want %d", q, got, want)
		}
	}
	if n := counting(log.take(), `"x" `); n != 3 {
		t.Errorf("%d of 3 comparisons pushed", n)
	}
}

// TestPostgresUnreadableTableCostsNothing: a joined table that dpsql's
// role may not read fails the query before its charge — whatever the
// rows — and the same way on every query.
func TestPostgresUnreadableTableCostsNothing(t *testing.T) {
	h := newHarness(t)
	parallel(t)
	srv := pgtest.StartT(t)
	pgSetup(t, srv, neighbourTables+unitSeven+`CREATE ROLE reader LOGIN; GRANT SELECT ON people, orders TO reader;
		CREATE SCHEMA dpsql AUTHORIZATION reader`)
	reader := strings.Replace(srv.DSN(), "user=dpsql", "user=reader", 1)
	e := h.open(filepath.Join(t.TempDir(), "r.dpsql"), dpsql.Options{Owner: true, Epsilon: 0.5, NoCache: true, Postgres: reader})
	mustRun(t, e, `CREATE PRIVACY POLICY ON people OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 2);
		ALTER TABLE lookup SET PUBLIC; SET BUDGET epsilon = 10`)
	for _, q := range []string{
		`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE p.age = 37`,
		`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE p.age = 99`,
	} {
		_, err := e.Query(context.Background(), q)
		if !errors.Is(err, exec.ErrRejected) {
			t.Errorf("%s: %v, want a rejection", q, err)
		}
	}
	if s := spent(t, e); s != 0 {
		t.Errorf("spent %g on rejected queries", s)
	}
	query(t, e, `SELECT COUNT(*) FROM people`)
	if s := spent(t, e); s != 0.5 {
		t.Errorf("spent %g, want 0.5", s)
	}
}
