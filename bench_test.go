package dpsql_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
)

// benchDB builds a table t(x INTEGER, g TEXT, y INTEGER) of n rows (x
// uniform in [0, 1000), g one of 8 values, y a copy of x) with bounds on x
// (none on y) and a domain on g, and a budget large enough for any
// benchmark.
func benchDB(b *testing.B, n int) string {
	strict := "" // the reference evaluator measures
	if os.Getenv("DPSQL_BENCH_STRICT") != "" {
		strict = " STRICT" // the compiled SQLite statement measures (backend/sqlite)
	}
	return benchTable(b, fmt.Sprintf(`CREATE TABLE t (x INTEGER, g TEXT, y INTEGER)%s;
		WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		INSERT INTO t (x, g) SELECT abs(random()) %% 1000, 'g' || (i %% 8) FROM n;
		UPDATE t SET y = x;`, strict, n-1), `CREATE PRIVACY POLICY ON t;
		ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 1000);
		ALTER PRIVACY POLICY ON t SET DOMAIN g ('g0', 'g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7');
		SET BUDGET epsilon = 1e6`)
}

// benchTable builds a benchmark database: create run in SQLite, then
// policy run by the owner; it returns the file's path.
func benchTable(b *testing.B, create, policy string) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	_, err = db.Exec(create)
	db.Close()
	if err != nil {
		b.Fatal(err)
	}
	owner, err := dpsql.Open(path, dpsql.Options{Owner: true})
	if err != nil {
		b.Fatal(err)
	}
	defer owner.Close()
	if err := owner.Run(context.Background(), policy, func(*dpsql.Result) error { return nil }); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchRatio times the raw SQLite query and the private query alternately
// in the same run and reports both and their ratio, on a table of rows
// rows (DPSQL_BENCH_ROWS, when set, for every benchmark).
func benchRatio(b *testing.B, rows int, raw, private string) {
	path := benchDB(b, envInt(b, "DPSQL_BENCH_ROWS", rows))
	if os.Getenv("DPSQL_BENCH_STRICT") != "" {
		benchRatioCompiled(b, path, raw, private)
		return
	}
	benchRatioOn(b, path, raw, private)
}

// benchRatioOn is benchRatio on an existing database, measured by the
// reference evaluator (what production SQLite engines run).
func benchRatioOn(b *testing.B, path, raw, private string) {
	benchRatioWith(b, path, raw, private, nil)
}

// benchRatioCompiled is benchRatioOn with the scans compiled to one
// SQLite statement (knobs.CompileSQLite, on STRICT tables): it fails
// when no scan compiled, so that it never times the reference under the
// compiled path's name.
func benchRatioCompiled(b *testing.B, path, raw, private string) {
	k := &knobs.Knobs{CompileSQLite: true}
	benchRatioWith(b, path, raw, private, k)
	if k.Compiled.Load() == 0 || k.CompiledFailed.Load() > 0 {
		b.Fatalf("%s: %d scans compiled, %d failed (not compiled: %v)", private, k.Compiled.Load(), k.CompiledFailed.Load(), k.NotCompiled())
	}
}

// benchRatioWith is benchRatioOn with the test knobs k (nil: none).
func benchRatioWith(b *testing.B, path, raw, private string, k *knobs.Knobs) {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	opts := dpsql.Options{Epsilon: 1, NoCache: true} // measure the work, not the answer cache
	if k != nil {
		opts = dpsql.WithKnobs(opts, k)
	}
	eng, err := dpsql.Open(path, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	b.ResetTimer()
	timeRatio(b, db, eng, raw, private)
}

// timeRatio times the raw query on db and the private query on eng
// alternately, b.N times each, and reports both and their ratio.
func timeRatio(b *testing.B, db *sql.DB, eng *dpsql.Engine, raw, private string) {
	ctx := context.Background()
	var tRaw, tPriv time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		rs, err := db.QueryContext(ctx, raw)
		if err != nil {
			b.Fatal(err)
		}
		for rs.Next() {
		}
		rs.Close()
		t1 := time.Now()
		res, err := eng.Query(ctx, private)
		if err != nil {
			b.Fatal(err)
		}
		for _, note := range res.Notes {
			if strings.Contains(note, "the reference evaluator measured the same rows instead") {
				b.Fatalf("%s fell back to the reference evaluator: %s", private, note) // a benchmark of the wrong path
			}
		}
		t2 := time.Now()
		tRaw += t1.Sub(t0)
		tPriv += t2.Sub(t1)
	}
	b.ReportMetric(float64(tRaw.Microseconds())/float64(b.N)/1000, "raw-ms/op")
	b.ReportMetric(float64(tPriv.Microseconds())/float64(b.N)/1000, "private-ms/op")
	b.ReportMetric(float64(tPriv)/float64(tRaw), "ratio")
}

