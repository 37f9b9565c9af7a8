package dpsql_test

// Regression tests of the privacy hardening: one group per class of the
// adversarial review (docs/privacy.md, "What an analyst cannot learn").
// Each test fails on the engine before the hardening and passes after it.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/planner"
)

// hardDB creates a database from SQL, then runs the owner's policy script
// (with a large budget).
func (h *harness) hardDB(t testing.TB, create, policy string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(create); err != nil {
		t.Fatal(err)
	}
	db.Close()
	h.ownerPolicy(t, path, policy)
	return path
}

// recorder is a noiser that adds no noise and records every exact value
// handed to the Laplace mechanism, with its sensitivity.
type recorder struct {
	exactSparse
	mu    sync.Mutex
	calls []recorded
	clip  *exec.NoiseCall // announced for the next call: a bound search's count
}

type recorded struct {
	value *big.Float
	sens  float64
	// beyond marks a bound search's count of the values beyond its chosen
	// bounds: comparable between neighbours only when both chose the same.
	beyond bool
}

// ObserveNoiseCall hears the bound searches' counts announced (exec.CallObserver).
func (r *recorder) ObserveNoiseCall(c exec.NoiseCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.Clip {
		r.clip = &c
	}
}

func (r *recorder) AddLaplace(v, sens, _ float64) (float64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	beyond := r.clip != nil && r.clip.Round == 1 // autobound.Choose: all values, then those beyond
	r.clip = nil
	r.calls = append(r.calls, recorded{new(big.Float).SetPrec(4096).SetFloat64(v), sens, beyond})
	return v, nil
}

func (r *recorder) AddLaplaceExact(v *big.Float, sens, _ float64) (float64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, recorded{value: new(big.Float).SetPrec(4096).Set(v), sens: sens})
	f, _ := v.Float64()
	return f, nil
}

func (r *recorder) AddGaussianExact(v *big.Float, sens, _ float64) (float64, error) {
	return r.AddLaplaceExact(v, sens, 0)
}

// exactSparse gives test noisers the zero-noise sparse vector technique.
type exactSparse struct{}

func (exactSparse) NewSparse(opts mechanism.SparseOptions) (mechanism.Thresholder, error) {
	return dpsql.ZeroNoise().NewSparse(opts)
}

// h.checkNeighbourSensitivity: on neighbouring databases, every exact value
// handed to the noise moves by at most its declared sensitivity — checked
// exactly, in big arithmetic.
func (h *harness) checkNeighbourSensitivity(t *testing.T, d, d2, q string) {
	t.Helper()
	h.checkNeighbourSensitivities(t, d, d2, []string{q})
}

// checkNeighbourSensitivities is h.checkNeighbourSensitivity for several
// statements on the same pair, each engine opened once.
func (h *harness) checkNeighbourSensitivities(t *testing.T, d, d2 string, qs []string) {
	t.Helper()
	// The same bounding randomness on both sides (which l0 groups each
	// unit keeps, which l∞ rows): the coupling under which a sensitivity
	// bounds the move. With a fresh key per run, the other units' choices
	// would differ too (not a leak: the choice is the mechanism's own
	// randomness), and a per-unit sensitivity l0·|bound| is easily
	// exceeded by that alone.
	k := h.knobs
	k.FixedRandomness = true
	defer func() { k.FixedRandomness = false }()
	ra, rb := &recorder{}, &recorder{}
	ea, eb := h.recordingEngine(t, d, ra), h.recordingEngine(t, d2, rb)
	for _, q := range qs {
		a, chosenA := exactValuesOf(t, ea, ra, q)
		b, chosenB := exactValuesOf(t, eb, rb, q)
		if len(a) != len(b) {
			t.Fatalf("%s: %d noisy cells on D, %d on D'", q, len(a), len(b))
		}
		for i := range a {
			if a[i].sens != b[i].sens || (a[i].beyond && chosenA != chosenB) {
				continue // bounds chosen privately differ: that choice is the search's release, paid for by its ε
			}
			diff := new(big.Float).SetPrec(4096).Sub(a[i].value, b[i].value)
			diff.Abs(diff)
			if diff.Cmp(big.NewFloat(a[i].sens)) > 0 {
				t.Errorf("%s: cell %d moves by %s between neighbours, sensitivity %g", q, i, diff.Text('g', 10), a[i].sens)
			}
		}
	}
}

// chosenBoundsIn finds the privately chosen bounds a clipping note names
// (not what it says of their tails).
var chosenBoundsIn = regexp.MustCompile(`\[[^\]]*\] \(chosen privately`)

