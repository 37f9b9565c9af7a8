//go:build cgo

package totality_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/ducktest"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testopts"
)

// statementLog records the statements an engine sends to DuckDB.
type statementLog struct {
	mu   sync.Mutex
	sent []string
}

func (l *statementLog) add(q string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent = append(l.sent, q)
}

func (l *statementLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.sent
	l.sent = nil
	return out
}

// TestDuckDBJoinsAndSubqueriesCompile is the differential test of joins
// and of subqueries that keep their table's rows: on the
// auditor's generated databases in DuckDB (adversarial values in every
// column), statements that join the private table with the public one
// (inner, USING, the public-groups outer join) and with the second
// private table on the unit, and that read a subquery or WITH query
// (filtered, projected, computed outputs, *; or aggregating per unit
// with COUNT, MIN and MAX), give exactly the reference evaluator's
// answers (zero noise, bounds no unit reaches), run as one compiled
// statement, and send DuckDB that statement and nothing else about a
// private table: no table is copied through the mirror. A join of columns of two classes is not compiled
// (the reference converts by affinity) and still answers alike.
func TestDuckDBJoinsAndSubqueriesCompile(t *testing.T) {
	t.Parallel()
	statements := []struct {
		sql      string
		compiled bool
	}{
		{"COUNT(*) FROM p JOIN pub ON p.g = pub.g", true},
		{"SUM(p.w, contribution_bounds_per_row => (-10, 10)) FROM p JOIN pub USING (g)", true},
		{"p.g, COUNT(*), AVG(pub.weight, contribution_bounds_per_row => (0, 5)) FROM p JOIN pub ON pub.g = p.g GROUP BY p.g", true},
		{"COUNT(*) FROM p JOIN pub ON p.g = pub.g WHERE pub.weight > 1 AND p.n < 3", true},
		{"pub.g, COUNT(*), SUM(p.n, contribution_bounds_per_row => (0, 3)) FROM pub LEFT JOIN p ON pub.g = p.g GROUP BY pub.g", true},
		{"pub.label, COUNT(*) FROM p RIGHT OUTER JOIN pub USING (g) GROUP BY pub.label", true},
		{"COUNT(*), SUM(p2.z, contribution_bounds_per_row => (-1, 1)) FROM p JOIN p2 ON p.uid = p2.uid", true},
		{"p.g, VARIANCE(p2.z, contribution_bounds_per_row => (-4, 4)) FROM p JOIN p2 USING (uid) GROUP BY p.g", true},
		{"COUNT(*) FROM p JOIN pub ON p.g = pub.g JOIN p2 ON p2.uid = p.uid", true},
		{"COUNT(*) FROM p JOIN pub ON p.h = pub.g AND p.g = pub.label", true},
		{"COUNT(*) FROM p JOIN pub ON p.n = pub.g", false}, // integer = text: SQLite's affinity decides
		{"COUNT(*) FROM p JOIN pub ON p.w = pub.weight", true},
		{"COUNT(*) FROM (SELECT uid, w, g FROM p WHERE n > 1) AS s", true},
		{"s.g, SUM(s.w, contribution_bounds_per_row => (-3, 3)) FROM (SELECT uid, w, g FROM p WHERE n IS NOT NULL) AS s GROUP BY s.g", true},
		{"SUM(s.c1, contribution_bounds_per_row => (-10, 10)) FROM (SELECT uid AS u, CASE WHEN n > 1 THEN w ELSE 0 END AS c1, g FROM p) AS s WHERE s.g <> 'b'", true},
		{"AVG(s.c1, contribution_bounds_per_row => (-10, 10)) FROM (SELECT *, CASE WHEN w > 0 THEN n ELSE 0 END AS c1 FROM p WHERE g <> 'a') AS s", true},
		{"COUNT(s.v), VARIANCE(s.w, contribution_bounds_per_row => (-2, 2)) FROM (SELECT * FROM p) AS s WHERE s.h IN ('a', 'b') OR s.n BETWEEN 1 AND 2", true},
		{"COUNT(*) FROM (SELECT uid, SUM(w) AS t FROM p GROUP BY uid) AS s", false}, // a float sum per unit: SQLite's rounding
		{"COUNT(*), SUM(s.k, contribution_bounds_per_row => (0, 10)) FROM (SELECT uid, COUNT(*) AS k FROM p GROUP BY uid) AS s", true},
		{"AVG(s.m, contribution_bounds_per_row => (-3, 3)), COUNT(s.lo) FROM (SELECT uid, g, MAX(n) AS m, MIN(w) AS lo FROM p WHERE n > 0 GROUP BY uid, g) AS s WHERE s.lo > -5", true},
		{"s.g, COUNT(*), SUM(s.c, contribution_bounds_per_row => (0, 4)) FROM (SELECT uid, g, COUNT(v) AS c FROM p GROUP BY uid, g) AS s GROUP BY s.g", true},
		{"COUNT(s.top), SUM(s.least, contribution_bounds_per_row => (-1, 1)) FROM (SELECT uid AS u, MAX(h) AS top, MIN(v) AS least FROM p GROUP BY uid) AS s WHERE s.least < 2.5 OR s.least IS NULL", true},
	}
	r := rand.New(rand.NewPCG(3, 31))
	for d := 0; d < 3; d++ {
		duck := ducktest.FromAudit(t, r)
		owner := enginetest.OpenDuckDB(t, duck, true, nil)
		enginetest.Run(t, owner, `CREATE PRIVACY POLICY ON p OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1000, max_rows_contributed = 100000);
			CREATE PRIVACY POLICY ON p2 OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1000, max_rows_contributed = 100000)`)
		owner.Close()
		k := &knobs.Knobs{FixedRandomness: true}
		var log statementLog
		e, err := dpsql.Open("", dpsql.Options{DuckDB: duck, Testing: &testopts.Options{Noise: testopts.ZeroNoise(), Knobs: k, DuckDBStatements: log.add}})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range statements {
			q := "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-5, group_selection_strategy = PUBLIC_GROUPS) " + st.sql
			if strings.HasPrefix(st.sql, "SUM(s.c1") {
				q = "WITH s AS (SELECT uid AS u, CASE WHEN n > 1 THEN w ELSE 0 END AS c1, g FROM p) SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) " + strings.Replace(st.sql, "(SELECT uid AS u, CASE WHEN n > 1 THEN w ELSE 0 END AS c1, g FROM p) AS s", "s", 1)
			} else if !strings.Contains(st.sql, "GROUP BY pub.") {
				q = strings.Replace(q, ", group_selection_strategy = PUBLIC_GROUPS", "", 1)
			}
			k.ReferenceOnly = true
			want := enginetest.Outcome(e, q)
			k.ReferenceOnly = false
			log.take()
			before := k.Compiled.Load()
			got := enginetest.Outcome(e, q)
			sent := log.take()
			if got != want {
				t.Errorf("database %d, %s:\ncompiled:  %s\nreference: %s", d, q, got, want)
			}
			if ran := k.Compiled.Load() > before; ran != st.compiled {
				t.Errorf("%s: compiled %v, want %v", q, ran, st.compiled)
				continue
			}
			if st.compiled && !compiledAlone(sent) {
				t.Errorf("%s: sent DuckDB %d statements, want the compiled join and public reads only:\n%s", q, len(sent), strings.Join(sent, "\n"))
			}
		}
		if n := k.CompiledFailed.Load(); n > 0 {
			t.Errorf("%d compiled statements failed in DuckDB", n)
		}
		e.Close()
	}
}

