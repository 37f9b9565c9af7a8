package dpsql_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/planner"
)

// TestSQLOverReleasedResults: DP queries in FROM, in WITH, as scalar
// subqueries and as UNION ALL arms; the outer query post-processes their
// answers (DISTINCT, joins with a public table, arithmetic, ORDER BY) and
// costs nothing beyond the parts. Exact answers under zero noise (issue
// 10).
func TestSQLOverReleasedResults(t *testing.T) { testSQLOverReleasedResults(t, parallel(t)) }

func testSQLOverReleasedResults(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	// x = i % 100, g = 'a', 'b', 'c', 'z' by i % 4 (domain a, b, c, d).
	sumX := func(g int) int {
		s := 0
		for i := 0; i < 1000; i++ {
			if i%4 == g {
				s += i % 100
			}
		}
		return s
	}
	for _, tc := range []struct {
		sql     string
		want    string
		columns string
		parts   int
	}{
		{`SELECT g, n FROM (SELECT g, COUNT(*) AS n FROM t GROUP BY g) AS r ORDER BY n DESC, g`, "a:250 b:250 c:250 d:0", "g,n", 1},
		{`SELECT * FROM (SELECT g, COUNT(*) AS n FROM t GROUP BY g) AS r WHERE n > 0`, "a:250 b:250 c:250", "g,n", 1},
		{`WITH r AS (SELECT g, SUM(x) AS s FROM t GROUP BY g) SELECT SUM(s) AS total FROM r`, fmt.Sprint(sumX(0) + sumX(1) + sumX(2)), "total", 1},
		{`SELECT (SELECT COUNT(*) FROM t) AS n, (SELECT COUNT(*) FROM t WHERE x < 10) * 1.0 / (SELECT COUNT(*) FROM t) AS share`, "1000:0.1", "n,share", 3},
		{`SELECT 'low' AS band, COUNT(*) AS n FROM t WHERE x < 50 UNION ALL SELECT 'high', COUNT(*) FROM t WHERE x >= 50 ORDER BY band`, "high:500 low:500", "band,n", 2},
		{`SELECT DISTINCT n FROM (SELECT g, COUNT(*) AS n FROM t GROUP BY g) AS r ORDER BY n`, "0 250", "n", 1},
		{`SELECT l.label, r.n FROM (SELECT g, COUNT(*) AS n FROM t GROUP BY g) AS r JOIN lookup AS l ON l.code = r.g ORDER BY l.label`, "Alpha:250 Beta:250", "label,n", 1},
		{`SELECT COUNT(*) AS n FROM t UNION ALL SELECT COUNT(*) FROM lookup`, "1000 2", "n", 1},
		{`SELECT n FROM (SELECT COUNT(*) AS n FROM t WHERE x > 1000) AS r`, "0", "n", 1},
		{`SELECT g, n, RANK() OVER (ORDER BY n DESC, g) AS r, SUM(n) OVER () AS total FROM (SELECT g, COUNT(*) AS n FROM t GROUP BY g) AS q ORDER BY g`, "a:250:1:750 b:250:2:750 c:250:3:750 d:0:4:750", "g,n,r,total", 1},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) AS n FROM t UNION ALL SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25) COUNT(*) FROM t WHERE g = 'a'`, "1000 250", "n", 2},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			mustRun(t, h.open(t, e.Path(), dpsql.Options{Owner: true}), "RESET CACHE")
			before := spent(t, e)
			r := query(t, e, tc.sql)
			if got := rowsOf(r); got != tc.want {
				t.Errorf("rows %s, want %s", got, tc.want)
			}
			if got := strings.Join(r.Columns, ","); got != tc.columns {
				t.Errorf("columns %s, want %s", got, tc.columns)
			}
			cost := float64(tc.parts)
			if strings.Contains(tc.sql, "epsilon = 0.5") {
				cost = 0.75
			}
			if got := spent(t, e) - before; got < cost-1e-9 || got > cost+1e-9 {
				t.Errorf("spent %g, want %g (the sum of the parts' ε)", got, cost)
			}
			if r.Cost.Epsilon < cost-1e-9 || r.Cost.Epsilon > cost+1e-9 {
				t.Errorf("result says it cost %g, want %g", r.Cost.Epsilon, cost)
			}
		})
	}
}

// TestSQLOverReleasedResultsRefusals: the outer query may read only the
// parts' answers and public tables, scalar subqueries and DISTINCT stay
// out of DP queries, and whatever is refused — by the planner, by the
// backend compiling the outer query, or by the budget for the parts'
// sum — is refused before anything is charged.
func TestSQLOverReleasedResultsRefusals(t *testing.T) {
	testSQLOverReleasedResultsRefusals(t, parallel(t))
}

func testSQLOverReleasedResultsRefusals(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	for _, tc := range []struct {
		sql  string
		kind error
		msg  string
	}{
		{`SELECT r.n FROM (SELECT COUNT(*) AS n FROM t) AS r JOIN t ON t.x = r.n`, planner.ErrNotPrivate, "can only appear inside an aggregate"},
		{`SELECT (SELECT x FROM t LIMIT 1)`, planner.ErrNotPrivate, "can only appear inside an aggregate"},
		{`SELECT DISTINCT g FROM t GROUP BY g`, planner.ErrUnsupported, "SELECT DISTINCT is not available"},
		{`SELECT COUNT(*) FROM t UNION ALL SELECT x FROM t`, planner.ErrNotPrivate, "column \"x\" of private table \"t\" can only appear inside an aggregate"},
		{`SELECT COUNT(*) FROM (SELECT x FROM t UNION ALL SELECT x FROM t) AS u`, planner.ErrUnsupported, "UNION ALL"},
		{`SELECT n FROM (SELECT COUNT(*) AS n FROM t) AS r UNION ALL SELECT i FROM t`, planner.ErrNotPrivate, "can only appear inside an aggregate"},
		{`SELECT COUNT(*) FROM t UNION ALL SELECT 1, 2`, exec.ErrRejected, "same number of result columns"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 60) COUNT(*) FROM t UNION ALL SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 60) COUNT(*) FROM t WHERE x > 1`, budget.ErrBudgetExhausted, "cost ε=120"},
		{`SELECT COUNT(*) AS n FROM t UNION SELECT COUNT(*) FROM t ORDER BY g`, planner.ErrUnsupported, "output column names or positions"},
		// Attempts to reach private rows through the new shapes.
		{`SELECT * FROM (SELECT x FROM t) AS r`, planner.ErrUnsupported, "no privacy_unit_column"},
		{`SELECT (SELECT MAX(x) FROM t)`, planner.ErrUnsupported, "MAX"},
		{`SELECT n FROM (SELECT COUNT(*) AS n FROM t) AS r WHERE n > (SELECT x FROM t LIMIT 1)`, planner.ErrNotPrivate, "can only appear inside an aggregate"},
		{`WITH r AS (SELECT g FROM t) SELECT (SELECT COUNT(*) FROM r) AS n, g FROM r`, planner.ErrUnsupported, "no privacy_unit_column"},
		{`SELECT l.code, t.x FROM lookup AS l LEFT JOIN t ON t.g = l.code`, planner.ErrNotPrivate, "can only appear inside an aggregate"},
		{`SELECT code FROM lookup UNION SELECT g FROM t`, planner.ErrNotPrivate, "can only appear inside an aggregate"},
		{`SELECT DISTINCT g FROM t`, planner.ErrUnsupported, "SELECT DISTINCT is not available"},
		{`SELECT g, ROW_NUMBER() OVER (ORDER BY g) AS r, COUNT(*) FROM t GROUP BY g`, planner.ErrUnsupported, "window functions (ROW_NUMBER ... OVER) are not available in a query on a private table"},
		{`SELECT SUM(x) OVER () FROM t`, planner.ErrUnsupported, "window functions (SUM ... OVER)"},
	} {
		before := spent(t, e)
		_, err := e.Query(context.Background(), tc.sql)
		if err == nil || !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s:\n got %v\nwant %v containing %q", tc.sql, err, tc.kind, tc.msg)
		}
		if after := spent(t, e); after != before {
			t.Errorf("%s: spent %g though refused", tc.sql, after-before)
		}
	}
}