// recordingEngine opens an engine on path whose noise is r.
func (h *harness) recordingEngine(t *testing.T, path string, r *recorder) *dpsql.Engine {
	t.Helper()
	e, err := h.openEngine(path, dpsql.Options{Epsilon: 1}, r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// exactValuesOf runs q on e and returns the exact values it handed to the
// noise (r, e's recorder), and the bounds it chose privately (its notes
// that say so: the clipping note).
func exactValuesOf(t *testing.T, e *dpsql.Engine, r *recorder, q string) ([]recorded, string) {
	t.Helper()
	r.mu.Lock()
	r.calls = nil
	r.mu.Unlock()
	res, err := e.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var chosen []string
	for _, n := range res.Notes { // the clipping note names every bound, chosen ones marked
		if strings.HasPrefix(n, "values clipped to bounds") {
			chosen = append(chosen, chosenBoundsIn.FindAllString(n, -1)...)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.calls...), strings.Join(chosen, "; ")
}

// empiricalNeighbours runs q n times on D and on D' with real noise, bins
// the first output column and checks P(D) ≤ e^ε·P(D') (and the reverse) in
// every well-populated bin, at 4.4 standard errors (a false failure about
// once in 10^5 per comparison). On PostgreSQL and DuckDB (the suites) it
// checks instead that the backend measures exactly as the reference
// evaluator on both databases (sameAsTheReference).
func (h *harness) empiricalNeighbours(t *testing.T, d, d2, q string, eps, width float64) {
	t.Helper()
	if testing.Short() {
		t.Skip("statistical test skipped in -short mode")
	}
	if h.onOtherBackend() {
		h.sameAsTheReference(t, q, d, d2)
		return
	}
	const n = 1000
	hist := func(path string, seed uint64) map[int]int {
		e, err := h.openEngine(path, dpsql.Options{Epsilon: 1}, mechanism.NewSecureNoiser(seeded{rand.New(rand.NewPCG(seed, seed+1))}))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		h := map[int]int{}
		for i := 0; i < n; i++ {
			res, err := e.Query(context.Background(), q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			h[int(math.Floor(num(res.Rows[0][0])/width))]++
		}
		return h
	}
	a, b := hist(d, 11), hist(d2, 12)
	var bins []int
	for k := range a {
		bins = append(bins, k)
	}
	sort.Ints(bins)
	e := math.Exp(eps)
	checked := 0
	for _, k := range bins {
		for _, pr := range [][2]int{{a[k], b[k]}, {b[k], a[k]}} {
			if pr[0] < 50 || pr[1] < 50 {
				continue
			}
			p, q2 := float64(pr[0])/n, float64(pr[1])/n
			if se := math.Sqrt(p/n + e*e*q2/n); p-e*q2 > 4.4*se {
				t.Errorf("%s: bin %d: P=%.3f > e^ε·P'=%.3f", q, k, p, e*q2)
			}
			checked++
		}
	}
	if checked < 2 {
		t.Errorf("%s: only %d bins had enough samples", q, checked)
	}
}

// Class 1: names resolve exactly as SQLite resolves them, and SQLite never
// sees analyst text.
func TestNamesResolveAsSQLiteDoes(t *testing.T) { testNamesResolveAsSQLiteDoes(t, parallel(t)) }

func testNamesResolveAsSQLiteDoes(t *testing.T, h *harness) {
	const create = `CREATE TABLE visits (uid INTEGER, code TEXT, amount INTEGER);
		INSERT INTO visits VALUES (1, 'a', 10), (2, 'b', 20);
		CREATE TABLE pub (code TEXT); INSERT INTO pub VALUES ('a');`
	path := h.hardDB(t, create, `CREATE PRIVACY POLICY ON visits; ALTER TABLE pub SET PUBLIC`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	before := spent(t, e)
	for _, q := range []string{
		// U+0130 folds to "i" in Go's Unicode rules, and not at all in SQLite.
		`WITH "vİsits" AS (SELECT code FROM pub) SELECT * FROM visits`,
		`WITH "VİSITS" AS (SELECT code FROM pub) SELECT code FROM visits`,
		`WITH "sqlİte_master" AS (SELECT code FROM pub) SELECT * FROM sqlite_master`,
		`SELECT * FROM "sqlite_master"`,
		`SELECT * FROM "_DPSQL_LEDGER"`,
		`WITH "_dpsql_t0" AS (SELECT code FROM pub) SELECT * FROM "_dpsql_t0"`,
		`SELECT "pub"."code" FROM pub JOIN visits ON "pub"."code" = "visits"."code"`,
	} {
		res, err := e.Query(context.Background(), q)
		if err == nil {
			t.Errorf("%s: answered with %v", q, res.Rows)
		}
	}
	if spent(t, e) != before {
		t.Error("refused statements spent budget")
	}
	// A public query is printed from resolved names: the backend SQL names
	// the catalog's table under a generated alias.
	res := query(t, e, `EXPLAIN SELECT CODE FROM PUB WHERE Code = 'a'`)
	if got := fmt.Sprint(res.Rows); !strings.Contains(got, `FROM "pub" AS "_dpsql_t0" WHERE ("_dpsql_t0"."code" = 'a')`) {
		t.Errorf("public backend SQL not printed from the plan: %s", got)
	}
	if got := query(t, e, `SELECT CODE FROM PUB`).Rows; len(got) != 1 || got[0][0] != "a" {
		t.Errorf("public query: %v", got)
	}
	// A join bounded by rowid works when the rowid is an INTEGER PRIMARY KEY.
	ipk := h.hardDB(t, `CREATE TABLE p (id INTEGER PRIMARY KEY, code TEXT); INSERT INTO p VALUES (1, 'a'), (2, 'a');
		CREATE TABLE pub (code TEXT); INSERT INTO pub VALUES ('a'), ('a');`, `CREATE PRIVACY POLICY ON p; ALTER TABLE pub SET PUBLIC`)
	if got := num(query(t, h.open(t, ipk, dpsql.Options{Epsilon: 1}), `SELECT COUNT(*) FROM p JOIN pub ON p.code = pub.code`).Rows[0][0]); got != 2 {
		t.Errorf("join bounded by an INTEGER PRIMARY KEY rowid counted %v, want 2", got)
	}
}

// Class 1, second line of defence: even a statement that reached the
// backend could read only what its plan resolved.
func TestAuthorizerEnforcesThePlan(t *testing.T) {
	h := parallel(t)
	const create = `CREATE TABLE visits (uid INTEGER, code TEXT); INSERT INTO visits VALUES (1, 'a');
		CREATE TABLE pub (code TEXT); INSERT INTO pub VALUES ('a');`
	path := h.hardDB(t, create, `CREATE PRIVACY POLICY ON visits; ALTER TABLE pub SET PUBLIC`)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reads := map[string]map[string]bool{"pub": {"*": true}}
	for _, stmt := range []string{
		`SELECT * FROM visits`,
		`SELECT name FROM sqlite_master`,
		`SELECT * FROM _dpsql_ledger`,
		`SELECT p.code, (SELECT uid FROM visits) FROM pub p`,
	} {
		res, err := exec.Public(context.Background(), db, &planner.PublicQuery{SQL: stmt, Reads: reads})
		if !errors.Is(err, exec.ErrRejected) {
			t.Errorf("%s: %v, %v; want ErrRejected", stmt, res, err)
		}
	}
	if res, err := exec.Public(context.Background(), db, &planner.PublicQuery{SQL: `SELECT code FROM pub`, Reads: reads}); err != nil || len(res.Rows) != 1 {
		t.Errorf("allowed read: %v, %v", res, err)
	}
	// The pool's connections are left without the authorizer.
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master`).Scan(&n); err != nil {
		t.Errorf("authorizer left on a pooled connection: %v", err)
	}
}

// Class 2: whether a query succeeds does not depend on the data.
func TestRowEvaluationIsTotal(t *testing.T) { testRowEvaluationIsTotal(t, parallel(t)) }

func testRowEvaluationIsTotal(t *testing.T, h *harness) {
	create := func(extra string) string {
		return `CREATE TABLE people (uid INTEGER, age INTEGER, gain INTEGER, name TEXT);
			INSERT INTO people VALUES (1, 30, 100, 'ann'), (2, 40, 9223372036854775807, 'bob'), (2, 41, 9223372036854775807, 'bob');` + extra
	}
	policy := `CREATE PRIVACY POLICY ON people OPTIONS (privacy_unit_column = uid, max_rows_contributed = 2)`
	d := h.hardDB(t, create(`INSERT INTO people VALUES (3, 90, 5, '`+strings.Repeat("a", 3000)+`');`), policy)
	d2 := h.hardDB(t, create(""), policy)
	queries := []string{
		// The review's oracle: ABS overflows on −2^63 only when such a row exists.
		`SELECT COUNT(*) FROM people WHERE CASE WHEN age = 90 THEN ABS(-9223372036854775807 - 1) ELSE 1 END = 1`,
		`SELECT COUNT(*) FROM people WHERE ABS(CASE WHEN age = 90 THEN -9223372036854775807 - 1 ELSE 1 END) IS NULL`,
		// SUM inside a per-unit subquery overflows on unit 2's own rows.
		`SELECT COUNT(*) FROM (SELECT uid, SUM(gain) AS g FROM people GROUP BY uid) s WHERE g > 0`,
		// A string grown past SQLite's size limit by nested REPLACE.
		`SELECT COUNT(*) FROM people WHERE LENGTH(REPLACE(REPLACE(REPLACE(name, 'a', name), 'a', name), 'a', name)) > 0`,
		`SELECT COUNT(*) FROM people WHERE LENGTH(name || name || name || name || name) > 0`,
	}
	for _, q := range queries {
		for _, path := range []string{d, d2} {
			e := h.open(t, path, dpsql.Options{Epsilon: 1})
			if _, err := e.Query(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	}
	// Patterns SQLite could reject at run time are refused at plan time.
	e := h.open(t, d, dpsql.Options{Epsilon: 1})
	for _, q := range []string{
		`SELECT COUNT(*) FROM people WHERE name LIKE name`,
		`SELECT COUNT(*) FROM people WHERE name LIKE '` + strings.Repeat("_", 300) + `'`,
		`SELECT COUNT(*) FROM people WHERE name LIKE '%a%a%a%a%a%'`,
	} {
		if _, err := e.Query(context.Background(), q); !errors.Is(err, dpsql.ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", q, err)
		}
	}
	h.empiricalNeighbours(t, d, d2, queries[0], 1, 2)
}

// Class 3: the exact value handed to the noise is the exact clipped
// aggregate, whatever the magnitudes; it is never infinite.
func TestExactValuesFarFromZero(t *testing.T) { testExactValuesFarFromZero(t, parallel(t)) }

func testExactValuesFarFromZero(t *testing.T, h *harness) {
	// Values in (c, c+2), c = 1e15: a float64 sum of 1,000 of them has an
	// ulp of 128 where the sensitivity is 1, and Σx² − 2mΣx + m²n in
	// doubles cancels terms of 1e33. (TestNeighbourSensitivityProperty
	// catches the doubles version of that formula: 4.5e15 against 80.)
	var rows []string
	for i := 0; i < 1000; i++ {
		rows = append(rows, fmt.Sprintf("(%.17g)", 1e15+0.25*float64(1+i%7)))
	}
	create := `CREATE TABLE m (x REAL); INSERT INTO m VALUES ` + strings.Join(rows, ", ") + `;`
	policy := `CREATE PRIVACY POLICY ON m; ALTER PRIVACY POLICY ON m SET BOUNDS x (1e15, 1000000000000002)`
	d := h.hardDB(t, create+` INSERT INTO m VALUES (1000000000000001.75);`, policy)
	d2 := h.hardDB(t, create, policy)
	for _, q := range []string{`SELECT VAR_POP(x) FROM m`, `SELECT AVG(x), SUM(x) FROM m`, `SELECT STDDEV(x) FROM m`} {
		h.checkNeighbourSensitivity(t, d, d2, q)
	}
	// Wide bounds: the centred sum of squares exceeds the float64 range.
	var big []string
	for i := 0; i < 500; i++ {
		big = append(big, "(1e153)", "(-1e153)")
	}
	wide := h.hardDB(t, `CREATE TABLE w (x REAL); INSERT INTO w VALUES `+strings.Join(big, ", ")+`;`,
		`CREATE PRIVACY POLICY ON w; ALTER PRIVACY POLICY ON w SET BOUNDS x (-1e153, 1e153)`)
	e := h.open(t, wide, dpsql.Options{Epsilon: 1})
	res := query(t, e, `SELECT VAR_POP(x), STDDEV(x), AVG(x) FROM w`)
	for i, v := range res.Rows[0] {
		if f := num(v); math.IsNaN(f) || math.IsInf(f, 0) {
			t.Errorf("column %d is %v", i, v)
		}
	}
	h.empiricalNeighbours(t, d, d2, `SELECT VAR_POP(x) FROM m`, 1.0/3, 0.3)
}

// Class 4: the unit of a derived relation comes from provenance, never
// from a name the analyst controls.
func TestUnitByProvenance(t *testing.T) { testUnitByProvenance(t, parallel(t)) }

func testUnitByProvenance(t *testing.T, h *harness) {
	var rows []string
	for i := 0; i < 200; i++ {
		rows = append(rows, fmt.Sprintf("(7, %d, 'rare')", i))
	}
	for u := 1; u <= 5; u++ {
		rows = append(rows, fmt.Sprintf("(%d, 1, 'common')", 100+u))
	}
	create := `CREATE TABLE tx (uid INTEGER, amount INTEGER, kind TEXT); INSERT INTO tx VALUES ` + strings.Join(rows, ", ") + `;`
	policy := `CREATE PRIVACY POLICY ON tx OPTIONS (privacy_unit_column = uid)`
	d := h.hardDB(t, create, policy)
	d2 := h.hardDB(t, strings.Replace(create, strings.Join(rows[:200], ", ")+", ", "", 1), policy)
	e := h.open(t, d, dpsql.Options{Epsilon: 1})
	fake := `SELECT COUNT(*) FROM (SELECT amount * 1000 + uid AS uid, uid AS real_uid, kind FROM tx) s`
	if got := num(query(t, e, fake).Rows[0][0]); got != 6 {
		t.Errorf("%s = %v, want 6 (one row per unit after bounding)", fake, got)
	}
	for _, q := range []string{
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-9) kind, COUNT(*) FROM (SELECT amount * 1000 + uid AS uid, uid, kind FROM tx) s GROUP BY kind`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-9) kind, COUNT(*) FROM (SELECT amount * 1000 + uid AS x, kind FROM tx) s GROUP BY kind`,
	} {
		res, err := e.Query(context.Background(), q)
		if err != nil {
			if !strings.Contains(err.Error(), "ambiguous") {
				t.Errorf("%s: %v", q, err)
			}
			continue
		}
		for _, r := range res.Rows {
			if r[0] == "rare" {
				t.Errorf("%s released the group of one unit: %v", q, r)
			}
		}
	}
	if got := fmt.Sprint(query(t, e, `EXPLAIN `+fake).Rows); !strings.Contains(got, `carried from the base column "tx"."uid"`) {
		t.Errorf("EXPLAIN does not name the base unit column: %s", got)
	}
	h.checkNeighbourSensitivity(t, d, d2, fake)
	h.empiricalNeighbours(t, d, d2, fake, 1, 2)
}

// Class 5: clipping is numeric, whatever the storage class.
func TestClippingIsNumeric(t *testing.T) { testClippingIsNumeric(t, parallel(t)) }

func testClippingIsNumeric(t *testing.T, h *harness) {
	create := `CREATE TABLE a (age INTEGER, note TEXT, b BLOB); INSERT INTO a VALUES (20, '1e15', x'39'), (30, 'abc', NULL), (25, ' 7x', x'ff');`
	policy := `CREATE PRIVACY POLICY ON a`
	d := h.hardDB(t, create+` INSERT INTO a VALUES (39, '39', x'3339');`, policy)
	d2 := h.hardDB(t, create, policy)
	e := h.open(t, d, dpsql.Options{Epsilon: 1})
	res := query(t, e, `SELECT SUM(CAST(age AS TEXT), contribution_bounds_per_group => (0, 5)), SUM(note, contribution_bounds_per_group => (0, 5)), SUM(b, contribution_bounds_per_group => (0, 50)) FROM a`)
	// 4 ages clipped to 5; notes 1e15 → 5, 'abc' → 0, ' 7x' → 5, '39' → 5;
	// blobs '9' → 9, NULL skipped, x'ff' → 0, '39' → 39.
	want := []float64{20, 15, 48}
	for i, w := range want {
		if got := num(res.Rows[0][i]); got != w {
			t.Errorf("column %d = %v, want %v", i, got, w)
		}
	}
	for _, q := range []string{
		`SELECT SUM(CAST(age AS TEXT), contribution_bounds_per_group => (0, 5)) FROM a`,
		`SELECT AVG(note, contribution_bounds_per_group => (0, 5)), VAR_POP(b, contribution_bounds_per_row => (0, 50)) FROM a`,
		`SELECT AVG(note) FROM a`,
	} {
		h.checkNeighbourSensitivity(t, d, d2, q)
	}
	h.empiricalNeighbours(t, d, d2, `SELECT SUM(CAST(age AS TEXT), contribution_bounds_per_group => (0, 5)) FROM a`, 1, 10)
}

// Class 6: every parameter that could make the noise step fail is checked
// before the charge; counts are clamped; statements the backend rejects
// cost nothing.
func TestParametersCheckedBeforeTheCharge(t *testing.T) {
	testParametersCheckedBeforeTheCharge(t, parallel(t))
}

func testParametersCheckedBeforeTheCharge(t *testing.T, h *harness) {
	const create = `CREATE TABLE v (uid INTEGER, x REAL); INSERT INTO v VALUES (1, 1), (2, 2);`
	path := h.hardDB(t, create, `CREATE PRIVACY POLICY ON v OPTIONS (privacy_unit_column = uid)`)
	e := h.open(t, path, dpsql.Options{})
	before := spent(t, e)
	for _, q := range []string{
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 5e-324) COUNT(*) FROM v`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e9) COUNT(*) FROM v`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-300) uid, COUNT(*) FROM v GROUP BY uid`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e-6, max_groups_contributed = 1000000, max_rows_contributed = 1000000) SUM(x, contribution_bounds_per_row => (0, 1e300)) FROM v`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM (SELECT uid FROM v HAVING uid > 1) s`,
	} {
		if res, err := e.Query(context.Background(), q); err == nil {
			t.Errorf("%s: answered %v", q, res.Rows)
		}
	}
	if spent(t, e) != before {
		t.Errorf("refused statements spent %v", spent(t, e)-before)
	}
	// A huge noisy count is clamped into int64, never wrapped.
	huge, err := h.openEngine(path, dpsql.Options{Epsilon: 1}, hugeNoise{})
	if err != nil {
		t.Fatal(err)
	}
	defer huge.Close()
	res := query(t, huge, `SELECT COUNT(*) FROM v`)
	if c, ok := res.Rows[0][0].(int64); !ok || c <= 0 {
		t.Errorf("huge count released as %v", res.Rows[0][0])
	}
}

// hugeNoise returns enormous values.
type hugeNoise struct{ exactSparse }

func (hugeNoise) AddLaplace(v, _, _ float64) (float64, error) { return 1e30, nil }
func (hugeNoise) AddLaplaceExact(v *big.Float, _, _ float64) (float64, error) {
	return 1e30, nil
}
func (hugeNoise) AddGaussianExact(v *big.Float, _, _ float64) (float64, error) {
	return 1e30, nil
}

// TestConcurrentQueriesKeepTheirMeasurements: queries running at once, in
// several engines over one file, each get their own measurement handle and
// results (the registry is process-wide). Run under -race by .ci/run.
func TestConcurrentQueriesKeepTheirMeasurements(t *testing.T) {
	testConcurrentQueriesKeepTheirMeasurements(t, parallel(t))
}

func testConcurrentQueriesKeepTheirMeasurements(t *testing.T, h *harness) {
	var rows []string
	for i := 0; i < 300; i++ {
		rows = append(rows, fmt.Sprintf("(%d, %d)", i%7, i))
	}
	path := h.hardDB(t, `CREATE TABLE c (uid INTEGER, x INTEGER); INSERT INTO c VALUES `+strings.Join(rows, ", ")+`;`,
		`CREATE PRIVACY POLICY ON c OPTIONS (privacy_unit_column = uid, max_rows_contributed = 1000); ALTER PRIVACY POLICY ON c SET BOUNDS x (0, 1000)`)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			e, err := h.openEngine(path, dpsql.Options{Epsilon: 0.01}, dpsql.ZeroNoise())
			if err != nil {
				t.Error(err)
				return
			}
			defer e.Close()
			for i := 0; i < 15; i++ {
				limit := 50 * (w + 1)
				res, err := e.Query(context.Background(), fmt.Sprintf(`SELECT COUNT(*), SUM(x) FROM c WHERE x < %d`, limit))
				if err != nil {
					t.Error(err)
					return
				}
				if n, s := num(res.Rows[0][0]), num(res.Rows[0][1]); n != float64(limit) || s != float64(limit*(limit-1)/2) {
					t.Errorf("worker %d: COUNT %v SUM %v, want %d and %d", w, n, s, limit, limit*(limit-1)/2)
				}
			}
		}(w)
	}
	wg.Wait()
}

