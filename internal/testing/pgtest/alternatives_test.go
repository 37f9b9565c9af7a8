package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkBoundingAlternatives measures, on PostgreSQL and in one run,
// the SQL shapes issue 13's backend could push down, each against the raw
// query it replaces: clipping to declared bounds; contribution bounding
// (each unit keeps l0 = 1 group, chosen by a keyed hash, and l∞ = 5 rows
// in it) with window functions, or with GROUP BY unit and group, an
// array of each unit's first rows in keyed-hash order, and DISTINCT ON
// unit; streaming the rows to Go ordered by unit
// (the engine's SQLite path bounds in Go); and the automatic-bounds
// histogram as a GROUP BY over bucket numbers. DPSQL_PG_ROWS sets the
// rows (default 10,000,000: 1,000,000 units of 10 rows, 8 groups) and
// DPSQL_PG_WORK_MEM PostgreSQL's work_mem (default: the server's, 4MB).
//
//	go test ./internal/pgtest -run XXX -bench BoundingAlternatives -benchtime 3x
func BenchmarkBoundingAlternatives(b *testing.B) {
	rows := 10_000_000
	if v, err := strconv.Atoi(os.Getenv("DPSQL_PG_ROWS")); err == nil && v > 0 {
		rows = v
	}
	s := StartT(b)
	db, err := s.Open()
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if wm := os.Getenv("DPSQL_PG_WORK_MEM"); wm != "" {
		// One connection, so that the setting holds for every query.
		db.SetMaxOpenConns(1)
		if _, err := db.ExecContext(ctx, "SET work_mem = "+quoteLiteral(wm)); err != nil {
			b.Fatal(err)
		}
	}
	t0 := time.Now()
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE t AS
		SELECT i AS id, i %% %d AS uid, (random() * 1000)::int AS x, 'g' || (i %% 8) AS g
		FROM generate_series(1, %d) AS i; ANALYZE t`, max(1, rows/10), rows)); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d rows generated in %v", rows, time.Since(t0).Round(time.Millisecond))
	const raw = `SELECT g, COUNT(*), SUM(x) FROM t GROUP BY g`
	for _, alt := range []struct{ name, sql string }{
		{"declared-bounds", `SELECT g, COUNT(*), SUM(LEAST(GREATEST(x, 0), 1000)) FROM t GROUP BY g`},
		{"bounding-windows", `SELECT g, COUNT(*), SUM(LEAST(GREATEST(x, 0), 1000)) FROM (
			SELECT g, x,
				DENSE_RANK() OVER (PARTITION BY uid ORDER BY hashtext(g || ':k7'), g) AS group_rank,
				ROW_NUMBER() OVER (PARTITION BY uid, g ORDER BY hashtext(id::text || ':k7'), id) AS row_rank
			FROM t) AS kept WHERE group_rank <= 1 AND row_rank <= 5 GROUP BY g`},
		{"bounding-groupby", `SELECT g, SUM(n), SUM(s) FROM (
			SELECT DISTINCT ON (uid) uid, g, n, s FROM (
				SELECT uid, g, LEAST(COUNT(*), 5) AS n,
					(SELECT SUM(LEAST(GREATEST(v, 0), 1000)) FROM unnest((array_agg(x ORDER BY hashtext(id::text || ':k7'), id))[1:5]) AS v) AS s
				FROM t GROUP BY uid, g) AS per_unit_group
			ORDER BY uid, hashtext(g || ':k7'), g) AS kept GROUP BY g`},
		{"stream-by-unit-to-go", `SELECT uid, g, x FROM t ORDER BY uid`},
		{"stream-unordered-to-go", `SELECT uid, g, x FROM t`},
		{"histogram-buckets", `SELECT CASE WHEN x = 0 THEN -1 ELSE floor(ln(abs(x)::float8) / ln(2.0))::int END AS bucket, COUNT(*), SUM(x) FROM t GROUP BY 1`},
	} {
		b.Run(alt.name, func(b *testing.B) {
			var tRaw, tAlt time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				drain(b, db, raw)
				t1 := time.Now()
				drain(b, db, alt.sql)
				tRaw += t1.Sub(t0)
				tAlt += time.Since(t1)
			}
			b.ReportMetric(float64(tRaw.Milliseconds())/float64(b.N), "raw-ms/op")
			b.ReportMetric(float64(tAlt.Milliseconds())/float64(b.N), "alt-ms/op")
			b.ReportMetric(float64(tAlt)/float64(tRaw), "ratio")
		})
	}
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// drain runs a query and reads every row to the client.
func drain(b *testing.B, db *sql.DB, q string) {
	rs, err := db.Query(q)
	if err != nil {
		b.Fatal(err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rs.Next() {
		if err := rs.Scan(ptrs...); err != nil {
			b.Fatal(err)
		}
	}
	if err := rs.Err(); err != nil {
		b.Fatal(err)
	}
}
