//go:build cgo

package dpsql_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/testing/ducktest"
)

var (
	duckRows    = flag.Int("duck.rows", 10_000_000, "rows of the DuckDB benchmarks' table")
	duckThreads = flag.Int("duck.threads", 0, "DuckDB's threads in the benchmarks (0: what the machine gives, DefaultResources)")
)

// duckBenchFile makes the DuckDB benchmarks' tables inside DuckDB: t of
// n rows (id; uid = id / 10, so 10 rows per unit; x INTEGER uniform in
// [0, 1000); g one of 8 values, so a unit's rows fall in 8 groups; y
// DOUBLE in [0, 1000) with three decimals; z a copy of x without bounds),
// tu, the same rows with uid as the privacy unit (l0 = 2, l∞ = 10), and
// two public tables: dim (g's regions) and ranges (x's ten ranges of 100).
func duckBenchFile(b *testing.B, n int) string {
	b.Helper()
	duck := filepath.Join(b.TempDir(), "bench.duckdb")
	err := ducktest.Exec(context.Background(), duck, fmt.Sprintf(`CREATE TABLE t AS SELECT i AS id, i // 10 AS uid,
		CAST(hash(i) %% 1000 AS INTEGER) AS x, 'g' || (i %% 8) AS g, CAST(hash(i + 1) %% 1000000 AS DOUBLE) / 1000 AS y,
		CAST(hash(i) %% 1000 AS INTEGER) AS z FROM range(%d) r(i)`, n), `CREATE TABLE tu AS SELECT * FROM t`,
		`CREATE TABLE dim AS SELECT 'g' || i AS g, 'region ' || (i % 3) AS region FROM range(8) r(i)`,
		`CREATE TABLE ranges AS SELECT CAST(i * 100 AS INTEGER) AS lo, CAST(i * 100 + 100 AS INTEGER) AS hi FROM range(10) r(i)`, `CHECKPOINT`)
	if err != nil {
		b.Fatal(err)
	}
	owner, err := dpsql.Open("", dpsql.Options{Owner: true, DuckDB: duck})
	if err != nil {
		b.Fatal(err)
	}
	defer owner.Close()
	err = owner.Run(context.Background(), `SET BUDGET epsilon = 1e6;
		CREATE PRIVACY POLICY ON t;
		ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 1000);
		ALTER PRIVACY POLICY ON t SET BOUNDS y (0, 1000);
		ALTER PRIVACY POLICY ON t SET DOMAIN g ('g0', 'g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7');
		CREATE PRIVACY POLICY ON tu OPTIONS (privacy_unit_column = uid, max_groups_contributed = 2, max_rows_contributed = 10);
		ALTER PRIVACY POLICY ON tu SET BOUNDS x (0, 1000);
		ALTER PRIVACY POLICY ON tu SET DOMAIN g ('g0', 'g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7');
		ALTER TABLE dim SET PUBLIC;
		ALTER TABLE ranges SET PUBLIC`, func(*dpsql.Result) error { return nil })
	if err != nil {
		b.Fatal(err)
	}
	return duck
}