// TestRefusalsAreTheSameOnNeighbours: for the statements of classes 1 and
// 6, D and D′ (one unit removed) give the same outcome — the same error
// text, or an answer on both — so a refusal tells nothing about the unit.
func TestRefusalsAreTheSameOnNeighbours(t *testing.T) {
	testRefusalsAreTheSameOnNeighbours(t, parallel(t))
}

func testRefusalsAreTheSameOnNeighbours(t *testing.T, h *harness) {
	const base = `CREATE TABLE visits (uid INTEGER, code TEXT, amount REAL);
		INSERT INTO visits VALUES (1, 'a', 10), (2, 'b', 20);
		CREATE TABLE pub (code TEXT); INSERT INTO pub VALUES ('a');`
	policy := `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid); ALTER TABLE pub SET PUBLIC`
	d := h.hardDB(t, base+` INSERT INTO visits VALUES (3, 'c', 1e300), (3, 'c', -9223372036854775808);`, policy)
	d2 := h.hardDB(t, base, policy)
	stmts := []string{
		`WITH "vİsits" AS (SELECT code FROM pub) SELECT * FROM visits`,
		`WITH "sqlİte_master" AS (SELECT code FROM pub) SELECT * FROM sqlite_master`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 5e-324) COUNT(*) FROM visits`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e-6, max_groups_contributed = 1000000, max_rows_contributed = 1000000) SUM(amount, contribution_bounds_per_row => (0, 1e300)) FROM visits`,
		`SELECT COUNT(*) FROM (SELECT uid FROM visits HAVING uid > 1) s`,
		`SELECT COUNT(*) FROM (SELECT uid, uid FROM visits) s`,
		`SELECT VAR_POP(amount, contribution_bounds_per_row => (-1e150, 1e150)) FROM visits`,
		`SELECT COUNT(*) FROM visits WHERE ABS(CAST(amount AS INTEGER)) > 0`,
	}
	engines := map[string]*dpsql.Engine{} // one per database: a refusal leaves nothing behind (checked: it charges nothing)
	outcome := func(path, q string) string {
		e := engines[path]
		if e == nil {
			e = h.open(t, path, dpsql.Options{Epsilon: 1})
			engines[path] = e
		}
		before := spent(t, e)
		_, err := e.Query(context.Background(), q)
		if err != nil {
			if spent(t, e) != before {
				t.Errorf("%s: refused but charged", q)
			}
			return err.Error()
		}
		return "answered"
	}
	for _, q := range stmts {
		if a, b := outcome(d, q), outcome(d2, q); a != b {
			t.Errorf("%s:\n  on D:  %s\n  on D': %s", q, a, b)
		}
	}
}