// compiledAlone reports whether the statements sent are one compiled
// measurement (it calls built-ins by their qualified names; the mirror's
// reads call none) and, besides it, reads of the public table only (the
// public groups, listed when the query is planned).
func compiledAlone(sent []string) bool {
	compiled := 0
	for _, q := range sent {
		switch {
		case strings.Contains(q, "system.main."):
			compiled++
		case !strings.HasSuffix(q, ` FROM "pub"`):
			return false
		}
	}
	return compiled == 1
}

// TestDuckDBJoinOfRowUnitsCompiles: a fact table whose rows are each
// their own unit, joined with a dimension table, compiles with DuckDB's
// rowid as the unit (the identity the mirror reads, so the reference's
// unit too) and answers as the reference does: with a dimension whose
// keys repeat, every fact row still counts once (l0 = l∞ = 1), whichever
// of its copies is kept — as a semi-join when only the fact table's
// columns are measured, with bounding when a dimension's are (over
// unique keys here: with repeated ones, which copy is kept is random).
func TestDuckDBJoinOfRowUnitsCompiles(t *testing.T) {
	t.Parallel()
	duck := filepath.Join(t.TempDir(), "f.duckdb")
	if err := ducktest.Exec(context.Background(), duck,
		`CREATE TABLE f AS SELECT 'g' || (i % 7) AS g, i % 100 AS x, CAST(i % 13 AS DOUBLE) / 4 AS y FROM range(5000) r(i)`,
		`CREATE TABLE dim AS SELECT 'g' || i AS g, 'r' || (i % 3) AS region, i * 3 AS w FROM range(5) r(i)`,
		`CREATE TABLE dim2 AS SELECT 'g' || (i % 4) AS g, i AS n FROM range(9) r(i)`); err != nil {
		t.Fatal(err)
	}
	owner := enginetest.OpenDuckDB(t, duck, true, nil)
	enginetest.Run(t, owner, `SET BUDGET epsilon = 1e6; CREATE PRIVACY POLICY ON f; ALTER TABLE dim SET PUBLIC; ALTER TABLE dim2 SET PUBLIC`)
	owner.Close()
	statements := []string{
		"COUNT(*), SUM(x, contribution_bounds_per_row => (0, 100)) FROM f JOIN dim ON f.g = dim.g WHERE dim.region = 'r1'",
		"AVG(y, contribution_bounds_per_row => (0, 4)) FROM f JOIN dim USING (g)",
		"COUNT(*), SUM(x, contribution_bounds_per_row => (0, 100)) FROM f JOIN dim2 ON f.g = dim2.g", // repeated keys
		"COUNT(DISTINCT x), VARIANCE(y, contribution_bounds_per_row => (0, 4)) FROM f JOIN dim2 ON f.g = dim2.g WHERE dim2.n > 3 OR f.x < 10",
		"SUM(dim.w, contribution_bounds_per_row => (0, 10)) FROM f JOIN dim ON f.g = dim.g WHERE f.x > 50", // measures the dimension: bounded
		"COUNT(*) FROM dim JOIN f USING (g) JOIN dim2 ON dim2.g = f.g WHERE dim.region <> 'r2' AND dim2.n < 7",
		"COUNT(*) FROM f JOIN dim USING (g) WHERE dim.region LIKE '%1' AND f.g LIKE 'g_'",
		// per-unit bounds where each row is its own unit
		"COUNT(*, contribution_bounds_per_group => (0, 3)), COUNT(x, contribution_bounds_per_group => (2, 3)) FROM f WHERE x > 10",
		"SUM(x, contribution_bounds_per_group => (-5, 50)), SUM(CASE WHEN x > 50 THEN NULL ELSE x END, contribution_bounds_per_group => (3, 40)) FROM f",
		"COUNT(CASE WHEN x > 50 THEN NULL ELSE x END, contribution_bounds_per_group => (1, 4)) FROM f",
	}
	t.Run("f", func(t *testing.T) { sameCompiled(t, duck, "", statements, true) })
}
