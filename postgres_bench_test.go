package dpsql_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

// pgBenchPolicy declares t (each row a unit; bounds on x, none on y) and
// u (units of 10 rows, each contributing at most 3 rows to one group).
const pgBenchPolicy = `CREATE PRIVACY POLICY ON t;
ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 1000);
ALTER PRIVACY POLICY ON t SET BOUNDS z (0, 1);
ALTER PRIVACY POLICY ON t SET DOMAIN g ('g0', 'g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7');
CREATE PRIVACY POLICY ON u OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 3);
ALTER PRIVACY POLICY ON u SET BOUNDS x (0, 1000);
ALTER PRIVACY POLICY ON u SET DOMAIN g ('g0', 'g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7');
SET BUDGET epsilon = 1e6`

// pgBenchQueries: each private query and the raw query it replaces.
var pgBenchQueries = []struct{ name, raw, private string }{
	{"avg-declared", `SELECT AVG(x) FROM t`, `SELECT AVG(x) FROM t`},
	{"grouped-avg-declared", `SELECT g, AVG(x) FROM t GROUP BY g`, `SELECT g, AVG(x) FROM t GROUP BY g`},
	{"avg-automatic-bounds", `SELECT AVG(y) FROM t`, `SELECT AVG(y) FROM t`},
	// z has a distinct value in every row: grouping identical rows
	// gains nothing there.
	{"avg-declared-distinct-floats", `SELECT AVG(z) FROM t`, `SELECT AVG(z) FROM t`},
	// Bounding against the raw two-level query: per unit and group, then
	// per group.
	{"contribution-bounding", twoLevel(""), `SELECT g, SUM(x) FROM u GROUP BY g`},
	// A tenth of the rows pass the filter, which PostgreSQL applies
	// (an integer column compared with an integer is pushed down).
	{"avg-declared-where", `SELECT AVG(x) FROM t WHERE x < 100`, `SELECT AVG(x) FROM t WHERE x < 100`},
	{"contribution-bounding-where", twoLevel(" WHERE x < 100"), `SELECT g, SUM(x) FROM u WHERE x < 100 GROUP BY g`},
}

// twoLevel is the raw two-level query of the bounded SUM over u: each
// unit's sum per group, then their sum per group.
func twoLevel(where string) string {
	return `SELECT g, SUM(s) FROM (SELECT uid, g, SUM(x) AS s FROM u` + where + ` GROUP BY uid, g) AS per_unit GROUP BY g`
}

// peakRSS is this process's peak resident memory in MB (Linux's VmHWM;
// 0 where /proc does not say).
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkPostgres runs the same private queries on PostgreSQL (the
// compiled measurement, or the mirrored tables) and on SQLite, each
// against its own raw query, in one run: DPSQL_BENCH_ROWS rows (default
// 10,000,000) in t and in u (units of 10 rows: 1,000,000 units at 10M).
// DPSQL_BENCH_BACKENDS=postgres skips SQLite; peak-rss-MB is this
// process's peak memory so far (PostgreSQL runs first, so its figures
// are dpsql's own over PostgreSQL).
//
//	DPSQL_BENCH_ROWS=10000000 go test -run XXX -bench Postgres -benchtime 2x -timeout 60m .
func BenchmarkPostgres(b *testing.B) {
	rows := 10_000_000
	if s := os.Getenv("DPSQL_BENCH_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("DPSQL_BENCH_ROWS=%q", s)
		}
		rows = n
	}
	srv := pgtest.StartT(b)
	ctx := context.Background()
	dir := b.TempDir()

	// The same rows on both: x = i·7919 mod 1000, y = x, g = 'g' || i mod 8,
	// uid = i / 10.
	pgc, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		b.Fatal(err)
	}
	defer pgc.Close(ctx)
	for _, name := range []string{"t", "u"} {
		if _, err := pgc.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s AS SELECT i / 10 AS uid, (i * 7919) %% 1000 AS x, (i * 7919) %% 1000 AS y, 'g' || (i %% 8) AS g,
			(i * 0.6180339887498949::float8) - floor(i * 0.6180339887498949::float8) AS z
			FROM generate_series(0::bigint, %d) AS s(i); ANALYZE %s`, name, rows-1, name)); err != nil {
			b.Fatal(err)
		}
	}
	native := filepath.Join(dir, "native.db")
	sdb, err := sql.Open("sqlite", "file:"+native)
	if err != nil {
		b.Fatal(err)
	}
	defer sdb.Close()
	backends := []string{"postgres", "sqlite"}
	if os.Getenv("DPSQL_BENCH_BACKENDS") == "postgres" {
		backends = backends[:1]
	}
	for _, name := range []string{"t", "u"} {
		if len(backends) == 1 {
			break
		}
		if _, err := sdb.Exec(fmt.Sprintf(`CREATE TABLE %s (uid INTEGER, x INTEGER, y INTEGER, g TEXT, z REAL);
			WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			INSERT INTO %s SELECT i / 10, (i * 7919) %% 1000, (i * 7919) %% 1000, 'g' || (i %% 8),
				(i * 0.6180339887498949) - floor(i * 0.6180339887498949) FROM n`, name, rows-1, name)); err != nil {
			b.Fatal(err)
		}
	}
	engines := map[string]*dpsql.Engine{}
	for backend, open := range map[string]func() (*dpsql.Engine, error){
		"sqlite": func() (*dpsql.Engine, error) {
			return dpsql.Open(native, dpsql.Options{Owner: true, Epsilon: 1, NoCache: true})
		},
		"postgres": func() (*dpsql.Engine, error) {
			return dpsql.Open(filepath.Join(dir, "pg.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, NoCache: true, Postgres: srv.DSN()})
		},
	} {
		if !slices.Contains(backends, backend) {
			continue
		}
		e, err := open()
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		if err := e.Run(ctx, pgBenchPolicy, func(*dpsql.Result) error { return nil }); err != nil {
			b.Fatal(err)
		}
		engines[backend] = e
	}
	raw := map[string]func(string) error{
		"sqlite": func(q string) error {
			rs, err := sdb.QueryContext(ctx, q)
			if err != nil {
				return err
			}
			defer rs.Close()
			return drain(rs)
		},
		"postgres": func(q string) error {
			rs, err := pgc.Query(ctx, q)
			if err != nil {
				return err
			}
			defer rs.Close()
			return drain(rs)
		},
	}
	for _, backend := range backends {
		for _, q := range pgBenchQueries {
			b.Run(backend+"/"+q.name, func(b *testing.B) {
				var tRaw, tPriv time.Duration
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if err := raw[backend](q.raw); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					if _, err := engines[backend].Query(ctx, q.private); err != nil {
						b.Fatal(err)
					}
					tRaw += t1.Sub(t0)
					tPriv += time.Since(t1)
				}
				b.ReportMetric(float64(tRaw.Microseconds())/float64(b.N)/1000, "raw-ms/op")
				b.ReportMetric(float64(tPriv.Microseconds())/float64(b.N)/1000, "private-ms/op")
				b.ReportMetric(float64(tPriv)/float64(tRaw), "ratio")
				b.ReportMetric(peakRSS(), "peak-rss-MB")
			})
		}
	}
}

// drain reads every row of a result (database/sql's or pgx's).
func drain(rows interface {
	Next() bool
	Err() error
}) error {
	for rows.Next() {
	}
	return rows.Err()
}