// BenchmarkAvgDeclaredBounds: private AVG with declared bounds against the
// raw SELECT AVG it replaces, on 1,000,000 rows.
func BenchmarkAvgDeclaredBounds(b *testing.B) {
	benchRatio(b, 1_000_000, `SELECT AVG(x) FROM t`, `SELECT AVG(x) FROM t`)
}

// BenchmarkGroupedAvgDeclaredBounds: the same with GROUP BY over an
// 8-value public domain, against the raw grouped AVG.
func BenchmarkGroupedAvgDeclaredBounds(b *testing.B) {
	benchRatio(b, 1_000_000, `SELECT g, AVG(x) FROM t GROUP BY g`, `SELECT g, AVG(x) FROM t GROUP BY g`)
}

// BenchmarkFilteredAvgDeclaredBounds: private AVG with a WHERE clause, the
// usual shape of a real question, against the raw filtered AVG.
func BenchmarkFilteredAvgDeclaredBounds(b *testing.B) {
	q := `SELECT AVG(x) FROM t WHERE g = 'g1' OR g = 'g2'`
	benchRatio(b, 1_000_000, q, q)
}

// BenchmarkAvgAutoBounds: private AVG of a column without declared bounds
// (bounds chosen privately from one histogram scan) against the raw
// SELECT AVG of the same column.
func BenchmarkAvgAutoBounds(b *testing.B) {
	benchRatio(b, 1_000_000, `SELECT AVG(y) FROM t`, `SELECT AVG(y) FROM t`)
}

// BenchmarkStddevAutoBounds: private STDDEV_POP with automatic bounds
// against the raw AVG (SQLite has no STDDEV).
func BenchmarkStddevAutoBounds(b *testing.B) {
	benchRatio(b, 1_000_000, `SELECT AVG(y) FROM t`, `SELECT STDDEV_POP(y) FROM t`)
}

// BenchmarkCountUnitsBounded: COUNT and SUM over a 1,000,000-row table of
// 100,000 privacy units (10 rows each), with contribution bounding
// (l0 = 1, l∞ = 5) and GROUP BY over an 8-value domain, against the raw
// grouped aggregate.
func BenchmarkCountUnitsBounded(b *testing.B) {
	path := benchDB(b, 1_000_000)
	db, _ := sql.Open("sqlite", "file:"+path)
	if _, err := db.Exec(`ALTER TABLE t ADD COLUMN uid INTEGER; UPDATE t SET uid = rowid % 100000`); err != nil {
		b.Fatal(err)
	}
	db.Close()
	owner, _ := dpsql.Open(path, dpsql.Options{Owner: true})
	if err := owner.Run(context.Background(), `CREATE PRIVACY POLICY ON t OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 5);
		ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 1000);
		ALTER PRIVACY POLICY ON t SET DOMAIN g ('g0', 'g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7')`, func(*dpsql.Result) error { return nil }); err != nil {
		b.Fatal(err)
	}
	owner.Close()
	benchRatioOn(b, path, `SELECT g, COUNT(*), SUM(x) FROM t GROUP BY g`, `SELECT g, COUNT(*), SUM(x) FROM t GROUP BY g`)
}

