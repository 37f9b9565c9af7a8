//go:build cgo

package dpsql_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/ducktest"
)

// ordersRows fills orders with 1,000 units, one row each; with bad, the
// row of unit 617 is updated so that reading its generated column raises
// (DuckDB checks a generated column's expression on INSERT, not on
// UPDATE); without unit, unit 617 has no row (a neighbour).
func ordersRows(bad, withUnit bool) []string {
	where := ""
	if !withUnit {
		where = " WHERE range <> 617"
	}
	stmts := []string{`INSERT INTO orders (uid, region, price, qty, t, tags, s)
		SELECT range, 'r' || (range % 4), range % 100, 1 + range % 3, CASE WHEN range % 2 = 0 THEN 'low' ELSE 'high' END, [range], {'a': range}
		FROM range(1000)` + where}
	if bad && withUnit {
		stmts = append(stmts, `UPDATE orders SET price = 100000, qty = 100000 WHERE uid = 617`)
	}
	return stmts
}

// duckFile makes a DuckDB file from statements.
func duckFile(t *testing.T, name string, stmts ...string) string {
	t.Helper()
	duck := filepath.Join(t.TempDir(), name+".duckdb")
	if err := ducktest.Exec(context.Background(), duck, stmts...); err != nil {
		t.Fatal(err)
	}
	return duck
}

// bisectionQueries are the statements an analyst would send to find a row
// whose reading raises: filters that select it or not, on every column.
func bisectionQueries() []string {
	var qs []string
	for _, lo := range []int{0, 500, 600, 610, 615, 617, 618, 700, 999} {
		qs = append(qs,
			fmt.Sprintf("SELECT COUNT(*) FROM orders WHERE uid >= %d", lo),
			fmt.Sprintf("SELECT SUM(price), AVG(qty) FROM orders WHERE uid BETWEEN %d AND %d", lo, lo+1),
			fmt.Sprintf("SELECT region, COUNT(*), SUM(qty) FROM orders WHERE uid < %d GROUP BY region", lo))
	}
	return append(qs,
		"SELECT COUNT(*) FROM orders WHERE price > 99999",
		"SELECT region, AVG(price) FROM orders WHERE region = 'r1' GROUP BY region",
		"SELECT COUNT(*), SUM(price), VARIANCE(qty) FROM orders",
		"SELECT SUM(total) FROM orders",
		"SELECT COUNT(*) FROM orders WHERE total > 0",
		"SELECT COUNT(*) FROM orders WHERE note = 'n'",
		"SELECT COUNT(*) FROM order_totals",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-6) t, COUNT(*) FROM orders GROUP BY t ORDER BY t",
	)
}

// openOrders opens owner and analyst engines over a DuckDB file whose
// orders table has a policy with the unit uid.
func openOrders(t *testing.T, duck string, k *knobs.Knobs) *dpsql.Engine {
	t.Helper()
	owner := openDuck(t, duck, true, k, nil)
	mustRun(t, owner, `SET BUDGET epsilon = 1e6, delta = 0.5;
		CREATE PRIVACY POLICY ON orders OPTIONS (privacy_unit_column = uid, max_groups_contributed = 10, max_rows_contributed = 10);
		ALTER PRIVACY POLICY ON orders SET BOUNDS price (0, 1000000);
		ALTER PRIVACY POLICY ON orders SET BOUNDS qty (0, 1000000);
		ALTER PRIVACY POLICY ON orders SET DOMAIN region ('r0', 'r1', 'r2', 'r3')`)
	owner.Close()
	e := openDuck(t, duck, false, k, nil)
	mustRun(t, e, "SET epsilon = 1")
	return e
}

// outcome is a statement's success or its error, without the answer.
func outcome(e *dpsql.Engine, q string) string {
	if s := answer(e, q); strings.HasPrefix(s, "error: ") {
		return s
	}
	return "answered"
}

