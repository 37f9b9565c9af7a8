package dpsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/internal/adultdata"
)

// newDB creates a database with table t of 1000 rows: x = i % 100 (so
// Σx = 49500), g = one of 'a', 'b', 'c', 'z' by i % 4, y NULL on odd i.
func (h *harness) newDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE t (i INTEGER, x INTEGER, g TEXT, y REAL);
		WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
		INSERT INTO t SELECT i, i % 100, substr('abcz', i % 4 + 1, 1), CASE WHEN i % 2 = 0 THEN i / 10.0 END FROM n;
		CREATE TABLE lookup (code TEXT, label TEXT);
		INSERT INTO lookup VALUES ('a', 'Alpha'), ('b', 'Beta');`)
	if err != nil {
		t.Fatal(err)
	}
	owner := h.open(t, path, dpsql.Options{Owner: true})
	mustRun(t, owner, `CREATE PRIVACY POLICY ON t;
		ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 100);
		ALTER PRIVACY POLICY ON t SET DOMAIN g ('a', 'b', 'c', 'd');
		ALTER TABLE lookup SET PUBLIC;
		SET BUDGET epsilon = 100, delta = 1e-6;`)
	return path
}

func (h *harness) open(t *testing.T, path string, opts dpsql.Options) *dpsql.Engine {
	t.Helper()
	e, err := h.openEngine(path, opts, dpsql.ZeroNoise())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func mustRun(t *testing.T, e *dpsql.Engine, script string) []*dpsql.Result {
	t.Helper()
	var out []*dpsql.Result
	if err := e.Run(context.Background(), script, func(r *dpsql.Result) error { out = append(out, r); return nil }); err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return out
}

func query(t *testing.T, e *dpsql.Engine, q string) *dpsql.Result {
	t.Helper()
	r, err := e.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return r
}

func spent(t *testing.T, e *dpsql.Engine) float64 {
	t.Helper()
	r := query(t, e, "SHOW BUDGET")
	return r.Rows[1][1].(float64)
}

// num reads a released number.
func num(v any) float64 { return adultdata.Num(v) }

func bruteCount(pred func(i int) bool) int {
	n := 0
	for i := 0; i < 1000; i++ {
		if pred(i) {
			n++
		}
	}
	return n
}

// bruteClippedMeanY is the mean of y = i/10 over even i, clipped to [lo, hi].
func bruteClippedMeanY(lo, hi float64) float64 {
	var sum float64
	for i := 0; i < 1000; i += 2 {
		sum += math.Min(hi, math.Max(lo, float64(i)/10))
	}
	return sum / 500
}

func TestExactAnswersWithoutNoise(t *testing.T) { testExactAnswersWithoutNoise(t, parallel(t)) }

func testExactAnswersWithoutNoise(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	for _, tc := range []struct {
		sql  string
		want [][]any
	}{
		{`SELECT COUNT(*) FROM t`, [][]any{{1000}}},
		{`SELECT COUNT(y), SUM(x), AVG(x) FROM t`, [][]any{{500, 49500, 49.5}}},
		{`SELECT SUM(x, contribution_bounds_per_group => (0, 10)) FROM t`, [][]any{{10*900 + 45*10}}},
		{`SELECT COUNT(*) FROM t WHERE x >= 50 AND g IN ('a', 'b')`, [][]any{{bruteCount(func(i int) bool { return i%100 >= 50 && i%4 < 2 })}}},
		// Empty domain values are released (as 0); values outside the domain ('z') are dropped.
		{`SELECT g, COUNT(*) AS n, SUM(x) FROM t GROUP BY g`, [][]any{{"a", 250, 12000}, {"b", 250, 12250}, {"c", 250, 12500}, {"d", 0, 0}}},
		{`SELECT g, COUNT(*) AS n FROM t GROUP BY g HAVING n > 0 ORDER BY g DESC LIMIT 2`, [][]any{{"c", 250}, {"b", 250}}},
		{`SELECT SUM(x) / COUNT(*), ROUND(AVG(x), 1) + 1 FROM t`, [][]any{{49.5, 50.5}}},
		{`SELECT AVG(y, contribution_bounds_per_group => (0, 50)) FROM t`, [][]any{{bruteClippedMeanY(0, 50)}}},
		{`SELECT code, label FROM lookup ORDER BY code`, [][]any{{"a", "Alpha"}, {"b", "Beta"}}},
		{`SELECT 1 + 1`, [][]any{{2}}},
	} {
		r := query(t, e, tc.sql)
		if len(r.Rows) != len(tc.want) {
			t.Errorf("%s: %d rows %v, want %v", tc.sql, len(r.Rows), r.Rows, tc.want)
			continue
		}
		for i, row := range tc.want {
			for j, w := range row {
				got := r.Rows[i][j]
				if ws, ok := w.(string); ok {
					if got != ws {
						t.Errorf("%s: row %d col %d = %v, want %v", tc.sql, i, j, got, w)
					}
					continue
				}
				wf := num(w)
				if _, ok := w.(int); ok {
					wf = float64(w.(int))
				}
				if math.Abs(num(got)-wf) > 1e-9 {
					t.Errorf("%s: row %d col %d = %v, want %v", tc.sql, i, j, got, wf)
				}
			}
		}
	}
}

func TestAvgClippedAndColumnNames(t *testing.T) { testAvgClippedAndColumnNames(t, parallel(t)) }

func testAvgClippedAndColumnNames(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	r := query(t, e, `SELECT AVG(x, contribution_bounds_per_group => (60, 70)) AS m, COUNT(*) FROM t`)
	if r.Columns[0] != "m" || r.Columns[1] != "COUNT(*)" {
		t.Errorf("columns %q", r.Columns)
	}
	// Clipping to [60, 70]: 60×60 values at 60 ... exact clipped mean.
	var sum float64
	for i := 0; i < 1000; i++ {
		sum += math.Min(70, math.Max(60, float64(i%100)))
	}
	if got := r.Rows[0][0].(float64); math.Abs(got-sum/1000) > 1e-9 {
		t.Errorf("clipped AVG = %v, want %v", got, sum/1000)
	}
}

func TestRefusalsSpendNothing(t *testing.T) { testRefusalsSpendNothing(t, parallel(t)) }

func testRefusalsSpendNothing(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	for _, tc := range []struct {
		sql  string
		kind error
		msg  string
	}{
		{`SELECT * FROM t`, dpsql.ErrNotPrivate, "raw rows"},
		{`SELECT x FROM t`, dpsql.ErrNotPrivate, "inside an aggregate"},
		{`SELECT x, COUNT(*) FROM t GROUP BY x`, dpsql.ErrNotPrivate, "SET DOMAIN"},
		{`SELECT COUNT(*) FROM t GROUP BY g HAVING x > 1`, dpsql.ErrNotPrivate, "inside an aggregate"},
		{`SELECT MAX(x) FROM t`, dpsql.ErrUnsupported, "PERCENTILE_CONT(x, 0.99)"},
		{`SELECT MEDIAN(y, contribution_bounds_per_group => (0, 1)) FROM t`, dpsql.ErrInvalidOption, "contribution_bounds_per_row"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (bounds_epsilon_fraction = 1) SUM(y) FROM t`, nil, "strictly between 0 and 1"},
		{`SELECT SUM(DISTINCT x) FROM t`, dpsql.ErrUnsupported, "DISTINCT"},
		{`SELECT COUNT(*) FROM nope`, dpsql.ErrUnknownName, "unknown table"},
		{`SELECT COUNT(*) FROM _dpsql_ledger`, dpsql.ErrUnknownName, "unknown table"},
		{`SELECT COUNT(*) FROM sqlite_master`, dpsql.ErrUnknownName, "unknown table"},
		{`SELECT SUM(nope) FROM t`, dpsql.ErrUnknownName, "unknown column"},
		{`SELECT 1 FROM t`, dpsql.ErrNotPrivate, "must aggregate"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = -1) COUNT(*) FROM t`, nil, "epsilon must be a number in [1e-06, 1000]"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 5e-324) COUNT(*) FROM t`, nil, "epsilon must be a number in"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1000) COUNT(*) FROM t`, dpsql.ErrBudgetExhausted, "remain"},
		{`ATTACH 'x.db' AS x`, nil, "unsupported statement ATTACH"},
		{`PRAGMA table_info(t)`, nil, "unsupported statement PRAGMA"},
		{`SET BUDGET epsilon = 1000`, dpsql.ErrOwnerOnly, "owner mode"},
		{`ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 1000)`, dpsql.ErrOwnerOnly, "owner mode"},
		{`SELECT COUNT(*) FROM t JOIN lookup ON t.x + 1 > lookup.code`, dpsql.ErrUnsupported, "comparison of columns"},
		{`SELECT COUNT(*) FROM t AS a JOIN t AS b ON a.x = b.x`, dpsql.ErrNotPrivate, "privacy_unit_column on both"},
		{`SELECT COUNT(*) FROM t JOIN lookup ON g = code GROUP BY label`, dpsql.ErrNotPrivate, "delta"},
		{`SELECT s.n, COUNT(*) FROM (SELECT g, COUNT(*) AS n FROM t GROUP BY g) AS s JOIN t ON t.g = s.g`, dpsql.ErrNotPrivate, "can only appear inside an aggregate"},
		{`SELECT COUNT(*) FROM (SELECT g, x FROM t) AS s`, dpsql.ErrUnsupported, "no privacy_unit_column"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1, Epsilon = 0.2) COUNT(*) FROM t`, nil, "1:58: option epsilon is given twice (first at 1:43)"},
		{`SELECT COUNT(*) FROM t JOIN lookup AS t ON t.g = t.code`, dpsql.ErrInvalidOption, `1:29: the name "t" is used twice in FROM`},
		{`SELECT COUNT(*) FROM t AS a JOIN lookup AS A ON a.g = A.code`, dpsql.ErrInvalidOption, `the name "A" is used twice in FROM`},
	} {
		_, err := e.Query(context.Background(), tc.sql)
		if err == nil {
			t.Errorf("%s: no error", tc.sql)
			continue
		}
		if tc.kind != nil && !errors.Is(err, tc.kind) {
			t.Errorf("%s: error %v is not %v", tc.sql, err, tc.kind)
		}
		if !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %q does not mention %q", tc.sql, err, tc.msg)
		}
	}
	if s := spent(t, e); s != 0 {
		t.Errorf("refused queries spent ε=%v", s)
	}
}

