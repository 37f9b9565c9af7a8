package dpsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/mechanism"
)

// visit is one generated row: a unit, its ward, the day and a cost.
type visit struct {
	uid  int
	ward string
	day  int
	cost float64
}

// unitsDB writes visits into a new database with a policy on uid.
func (h *harness) unitsDB(t testing.TB, visits []visit, policy string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := db.Begin()
	tx.Exec(`CREATE TABLE visits (uid INTEGER, ward TEXT, day INTEGER, cost REAL)`)
	for _, v := range visits {
		if _, err := tx.Exec(`INSERT INTO visits VALUES (?, ?, ?, ?)`, v.uid, v.ward, v.day, v.cost); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	h.ownerPolicy(t, path, policy)
	return path
}

// ownerPolicy runs the owner's policy script on a database, then sets a
// budget large enough for any test (ε = 10^6, δ = 0.5).
func (h *harness) ownerPolicy(t testing.TB, path, policy string) {
	t.Helper()
	owner, err := h.openEngine(path, dpsql.Options{Owner: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if err := owner.Run(context.Background(), policy+`; SET BUDGET epsilon = 1e6, delta = 0.5`, func(*dpsql.Result) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// generateVisits makes units with 1–50 rows each; a unit stays in one ward
// (A or B) and costs the same on every visit, so bounded answers do not
// depend on which rows are kept.
func generateVisits(units int, seed uint64) []visit {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []visit
	for u := 1; u <= units; u++ {
		ward := []string{"A", "B"}[r.IntN(2)]
		cost := float64(r.IntN(100))
		for i := 0; i < 1+r.IntN(50); i++ {
			out = append(out, visit{uid: u, ward: ward, day: 1 + r.IntN(3), cost: cost})
		}
	}
	return out
}

func TestContributionBoundingExact(t *testing.T) { testContributionBoundingExact(t, parallel(t)) }

func testContributionBoundingExact(t *testing.T, h *harness) {
	vs := generateVisits(200, 1)
	path := h.unitsDB(t, vs, `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 3);
		ALTER PRIVACY POLICY ON visits SET BOUNDS cost (0, 100);
		ALTER PRIVACY POLICY ON visits SET DOMAIN ward ('A', 'B', 'C')`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	// Brute force: each unit keeps min(rows, 3) rows, all in its ward.
	rows := map[int]int{}
	wardOf, costOf := map[int]string{}, map[int]float64{}
	for _, v := range vs {
		rows[v.uid]++
		wardOf[v.uid], costOf[v.uid] = v.ward, v.cost
	}
	count, sum, units := map[string]float64{}, map[string]float64{}, map[string]float64{}
	var total float64
	for u, n := range rows {
		k := float64(min(n, 3))
		count[wardOf[u]] += k
		sum[wardOf[u]] += k * costOf[u]
		units[wardOf[u]]++
		total += k
	}
	r := query(t, e, `SELECT COUNT(*) FROM visits`)
	if got := num(r.Rows[0][0]); got != total {
		t.Errorf("bounded COUNT(*) = %v, want %v (raw rows: %d)", got, total, len(vs))
	}
	r = query(t, e, `SELECT ward, COUNT(*), SUM(cost), COUNT(DISTINCT uid) FROM visits GROUP BY ward`)
	for _, row := range r.Rows {
		w := row[0].(string)
		if num(row[1]) != count[w] || math.Abs(num(row[2])-sum[w]) > 1e-6 || num(row[3]) != units[w] {
			t.Errorf("ward %s: %v, want count %v sum %v units %v", w, row, count[w], sum[w], units[w])
		}
	}
	// A per-query override of l∞.
	r = query(t, e, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_rows_contributed = 1) COUNT(*) FROM visits`)
	if got := num(r.Rows[0][0]); got != 200 {
		t.Errorf("COUNT(*) with l∞ = 1: %v, want 200", got)
	}
	r = query(t, e, `EXPLAIN SELECT ward, COUNT(*) FROM visits GROUP BY ward`)
	var text strings.Builder
	for _, row := range r.Rows {
		text.WriteString(fmt.Sprint(row...) + "\n")
	}
	for _, want := range []string{"privacy unit \"uid\"", "at most 1 group(s) and at most 3 row(s)", "sensitivity 3", "dpsql_measure(?1, _dpsql_s0, _dpsql_s1) FROM (SELECT \"_dpsql_t0\".\"uid\" AS _dpsql_s0", "ORDER BY _dpsql_s0 COLLATE BINARY", "carried from the base column \"visits\".\"uid\""} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, text.String())
		}
	}
}

// TestGroupBoundingLimitsUnits: one unit visits every ward; with l0 = 2 it
// counts in at most two of them.
func TestGroupBoundingLimitsUnits(t *testing.T) { testGroupBoundingLimitsUnits(t, parallel(t)) }

func testGroupBoundingLimitsUnits(t *testing.T, h *harness) {
	vs := []visit{{1, "A", 1, 1}, {1, "B", 1, 1}, {1, "C", 1, 1}, {2, "A", 1, 1}}
	path := h.unitsDB(t, vs, `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = "uid", max_groups_contributed = 2);
		ALTER PRIVACY POLICY ON visits SET DOMAIN ward ('A', 'B', 'C')`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	for i := 0; i < 10; i++ { // a fresh random choice each time
		r := query(t, e, `SELECT ward, COUNT(DISTINCT uid) FROM visits GROUP BY ward`)
		var total float64
		for _, row := range r.Rows {
			total += num(row[1])
		}
		if total != 3 { // unit 1 in two wards, unit 2 in one
			t.Fatalf("units summed over wards = %v, want 3: %v", total, r.Rows)
		}
	}
}

func TestPartitionSelectionWithoutNoise(t *testing.T) {
	testPartitionSelectionWithoutNoise(t, parallel(t))
}

func testPartitionSelectionWithoutNoise(t *testing.T, h *harness) {
	var vs []visit
	for u := 1; u <= 40; u++ {
		vs = append(vs, visit{u, "A", 1, 5}) // day 1: 40 units
	}
	for u := 41; u <= 45; u++ {
		vs = append(vs, visit{u, "A", 2, 5}) // day 2: 5 units, below τ
	}
	path := h.unitsDB(t, vs, `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid)`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	if _, err := e.Query(context.Background(), `SELECT day, COUNT(*) FROM visits GROUP BY day`); err == nil || !strings.Contains(err.Error(), "delta") {
		t.Errorf("private keys without delta: %v", err)
	}
	r := query(t, e, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-5) day, COUNT(*) AS n FROM visits GROUP BY day`)
	if len(r.Rows) != 1 || num(r.Rows[0][0]) != 1 || num(r.Rows[0][1]) != 40 {
		t.Errorf("released groups %v, want only day 1 with 40", r.Rows)
	}
	if r.Cost.Delta != 1e-5 {
		t.Errorf("charged δ = %v", r.Cost.Delta)
	}
}

type seeded struct{ r *rand.Rand }

func (s seeded) Uint64() uint64 { return s.r.Uint64() }

// TestUnitNeighboursEmpirically runs COUNT(*) on a database and on its
// neighbour without the unit that has the most rows (it keeps l∞ = 3 rows,
// so the true counts differ by 3), 1,500 times each with seeded noise at
// ε = 1, and checks P(bin | D) ≤ e^ε P(bin | D') both ways for bins with
// enough samples, within 4.4 standard errors (false-failure rate ~1e-5
// per bin). A sensitivity of 1 instead of 3 would give ratios near e^3.
func TestUnitNeighboursEmpirically(t *testing.T) { testUnitNeighboursEmpirically(t, parallel(t)) }

func testUnitNeighboursEmpirically(t *testing.T, h *harness) {
	if testing.Short() {
		t.Skip("statistical test skipped in -short mode")
	}
	vs := generateVisits(30, 2)
	most, rows := 0, map[int]int{}
	for _, v := range vs {
		rows[v.uid]++
		if rows[v.uid] > rows[most] {
			most = v.uid
		}
	}
	var without []visit
	for _, v := range vs {
		if v.uid != most {
			without = append(without, v)
		}
	}
	policy := `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid, max_rows_contributed = 3);
		ALTER PRIVACY POLICY ON visits SET BOUNDS cost (0, 100)`
	// One query releases COUNT(*) (sensitivity 3) and SUM(cost)
	// (sensitivity 300) with ε/2 each: each marginal is (ε/2)-DP.
	d, d2 := h.unitsDB(t, vs, policy), h.unitsDB(t, without, policy)
	if h.onOtherBackend() {
		h.sameAsTheReference(t, `SELECT COUNT(*), SUM(cost) FROM visits`, d, d2)
		return
	}
	const n, eps = 1500, 1.0
	widths := []float64{6, 600}
	hist := func(path string, seed uint64) [2]map[int]int {
		e, err := h.openEngine(path, dpsql.Options{Epsilon: eps}, mechanism.NewSecureNoiser(seeded{rand.New(rand.NewPCG(seed, seed))}))
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		h := [2]map[int]int{{}, {}}
		for i := 0; i < n; i++ {
			row := query(t, e, `SELECT COUNT(*), SUM(cost) FROM visits`).Rows[0]
			for j := range h {
				h[j][int(math.Floor(num(row[j])/widths[j]))]++
			}
		}
		return h
	}
	a, b := hist(d, 3), hist(d2, 4)
	e := math.Exp(eps / 2)
	for j, name := range []string{"COUNT", "SUM"} {
		bins := []int{}
		for k := range a[j] {
			bins = append(bins, k)
		}
		sort.Ints(bins)
		checked := 0
		for _, k := range bins {
			for _, pr := range [][2]int{{a[j][k], b[j][k]}, {b[j][k], a[j][k]}} {
				if pr[0] < 60 || pr[1] < 60 {
					continue
				}
				p, q := float64(pr[0])/n, float64(pr[1])/n
				if se := math.Sqrt(p/n + e*e*q/n); p-e*q > 4.4*se {
					t.Errorf("%s bin %d: P=%.3f > e^(ε/2)·P'=%.3f", name, k, p, e*q)
				}
				checked++
			}
		}
		if checked < 2 {
			t.Errorf("%s: only %d comparisons: %v %v", name, checked, a[j], b[j])
		}
	}
}

// TestAdultWithRepeatedRows builds, from adult.csv, a table where each
// person (unit) appears 1 to 3 times; with max_rows_contributed = 1 the
// exact bounded answers are the original table's figures.
func TestAdultWithRepeatedRows(t *testing.T) {
	h := parallel(t)
	path := h.adultDB(t)
	db, _ := sql.Open("sqlite", "file:"+path)
	_, err := db.Exec(`CREATE TABLE people AS SELECT a.rowid AS person, a."Age" AS age, a."Sex" AS sex
		FROM adult a JOIN (SELECT 1 AS k UNION ALL SELECT 2 UNION ALL SELECT 3) r ON r.k <= 1 + a.rowid % 3`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	owner := h.open(t, path, dpsql.Options{Owner: true})
	mustRun(t, owner, `CREATE PRIVACY POLICY ON people OPTIONS (privacy_unit_column = person, max_rows_contributed = 1);
		ALTER PRIVACY POLICY ON people SET BOUNDS age (0, 125);
		ALTER PRIVACY POLICY ON people SET DOMAIN sex ('Female', 'Male')`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	r := query(t, e, `SELECT COUNT(*), SUM(age), COUNT(DISTINCT person) FROM people`)
	if num(r.Rows[0][0]) != 32561 || num(r.Rows[0][1]) != 1256257 || num(r.Rows[0][2]) != 32561 {
		t.Errorf("bounded figures %v, want 32561, 1256257, 32561", r.Rows[0])
	}
	r = query(t, e, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (max_rows_contributed = 3) COUNT(*) FROM people`)
	if num(r.Rows[0][0]) <= 32561*1.9 {
		t.Errorf("with l∞ = 3 the repeated rows count: %v", r.Rows[0][0])
	}
}

// TestPartitionSelectionReleasesARareGroupRarely: a group that one unit
// alone supports must be released with probability at most δ/l0. With
// ε = 1 (half of it for the selection), δ = 0.2 and l0 = 1 the threshold
// makes that exactly 0.2; over 1,000 seeded runs the observed rate must
// stay below 0.2 + 4.4 standard errors (false-failure rate ~1e-5).
func TestPartitionSelectionReleasesARareGroupRarely(t *testing.T) {
	testPartitionSelectionReleasesARareGroupRarely(t, parallel(t))
}

func testPartitionSelectionReleasesARareGroupRarely(t *testing.T, h *harness) {
	if testing.Short() {
		t.Skip("statistical test skipped in -short mode")
	}
	var vs []visit
	for u := 1; u <= 100; u++ {
		vs = append(vs, visit{u, "A", 1, 5})
	}
	vs = append(vs, visit{101, "A", 2, 5}, visit{101, "A", 2, 5}) // day 2: one unit
	path := h.unitsDB(t, vs, `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid, max_rows_contributed = 5)`)
	if h.onOtherBackend() {
		h.sameAsTheReference(t, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 0.2) day, COUNT(*) FROM visits GROUP BY day`, path)
		return
	}
	e, err := h.openEngine(path, dpsql.Options{Epsilon: 1}, mechanism.NewSecureNoiser(seeded{rand.New(rand.NewPCG(5, 5))}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	owner := h.open(t, path, dpsql.Options{Owner: true})
	const n, delta = 1000, 0.2
	released, common := 0, 0
	for i := 0; i < n; i++ {
		mustRun(t, owner, "RESET BUDGET") // δ adds up over the runs
		r := query(t, e, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 0.2) day, COUNT(*) FROM visits GROUP BY day`)
		for _, row := range r.Rows {
			switch num(row[0]) {
			case 2:
				released++
			case 1:
				common++
			}
		}
	}
	t.Logf("one-unit group released in %d of %d runs (δ = %v)", released, n, delta)
	if limit := delta + 4.4*math.Sqrt(delta*(1-delta)/n); float64(released)/n > limit {
		t.Errorf("the one-unit group was released in %d of %d runs (limit %.3f)", released, n, limit)
	}
	if common < n*99/100 {
		t.Errorf("the 100-unit group was released in only %d of %d runs", common, n)
	}
}

// h.joinDB: visits (unit uid, l0 = 1, l∞ = 10) and a public wards table in
// which ward A appears twice.
func (h *harness) joinDB(t *testing.T) (string, []visit) {
	vs := generateVisits(100, 7)
	path := h.unitsDB(t, vs, `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid, max_rows_contributed = 10);
		ALTER PRIVACY POLICY ON visits SET DOMAIN ward ('A', 'B')`)
	db, _ := sql.Open("sqlite", "file:"+path)
	db.Exec(`CREATE TABLE wards (code TEXT, label TEXT); INSERT INTO wards VALUES ('A', 'Acute'), ('A', 'Acute (annex)'), ('B', 'Burns')`)
	db.Close()
	owner := h.open(t, path, dpsql.Options{Owner: true})
	mustRun(t, owner, `ALTER TABLE wards SET PUBLIC`)
	return path, vs
}

func TestJoinsAndSubqueriesExact(t *testing.T) { testJoinsAndSubqueriesExact(t, parallel(t)) }

func testJoinsAndSubqueriesExact(t *testing.T, h *harness) {
	path, vs := h.joinDB(t)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	rows := map[int]int{}
	wardOf := map[int]string{}
	for _, v := range vs {
		rows[v.uid]++
		wardOf[v.uid] = v.ward
	}
	// Private ⋈ public: ward A rows match two wards rows, but each unit
	// still keeps at most l∞ = 10 rows.
	var want float64
	for u, n := range rows {
		m := n
		if wardOf[u] == "A" {
			m = 2 * n
		}
		want += float64(min(m, 10))
	}
	r := query(t, e, `SELECT COUNT(*) FROM visits v JOIN wards w ON v.ward = w.code`)
	if got := num(r.Rows[0][0]); got != want {
		t.Errorf("private ⋈ public COUNT = %v, want %v", got, want)
	}
	// Per-unit pre-aggregation in a subquery, and the same as a WITH query.
	var sum float64
	for _, n := range rows {
		sum += math.Min(float64(n), 60)
	}
	for _, q := range []string{
		`SELECT AVG(n, contribution_bounds_per_group => (0, 60)) FROM (SELECT uid, COUNT(*) AS n FROM visits GROUP BY uid) AS per_unit`,
		`WITH per_unit AS (SELECT uid, COUNT(*) AS n FROM visits GROUP BY uid) SELECT AVG(per_unit.n, contribution_bounds_per_group => (0, 60)) FROM per_unit`,
	} {
		r = query(t, e, q)
		if got := num(r.Rows[0][0]); math.Abs(got-sum/float64(len(rows))) > 1e-9 {
			t.Errorf("%s = %v, want %v", q, got, sum/float64(len(rows)))
		}
	}
	// A public column of the join as group key needs partition selection.
	r = query(t, e, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) w.label, COUNT(DISTINCT v.uid) FROM visits v JOIN wards w ON v.ward = w.code GROUP BY w.label`)
	if len(r.Rows) == 0 || len(r.Rows) > 3 {
		t.Errorf("partition-selected labels: %v", r.Rows)
	}
	for _, bad := range []struct{ sql, msg string }{
		{`SELECT COUNT(*) FROM (SELECT ward, COUNT(*) AS n FROM visits WHERE uid > 0 GROUP BY ward HAVING uid > 1) AS s`, "must be per unit"},
		{`SELECT COUNT(*) FROM (SELECT uid, ward, COUNT(*) AS n FROM visits GROUP BY ward) AS s`, "add \"uid\" to its GROUP BY"},
		{`SELECT COUNT(*) FROM (SELECT uid FROM visits LIMIT 5) AS s`, "LIMIT"},
		{`SELECT COUNT(*) FROM (SELECT DISTINCT uid, ward FROM visits) AS s`, "SELECT DISTINCT is not available in a subquery on a private table"},
		{`WITH r AS (SELECT uid, ward FROM visits) SELECT (SELECT COUNT(*) FROM r) AS n, ward FROM r`, "column \"ward\" of private subquery \"r\" can only appear inside an aggregate"},
		{`SELECT COUNT(*) FROM visits a JOIN visits b ON a.ward = b.ward`, "only be joined on their privacy unit columns"},
		{`SELECT COUNT(*) FROM visits a JOIN visits b ON a.uid = b.uid WHERE ward = 'A'`, "ambiguous"},
	} {
		if _, err := e.Query(context.Background(), bad.sql); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%s: %v, want %q", bad.sql, err, bad.msg)
		}
	}
	// Private ⋈ private on the unit column is allowed.
	r = query(t, e, `SELECT COUNT(DISTINCT a.uid) FROM visits a JOIN visits b ON a.uid = b.uid`)
	if got := num(r.Rows[0][0]); got != float64(len(rows)) {
		t.Errorf("units after a self-join on uid: %v, want %d", got, len(rows))
	}
}

// TestGroupByUnitIsRefused: grouping by the privacy unit — directly, through
// a join on it, or renamed by a WITH query — is refused whatever the data
// and whatever δ, with a message that says why and what to do instead.
func TestGroupByUnitIsRefused(t *testing.T) { testGroupByUnitIsRefused(t, parallel(t)) }

func testGroupByUnitIsRefused(t *testing.T, h *harness) {
	path := h.unitsDB(t, generateVisits(20, 1), `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid)`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	for _, q := range []string{
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) uid, COUNT(*) FROM visits GROUP BY uid`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) ward, COUNT(*) FROM visits GROUP BY ward, uid`,
		`WITH s AS (SELECT uid AS who, COUNT(*) AS n FROM visits GROUP BY uid) SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) who, SUM(n) FROM s GROUP BY who`,
		// Computed from the unit inside a subquery, as GROUP BY uid + 0 is.
		`WITH s AS (SELECT uid + 0 AS x, COUNT(*) AS n FROM visits GROUP BY uid) SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) x, SUM(n) FROM s GROUP BY x`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) x, COUNT(*) FROM (SELECT uid * 2 AS x, ward FROM visits) AS s GROUP BY x`,
	} {
		_, err := e.Query(context.Background(), q)
		if !errors.Is(err, dpsql.ErrNotPrivate) || !strings.Contains(err.Error(), "groups by the privacy unit") || !strings.Contains(err.Error(), "COUNT(DISTINCT") {
			t.Errorf("%s: %v", q, err)
		}
	}
	// A count per unit is not the unit: grouping by it is allowed.
	query(t, e, `WITH s AS (SELECT uid, COUNT(uid) AS n FROM visits GROUP BY uid) SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) n, COUNT(*) FROM s GROUP BY n`)
}