// TestExplainSQLOverReleasedResults: EXPLAIN shows each part's plan and
// the total, and spends nothing.
func TestExplainSQLOverReleasedResults(t *testing.T) {
	h := parallel(t)
	e := h.open(t, h.newDB(t), dpsql.Options{})
	r := query(t, e, `EXPLAIN SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) AS n FROM t UNION ALL SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25) COUNT(*) FROM t WHERE g = 'a'`)
	var steps []string
	for _, row := range r.Rows {
		steps = append(steps, fmt.Sprint(row[0]))
	}
	text := rowsOf(r)
	for _, want := range []string{"DP query 1: privacy cost:ε=0.5", "DP query 2: privacy cost:ε=0.25", "outer query", "total:ε=0.75, δ=0"} {
		if !strings.Contains(text, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, strings.Join(steps, "\n"))
		}
	}
	if spent(t, e) != 0 {
		t.Errorf("EXPLAIN spent %g", spent(t, e))
	}
}

// TestSQLOverReleasedResultsUsesTheCache: with real noise, a composite
// query asked again gets every part from the cache — the same rows, free
// — and a part asked alone afterwards is the cached answer too.
func TestSQLOverReleasedResultsUsesTheCache(t *testing.T) {
	h := parallel(t)
	path := h.newDB(t)
	e, err := h.openEngine(path, dpsql.Options{Epsilon: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	q := `SELECT g, n FROM (SELECT g, COUNT(*) AS n FROM t GROUP BY g) AS r ORDER BY g`
	first := query(t, e, q)
	if got := spent(t, e); got != 1 {
		t.Fatalf("spent %g, want 1", got)
	}
	again := query(t, e, q)
	alone := query(t, e, `SELECT g, COUNT(*) AS n FROM t GROUP BY g`)
	if rowsOf(again) != rowsOf(first) || rowsOf(alone) != rowsOf(first) {
		t.Errorf("first %s, again %s, alone %s: want the same released answer", rowsOf(first), rowsOf(again), rowsOf(alone))
	}
	if got := spent(t, e); got != 1 {
		t.Errorf("spent %g after the repeats, want 1", got)
	}
	// The repeat says it was: every part came from the cache (the console
	// showed cached: false).
	if first.Cached || !again.Cached || !alone.Cached {
		t.Errorf("cached: first %v, again %v, alone %v; want false, true, true", first.Cached, again.Cached, alone.Cached)
	}
}

// TestPublicGroups: the public-groups idiom — a public relation on the
// preserved side of LEFT/RIGHT JOIN, or any public relation joined in
// under group_selection_strategy = PUBLIC_GROUPS — gives GROUP BY its
// groups from public data: every public value is output, those without
// private rows with a noisy zero, no δ spent; unmatched public rows add
// nothing to any aggregate (BigQuery's semantics). Exact answers under
// zero noise (issue 10).
func TestPublicGroups(t *testing.T) { testPublicGroups(t, parallel(t)) }

func testPublicGroups(t *testing.T, h *harness) {
	path := h.newDB(t)
	// 'z' has private rows but is outside g's declared domain; 'q' has none.
	h.execData(t, path, `INSERT INTO lookup VALUES ('q', 'Quebec'), ('z', 'Zulu'), (NULL, 'Nothing')`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	for _, tc := range []struct{ sql, want string }{
		{`SELECT l.code, COUNT(*) AS n FROM lookup AS l LEFT JOIN t ON t.g = l.code GROUP BY l.code`, "a:250 b:250 q:0 z:250"},
		{`SELECT l.code, SUM(t.x) AS s FROM lookup AS l LEFT OUTER JOIN t ON t.g = l.code WHERE t.x < 10 GROUP BY l.code`, "a:120 b:150 q:0 z:100"},
		{`SELECT g, COUNT(*) AS n FROM t RIGHT JOIN (SELECT DISTINCT code AS g FROM lookup) AS p USING (g) GROUP BY g`, "a:250 b:250 q:0 z:250"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (group_selection_strategy = PUBLIC_GROUPS) l.label, COUNT(*) AS n FROM t JOIN lookup AS l ON t.g = l.code GROUP BY l.label`, "Alpha:250 Beta:250 Nothing:0 Quebec:0 Zulu:250"},
		// An empty public relation: no group, no row.
		{`SELECT l.code, COUNT(*) AS n FROM (SELECT code FROM lookup WHERE code = 'none') AS l LEFT JOIN t ON t.g = l.code GROUP BY l.code`, ""},
		// A private key keeps its declared domain; the join still drops 'z' rows' non-matches.
		{`SELECT t.g, COUNT(*) AS n FROM lookup AS l LEFT JOIN t ON t.g = l.code GROUP BY t.g`, "a:250 b:250 c:0 d:0"},
	} {
		r := query(t, e, tc.sql)
		if got := rowsOf(r); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.want)
		}
		if r.Cost.Delta != 0 {
			t.Errorf("%s: spent δ=%g", tc.sql, r.Cost.Delta)
		}
	}
	for _, tc := range []struct{ sql, msg string }{
		{`SELECT l.code, COUNT(*) FROM t LEFT JOIN lookup AS l ON t.g = l.code GROUP BY l.code`, "must preserve a public relation"},
		{`SELECT COUNT(*) FROM t AS a RIGHT JOIN t AS b ON a.i = b.i`, "must preserve a public relation"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (group_selection_strategy = PUBLIC_GROUPS) g, COUNT(*) FROM t GROUP BY g`, "is a private column"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (group_selection_strategy = 'SOMETHING') COUNT(*) FROM t`, "takes PUBLIC_GROUPS or LAPLACE_THRESHOLD"},
		{`SELECT DISTINCT g, COUNT(*) FROM t GROUP BY g`, "SELECT DISTINCT is not available"},
		// Without the option an inner join's public key still needs δ.
		{`SELECT l.label, COUNT(*) FROM t JOIN lookup AS l ON t.g = l.code GROUP BY l.label`, "delta"},
	} {
		before := spent(t, e)
		if _, err := e.Query(context.Background(), tc.sql); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.sql, err, tc.msg)
		}
		if spent(t, e) != before {
			t.Errorf("%s: charged though refused", tc.sql)
		}
	}
	// Public ⋈ public outer joins keep SQL's meaning.
	if got := rowsOf(query(t, e, `SELECT a.code, b.label FROM lookup AS a LEFT JOIN lookup AS b ON a.code = b.label ORDER BY a.code`)); got != "<nil>:<nil> a:<nil> b:<nil> q:<nil> z:<nil>" {
		t.Errorf("public LEFT JOIN: %s", got)
	}
}

// TestSubqueriesInDPQueries: a DP query may use subqueries in its
// expressions when their values are public — over public tables, or the
// answers of DP queries asked first (adaptive composition: the statement
// costs the sum). The engine runs them before the private scan and puts
// their values in it as constants, so nothing they do can depend on the
// private rows. A DP query may also join the answers of another as a
// public relation. Exact answers under zero noise (issue 10).
func TestSubqueriesInDPQueries(t *testing.T) { testSubqueriesInDPQueries(t, parallel(t)) }

func testSubqueriesInDPQueries(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	// x = i % 100 over 1,000 rows; g by i % 4 in a, b, c, z (domain a–d).
	for _, tc := range []struct {
		sql  string
		want string
		cost float64
	}{
		{`SELECT COUNT(*) FROM t WHERE g IN (SELECT code FROM lookup)`, "500", 1},
		{`SELECT COUNT(*) FROM t WHERE g NOT IN (SELECT code FROM lookup WHERE code = 'a')`, "750", 1},
		{`SELECT COUNT(*) FROM t WHERE x < (SELECT COUNT(*) FROM lookup) * 10`, "200", 1},
		{`SELECT COUNT(*) FROM t WHERE x IN (SELECT code FROM lookup WHERE code = 'nothing')`, "0", 1},
		// DP answers used by a DP query: AVG(x) = 49.5, so x > 49.5 holds for half.
		{`SELECT COUNT(*) FROM t WHERE x > (SELECT AVG(x) FROM t)`, "500", 2},
		{`SELECT COUNT(*) FROM t WHERE g IN (SELECT g FROM (SELECT g, COUNT(*) AS n FROM t GROUP BY g) AS r WHERE n > 0)`, "750", 2},
		// The answers joined as a public relation ('d' has no rows, 'z' no answer).
		{`SELECT COUNT(*) AS c, SUM(r.n, contribution_bounds_per_row => (0, 1000)) AS s FROM t JOIN (SELECT g, COUNT(*) AS n FROM t GROUP BY g) AS r ON t.g = r.g`, "750:187500", 2},
	} {
		before := spent(t, e)
		r := query(t, e, tc.sql)
		if got := rowsOf(r); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.sql, got, tc.want)
		}
		if got := spent(t, e) - before; math.Abs(got-tc.cost) > 1e-9 || math.Abs(r.Cost.Epsilon-tc.cost) > 1e-9 {
			t.Errorf("%s: spent %g (result says %g), want %g", tc.sql, got, r.Cost.Epsilon, tc.cost)
		}
	}
	for _, tc := range []struct{ sql, msg string }{
		{`SELECT COUNT(*) FROM t WHERE g IN (SELECT code, label FROM lookup)`, "must return one column"},
		{`SELECT COUNT(*) FROM t WHERE x > (SELECT NTILE(0) OVER () FROM lookup)`, "ntile"},
		{`SELECT COUNT(*) FROM t WHERE x > (SELECT x FROM t)`, "can only appear inside an aggregate"},
	} {
		before := spent(t, e)
		if _, err := e.Query(context.Background(), tc.sql); err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.msg)) {
			t.Errorf("%s: %v, want %q", tc.sql, err, tc.msg)
		}
		if spent(t, e) != before {
			t.Errorf("%s: charged though refused", tc.sql)
		}
	}
}