func TestNoBudgetNoEpsilon(t *testing.T) { testNoBudgetNoEpsilon(t, parallel(t)) }

func testNoBudgetNoEpsilon(t *testing.T, h *harness) {
	path := filepath.Join(t.TempDir(), "n.db")
	owner := h.open(t, path, dpsql.Options{Owner: true})
	db, _ := sql.Open("sqlite", "file:"+path)
	db.Exec(`CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)`)
	db.Close()
	_, err := owner.Query(context.Background(), `SELECT COUNT(*) FROM t`)
	if !errors.Is(err, dpsql.ErrNoEpsilon) {
		t.Errorf("no epsilon: %v", err)
	}
	_, err = owner.Query(context.Background(), `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM t`)
	if !errors.Is(err, dpsql.ErrNoBudget) || !strings.Contains(err.Error(), "SET BUDGET") {
		t.Errorf("no budget: %v", err)
	}
}

func TestChargeIsDurableAndExplainIsFree(t *testing.T) {
	h := parallel(t)
	path := h.newDB(t)
	e := h.open(t, path, dpsql.Options{})
	mustRun(t, e, `SET epsilon = 0.25; EXPLAIN SELECT g, AVG(x) FROM t GROUP BY g`)
	if s := spent(t, e); s != 0 {
		t.Fatalf("EXPLAIN spent ε=%v", s)
	}
	r := query(t, e, `SELECT g, COUNT(*), AVG(x) FROM t GROUP BY g`)
	if r.Cost.Epsilon != 0.25 {
		t.Errorf("reported cost %v", r.Cost)
	}
	e.Close()
	// A fresh process sees the charge, with the statement, in the ledger.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entries, err := budget.Ledger(context.Background(), budget.SQLite(db, db))
	if err != nil || len(entries) != 1 || entries[0].Cost.Epsilon != 0.25 || !strings.Contains(entries[0].Statement, "AVG") {
		t.Errorf("ledger %+v, %v", entries, err)
	}
}

