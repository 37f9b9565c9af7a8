package totality_test

import (
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testopts"
)

// sqliteAdversarial makes a SQLite file at path with the STRICT table a
// (which the SQLite dialect compiles) holding the values that make a
// careless expression raise or round: the extremes of 64-bit integers,
// ±Inf, −0, the largest and smallest doubles, text that looks like a
// number, text with a NUL, huge text, NULLs; then the policy script pol.
func sqliteAdversarial(t *testing.T, pol string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "adv.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	big := strings.Repeat("y", 100000)
	if _, err := db.Exec(`CREATE TABLE a (uid INTEGER, i INTEGER, i64 INTEGER, f8 REAL, s TEXT, g TEXT) STRICT`); err != nil {
		t.Fatal(err)
	}
	rows := [][]any{
		{1, -128, int64(-9223372036854775808), math.Inf(1), "", "a"},
		{1, 127, int64(9223372036854775807), math.Inf(-1), "abc", "b"},
		{2, 0, 0, 1.7976931348623157e308, big, "a"},
		{2, nil, nil, nil, nil, nil},
		{3, -1, -1, math.Copysign(0, -1), "1e999", "c"},
		{3, 1, 1, -1.7976931348623157e308, "-1e999", "c"},
		{4, 5, 5, 4.9e-324, " 12.5e1x", nil},
		{nil, 5, 5, 2.5, "0x10", "a"},
		{5, 1, 9007199254740993, 1, "ABC", "A"},
		{5, 2, -9007199254740993, -2.5, "a\x00b", "b"},
		{6, 3, 4611686018427387904, 0.1, "12", "zz"},
		{7, 4, 2, 0.5, "a\x00c", "zz\x00x"},
	}
	for _, r := range rows {
		if _, err := db.Exec(`INSERT INTO a VALUES (?, ?, ?, ?, ?, ?)`, r...); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	owner, err := dpsql.Open(path, dpsql.Options{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	enginetest.Run(t, owner, `SET BUDGET epsilon = 1e6; `+pol)
	return path
}

// openSQLite opens the SQLite file path as an analyst with zero noise
// and the test knobs k; the test closes it.
func openSQLite(t *testing.T, path string, k *knobs.Knobs) *dpsql.Engine {
	t.Helper()
	e, err := dpsql.Open(path, dpsql.Options{Testing: &testopts.Options{Noise: testopts.ZeroNoise(), Knobs: k}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestSQLiteCompiledMeasurementIsTotal is the totality property on
// SQLite's own compiled measurement (backend/sqlite): over the
// adversarial STRICT table, every aggregate kind over every column, with
// declared bounds (at the edges of what the fixed-point sums allow),
// grouped and filtered, with and without units, succeeds and equals the
// reference evaluator's answer (zero noise, bounds no unit reaches).
// Half of the (column, aggregate, filter) triples run (by parity), which
// still runs every pair.
func TestSQLiteCompiledMeasurementIsTotal(t *testing.T) {
	t.Parallel()
	cols := []string{"i", "i64", "f8", "s"}
	aggs := slices.Concat(totalityAggs, []string{"SUM(%s * 2, contribution_bounds_per_row => (-300, 300))",
		"SUM(%s * 0.5 + 1, contribution_bounds_per_row => (-50, 50))", "SUM(ABS(%s), contribution_bounds_per_row => (0, 1000))",
		"AVG(LENGTH(%s), contribution_bounds_per_row => (0, 10))"})
	filters := slices.Concat(totalityFilters, []string{" WHERE %s LIKE 'a%%'", " WHERE %s < '5'", " WHERE %s * 3 > 2.5",
		" WHERE %s = 9007199254740993", " WHERE %s > 0.5"})
	policies := []string{
		`CREATE PRIVACY POLICY ON a`,
		`CREATE PRIVACY POLICY ON a OPTIONS (privacy_unit_column = uid, max_groups_contributed = 100, max_rows_contributed = 100);
		 ALTER PRIVACY POLICY ON a SET DOMAIN g ('a', 'b', 'c', 'zz')`,
	}
	m := triples{aggs: aggs, filters: filters}
	var compiled, failed atomic.Int64
	t.Run("policies", func(t *testing.T) {
		for pi, pol := range policies {
			path := sqliteAdversarial(t, pol)
			for ci, c := range cols {
				t.Run(fmt.Sprintf("policy%d/%s", pi, c), func(t *testing.T) {
					t.Parallel()
					k := &knobs.Knobs{FixedRandomness: true, CompileSQLite: true}
					e := openSQLite(t, path, k)
					m.compare(t, e, k, c, ci)
					compiled.Add(k.Compiled.Load())
					failed.Add(k.CompiledFailed.Load())
				})
			}
		}
	})
	t.Logf("%d scans ran compiled", compiled.Load())
	if n := compiled.Load(); n < 500 {
		t.Errorf("only %d scans ran compiled", n)
	}
	if n := failed.Load(); n > 0 {
		t.Errorf("%d compiled statements failed in SQLite", n)
	}
}