// BenchmarkBoundingManyUnits: the bounded queries of issue 53 on SQLite,
// over DPSQL_BENCH_ROWS rows (default 2,000,000) of about a quarter as
// many units (491,000 at 2M), 8 groups, l0 = 2 and l∞ = 3: the grouped
// COUNT and SUM against the raw two-level query (each unit's sum per
// group, then per group), and AVG against its two-level form (each unit's
// sum and count, then their totals). The scan reads the rows sorted by
// unit and holds one unit at a time; its peak memory is measured from
// the command line (docs/benchmarks.md).
func BenchmarkBoundingManyUnits(b *testing.B) {
	rows := envInt(b, "DPSQL_BENCH_ROWS", 2_000_000)
	for _, strict := range []string{"", " STRICT"} {
		// A STRICT table's scans are compiled to one SQLite statement
		// (backend/sqlite); the other's run through the reference
		// evaluator, fed in unit order.
		name := "reference"
		if strict != "" {
			name = "compiled"
		}
		path := benchTable(b, fmt.Sprintf(`CREATE TABLE t (uid INTEGER, g INTEGER, x REAL)%s;
		WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
		INSERT INTO t SELECT abs(random()) %% %d, abs(random()) %% 8, (abs(random()) %% 100000) / 1000.0 FROM n`, strict, rows-1, rows*491/2000),
			`CREATE PRIVACY POLICY ON t OPTIONS (privacy_unit_column = uid, max_groups_contributed = 2, max_rows_contributed = 3);
		ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 100);
		ALTER PRIVACY POLICY ON t SET DOMAIN g (0, 1, 2, 3, 4, 5, 6, 7);
		SET BUDGET epsilon = 1e6`)
		run := benchRatioOn
		if strict != "" {
			run = benchRatioCompiled
		}
		b.Run("grouped/"+name, func(b *testing.B) {
			run(b, path, `SELECT g, SUM(s) FROM (SELECT uid, g, SUM(x) AS s FROM t GROUP BY uid, g) GROUP BY g`, `SELECT g, COUNT(*), SUM(x) FROM t GROUP BY g`)
		})
		b.Run("avg/"+name, func(b *testing.B) {
			run(b, path, `SELECT SUM(s) / SUM(n) FROM (SELECT uid, SUM(x) AS s, COUNT(x) AS n FROM t GROUP BY uid)`, `SELECT AVG(x) FROM t`)
		})
	}
}

// BenchmarkSQLOverReleasedResults: a DP query in FROM with a window
// function over its answer, against the same SQL on SQLite.
func BenchmarkSQLOverReleasedResults(b *testing.B) {
	q := `SELECT g, n, RANK() OVER (ORDER BY n DESC) AS r FROM (SELECT g, COUNT(*) AS n FROM t GROUP BY g) AS q`
	benchRatio(b, 1_000_000, q, q)
}

// BenchmarkMedianDeclaredBounds: MEDIAN by the noisy quantile tree against
// the raw median by sorting (SQLite has no MEDIAN).
func BenchmarkMedianDeclaredBounds(b *testing.B) {
	benchRatio(b, 1_000_000, `SELECT x FROM t ORDER BY x LIMIT 1 OFFSET 500000`, `SELECT MEDIAN(x) FROM t`)
}

// BenchmarkMedianAutoBounds: the same on a column without declared bounds
// (bounds chosen privately; the scan counts fine buckets).
func BenchmarkMedianAutoBounds(b *testing.B) {
	benchRatio(b, 1_000_000, `SELECT y FROM t ORDER BY y LIMIT 1 OFFSET 500000`, `SELECT MEDIAN(y) FROM t`)
}

// BenchmarkQueryOverhead is one private COUNT(*) over a one-row table,
// answered afresh each time (no cache): what every query pays besides
// reading its rows — parsing, the catalog, the budget check, the durable
// charge, noise and release.
func BenchmarkQueryOverhead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "o.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)`); err != nil {
		b.Fatal(err)
	}
	raw.Close()
	owner, err := dpsql.Open(path, dpsql.Options{Owner: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := owner.Run(ctx, `CREATE PRIVACY POLICY ON t; SET BUDGET epsilon = 1000`, func(*dpsql.Result) error { return nil }); err != nil {
		b.Fatal(err)
	}
	owner.Close()
	e, err := dpsql.Open(path, dpsql.Options{Epsilon: 0.0001, NoCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Query(ctx, `SELECT COUNT(*) FROM t`); err != nil {
			b.Fatal(err)
		}
	}
}

// envInt is the positive integer in the environment variable name, or def.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