func TestExplainShowsCells(t *testing.T) {
	h := parallel(t)
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	explain := func(q string) string {
		var text strings.Builder
		for _, row := range query(t, e, q).Rows {
			text.WriteString(row[0].(string) + ": " + row[1].(string) + "\n")
		}
		return text.String()
	}
	text := explain(`EXPLAIN SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (noise = 'laplace') g, COUNT(*), AVG(x) FROM t GROUP BY g`)
	// On DuckDB and PostgreSQL the backend's own statement is the backend
	// SQL, and the reference evaluator's follows it.
	for _, want := range []string{"SQL: SELECT dpsql_measure(?1, CASE", "measurements: n; c0; s0:0:100 per group", "Laplace, sensitivity 1 (what one unit can change), ε=0.333333", "sensitivity 50", "95% error", "ε=1, δ=0",
		"noise choice: Laplace: the query asks for it", "ρ=0.166667", "admitted by basic composition"} {
		if !strings.Contains(text, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, text)
		}
	}
	// The rows an analyst reads to judge the answer come first, the
	// engine's statements after them (issue 51).
	if a, b, c := strings.Index(text, "accuracy a0:"), strings.Index(text, "accounting:"), strings.Index(text, "backend SQL:"); a < 0 || b < 0 || c < a || c < b {
		t.Errorf("EXPLAIN's backend SQL comes before its accuracy or accounting:\n%s", text)
	}
	// A threshold query runs with Laplace noise because of its form, not
	// because it asked: EXPLAIN says so (issue 51).
	text = explain(`EXPLAIN SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_groups_above = 1) g, COUNT(*) FROM t GROUP BY g HAVING COUNT(*) > 100`)
	if !strings.Contains(text, "noise choice: Laplace: the sparse vector technique") || strings.Contains(text, "asks for it") {
		t.Errorf("EXPLAIN of a threshold query:\n%s", text)
	}
	// The budget (100, 1e-6) lets zCDP give this ε = 1 query Gaussian
	// noise: ρ = ρ_T/100, a third per cell, σ = 1/√(2ρ/3) for the counts.
	rho := budget.RhoFor(100, 5e-7) / 100
	text = explain(`EXPLAIN SELECT g, COUNT(*), AVG(x) FROM t GROUP BY g`)
	for _, want := range []string{"COUNT(*): discrete Gaussian, σ " + fmt.Sprintf("%.6g", 1/math.Sqrt(2*rho/3)), "L2 sensitivity 1 (what one unit can change), ρ=" + fmt.Sprintf("%.6g", rho/3),
		"noise choice: Gaussian: its noise is", "gaussian noise; the ledger records ε=1, δ=0, ρ=", "admitted by zCDP"} {
		if !strings.Contains(text, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, text)
		}
	}
}

func TestRealNoiseIsAdded(t *testing.T) { testRealNoiseIsAdded(t, parallel(t)) }

func testRealNoiseIsAdded(t *testing.T, h *harness) {
	path := h.newDB(t)
	e, err := h.openEngine(path, dpsql.Options{Epsilon: 0.1, NoCache: true}, nil) // fresh noise for every repeat
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// With ε = 0.1, P(noise = 0) ≈ 0.05, so 20 exact answers in a row
	// happen with probability about 1e-26.
	exact := 0
	for i := 0; i < 20; i++ {
		r := query(t, e, `SELECT COUNT(*) FROM t`)
		n, ok := r.Rows[0][0].(int64)
		if !ok || n < 0 {
			t.Fatalf("noisy count %v is not a non-negative integer", r.Rows[0][0])
		}
		if n == 1000 {
			exact++
		}
	}
	if exact == 20 {
		t.Error("20 noisy counts were all exact: is noise applied?")
	}
	if s := spent(t, e); math.Abs(s-2) > 1e-9 {
		t.Errorf("spent %v, want 2", s)
	}
}