// BenchmarkDuckDB times each private query against the raw DuckDB query
// it replaces, alternately in the same run, on the same file (one
// read-only DuckDB instance, 2 threads on this machine), and reports both
// and their ratio. The private time includes parsing, planning, the
// ledger's commit, the compiled statement and the noise.
//
//	go test -run XXX -bench BenchmarkDuckDB -benchtime 5x -duck.rows 10000000
func BenchmarkDuckDB(b *testing.B) {
	duck := duckBenchFile(b, *duckRows)
	dsn, err := (&duckdb.Source{Path: duck}).ReadOnlyDSN() // the engine's configuration
	if err != nil {
		b.Fatal(err)
	}
	raw, err := sql.Open("duckdb", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	if *duckThreads > 0 {
		// One DuckDB instance per file and configuration in the process:
		// the engine's handle shares it, and so the setting.
		if _, err := raw.Exec(fmt.Sprintf("SET GLOBAL threads = %d", *duckThreads)); err != nil {
			b.Fatal(err)
		}
	}
	eng, err := dpsql.Open("", dpsql.Options{DuckDB: duck, Epsilon: 1, NoCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	const twoLevel = `SELECT g, SUM(s), SUM(n) FROM (SELECT uid, g, SUM(x) AS s, COUNT(*) AS n FROM tu GROUP BY uid, g) GROUP BY g`
	for _, c := range []struct{ name, raw, private string }{
		{"AvgInteger", `SELECT AVG(x) FROM t`, `SELECT AVG(x) FROM t`},
		{"GroupedAvgInteger", `SELECT g, AVG(x) FROM t GROUP BY g`, `SELECT g, AVG(x) FROM t GROUP BY g`},
		{"AvgDouble", `SELECT AVG(y) FROM t`, `SELECT AVG(y) FROM t`},
		{"GroupedAvgDouble", `SELECT g, AVG(y) FROM t GROUP BY g`, `SELECT g, AVG(y) FROM t GROUP BY g`},
		{"AvgAutoBounds", `SELECT AVG(z) FROM t`, `SELECT AVG(z) FROM t`},
		{"BoundingPerGroupClamp", twoLevel, `SELECT g, SUM(x, contribution_bounds_per_group => (0, 5000)), COUNT(*, contribution_bounds_per_group => (0, 10)) FROM tu GROUP BY g`},
		{"BoundingRowSampling", twoLevel, `SELECT g, SUM(x), COUNT(*) FROM tu GROUP BY g`},
		// Per-unit sums and means of a float column on their grid (was the
		// reference evaluator: no engine summed floats exactly).
		{"PerUnitFloatSum", `SELECT g, SUM(LEAST(GREATEST(s, 0), 5000)), SUM(LEAST(GREATEST(m, 0), 1000)) FROM (SELECT uid, g, SUM(y) AS s, AVG(y) AS m FROM tu GROUP BY uid, g) GROUP BY g`,
			`SELECT g, SUM(y, contribution_bounds_per_group => (0, 5000)), AVG(y, contribution_bounds_per_group => (0, 1000)) FROM tu GROUP BY g`},
		// What analysts write beyond plain columns (issue 36): each against
		// the raw query doing the same work.
		{"ExpressionFilter", `SELECT COUNT(*), SUM(x) FROM t WHERE x * 2 > 1000`, `SELECT COUNT(*), SUM(x) FROM t WHERE x * 2 > 1000`},
		{"CaseInsideSum", `SELECT SUM(CASE WHEN x > 500 THEN 1 ELSE 0 END) FROM t`, `SELECT SUM(CASE WHEN x > 500 THEN 1 ELSE 0 END, contribution_bounds_per_row => (0, 1)) FROM t`},
		{"JoinPublicDimension", `SELECT t.g, COUNT(*), SUM(x) FROM t JOIN dim d ON t.g = d.g WHERE d.region = 'region 1' GROUP BY t.g`,
			`SELECT t.g, COUNT(*), SUM(x) FROM t JOIN dim d ON t.g = d.g WHERE d.region = 'region 1' GROUP BY t.g`},
		{"JoinRanges", `SELECT r.lo, COUNT(*), SUM(x) FROM t JOIN ranges r ON t.x >= r.lo AND t.x < r.hi GROUP BY r.lo`,
			`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, group_selection_strategy = PUBLIC_GROUPS) r.lo, COUNT(*), SUM(x) FROM t JOIN ranges r ON t.x >= r.lo AND t.x < r.hi GROUP BY r.lo`},
		{"LikeFilter", `SELECT COUNT(*) FROM t WHERE g LIKE 'g1%'`, `SELECT COUNT(*) FROM t WHERE g LIKE 'g1%'`},
		{"BinnedKey", `SELECT x // 100 * 100 AS bin, COUNT(*) FROM t GROUP BY bin`, `SELECT FLOOR(x / 100) * 100 AS bin, COUNT(*) FROM t GROUP BY FLOOR(x / 100) * 100`},
		{"FloatArithmeticFilter", `SELECT COUNT(*) FROM t WHERE y * 1.5 > 700`, `SELECT COUNT(*) FROM t WHERE y * 1.5 > 700`},
		// Rows per unit, then across units (vs the two-level raw query).
		{"PerUnitSubquery", `SELECT SUM(LEAST(n, 20)) FROM (SELECT uid, COUNT(*) AS n FROM tu GROUP BY uid)`,
			`SELECT SUM(s.n, contribution_bounds_per_row => (0, 20)) FROM (SELECT uid, COUNT(*) AS n FROM tu GROUP BY uid) AS s`},
	} {
		b.Run(c.name, func(b *testing.B) {
			if ex, err := eng.Query(context.Background(), "EXPLAIN "+c.private); err == nil {
				for _, row := range ex.Rows {
					if row[0] == "engine" {
						b.Logf("%s runs in %s", c.name, row[1]) // which path ran: compiled, or the reference and why
					}
				}
			}
			timeRatio(b, raw, eng, c.raw, c.private)
		})
	}
}