// TestNativeScanMatchesTheAggregate: counts and sums that SQLite measures
// itself (an INTEGER column, small integer bounds) give exactly what the
// measurement aggregate gives — every value converted as CAST(x AS REAL)
// and clipped — and a real inside the bounds, text or a blob sends the
// scan through the aggregate. Both are checked against the exact answer.
func TestNativeScanMatchesTheAggregate(t *testing.T) {
	h := parallel(t)
	numeric := map[string]float64{"3": 3, "-9223372036854775808": -9223372036854775808, "9223372036854775807": 9223372036854775807,
		"'12abc'": 12, "'x'": 0, "x'3739'": 79, "'1e999'": math.Inf(1), "' -7e1x'": -70, "''": 0, "1e300": 1e300}
	for _, extra := range [][]string{{}, {"2.5"}, {"'0.25'"}, {"'12abc'", "'x'", "x'3739'", "'1e999'", "' -7e1x'", "''"}} {
		// Integers, numbers outside the bounds and NULL: SQLite's sums are
		// exact; a real inside the bounds, or text and blobs, make exec
		// fall back to the aggregate.
		vals := append([]string{"3", "-9223372036854775808", "9223372036854775807", "NULL", "1e300", "-17"}, extra...)
		numeric["2.5"], numeric["'0.25'"], numeric["-17"] = 2.5, 0.25, -17
		var rows []string
		var n, c, sum float64
		for i := 0; i < 60; i++ {
			v := vals[i%len(vals)]
			rows = append(rows, "("+v+")")
			n++
			if x, ok := numeric[v]; ok {
				c++
				sum += math.Max(-100, math.Min(100, x))
			}
		}
		path := h.hardDB(t, `CREATE TABLE f (v INTEGER); INSERT INTO f VALUES `+strings.Join(rows, ", ")+`;`, `CREATE PRIVACY POLICY ON f`)
		e := h.open(t, path, dpsql.Options{Epsilon: 1})
		q := `SELECT COUNT(*), COUNT(v), SUM(v, contribution_bounds_per_group => (-100, 100)), AVG(v, contribution_bounds_per_group => (-100, 100)) FROM f`
		if got := fmt.Sprint(query(t, e, "EXPLAIN "+q).Rows); !strings.Contains(got, "SELECT COUNT(*), COUNT(") || !strings.Contains(got, "BETWEEN -100 AND 100") || !strings.Contains(got, "9e999") {
			t.Fatalf("the native scan is not used: %s", got)
		}
		row := query(t, e, q).Rows[0]
		if num(row[0]) != n || num(row[1]) != c || num(row[2]) != sum || math.Abs(num(row[3])-sum/c) > 1e-12 {
			t.Errorf("values %v: got %v; want %v, %v, %v, %v", vals, row, n, c, sum, sum/c)
		}
	}
}