// TestDuckDBFileContentsCannotMakeAQueryFail: whatever the owner's
// DuckDB file holds — a generated column one stored row makes raise,
// macros that shadow every built-in dpsql calls, table macros named like
// the catalog's functions, a view — a private query's outcome does not
// depend on the rows: on a database with the bad row and on its neighbour
// without that row's unit, every statement of a bisection succeeds or
// fails alike (and the only failures are for names that do not exist),
// compiled and through the reference evaluator; and the answers equal
// those over a plain file with the same stored values and no such schema.
func TestDuckDBFileContentsCannotMakeAQueryFail(t *testing.T) {
	parallel(t)
	withBad := duckFile(t, "bad", append(append([]string{}, ducktest.HostileSchema...), ordersRows(true, true)...)...)
	neighbour := duckFile(t, "neighbour", append(append([]string{}, ducktest.HostileSchema...), ordersRows(true, false)...)...)
	plain := duckFile(t, "plain", `CREATE TYPE tier AS ENUM ('low', 'high')`,
		`CREATE TABLE orders (uid BIGINT, region VARCHAR, price INTEGER, qty INTEGER, t tier, tags INTEGER[], s STRUCT(a INTEGER))`,
		`INSERT INTO orders SELECT range, 'r' || (range % 4), range % 100, 1 + range % 3, CASE WHEN range % 2 = 0 THEN 'low' ELSE 'high' END, [range], {'a': range} FROM range(1000)`,
		`UPDATE orders SET price = 100000, qty = 100000 WHERE uid = 617`)
	k := &knobs.Knobs{FixedRandomness: true}
	bad, nb, ref := openOrders(t, withBad, k), openOrders(t, neighbour, k), openOrders(t, plain, k)
	for _, reference := range []bool{false, true} {
		for _, q := range bisectionQueries() {
			k.ReferenceOnly = reference
			got, other, want := answer(bad, q), outcome(nb, q), answer(ref, q)
			if o := outcome(bad, q); o != other {
				t.Errorf("reference=%v %s: outcome %q on the database with the row, %q on its neighbour", reference, q, o, other)
			}
			if strings.HasPrefix(got, "error: ") {
				if !strings.Contains(got, "no such") && !strings.Contains(got, "unknown") && !strings.Contains(got, "not found") {
					t.Errorf("reference=%v %s: %s (only unknown names may fail)", reference, q, got)
				}
				continue
			}
			if got != want {
				t.Errorf("reference=%v %s:\nhostile file: %s\nplain file:   %s", reference, q, got, want)
			}
		}
	}
	k.ReferenceOnly = false
	if n := k.Compiled.Load(); n < 20 {
		t.Errorf("only %d scans ran compiled", n)
	}
	if n := k.CompiledFailed.Load(); n > 0 {
		t.Errorf("%d compiled statements failed in DuckDB", n)
	}
	// The generated column, and the default beside it, are not read; the
	// stored columns of every built-in type are.
	for q, wantErr := range map[string]bool{
		"SELECT COUNT(total) FROM orders": true, "SELECT COUNT(note) FROM orders": true,
		"SELECT COUNT(t) FROM orders": false, "SELECT COUNT(tags) FROM orders": false, "SELECT COUNT(s) FROM orders": false,
	} {
		if got := outcome(bad, q); strings.HasPrefix(got, "error: ") != wantErr {
			t.Errorf("%s: %s", q, got)
		}
	}
}

