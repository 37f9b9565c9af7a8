package audit_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testopts"
)

// neighbourTables are STRICT tables of two SQLite files that differ by one
// unit (uid 7 of people and orders): D has it, D′ does not. The public
// lookup table holds values at the edges of 64-bit integers and doubles,
// and NULLs; unit 7 holds values no other unit has (age 37, name 'zed',
// big 5e18).
const neighbourTables = `
CREATE TABLE people (uid INTEGER, age INTEGER, w REAL, name TEXT, big INTEGER) STRICT;
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 30)
INSERT INTO people SELECT i, 20 + i % 10, (i % 7) / 10.0, 'p' || i, i * 1000 FROM s WHERE i <> 7;
CREATE TABLE orders (uid INTEGER, qty INTEGER, price REAL) STRICT;
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 90)
INSERT INTO orders SELECT i % 30 + 1, i % 50, i / 3.0 FROM s WHERE i % 30 + 1 <> 7;
CREATE TABLE lookup (k INTEGER, v INTEGER, f REAL, t TEXT) STRICT;
WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 100)
INSERT INTO lookup SELECT i, i * 1000, i + 0.1, 'k' || i FROM s;
INSERT INTO lookup VALUES (NULL, NULL, NULL, NULL), (37, 9223372036854775807, 1.7976931348623157e308, 'zed'),
  (-7, -9223372036854775808, -1.7976931348623157e308, ''), (5, 5, 9e999, 'k5');
`

// unitSeven is what D adds to D′.
const unitSeven = `
INSERT INTO people VALUES (7, 37, 0.1, 'zed', 5000000000000000000);
INSERT INTO orders VALUES (7, 3, 2.5), (7, 4, 0.1), (7, 5, 1e308);
`

// neighbourQueries join the private tables to the public one and to each
// other, with constants at and beyond the edges, NULLs, sums that only
// unit 7 takes past 64 bits, and predicates only unit 7 passes.
var neighbourQueries = []string{
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.v > 3000000000 AND p.age = 37`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.v >= 9223372036854775807 AND p.name = 'zed'`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.f > 1e308 AND p.age = 37`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.name = l.t WHERE l.t >= '' AND p.name = 'zed'`,
	`SELECT COUNT(*) FROM people p JOIN lookup l ON p.big = l.v WHERE p.age = 37`,
	`SELECT SUM(p.big, contribution_bounds_per_row => (-9007199254740992, 9007199254740992)) FROM people p WHERE p.age = 37`,
	`SELECT SUM(o.price, contribution_bounds_per_group => (-1099511627776, 1099511627776)) FROM orders o`,
	`SELECT VARIANCE(o.price, contribution_bounds_per_row => (-1e6, 1e6)) FROM orders o`,
	`SELECT COUNT(*) FROM people p JOIN orders o ON p.uid = o.uid WHERE o.qty > 3 AND p.age = 37`,
	`SELECT p.name, COUNT(*) FROM people p JOIN lookup l ON p.age = l.k WHERE l.t = 'zed' GROUP BY p.name`,
	`SELECT name, COUNT(*), AVG(w) FROM people GROUP BY name`,
	`SELECT COUNT(*) FROM people WHERE age > 3000000000 OR name LIKE 'z%'`,
}

// TestSQLiteOutcomeIgnoresPrivateRows runs each of neighbourQueries on
// neighbouring SQLite files (D with unit 7, D′ without), measured by the
// compiled SQLite statement, and checks the backend invariant: the
// outcome — an answer, or an error and its text — is the same on both,
// every query runs compiled on both, and the statement EXPLAIN shows
// (what runs, with the fresh bounding key shown as 0) is the same.
func TestSQLiteOutcomeIgnoresPrivateRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := &knobs.Knobs{CompileSQLite: true}
	engines := map[string]*dpsql.Engine{}
	for _, name := range []string{"D", "D'"} {
		path := filepath.Join(t.TempDir(), "n.db")
		setup := neighbourTables
		if name == "D" {
			setup += unitSeven
		}
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(setup); err != nil {
			t.Fatal(fmt.Errorf("%s: %w", setup, err))
		}
		db.Close()
		owner, err := dpsql.Open(path, dpsql.Options{Owner: true})
		if err != nil {
			t.Fatal(err)
		}
		enginetest.Run(t, owner, `CREATE PRIVACY POLICY ON people OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 2);
			CREATE PRIVACY POLICY ON orders OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 2);
			ALTER TABLE lookup SET PUBLIC;
			ALTER PRIVACY POLICY ON people SET DOMAIN name ('zed', 'k5');
			SET BUDGET epsilon = 1000, delta = 1e-6`)
		owner.Close()
		e, err := dpsql.Open(path, dpsql.Options{Epsilon: 1e-6, NoCache: true, Testing: &testopts.Options{Knobs: k}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		engines[name] = e
	}
	for _, q := range neighbourQueries {
		var outcome, shown [2]string
		for i, name := range []string{"D", "D'"} {
			before := k.Compiled.Load()
			_, err := engines[name].Query(ctx, q)
			outcome[i] = "answered"
			if err != nil {
				outcome[i] = "error: " + err.Error()
			}
			if k.Compiled.Load() == before {
				t.Errorf("%s on %s: not compiled", q, name)
			}
			res, err := engines[name].Query(ctx, "EXPLAIN "+q)
			if err != nil {
				t.Fatalf("EXPLAIN %s: %v", q, err)
			}
			for _, row := range res.Rows {
				if row[0] == "backend SQL" || row[0] == "engine" {
					shown[i] += fmt.Sprint(row[1]) + "\n"
				}
			}
		}
		if outcome[0] != outcome[1] {
			t.Errorf("%s\n  on D:  %s\n  on D′: %s", q, outcome[0], outcome[1])
		}
		if shown[0] != shown[1] || !strings.Contains(shown[0], "one SQLite statement") {
			t.Errorf("%s runs different statements\n  on D:\n%s\n  on D′:\n%s", q, shown[0], shown[1])
		}
	}
	if n := k.CompiledFailed.Load(); n > 0 {
		t.Errorf("%d compiled statements failed in SQLite", n)
	}
}