// TestPublicQueriesKeepSQLiteSemantics: the total forms that private rows
// need (SUM as TOTAL, text caps, constant LIKE patterns) do not change
// answers about public tables.
func TestPublicQueriesKeepSQLiteSemantics(t *testing.T) {
	testPublicQueriesKeepSQLiteSemantics(t, parallel(t))
}

func testPublicQueriesKeepSQLiteSemantics(t *testing.T, h *harness) {
	long := strings.Repeat("y", 2000)
	path := h.hardDB(t, `CREATE TABLE pub (n INTEGER, s TEXT); INSERT INTO pub VALUES (1, '`+long+`'), (2, 'ab');`, `ALTER TABLE pub SET PUBLIC`)
	e := h.open(t, path, dpsql.Options{})
	row := query(t, e, `SELECT SUM(n), MAX(LENGTH(s || s)), COUNT(*) FROM pub WHERE s LIKE s`).Rows[0]
	if row[0] != int64(3) || num(row[1]) != 4000 || num(row[2]) != 2 {
		t.Errorf("public answers changed: %v", row)
	}
}

// TestNeighbourSensitivityProperty is the property behind classes 3 and 5:
// on random tables whose numeric column mixes every storage class and
// magnitude (integers up to ±2^63, reals up to ±1e300 and far from zero,
// numeric and non-numeric text, blobs, NULL), for random bounds (narrow
// ones far from zero among them) and every aggregate, with declared and
// with privately chosen bounds, and with and without a unit column, the
// exact values handed to the noise on D and on D′ = D without one unit
// differ by at most each cell's sensitivity — exactly, in big arithmetic.
func TestNeighbourSensitivityProperty(t *testing.T) { testNeighbourSensitivityProperty(t, parallel(t)) }