// TestDuckDBComparesTextAsBytes: a column declared with a collation
// (NOCASE, NOACCENT) is grouped, filtered, bounded and released byte by
// byte in the compiled statement, as in the reference evaluator: a lone
// row spelled "Flu-Alice" is its own group (and below partition
// selection's threshold) beside 200 rows of "FLU-ALICE", and units that
// differ only in case are different units.
func TestDuckDBComparesTextAsBytes(t *testing.T) {
	parallel(t)
	duck := duckFile(t, "collated",
		`CREATE TABLE visits (uid VARCHAR COLLATE NOCASE, diag VARCHAR COLLATE NOCASE, town VARCHAR COLLATE NOACCENT, n INTEGER)`,
		`INSERT INTO visits SELECT 'u' || range, 'FLU-ALICE', CASE WHEN range % 2 = 0 THEN 'Malmo' ELSE 'Malmö' END, range % 10 FROM range(200)`,
		`INSERT INTO visits VALUES ('U1', 'Flu-Alice', 'Malmö', 7), ('U2', 'flu-alice', 'MALMO', 3)`)
	k := &knobs.Knobs{FixedRandomness: true}
	owner := openDuck(t, duck, true, k, nil)
	mustRun(t, owner, `SET BUDGET epsilon = 1e6, delta = 0.5;
		CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 1);
		ALTER PRIVACY POLICY ON visits SET BOUNDS n (0, 10)`)
	owner.Close()
	e := openDuck(t, duck, false, k, nil)
	queries := []string{
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-9) diag, COUNT(*) FROM visits GROUP BY diag ORDER BY diag",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-9) town, COUNT(*), SUM(n) FROM visits GROUP BY town ORDER BY town",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM visits WHERE diag = 'Flu-Alice'",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM visits WHERE diag IN ('flu-alice', 'x')",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM visits WHERE town BETWEEN 'Malmo' AND 'Malmo'",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*), SUM(n) FROM visits WHERE uid = 'u1'",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(DISTINCT uid) FROM visits",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM visits WHERE town > 'MALMO'",
	}
	for _, q := range queries {
		k.ReferenceOnly = true
		want := answer(e, q)
		k.ReferenceOnly = false
		if got := answer(e, q); got != want {
			t.Errorf("%s:\ncompiled:  %s\nreference: %s", q, got, want)
		}
	}
	if got := answer(e, queries[0]); strings.Contains(got, "Flu-Alice") || strings.Contains(got, "flu-alice") {
		t.Errorf("a lone row's spelling was released: %s", got)
	}
	if n := k.Compiled.Load(); n < int64(len(queries))-2 { // distinct counts under units are not compiled
		t.Errorf("only %d of %d scans ran compiled", n, len(queries))
	}
	if n := k.CompiledFailed.Load(); n > 0 {
		t.Errorf("%d compiled statements failed in DuckDB", n)
	}
}

// TestRefusedJoinDoesNoDataWork: a join the budget refuses is refused
// before the mirrored tables it reads are copied (work whose duration
// grows with the table): refused on 1,000,000 rows as fast as on 1,000,
// however often it is asked.
func TestRefusedJoinDoesNoDataWork(t *testing.T) {
	parallel(t)
	refusal := func(rows int) time.Duration {
		duck := duckFile(t, fmt.Sprintf("j%d", rows),
			fmt.Sprintf(`CREATE TABLE visits AS SELECT range AS uid, range %% 7 AS site, range %% 100 AS n FROM range(%d)`, rows),
			`CREATE TABLE sites AS SELECT range AS site, 'site ' || range AS name FROM range(7)`)
		k := &knobs.Knobs{}
		owner := openDuck(t, duck, true, k, nil)
		mustRun(t, owner, `SET BUDGET epsilon = 1; ALTER TABLE sites SET PUBLIC;
			CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 1)`)
		e := openDuck(t, duck, false, k, nil)
		const q = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2) COUNT(*) FROM visits v JOIN sites s ON v.site = s.site WHERE s.name = 'site 3'"
		best := time.Hour
		for i := 0; i < 5; i++ {
			start := time.Now()
			got := answer(e, q)
			if !strings.Contains(got, "budget exhausted") {
				t.Fatalf("%d rows: %s, want a refusal", rows, got)
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	small, large := refusal(1000), refusal(1000000)
	t.Logf("refused join: %v on 1,000 rows, %v on 1,000,000", small, large)
	if large > 10*small+100*time.Millisecond {
		t.Errorf("a refused join took %v on 1,000,000 rows, %v on 1,000: the refusal waited for work that grows with the table", large, small)
	}
}