func TestRunStopsAtFirstError(t *testing.T) {
	h := parallel(t)
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 0.5})
	n := 0
	err := e.Run(context.Background(), "SELECT COUNT(*) FROM t;\nSELECT nope FROM t;\nSELECT COUNT(*) FROM t;", func(*dpsql.Result) error { n++; return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "2:8: ") {
		t.Errorf("error %v, want one at 2:8", err)
	}
	if n != 1 {
		t.Errorf("%d statements ran, want 1", n)
	}
	n = 0
	err = e.Run(context.Background(), "SHOW TABLES;\nSELECT FROM;\nSHOW BUDGET;", func(*dpsql.Result) error { n++; return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "2:8: ") || n != 1 {
		t.Errorf("syntax error: %v after %d statements", err, n)
	}
}

// TestAdult checks exact figures on the UCI Adult extract (skipped when
// ../shared/data is absent).
func TestAdult(t *testing.T) { testAdult(t, parallel(t)) }

func testAdult(t *testing.T, h *harness) {
	csvPath := filepath.Join("..", "shared", "data", "adult.csv")
	if _, err := os.Stat(csvPath); err != nil {
		t.Skip("../shared/data/adult.csv not present")
	}
	path := filepath.Join(t.TempDir(), "adult.db")
	owner := h.open(t, path, dpsql.Options{Owner: true})
	n, _, err := owner.ImportCSV(context.Background(), "adult", csvPath, csvimport.Options{})
	if err != nil || n != 32561 {
		t.Fatalf("import: %d rows, %v", n, err)
	}
	mustRun(t, owner, `CREATE PRIVACY POLICY ON adult;
		ALTER PRIVACY POLICY ON adult SET BOUNDS "Age" (0, 125);
		ALTER PRIVACY POLICY ON adult SET DOMAIN "Education" ('HS-grad', 'Some-college', 'Bachelors');
		SET BUDGET epsilon = 10`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	for _, tc := range []struct {
		sql  string
		want float64
	}{
		{`SELECT COUNT(*) FROM adult`, 32561},
		{`SELECT COUNT(*) FROM adult WHERE "Age" >= 40`, 14237},
		{`SELECT SUM("Age") FROM adult`, 1256257},
		{`SELECT AVG("Age") FROM adult`, 38.58164675532078},
		{`SELECT SUM("Age", contribution_bounds_per_group => (0, 30)) FROM adult`, 913809},
		{`SELECT SUM("Capital Gain", contribution_bounds_per_group => (0, 100000)) FROM adult`, 35089324},
		{`SELECT COUNT(*) FROM adult WHERE "Education-Num" > 10`, 10516},
		{`SELECT SUM("Age") FROM adult WHERE "Education-Num" > 10`, 422876},
	} {
		r := query(t, e, tc.sql)
		if got := num(r.Rows[0][0]); math.Abs(got-tc.want) > 1e-6*math.Max(1, tc.want) {
			t.Errorf("%s = %v, want %v", tc.sql, got, tc.want)
		}
	}
	r := query(t, e, `SELECT "Education", COUNT(*) FROM adult GROUP BY "Education"`)
	if len(r.Rows) != 3 || r.Rows[0][0] != "HS-grad" || num(r.Rows[0][1]) != 10501 || num(r.Rows[1][1]) != 7291 || num(r.Rows[2][1]) != 5355 {
		t.Errorf("Education bins: %v", r.Rows)
	}
}

// TestAnalystOpenChangesNothing: opening a plain SQLite file as an analyst
// says it is not a dpsql database and adds no table to it (issue 11).
func TestAnalystOpenChangesNothing(t *testing.T) {
	parallel(t)
	path := filepath.Join(t.TempDir(), "plain.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if _, err := dpsql.Open(path, dpsql.Options{}); !errors.Is(err, dpsql.ErrNoDatabase) || !strings.Contains(err.Error(), "not a dpsql database") {
		t.Errorf("analyst open of a plain file: %v", err)
	}
	var n int
	db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '\_dpsql\_%' ESCAPE '\'`).Scan(&n)
	if n != 0 {
		t.Errorf("the analyst's open created %d _dpsql_ tables", n)
	}
}

// TestExplainWithoutEpsilon: EXPLAIN spends nothing and so needs no ε; it
// shows the plan at ε = 1 and says so (the README's quick start runs it
// in a new process, issue 11).
func TestExplainWithoutEpsilon(t *testing.T) {
	h := parallel(t)
	e := h.open(t, h.newDB(t), dpsql.Options{})
	res := query(t, e, `EXPLAIN SELECT AVG(x) FROM t`)
	got := fmt.Sprint(res.Rows)
	if !strings.Contains(got, "shown at ε = 1") || !strings.Contains(got, "ε=1, δ=0") {
		t.Errorf("EXPLAIN without ε: %s", got)
	}
	if _, err := e.Query(context.Background(), `SELECT AVG(x) FROM t`); !errors.Is(err, dpsql.ErrNoEpsilon) {
		t.Errorf("the query itself still needs ε: %v", err)
	}
}

// TestRerunningCreatePolicySaysWhatChanged: CREATE PRIVACY POLICY on a
// table that has one says what it changed, or that nothing changed, and
// keeps bounds and domains (issue 11).
func TestRerunningCreatePolicySaysWhatChanged(t *testing.T) {
	testRerunningCreatePolicySaysWhatChanged(t, parallel(t))
}

func testRerunningCreatePolicySaysWhatChanged(t *testing.T, h *harness) {
	owner := h.open(t, h.newDB(t), dpsql.Options{Owner: true})
	ctx := context.Background()
	for _, tc := range []struct{ stmt, want string }{
		{`CREATE PRIVACY POLICY ON t`, "privacy policy on t unchanged (privacy_unit_column = none (each row is a unit), max_groups_contributed = 1, max_rows_contributed = 1)"},
		{`CREATE PRIVACY POLICY ON t OPTIONS (privacy_unit_column = I, max_rows_contributed = 3)`, "privacy policy on t changed: privacy_unit_column none (each row is a unit) → i, max_rows_contributed 1 → 3 (bounds and domains kept)"},
		{`CREATE PRIVACY POLICY ON t OPTIONS (privacy_unit_column = i, max_rows_contributed = 3)`, "privacy policy on t unchanged"},
		{`CREATE PRIVACY POLICY ON lookup`, "privacy policy created on lookup (privacy_unit_column = none (each row is a unit), max_groups_contributed = 1, max_rows_contributed = 1); the table is private again"},
		{`DROP PRIVACY POLICY ON lookup`, "privacy policy dropped"},
		{`CREATE PRIVACY POLICY ON lookup OPTIONS (max_groups_contributed = 2)`, "privacy policy created on lookup (privacy_unit_column = none (each row is a unit), max_groups_contributed = 2, max_rows_contributed = 1)"},
	} {
		res, err := owner.Query(ctx, tc.stmt)
		if err != nil {
			t.Fatalf("%s: %v", tc.stmt, err)
		}
		if !strings.HasPrefix(res.Message, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.stmt, res.Message, tc.want)
		}
	}
	res, err := owner.Query(ctx, `SHOW POLICY t`)
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprint(res.Rows); !strings.Contains(s, "bounds x [0, 100]") || !strings.Contains(s, "4 values") {
		t.Errorf("bounds or domain lost: %v", res.Rows)
	}
}

// TestReadOnlyDatabaseSaysWhy: a private query on a database the process
// cannot write says that its cost must be recorded in the file, charges
// nothing, and public queries and EXPLAIN still work (issue 11).
func TestReadOnlyDatabaseSaysWhy(t *testing.T) {
	h := parallel(t)
	path := h.newDB(t)
	e, err := dpsql.OpenReadOnly(path, dpsql.Options{Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	_, err = e.Query(ctx, `SELECT COUNT(*) FROM t`)
	if !errors.Is(err, dpsql.ErrReadOnly) || !strings.Contains(err.Error(), "needs write access") || !strings.Contains(err.Error(), path) {
		t.Errorf("private query: %v", err)
	}
	for _, q := range []string{`SELECT COUNT(*) FROM lookup`, `EXPLAIN SELECT COUNT(*) FROM t`, `SHOW BUDGET`} {
		if _, err := e.Query(ctx, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	st, err := h.open(t, path, dpsql.Options{}).Budget(ctx)
	if err != nil || st.Spent.Epsilon != 0 {
		t.Errorf("spent %v, %v", st.Spent, err)
	}
}

// TestWaitingForTheLedgerSaysSo: an owner's open makes the file WAL; a
// private query that finds the write lock taken (an import in progress)
// says that it waits, and waits — then answers once the lock is free, or
// charges nothing if cancelled meanwhile (issue 11).
func TestWaitingForTheLedgerSaysSo(t *testing.T) {
	h := parallel(t)
	path := h.newDB(t)
	holder, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	var mode string
	if err := holder.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode %q (%v), want wal", mode, err)
	}
	ctx := context.Background()
	lock := func() *sql.Conn {
		c, err := holder.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
			t.Fatal(err)
		}
		return c
	}
	notices := make(chan string, 4)
	// The SQLite file's own lock: dpsql.Open, never moved to PostgreSQL
	// (where it would wait for a lock nobody takes).
	e, err := dpsql.Open(path, dpsql.Options{Epsilon: 1, NoCache: true, Notify: func(n string) { notices <- n }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	c := lock()
	done := make(chan error, 1)
	go func() { _, err := e.Query(ctx, `SELECT COUNT(*) FROM t`); done <- err }()
	if n := <-notices; !strings.Contains(n, "waiting for the database's write lock") {
		t.Errorf("notice %q", n)
	}
	other := h.open(t, path, dpsql.Options{}) // one engine runs one statement at a time
	if _, err := other.Query(ctx, `SELECT COUNT(*) FROM lookup`); err != nil {
		t.Errorf("a public query while the lock is held: %v", err)
	}
	c.ExecContext(ctx, `COMMIT`)
	c.Close()
	if err := <-done; err != nil {
		t.Errorf("after the lock was freed: %v", err)
	}

	c = lock()
	qctx, cancel := context.WithCancel(ctx)
	go func() { _, err := e.Query(qctx, `SELECT COUNT(*) FROM t`); done <- err }()
	<-notices
	cancel()
	err = <-done
	c.ExecContext(ctx, `COMMIT`)
	c.Close()
	if !errors.Is(err, dpsql.ErrCancelled) || !strings.Contains(err.Error(), "nothing was charged") {
		t.Errorf("cancelled while waiting: %v", err)
	}
	st, err := e.Budget(ctx)
	if err != nil || st.Spent.Epsilon != 1 {
		t.Errorf("spent %v (%v), want ε = 1 (the first query only)", st.Spent, err)
	}
}

// TestCancelledImportSaysNothingWasImported (issue 11).
func TestCancelledImportSaysNothingWasImported(t *testing.T) {
	testCancelledImportSaysNothingWasImported(t, parallel(t))
}

func testCancelledImportSaysNothingWasImported(t *testing.T, h *harness) {
	dir := t.TempDir()
	var sb strings.Builder
	sb.WriteString("a,b\n")
	for i := 0; i < 150_000; i++ {
		fmt.Fprintf(&sb, "%d,%d\n", i, i)
	}
	csvPath := filepath.Join(dir, "c.csv")
	os.WriteFile(csvPath, []byte(sb.String()), 0o644)
	owner := h.open(t, filepath.Join(dir, "c.db"), dpsql.Options{Owner: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, _, err := owner.ImportCSV(ctx, "c", csvPath, csvimport.Options{Progress: func(int64, float64) { cancel() }})
	if !errors.Is(err, dpsql.ErrCancelled) || !strings.Contains(err.Error(), "import cancelled, nothing was imported") {
		t.Errorf("cancelled import: %v", err)
	}
	if tables, err := owner.Tables(context.Background()); err != nil || len(tables) != 0 {
		t.Errorf("tables after a cancelled import: %v %v", tables, err)
	}
}

// TestShowLedgerIsTheOwners: the owner lists every charge with its
// statement and cost; an analyst is refused (issue 12's budget planning).
func TestShowLedgerIsTheOwners(t *testing.T) { testShowLedgerIsTheOwners(t, parallel(t)) }

func testShowLedgerIsTheOwners(t *testing.T, h *harness) {
	path := h.newDB(t)
	analyst := h.open(t, path, dpsql.Options{Epsilon: 0.5})
	ctx := context.Background()
	for _, q := range []string{`SELECT COUNT(*) FROM t`, `SELECT g, SUM(x) FROM t GROUP BY g`} {
		if _, err := analyst.Query(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := analyst.Query(ctx, `SHOW LEDGER`); !errors.Is(err, dpsql.ErrOwnerOnly) {
		t.Errorf("analyst: %v", err)
	}
	res, err := h.open(t, path, dpsql.Options{Owner: true}).Query(ctx, `show ledger`)
	if err != nil {
		t.Fatal(err)
	}
	// At ε = 0.5 of a total (100, 1e-6) the engine chooses Gaussian noise.
	// A local session on the file has no analyst name: NULL.
	if len(res.Rows) != 2 || res.Rows[0][2] != nil || !strings.Contains(res.Rows[1][3].(string), "SUM") || res.Rows[0][4] != "gaussian" || res.Rows[0][5] != 0.5 ||
		math.Abs(res.Rows[0][7].(float64)-0.5/100*budget.RhoFor(100, 5e-7)) > 1e-9 {
		t.Errorf("ledger: %v %v", res.Columns, res.Rows)
	}
}

// TestRepeatedQueriesAreFree: an identical query (statement, parameters,
// ε, session) gets the released answer again, with no charge and a note;
// anything different is charged; a policy change through dpsql
// invalidates the table's answers; RESET CACHE drops them all; SHOW CACHE
// is the owner's (issue 12).
func TestRepeatedQueriesAreFree(t *testing.T) { testRepeatedQueriesAreFree(t, parallel(t)) }

func testRepeatedQueriesAreFree(t *testing.T, h *harness) {
	path := h.newDB(t)
	ctx := context.Background()
	openCached := func(opts dpsql.Options) *dpsql.Engine { // real noise, cache on: as in production
		e, err := h.openEngine(path, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	a := openCached(dpsql.Options{Epsilon: 0.5})
	ask := func(q string, args ...any) *dpsql.Result {
		t.Helper()
		r, err := a.Query(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return r
	}
	first := ask(`SELECT g, COUNT(*), AVG(x) FROM t WHERE x > ? GROUP BY g`, 10)
	again := ask(`select g, count(*), avg(x) from t where x > ? group by g`, 10) // the same statement, canonically
	// The first answer's notes, but the one saying what it spent.
	kept := 0
	for _, n := range first.Notes {
		if !strings.Contains(n, "this query spent") {
			kept++
		}
	}
	if fmt.Sprint(first.Rows) != fmt.Sprint(again.Rows) || again.Cost.Epsilon != 0 || len(again.Notes) != kept+1 || !strings.Contains(again.Notes[len(again.Notes)-1], "answered from the cache") {
		t.Errorf("repeat: %v %v %q / %v %q", again.Rows, again.Cost, again.Notes, first.Rows, first.Notes)
	}
	if got := spent(t, a); got != 0.5 {
		t.Errorf("spent %v after a repeat, want 0.5", got)
	}
	// Another parameter, another ε, another session setting: new questions.
	ask(`SELECT g, COUNT(*), AVG(x) FROM t WHERE x > ? GROUP BY g`, 11)
	ask(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25) g, COUNT(*), AVG(x) FROM t WHERE x > ? GROUP BY g`, 10)
	ask(`SET bounds_epsilon_fraction = 0.5`)
	ask(`SELECT g, COUNT(*), AVG(x) FROM t WHERE x > ? GROUP BY g`, 10)
	if got := spent(t, a); math.Abs(got-1.75) > 1e-9 {
		t.Errorf("spent %v, want 1.75", got)
	}
	if r := ask(`EXPLAIN SELECT g, COUNT(*), AVG(x) FROM t WHERE x > 10 GROUP BY g`); !strings.Contains(fmt.Sprint(r.Rows), "it would get that answer again, free") {
		t.Errorf("EXPLAIN of a cached query: %v", r.Rows)
	}
	if r := ask(`EXPLAIN SELECT g, COUNT(*), AVG(x) FROM t WHERE x > 12 GROUP BY g`); strings.Contains(fmt.Sprint(r.Rows), "free") {
		t.Errorf("EXPLAIN of a new query: %v", r.Rows)
	}
	owner := openCached(dpsql.Options{Owner: true})
	if _, err := a.Query(ctx, `SHOW CACHE`); !errors.Is(err, dpsql.ErrOwnerOnly) {
		t.Errorf("SHOW CACHE by an analyst: %v", err)
	}
	res, err := owner.Query(ctx, `SHOW CACHE`)
	if err != nil || len(res.Rows) != 4 || res.Rows[0][1] != "t" {
		t.Fatalf("SHOW CACHE: %v %v", res, err)
	}
	// A bounds change on t invalidates t's answers.
	if _, err := owner.Query(ctx, `ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 50)`); err != nil {
		t.Fatal(err)
	}
	if r := ask(`SELECT g, COUNT(*), AVG(x) FROM t WHERE x > ? GROUP BY g`, 10); r.Cost.Epsilon != 0.5 || strings.Contains(fmt.Sprint(r.Notes), "cache") {
		t.Errorf("after a policy change: %v %v", r.Cost, r.Notes)
	}
	if r := ask(`SELECT g, COUNT(*), AVG(x) FROM t WHERE x > ? GROUP BY g`, 10); r.Cost.Epsilon != 0 {
		t.Errorf("a repeat after the change was charged: %v", r.Cost)
	}
	res, err = owner.Query(ctx, `RESET CACHE`)
	if err != nil || !strings.Contains(res.Message, "1 cached answers dropped") {
		t.Errorf("RESET CACHE: %v %v", res, err)
	}
	if r := ask(`SELECT g, COUNT(*), AVG(x) FROM t WHERE x > ? GROUP BY g`, 10); r.Cost.Epsilon != 0.5 {
		t.Errorf("after RESET CACHE: %v", r.Cost)
	}
	// NoCache answers afresh every time.
	b := openCached(dpsql.Options{Epsilon: 0.5, NoCache: true})
	before := spent(t, b)
	for i := 0; i < 2; i++ {
		if _, err := b.Query(ctx, `SELECT COUNT(*) FROM t`); err != nil {
			t.Fatal(err)
		}
	}
	if got := spent(t, b) - before; math.Abs(got-1) > 1e-9 {
		t.Errorf("NoCache: spent %v for two queries, want 1", got)
	}
}

// TestShowBudgetSaysHowManyQueriesFit: with a session ε, SHOW BUDGET says
// how many more queries of that ε the remaining budget allows, counted as
// the ledger counts (issue 12, budget planning).
func TestShowBudgetSaysHowManyQueriesFit(t *testing.T) {
	testShowBudgetSaysHowManyQueriesFit(t, parallel(t))
}

func testShowBudgetSaysHowManyQueriesFit(t *testing.T, h *harness) {
	path := h.newDB(t) // total ε = 100
	e := h.open(t, path, dpsql.Options{Epsilon: 0.3})
	if _, err := e.Query(context.Background(), `SELECT COUNT(*) FROM t`); err != nil {
		t.Fatal(err)
	}
	res, err := e.Query(context.Background(), `SHOW BUDGET`)
	if err != nil {
		t.Fatal(err)
	}
	// The query ran with Gaussian noise (zCDP): it bought 0.3/100 of the
	// total ρ, and (100 − 0.3) / 0.3 = 332.33…: 332 more fit.
	if len(res.Notes) != 2 || !strings.Contains(res.Notes[0], "Gaussian noise was used") || !strings.Contains(res.Notes[1], "at ε = 0.3 per query (this session's), 332 more queries fit") {
		t.Errorf("notes %q", res.Notes)
	}
	res, _ = h.open(t, path, dpsql.Options{}).Query(context.Background(), `SHOW BUDGET`)
	if len(res.Notes) != 1 {
		t.Errorf("without a session ε: %q", res.Notes)
	}
}

// TestConcurrentRepeatsShareOneAnswer: identical queries from many
// sessions at once are each charged at most once, and once an answer is
// stored every later repeat gets exactly that answer.
func TestConcurrentRepeatsShareOneAnswer(t *testing.T) {
	testConcurrentRepeatsShareOneAnswer(t, parallel(t))
}

func testConcurrentRepeatsShareOneAnswer(t *testing.T, h *harness) {
	path := h.newDB(t)
	ctx := context.Background()
	const n = 8
	answers := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			e, err := h.openEngine(path, dpsql.Options{Epsilon: 0.5}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer e.Close()
			r, err := e.Query(ctx, `SELECT g, COUNT(*) FROM t GROUP BY g`)
			if err != nil {
				t.Error(err)
				return
			}
			answers[i] = fmt.Sprint(r.Rows)
		}(i)
	}
	wg.Wait()
	e, err := h.openEngine(path, dpsql.Options{Epsilon: 0.5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := e.Query(ctx, `SELECT g, COUNT(*) FROM t GROUP BY g`)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range answers {
		found = found || a == fmt.Sprint(r.Rows)
	}
	if !found || r.Cost.Epsilon != 0 {
		t.Errorf("the repeat got %v (cost %v), none of the concurrent answers %v", r.Rows, r.Cost, answers)
	}
	if s := spent(t, e); s < 0.5 || s > n*0.5 {
		t.Errorf("spent %v", s)
	}
}

// TestBigQueryCastTypes: INT64 rounds reals half away from zero as
// BigQuery does (SQLite's CAST truncates), keeps large integers exact;
// FLOAT64 and DOUBLE are REAL (issue 10).
func TestBigQueryCastTypes(t *testing.T) {
	h := parallel(t)
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	res, err := e.Query(context.Background(), `SELECT CAST(2.5 AS INT64), CAST(-2.5 AS INT64), CAST(2.4 AS INT64), CAST('7' AS INT64),
		CAST(9007199254740993 AS INT64), CAST(3 AS FLOAT64), CAST('1.5' AS DOUBLE), CAST(NULL AS INT64), CAST(1e300 AS INT64)`)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{int64(3), int64(-3), int64(2), int64(7), int64(9007199254740993), 3.0, 1.5, nil, int64(math.MaxInt64)}
	if !reflect.DeepEqual(res.Rows[0], want) {
		t.Errorf("got %#v\nwant %#v", res.Rows[0], want)
	}
	// and over private rows, in WHERE and in an aggregate argument
	if _, err := e.Query(context.Background(), `SELECT COUNT(*), SUM(CAST(y AS INT64), contribution_bounds_per_group => (0, 100)) FROM t WHERE CAST(y AS FLOAT64) > 1`); err != nil {
		t.Error(err)
	}
}

// TestOwnerHearsWhatAStatementMeans: a total that protects little is set
// with a warning; SET PUBLIC says which parts of the policy it removes; a
// query asking for δ on a δ = 0 budget is told so, not that the budget ran
// out (and spends nothing).
func TestOwnerHearsWhatAStatementMeans(t *testing.T) {
	h := parallel(t)
	ctx := context.Background()
	e := h.open(t, h.newDB(t), dpsql.Options{Owner: true})
	res := mustRun(t, e, `SET BUDGET epsilon = 1e6, delta = 0.5`)
	if notes := strings.Join(res[0].Notes, "\n"); !strings.Contains(notes, "ε = 1e+06 protects little") || !strings.Contains(notes, "δ = 0.5 is the chance") {
		t.Errorf("no warnings: %q", res[0].Notes)
	}
	if res := mustRun(t, e, `SET BUDGET epsilon = 5`); len(res[0].Notes) != 0 {
		t.Errorf("warnings for a sound budget: %q", res[0].Notes)
	}
	_, err := e.Query(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-7) i, COUNT(*) FROM t GROUP BY i`)
	if err == nil || !strings.Contains(err.Error(), "budget has δ = 0") || strings.Contains(err.Error(), "exhausted") || !errors.Is(err, dpsql.ErrBudgetExhausted) {
		t.Errorf("δ on a δ = 0 budget: %v", err)
	}
	if st, _ := e.Budget(ctx); st.Spent.Epsilon != 0 {
		t.Errorf("the refused query spent %v", st.Spent)
	}
	res = mustRun(t, e, `DROP PRIVACY POLICY ON t; CREATE PRIVACY POLICY ON t OPTIONS (privacy_unit_column = i, max_groups_contributed = 2); ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 100); ALTER TABLE t SET PUBLIC`)
	if msg := res[len(res)-1].Message; !strings.Contains(msg, `privacy unit "i"`) || !strings.Contains(msg, `bounds of "x" [0, 100]`) || !strings.Contains(msg, "contribution bounds 2 groups") {
		t.Errorf("SET PUBLIC: %q", msg)
	}
}

// TestCatalogFollowsChangesFromElsewhere: an engine keeps the schema it
// read between statements (catalog.Schema) and reads it again when
// SQLite's schema version changes — a table created, a column added or a
// table dropped by another connection, as another process would — while
// the policies, changed by another engine, count from the next statement.
func TestCatalogFollowsChangesFromElsewhere(t *testing.T) {
	h := parallel(t)
	path := h.newDB(t)
	analyst := h.open(t, path, dpsql.Options{Epsilon: 1})
	query(t, analyst, `SELECT COUNT(*) FROM t`) // the schema is read, and kept
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`CREATE TABLE extra (v INTEGER); ALTER TABLE t ADD COLUMN w INTEGER`); err != nil {
		t.Fatal(err)
	}
	tables := fmt.Sprint(query(t, analyst, `SHOW TABLES`).Rows)
	if !strings.Contains(tables, "extra") {
		t.Errorf("SHOW TABLES after another connection's CREATE TABLE: %s", tables)
	}
	query(t, analyst, `SELECT COUNT(w) FROM t`) // the new column resolves
	owner := h.open(t, path, dpsql.Options{Owner: true})
	mustRun(t, owner, `ALTER PRIVACY POLICY ON t SET BOUNDS w (0, 7)`)
	if plan := fmt.Sprint(query(t, analyst, `EXPLAIN SELECT SUM(w) FROM t`).Rows); !strings.Contains(plan, "sensitivity 7 ") {
		t.Errorf("EXPLAIN after the owner's new bounds: %s", plan)
	}
	if _, err := other.Exec(`DROP TABLE extra`); err != nil {
		t.Fatal(err)
	}
	if _, err := analyst.Query(context.Background(), `SELECT COUNT(*) FROM extra`); !errors.Is(err, dpsql.ErrUnknownName) {
		t.Errorf("a table another connection dropped: %v", err)
	}
}