func testNeighbourSensitivityProperty(t *testing.T, h *harness) {
	r := rand.New(rand.NewPCG(21, 22))
	value := func() string {
		switch r.IntN(10) {
		case 0:
			return "NULL"
		case 1:
			return []string{"9223372036854775807", "-9223372036854775807 - 1", "0"}[r.IntN(3)]
		case 2:
			return fmt.Sprintf("%d", r.Int64N(2001)-1000)
		case 3:
			return fmt.Sprintf("%g", (r.Float64()-0.5)*math.Pow(10, float64(r.IntN(600)-300)))
		case 4:
			return fmt.Sprintf("%.17g", 1e15+float64(r.IntN(5))*0.5)
		case 5:
			return []string{"'1e999'", "'-1e999'", "'abc'", "' 12.5e1x'", "''", "'0x10'"}[r.IntN(6)]
		case 6:
			return []string{"x'31303030'", "x''", "x'ff'"}[r.IntN(3)]
		default:
			return fmt.Sprintf("%g", r.NormFloat64()*100)
		}
	}
	bounds := [][2]string{{"0", "1"}, {"-5", "5"}, {"1e15", "1000000000000002"}, {"-1e12", "1e12"}, {"-1e150", "1e150"}, {"0.001", "0.002"}}
	// {G}: per-unit bounds (BigQuery's per group), {B}: per-row bounds.
	aggs := []string{"COUNT(v)", "SUM(v, {B})", "AVG(v, {B})", "VAR_POP(v, {B})", "STDDEV(v, {B})", "AVG(v)", "VAR_POP(v)", "SUM(v, {G})", "AVG(v, {G})", "COUNT(v, {G})"}
	// The 60 trials' tables live side by side in one pair of databases
	// (p0 … p59 in D, the same without one unit each in D′): each query
	// reads its own table only, so each comparison is the trial's alone,
	// and the pair is built, moved to a backend and opened once.
	var creates, creates2, policies []string
	var queries []string
	for trial := 0; trial < 60; trial++ {
		withUnits := trial%2 == 1
		units := 3 + r.IntN(6)
		var rows, without []string
		drop := r.IntN(units)
		for i := 0; i < 40; i++ {
			u := r.IntN(units)
			row := fmt.Sprintf("(%d, %s, '%c')", u, value(), 'a'+rune(r.IntN(3)))
			rows = append(rows, row)
			if u != drop || !withUnits {
				without = append(without, row)
			}
		}
		if !withUnits { // each row is a unit: drop one row
			k := r.IntN(len(rows))
			without = append(append([]string{}, rows[:k]...), rows[k+1:]...)
		}
		table := fmt.Sprintf("p%d", trial)
		policy := `CREATE PRIVACY POLICY ON ` + table + `; ALTER PRIVACY POLICY ON ` + table + ` SET DOMAIN g ('a', 'b', 'c')`
		if withUnits {
			policy = `CREATE PRIVACY POLICY ON ` + table + ` OPTIONS (privacy_unit_column = uid, max_groups_contributed = 2, max_rows_contributed = 40); ALTER PRIVACY POLICY ON ` + table + ` SET DOMAIN g ('a', 'b', 'c')`
		}
		typ := "" // no affinity: every storage class stays as inserted
		if trial%4 >= 2 {
			typ = "INTEGER" // the native scan's shape (rewrite.nativeScan)
		}
		def := `CREATE TABLE ` + table + ` (uid INTEGER, v ` + typ + `, g TEXT); INSERT INTO ` + table + ` VALUES `
		creates = append(creates, def+strings.Join(rows, ", ")+`;`)
		creates2 = append(creates2, def+strings.Join(without, ", ")+`;`)
		policies = append(policies, policy)
		b := bounds[r.IntN(len(bounds))]
		agg := strings.ReplaceAll(aggs[r.IntN(len(aggs))], "{B}", "contribution_bounds_per_row => ("+b[0]+", "+b[1]+")")
		if strings.HasPrefix(agg, "COUNT") {
			b = [2]string{"0", "3"} // a count's bounds start at 0
		}
		agg = strings.ReplaceAll(agg, "{G}", "contribution_bounds_per_group => ("+b[0]+", "+b[1]+")")
		group := ""
		if r.IntN(2) == 0 {
			group = " GROUP BY g"
		}
		sel := agg
		if group != "" {
			sel = "g, " + agg
		}
		queries = append(queries, "SELECT "+sel+", COUNT(*) FROM "+table+group)
	}
	policy := strings.Join(policies, "; ")
	d, d2 := h.hardDB(t, strings.Join(creates, "\n"), policy), h.hardDB(t, strings.Join(creates2, "\n"), policy)
	h.checkNeighbourSensitivities(t, d, d2, queries)
}

// TestPublicQueriesMatchSQLite: printing a public query from the plan
// (generated aliases, resolved and quoted names) keeps its meaning: every
// statement returns the rows SQLite returns for the analyst's own text.
func TestPublicQueriesMatchSQLite(t *testing.T) { testPublicQueriesMatchSQLite(t, parallel(t)) }

func testPublicQueriesMatchSQLite(t *testing.T, h *harness) {
	path := h.hardDB(t, `CREATE TABLE "Pub One" (id INTEGER, name TEXT, score REAL);
		INSERT INTO "Pub One" VALUES (1, 'ann', 2.5), (2, 'bob', NULL), (3, 'cy', 7), (4, 'ann', 1);
		CREATE TABLE two (id INTEGER, tag TEXT); INSERT INTO two VALUES (1, 'x'), (1, 'y'), (3, 'z');`,
		`ALTER TABLE "Pub One" SET PUBLIC; ALTER TABLE two SET PUBLIC`)
	e := h.open(t, path, dpsql.Options{})
	raw := dpsql.RawDB(e) // the engine's own SQLite connections (with its mirrors' module on PostgreSQL)
	for _, q := range []string{
		`SELECT * FROM "Pub One" ORDER BY id`,
		`SELECT name, COUNT(*) AS n, SUM(id), AVG(score) FROM "PUB ONE" GROUP BY name HAVING n > 0 ORDER BY n DESC, name`,
		`SELECT p.name, t.tag FROM "Pub One" AS p JOIN two AS t ON p.id = t.id ORDER BY 1, 2`,
		`WITH w AS (SELECT id, name AS who FROM "Pub One" WHERE id > 1) SELECT who, id * 2 AS d FROM w ORDER BY d LIMIT 2 OFFSET 1`,
		`SELECT name || '-' || CAST(id AS TEXT) AS k, ABS(-id), COALESCE(score, 0), name LIKE 'a%' FROM "Pub One" ORDER BY k`,
		`SELECT UPPER(name), REPLACE(name, 'n', 'NN'), LENGTH(name), SUBSTR(name, 2) FROM "Pub One" WHERE name LIKE name ORDER BY 1, 2`,
		`SELECT id, CASE WHEN score > 2 THEN 'hi' ELSE 'lo' END AS c FROM "Pub One" WHERE id BETWEEN 2 AND 4 AND name IN ('bob', 'cy', 'ann') ORDER BY id`,
		`SELECT 1 + 2, 'a' || 'b', ROUND(2.567, 1)`,
		`SELECT COUNT(*) FROM (SELECT id FROM two GROUP BY id) AS s`,
		`SELECT t.id, COUNT(*) FROM two t GROUP BY t.id ORDER BY t.id`,
	} {
		res, err := e.Query(context.Background(), q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		rows, err := raw.Query(q)
		if err != nil {
			t.Fatalf("%s on SQLite: %v", q, err)
		}
		cols, _ := rows.Columns()
		var want [][]any
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			rows.Scan(ptrs...)
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					vals[i] = string(b)
				}
			}
			want = append(want, vals)
		}
		rows.Close()
		if fmt.Sprint(res.Rows) != fmt.Sprint(want) {
			t.Errorf("%s:\n  dpsql  %v\n  SQLite %v", q, res.Rows, want)
		}
	}
}

// TestCancelledQuerySaysWhatWasCharged: a query cancelled before it runs
// says nothing was charged (and nothing was); one cancelled after the
// charge says its ε was charged (issue 11).
func TestCancelledQuerySaysWhatWasCharged(t *testing.T) {
	testCancelledQuerySaysWhatWasCharged(t, parallel(t))
}

