//go:build cgo

package dpsql_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/ducktest"
	"github.com/dpsql/dpsql/internal/testopts"
	"github.com/dpsql/dpsql/mechanism"
)

// openDuck opens an engine over the DuckDB file duck (its state file
// beside it) with test knobs k and the given noise (nil: zero noise).
func openDuck(t *testing.T, duck string, owner bool, k *knobs.Knobs, noise mechanism.Noiser) *dpsql.Engine {
	t.Helper()
	if noise == nil {
		noise = dpsql.ZeroNoise()
	}
	e, err := dpsql.OpenWithNoise("", dpsql.WithKnobs(dpsql.Options{Owner: owner, DuckDB: duck, NoCache: true}, k), noise)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// answer runs a statement and prints its outcome: the rows, or the
// error's kind and message.
func answer(e *dpsql.Engine, q string, args ...any) string {
	r, err := e.Query(context.Background(), q, args...)
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprint(r.Columns, r.Rows)
}

// adversarialDuck makes ducktest.Adversarial's file in t's directory.
func adversarialDuck(t *testing.T) string {
	t.Helper()
	duck := filepath.Join(t.TempDir(), "adv.duckdb")
	if err := ducktest.Adversarial(context.Background(), duck); err != nil {
		t.Fatal(err)
	}
	return duck
}

// TestDuckDBBoundingSamplesUniformly checks the compiled contribution
// bounding statistically, with fresh keys each run. 2,000 units each
// have 10 rows, x = 0..9, row x in group (u + x) mod 3.
//   - l∞: ungrouped, with l∞ = 5 each unit keeps 5 of its 10 rows: the
//     kept sum has mean 22.5 per unit and variance 5·8.25·5/9 ≈ 22.9 (five
//     of ten without replacement), so the total is 45,000 ± 214 (one
//     standard deviation). A choice of the smallest (largest) values would
//     give 20,000 (70,000).
//   - l0: grouped by g with l0 = 1 and l∞ = 10, each unit keeps all its
//     rows of one of its three groups, each with probability 1/3: the
//     rows kept in group g have mean (rows of g)/3 and a standard
//     deviation below 85; a choice that did not depend on the unit would
//     keep 0 or all of a group's rows.
//
// Each of 20 runs must fall within 5.3 standard deviations (a false
// failure has probability below 20·4·1.2e-7), and the mean of the sums
// within 5.3/√20 of them.
func TestDuckDBBoundingSamplesUniformly(t *testing.T) {
	parallel(t)
	duck := filepath.Join(t.TempDir(), "s.duckdb")
	if err := ducktest.Exec(context.Background(), duck,
		`CREATE TABLE s AS SELECT u AS uid, x, (u + x) % 3 AS g FROM range(2000) r(u), range(10) q(x)`); err != nil {
		t.Fatal(err)
	}
	k := &knobs.Knobs{}
	owner := openDuck(t, duck, true, k, nil)
	mustRun(t, owner, `SET BUDGET epsilon = 1e6;
		CREATE PRIVACY POLICY ON s OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 5);
		ALTER PRIVACY POLICY ON s SET BOUNDS x (0, 9);
		ALTER PRIVACY POLICY ON s SET DOMAIN g (0, 1, 2)`)
	e := openDuck(t, duck, false, k, nil)
	mustRun(t, e, "SET epsilon = 1")
	const runs, sd = 20, 214.0
	var total float64
	for i := 0; i < runs; i++ {
		r := query(t, e, "SELECT SUM(x), COUNT(*) FROM s")
		v, n := r.Rows[0][0].(float64), r.Rows[0][1].(int64)
		if n != 10000 {
			t.Fatalf("kept %d rows; want 5 of each unit's 10", n)
		}
		if math.Abs(v-45000) > 5.3*sd {
			t.Errorf("run %d: kept sum %v; want 45000 ± %v", i, v, 5.3*sd)
		}
		total += v
	}
	if m := total / runs; math.Abs(m-45000) > 5.3*sd/math.Sqrt(runs) {
		t.Errorf("mean kept sum %v; want 45000 ± %v", m, 5.3*sd/math.Sqrt(runs))
	}
	mustRun(t, owner, `CREATE PRIVACY POLICY ON s OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 10)`)
	// Rows per group: (u + x) mod 3 = g.
	var rows [3]float64
	for u := 0; u < 2000; u++ {
		for x := 0; x < 10; x++ {
			rows[(u+x)%3]++
		}
	}
	for i := 0; i < runs; i++ {
		r := query(t, e, "SELECT g, COUNT(*) FROM s GROUP BY g")
		for _, row := range r.Rows {
			g, c := row[0].(int64), float64(row[1].(int64))
			if want := rows[g] / 3; math.Abs(c-want) > 5.3*85 {
				t.Errorf("run %d: group %d kept %v rows; want %v ± %v", i, g, c, want, 5.3*85)
			}
		}
	}
	if k.Compiled.Load() < 2*runs {
		t.Errorf("only %d scans ran compiled", k.Compiled.Load())
	}
}

// TestDuckDBImportIsStrictAndAllOrNothing: a CSV with a bad row fails
// with its line number and leaves no table; a Parquet file imports with
// DuckDB's reader; a second process's write lock (here: another engine
// of this process holding the file) is reported as "in use".
func TestDuckDBImportIsStrictAndAllOrNothing(t *testing.T) {
	parallel(t)
	dir := t.TempDir()
	duck := filepath.Join(dir, "i.duckdb")
	owner := openDuck(t, duck, true, nil, nil)
	good := filepath.Join(dir, "good.csv")
	bad := filepath.Join(dir, "bad.csv")
	writeFile(t, good, "x,g\n1,a\n2,b\n3,a\n")
	writeFile(t, bad, "x,g\n1,a\n2,b,extra\n3,a\n")
	if _, _, err := owner.ImportCSV(context.Background(), "bad", bad, csvimport.Options{}); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("bad CSV: %v", err)
	}
	if n, _, err := owner.ImportCSV(context.Background(), "good", good, csvimport.Options{}); err != nil || n != 3 {
		t.Fatalf("good CSV: %d, %v", n, err)
	}
	// Read by DuckDB's reader while checked: a row after the sample that
	// widens a type (read again with REAL), blank values of one column,
	// and a malformed row far from the start (the read is stopped, no
	// table left).
	wide := filepath.Join(dir, "wide.csv")
	writeFile(t, wide, "v\n1\n\n2\n2.5\n")
	if n, cols, err := owner.ImportCSV(context.Background(), "wide", wide, csvimport.Options{SampleRows: 2}); err != nil || n != 4 || cols[0].Type != "REAL" || !cols[0].Widened {
		t.Errorf("widened CSV: %d %v %v", n, cols, err)
	}
	var late strings.Builder
	late.WriteString("x,g\n")
	for i := 0; i < 200000; i++ {
		fmt.Fprintf(&late, "%d,a\n", i)
	}
	late.WriteString("1,a,extra\n")
	lateBad := filepath.Join(dir, "late.csv")
	writeFile(t, lateBad, late.String())
	if _, _, err := owner.ImportCSV(context.Background(), "late", lateBad, csvimport.Options{}); err == nil || !strings.Contains(err.Error(), "line 200002") {
		t.Errorf("malformed last row: %v", err)
	}
	parquet := filepath.Join(dir, "p.parquet")
	if err := ducktest.Exec(context.Background(), filepath.Join(dir, "scratch.duckdb"),
		`COPY (SELECT range AS x, range % 3 AS g FROM range(10)) TO '`+parquet+`' (FORMAT parquet)`); err != nil {
		t.Fatal(err)
	}
	if n, _, err := owner.ImportCSV(context.Background(), "pq", parquet, csvimport.Options{}); err != nil || n != 10 {
		t.Fatalf("parquet: %d, %v", n, err)
	}
	mustRun(t, owner, `SET BUDGET epsilon = 10; CREATE PRIVACY POLICY ON good; CREATE PRIVACY POLICY ON pq; DROP TABLE wide`)
	var tables []string
	ts, err := owner.Tables(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range ts {
		tables = append(tables, tb.Name)
	}
	if got := strings.Join(tables, ","); got != "good,pq" {
		t.Errorf("tables %s; the failed import must leave none", got)
	}
	if got := answer(owner, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM pq"); got != "[COUNT(*)] [[10]]" {
		t.Errorf("parquet count: %s", got)
	}
	// Another engine of this process reads the file: an import must say
	// the file is in use, and change nothing.
	reader := openDuck(t, duck, false, nil, nil)
	if got := answer(reader, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM good"); got != "[COUNT(*)] [[3]]" {
		t.Errorf("reader: %s", got)
	}
	if _, _, err := owner.ImportCSV(context.Background(), "more", good, csvimport.Options{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("import while open elsewhere: %v", err)
	}
}

// writeFile writes text to path, failing the test on an error.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDuckDBBudgetIsSharedConcurrently: four engines over one DuckDB
// file (each with the state file beside it, as separate processes would
// have) run 60 queries of ε = 0.1 at once under a budget of 2: exactly 20
// are answered, the others refused for the budget.
func TestDuckDBBudgetIsSharedConcurrently(t *testing.T) {
	parallel(t)
	duck := filepath.Join(t.TempDir(), "b.duckdb")
	if err := ducktest.Exec(context.Background(), duck, `CREATE TABLE t AS SELECT range AS x FROM range(1000)`); err != nil {
		t.Fatal(err)
	}
	owner := openDuck(t, duck, true, nil, nil)
	mustRun(t, owner, `SET BUDGET epsilon = 2; CREATE PRIVACY POLICY ON t`)
	owner.Close()
	var engines []*dpsql.Engine
	for i := 0; i < 4; i++ {
		engines = append(engines, openDuck(t, duck, false, nil, nil))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered, refused := 0, 0
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func(e *dpsql.Engine) {
			defer wg.Done()
			_, err := e.Query(context.Background(), "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) FROM t")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				answered++
			case errors.Is(err, dpsql.ErrBudgetExhausted):
				refused++
			default:
				t.Errorf("query: %v", err)
			}
		}(engines[i%4])
	}
	wg.Wait()
	if answered != 20 || refused != 40 {
		t.Errorf("%d answered, %d refused; want 20 and 40", answered, refused)
	}
}

// TestDuckDBExplainSaysWhereTheScanRuns: EXPLAIN's engine step says
// whether the scan runs as one DuckDB statement or through the reference
// evaluator, and why.
func TestDuckDBExplainSaysWhereTheScanRuns(t *testing.T) {
	parallel(t)
	duck := adversarialDuck(t)
	owner := openDuck(t, duck, true, nil, nil)
	mustRun(t, owner, `SET BUDGET epsilon = 10; CREATE PRIVACY POLICY ON a`)
	for q, want := range map[string]string{
		"SELECT AVG(i32) FROM a WHERE g = 'a'":                               "one DuckDB statement",
		"SELECT AVG(i32 > 1, contribution_bounds_per_row => (0, 1)) FROM a":  `an aggregate's argument is an expression (("i32" > 1))`,
		"SELECT AVG(i32 % 2, contribution_bounds_per_row => (0, 1)) FROM a":  "one DuckDB statement",
		"SELECT COUNT(*) FROM a WHERE FLOOR(i32 / 3) > 2":                    "one DuckDB statement",
		"SELECT AVG(i32 + 1, contribution_bounds_per_row => (0, 10)) FROM a": "one DuckDB statement",
		"SELECT AVG(i32 + 1) FROM a":                                         "does not compile an expression (CASE or arithmetic) under a distinct count, a percentile or a bound search",
		"SELECT COUNT(*) FROM a WHERE i32 + 1 > 2":                           "one DuckDB statement",
		"SELECT COUNT(*) FROM a WHERE i64 + 1 > 2":                           "arithmetic that could leave ±2^62",
		"SELECT COUNT(*) FROM a WHERE i64 / 1000 > 2":                        "one DuckDB statement",
		"SELECT COUNT(*) FROM a WHERE i64 / -1 > 2":                          "a division of -2^63 by -1",
		"SELECT COUNT(*) FROM a WHERE i32 || 1 > 2":                          "the WHERE clause has an expression the plan does not cover",
		"SELECT COUNT(*) FROM a WHERE i32 < 0.5":                             "one DuckDB statement",
		"SELECT SUM(h) FROM a":                                               "does not compile column h",
	} {
		res := query(t, owner, "EXPLAIN "+q)
		got, backend, reference := "", "", ""
		for _, row := range res.Rows {
			switch row[0] {
			case "engine":
				got = fmt.Sprint(row[1])
			case "backend SQL":
				backend = fmt.Sprint(row[1])
			case "reference SQL":
				reference = fmt.Sprint(row[1])
			}
		}
		if !strings.Contains(got, want) {
			t.Errorf("EXPLAIN %s: engine %q, want %q", q, got, want)
		}
		// The statement shown is the one that runs: DuckDB's when the
		// scan compiles (its built-ins qualified, system.main.count; the
		// reference evaluator's after it), else the reference evaluator's
		// over the mirror (a call of dpsql_measure, or SQLite's own
		// aggregates for a native scan).
		compiled := strings.HasPrefix(got, "one DuckDB statement")
		if compiled != (reference != "") || compiled != strings.Contains(backend, "system.main.") {
			t.Errorf("EXPLAIN %s: backend SQL %.80q, reference SQL %.80q for engine %q", q, backend, reference, got)
		}
	}
}

// TestDuckDBFailureFallsBackToTheReference: when DuckDB cannot run a
// compiled statement (here: out of memory under a tiny cap), the
// reference evaluator measures the rows instead, so whether the query
// succeeds does not hang on DuckDB's resources; the answer is the same.
func TestDuckDBFailureFallsBackToTheReference(t *testing.T) {
	parallel(t)
	duck := filepath.Join(t.TempDir(), "m.duckdb")
	if err := ducktest.Exec(context.Background(), duck,
		`CREATE TABLE m AS SELECT range AS uid, range % 1000 AS x, 'g' || (range % 7) AS g FROM range(300000)`); err != nil {
		t.Fatal(err)
	}
	k := &knobs.Knobs{FixedRandomness: true}
	owner, err := dpsql.Open("", dpsql.Options{Owner: true, DuckDB: duck, NoCache: true,
		Testing: &testopts.Options{Noise: testopts.ZeroNoise(), Knobs: k, DuckDBMemoryLimit: "2MB"}})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	mustRun(t, owner, `SET BUDGET epsilon = 100;
		CREATE PRIVACY POLICY ON m OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1000, max_rows_contributed = 1000);
		ALTER PRIVACY POLICY ON m SET BOUNDS x (0, 1000);
		ALTER PRIVACY POLICY ON m SET DOMAIN g ('g0', 'g1', 'g2', 'g3', 'g4', 'g5', 'g6')`)
	res := query(t, owner, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) g, COUNT(*), SUM(x) FROM m GROUP BY g")
	got := rowsOf(res)
	if k.CompiledFailed.Load() == 0 {
		t.Fatal("DuckDB ran the statement within 2 MB: nothing to fall back from")
	}
	// Whoever holds the file is told which path ran.
	if notes := strings.Join(res.Notes, "\n"); !strings.Contains(notes, "the reference evaluator measured the same rows instead") {
		t.Errorf("the answer's notes do not say that the reference measured it: %q", res.Notes)
	}
	k.ReferenceOnly = true
	want := rowsOf(query(t, owner, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1.5) g, COUNT(*), SUM(x) FROM m GROUP BY g"))
	if got != want {
		t.Errorf("after the fallback:\n%s\nreference:\n%s", got, want)
	}
}