func testCancelledQuerySaysWhatWasCharged(t *testing.T, h *harness) {
	path := h.hardDB(t, `CREATE TABLE c (x INTEGER); INSERT INTO c VALUES (1), (2);`, `CREATE PRIVACY POLICY ON c`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	before := spent(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Query(ctx, `SELECT COUNT(*) FROM c`)
	if !errors.Is(err, dpsql.ErrCancelled) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "nothing was charged") || spent(t, e) != before {
		t.Errorf("cancelled before: %v, spent %v", err, spent(t, e)-before)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	c, err := h.openEngine(path, dpsql.Options{Epsilon: 1}, afterNoise{do: &sync.Once{}, fn: cancel})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Query(ctx, `SELECT COUNT(*) FROM c`)
	if !errors.Is(err, dpsql.ErrCancelled) || !strings.Contains(err.Error(), "ε=1, δ=0 was charged") || spent(t, e) != before+1 {
		t.Errorf("cancelled after the charge: %v, spent %v", err, spent(t, e)-before)
	}
	// The ledger marks the charge unanswered.
	owner := h.open(t, path, dpsql.Options{Owner: true})
	ledger := query(t, owner, "SHOW LEDGER")
	n := len(ledger.Rows)
	if n < 1 || !strings.HasPrefix(fmt.Sprint(ledger.Rows[n-1][8]), "unanswered: cancelled") {
		t.Fatalf("SHOW LEDGER outcomes: %v", ledger.Rows)
	}
	// Another statement pays for itself; the same one, asked again, is
	// answered on the charge its cancelled run paid: nothing more is
	// spent, the answer says so, and the ledger's entry becomes answered.
	other, err := e.Query(context.Background(), `SELECT COUNT(x) FROM c`)
	if err != nil || other.Cost.Epsilon != 1 || spent(t, e) != before+2 {
		t.Fatalf("another statement: %v, cost %v, spent %v", err, other.Cost, spent(t, e)-before)
	}
	again, err := e.Query(context.Background(), `SELECT COUNT(*) FROM c`)
	if err != nil || again.Cost.Epsilon != 0 || spent(t, e) != before+2 || !strings.Contains(strings.Join(again.Notes, "\n"), "uses the charge of the same query, cancelled earlier") {
		t.Errorf("the re-run: %v, cost %v, spent %v, notes %q", err, again.Cost, spent(t, e)-before, again.Notes)
	}
	ledger = query(t, owner, "SHOW LEDGER")
	if len(ledger.Rows) != n+1 || ledger.Rows[n-1][8] != "answered" || ledger.Rows[n][8] != "answered" {
		t.Errorf("SHOW LEDGER outcomes after the re-run: %v", ledger.Rows)
	}
	// Its charge is used once: the next run (no cache here) pays.
	c2, err := h.openEngine(path, dpsql.Options{Epsilon: 1, NoCache: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if third, err := c2.Query(context.Background(), `SELECT COUNT(*) FROM c`); err != nil || third.Cost.Epsilon != 1 || spent(t, e) != before+3 {
		t.Errorf("a third run: %v, spent %v", err, spent(t, e)-before)
	}
}

// afterNoise is a noiser that runs do once, at its first noise draw
// (after the first charge), and adds no noise.
type afterNoise struct {
	exactSparse
	do *sync.Once
	fn func()
}

func (a afterNoise) AddLaplace(v, _, _ float64) (float64, error) { a.do.Do(a.fn); return v, nil }
func (a afterNoise) AddLaplaceExact(v *big.Float, _, _ float64) (float64, error) {
	a.do.Do(a.fn)
	f, _ := v.Float64()
	return f, nil
}
func (a afterNoise) AddGaussianExact(v *big.Float, _, _ float64) (float64, error) {
	return a.AddLaplaceExact(v, 0, 0)
}

// TestWithheldPartIsNotMarkedAnswered: when a composite statement's
// second DP query fails after its first was charged (here the owner
// lowers the budget in between), the first's answer is withheld with the
// statement, and the ledger says so instead of "answered".
func TestWithheldPartIsNotMarkedAnswered(t *testing.T) {
	h := parallel(t)
	path := h.hardDB(t, `CREATE TABLE c (x INTEGER); INSERT INTO c VALUES (1), (2);`, `CREATE PRIVACY POLICY ON c`)
	owner := h.open(t, path, dpsql.Options{Owner: true})
	mustRun(t, owner, "SET BUDGET epsilon = 10")
	e, err := h.openEngine(path, dpsql.Options{}, afterNoise{do: &sync.Once{}, fn: func() {
		mustRun(t, owner, "SET BUDGET epsilon = 0.5")
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = e.Query(context.Background(), `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) AS n FROM c
		UNION ALL SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25) COUNT(*) FROM c WHERE x > 1`)
	if err == nil || !strings.Contains(err.Error(), "withheld") {
		t.Fatalf("the statement: %v, want its second part refused and the first withheld", err)
	}
	ledger := query(t, owner, "SHOW LEDGER")
	if n := len(ledger.Rows); n == 0 || !strings.HasPrefix(fmt.Sprint(ledger.Rows[n-1][8]), "unanswered: withheld") {
		t.Errorf("SHOW LEDGER outcomes: %v", ledger.Rows)
	}
}

// TestCancelsRacingChargesTellTheTruth: cancels that land anywhere in a
// query — while it waits for the ledger, on its charge's BEGIN or COMMIT,
// while it runs — never wedge the ledger for the next query, and what
// each query says of its charge is what the ledger holds: "nothing was
// charged" with no ledger row, "was charged" with a row marked
// unanswered, an answer with a row marked answered. (A cancel on the
// charge's COMMIT used to be reported as "nothing was charged" for a
// charge the ledger had, and one on its BEGIN to leave a pooled
// connection holding the write lock.)
func TestCancelsRacingChargesTellTheTruth(t *testing.T) {
	h := parallel(t)
	path := h.hardDB(t, `CREATE TABLE c (x INTEGER); WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999) INSERT INTO c SELECT i FROM n;`,
		`CREATE PRIVACY POLICY ON c; ALTER PRIVACY POLICY ON c SET BOUNDS x (0, 1000); SET BUDGET epsilon = 1e6`)
	e := h.open(t, path, dpsql.Options{Epsilon: 0.01, NoCache: true})
	const workers, each = 8, 60
	outcomes := make([]string, workers*each)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 3))
			for j := 0; j < each; j++ {
				i := w*each + j
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(12000))*time.Microsecond)
				_, err := e.Query(ctx, fmt.Sprintf("SELECT COUNT(*), SUM(x) FROM c WHERE x > %d", i))
				cancel()
				switch {
				case err == nil:
					outcomes[i] = "answered"
				case strings.Contains(err.Error(), "nothing was charged"):
					outcomes[i] = "none"
				case strings.Contains(err.Error(), "was charged"):
					outcomes[i] = "unanswered"
				default:
					outcomes[i] = "error: " + err.Error()
				}
			}
		}(w)
	}
	wg.Wait()
	// The ledger is not wedged: a query without a deadline is answered
	// at once.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.Query(ctx, "SELECT COUNT(*) FROM c WHERE x < 0"); err != nil || time.Since(start) > 2*time.Second {
		t.Fatalf("after the cancels: %v after %v", err, time.Since(start))
	}
	owner := h.open(t, path, dpsql.Options{Owner: true})
	rows := map[int][]string{}
	for _, row := range query(t, owner, "SHOW LEDGER").Rows {
		var i int
		if _, err := fmt.Sscanf(fmt.Sprint(row[3])[strings.Index(fmt.Sprint(row[3]), ">")+1:], " %d", &i); err == nil {
			rows[i] = append(rows[i], fmt.Sprint(row[8]))
		}
	}
	count := map[string]int{}
	for i, said := range outcomes {
		count[said]++
		got := rows[i]
		switch {
		case strings.HasPrefix(said, "error: "):
			t.Errorf("query %d: %s", i, said)
		case said == "none" && len(got) != 0:
			t.Errorf("query %d said nothing was charged; the ledger has %v", i, got)
		case said == "answered" && (len(got) != 1 || got[0] != "answered"):
			t.Errorf("query %d was answered; the ledger has %v", i, got)
		case said == "unanswered" && (len(got) != 1 || !strings.HasPrefix(got[0], "unanswered")):
			t.Errorf("query %d said it was charged and not answered; the ledger has %v", i, got)
		}
	}
	t.Logf("outcomes: %v", count)
	if count["none"] == 0 || count["answered"] == 0 {
		t.Errorf("the deadlines did not spread over the query (%v): the test checks nothing", count)
	}
}

// TestRepeatsStayFreeUnderConcurrency: while other sessions charge new
// queries, sessions that repeat the same few queries at the same time are
// charged once per query: the first answer reaches the cache even while
// other connections take the write lock, and a repeat asked while the
// first is still being answered waits for it instead of being charged
// again. (18% of repeats used to be charged again under load.)
func TestRepeatsStayFreeUnderConcurrency(t *testing.T) {
	h := parallel(t)
	path := h.hardDB(t, `CREATE TABLE c (x INTEGER); WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999) INSERT INTO c SELECT i FROM n;`,
		`CREATE PRIVACY POLICY ON c; ALTER PRIVACY POLICY ON c SET BOUNDS x (0, 1000); SET BUDGET epsilon = 1e6`)
	e, err := h.openEngine(path, dpsql.Options{Epsilon: 0.01}, nil) // real noise, the cache on
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w := 0; w < 4; w++ {
		wg.Add(2)
		go func(w int) { // new questions: a charge each
			defer wg.Done()
			s, _ := e.NewSession(dpsql.SessionOptions{Epsilon: 0.01})
			for j := 0; j < 40; j++ {
				if _, err := s.Query(ctx, fmt.Sprintf("SELECT SUM(x) FROM c WHERE x < %d", 1000+w*100+j)); err != nil {
					errs <- err
				}
			}
		}(w)
		go func() { // the same five questions, over and over
			defer wg.Done()
			s, _ := e.NewSession(dpsql.SessionOptions{Epsilon: 0.01})
			for j := 0; j < 40; j++ {
				if _, err := s.Query(ctx, fmt.Sprintf("SELECT COUNT(*) FROM c WHERE x > %d", j%5)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	owner := h.open(t, path, dpsql.Options{Owner: true})
	charged := map[string]int{}
	for _, row := range query(t, owner, "SHOW LEDGER").Rows {
		if s := fmt.Sprint(row[3]); strings.Contains(s, "COUNT(*)") {
			charged[s]++
		}
	}
	if len(charged) != 5 {
		t.Errorf("%d repeated statements in the ledger, want 5: %v", len(charged), charged)
	}
	for s, n := range charged {
		if n != 1 {
			t.Errorf("%s charged %d times, want once", s, n)
		}
	}
}

// TestReleasedGroupsDoNotFollowStorageOrder: groups chosen by partition
// selection are released (and drawn their noise) in the order of their
// keys, not in the order the scan met them, which follows the stored rows
// (which group's first row comes first): two databases with the same
// rows stored in opposite orders release the same rows in the same order.
func TestReleasedGroupsDoNotFollowStorageOrder(t *testing.T) {
	h := parallel(t)
	var got []string
	for _, order := range []string{"ASC", "DESC"} {
		path := h.hardDB(t, `CREATE TABLE v (u INTEGER, diag TEXT);
			WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 599)
			INSERT INTO v SELECT i, CASE i % 3 WHEN 0 THEN 'flu' WHEN 1 THEN 'cold' ELSE 'asthma' END FROM n ORDER BY i % 3 `+order+`;`,
			`CREATE PRIVACY POLICY ON v OPTIONS (privacy_unit_column = u, max_groups_contributed = 1); SET BUDGET epsilon = 10, delta = 1e-3`)
		e := h.open(t, path, dpsql.Options{Epsilon: 1})
		got = append(got, rowsOf(query(t, e, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) diag, COUNT(*) FROM v GROUP BY diag")))
	}
	if got[0] != got[1] || !strings.HasPrefix(got[0], "asthma") {
		t.Errorf("released in storage order:\nrows stored one way:  %s\nthe other way:        %s", got[0], got[1])
	}
}

// TestCancelledChargeAnswersOnASpentBudget: a query cancelled after its
// charge took the last of the budget; asked again it is answered on that
// charge (its ε was paid), while any other query is refused.
func TestCancelledChargeAnswersOnASpentBudget(t *testing.T) {
	h := parallel(t)
	path := h.hardDB(t, `CREATE TABLE c (x INTEGER); INSERT INTO c VALUES (1), (2);`, `CREATE PRIVACY POLICY ON c`)
	owner := h.open(t, path, dpsql.Options{Owner: true})
	mustRun(t, owner, `SET BUDGET epsilon = 1`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := h.openEngine(path, dpsql.Options{Epsilon: 1}, afterNoise{do: &sync.Once{}, fn: cancel})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Query(ctx, `SELECT COUNT(*) FROM c`); !errors.Is(err, dpsql.ErrCancelled) || !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "context canceled") || !strings.Contains(err.Error(), "was charged") {
		t.Fatalf("cancelled after the charge: %v (ErrCancelled and context.Canceled, in words, saying what was charged)", err)
	}
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	if _, err := e.Query(context.Background(), `SELECT COUNT(x) FROM c`); !errors.Is(err, dpsql.ErrBudgetExhausted) {
		t.Errorf("another query on the spent budget: %v", err)
	}
	res, err := e.Query(context.Background(), `SELECT COUNT(*) FROM c`)
	if err != nil || res.Cost.Epsilon != 0 {
		t.Errorf("the re-run on the spent budget: %v (cost %v)", err, res)
	}
	if st, _ := e.Budget(context.Background()); st.Spent.Epsilon != 1 {
		t.Errorf("spent %v, want 1", st.Spent)
	}
}
