// Package cluster_test runs dpsql's compiled measurement on a sharded
// PostgreSQL cluster built from stock PostgreSQL's own parts (issue 37):
// a coordinator whose private table is hash-partitioned by the privacy
// unit column, each partition a postgres_fdw foreign table on another
// PostgreSQL server started on loopback, partitionwise aggregation on.
// dpsql sends its one statement to the coordinator; the coordinator's
// planner sends the per-unit aggregation to the shards. (Citus, which
// distributes the same way, is not installable here: docs/backends.md.)
package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
	"github.com/dpsql/dpsql/internal/testopts"
)

// shards is how many PostgreSQL servers hold the partitions.
const shards = 2

// columns of the private table, on every server.
const columns = `uid int8 NOT NULL, ward int4, cost int8, day int8`

// rows are the table's rows (units of 1 to 9 rows over 7 wards), the
// same on the cluster and on the single server.
const rows = `SELECT i / 5 + (i % 3) * 10000 AS uid, (i * 31) % 7 AS ward, (i * 7919) % 130 - 10 AS cost, i % 4 AS day FROM generate_series(0, 29999) AS s(i)`

// policy is the privacy policy of both engines: units bounded to 2 wards
// and 3 rows per ward, so that bounding cuts (most units have more).
const policy = `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid, max_groups_contributed = 2, max_rows_contributed = 3);
ALTER PRIVACY POLICY ON visits SET BOUNDS cost (0, 100);
ALTER PRIVACY POLICY ON visits SET BOUNDS day (0, 3);
ALTER PRIVACY POLICY ON visits SET DOMAIN day (0, 1, 2, 3);
ALTER PRIVACY POLICY ON visits SET DOMAIN ward (0, 1, 2, 3, 4, 5, 6);
SET BUDGET epsilon = 1000`

// queries run on both; each is compiled for PostgreSQL.
var queries = []string{
	`SELECT ward, COUNT(*), SUM(cost) FROM visits GROUP BY ward`,
	`SELECT COUNT(*), AVG(cost) FROM visits`,
	`SELECT ward, AVG(cost) FROM visits WHERE day > 0 GROUP BY ward`,
	`SELECT ward, SUM(day, contribution_bounds_per_group => (0, 6)) FROM visits GROUP BY ward`,
	`SELECT day, COUNT(DISTINCT uid) FROM visits GROUP BY day`,
}

// TestShardedClusterAnswersLikeOneServer: on the cluster every query
// gives the single server's answers (zero noise, the same hash key), the
// statement dpsql sends is its one compiled statement (never the rows),
// and the coordinator's EXPLAIN VERBOSE shows the per-unit aggregation
// running on every shard (postgres_fdw's "Aggregate on" the foreign
// partition).
func TestShardedClusterAnswersLikeOneServer(t *testing.T) {
	ctx := context.Background()
	coordinator := pgtest.StartT(t)
	var servers []*pgtest.Server
	for range shards {
		servers = append(servers, pgtest.StartT(t))
	}
	for i, s := range servers {
		exec(t, s.DSN(), fmt.Sprintf(`CREATE TABLE visits_p%d (%s)`, i, columns))
	}
	setup := []string{`CREATE EXTENSION postgres_fdw`,
		fmt.Sprintf(`CREATE TABLE visits (%s) PARTITION BY HASH (uid)`, columns)}
	for i, s := range servers {
		setup = append(setup,
			fmt.Sprintf(`CREATE SERVER shard%d FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host %s, dbname 'postgres', fetch_size '10000')`, i, literal(s.Socket())),
			fmt.Sprintf(`CREATE USER MAPPING FOR dpsql SERVER shard%d OPTIONS (user 'dpsql')`, i),
			fmt.Sprintf(`CREATE FOREIGN TABLE visits_p%d PARTITION OF visits FOR VALUES WITH (MODULUS %d, REMAINDER %d) SERVER shard%d OPTIONS (table_name 'visits_p%d')`, i, shards, i, i, i))
	}
	setup = append(setup, `INSERT INTO visits `+rows, `ALTER DATABASE postgres SET enable_partitionwise_aggregate = on`)
	exec(t, coordinator.DSN(), setup...)
	for i, s := range servers {
		exec(t, s.DSN(), fmt.Sprintf(`ANALYZE visits_p%d`, i))
		if n := count(t, s.DSN(), fmt.Sprintf(`SELECT COUNT(*) FROM visits_p%d`, i)); n < 10000 {
			t.Fatalf("shard %d holds %d rows", i, n)
		}
	}
	single, err := coordinator.CreateDatabase(ctx, "single")
	if err != nil {
		t.Fatal(err)
	}
	exec(t, single, `CREATE TABLE visits (`+columns+`)`, `INSERT INTO visits `+rows, `ANALYZE visits`)

	observe, take := enginetest.RecordPostgres()
	engines := map[string]*dpsql.Engine{}
	for name, dsn := range map[string]string{"cluster": coordinator.DSN(), "single": single} {
		e, err := dpsql.Open(filepath.Join(t.TempDir(), name+".dpsql"), dpsql.Options{Owner: true, Epsilon: 1, NoCache: true, Postgres: dsn,
			Testing: &testopts.Options{Noise: testopts.ZeroNoise(), Knobs: &knobs.Knobs{FixedRandomness: true}, PostgresStatements: observe}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if err := e.Run(ctx, policy, func(*dpsql.Result) error { return nil }); err != nil {
			t.Fatal(err)
		}
		engines[name] = e
	}
	for _, q := range queries {
		take()
		want, err := engines["single"].Query(ctx, q)
		if err != nil {
			t.Fatalf("single server: %s: %v", q, err)
		}
		take()
		got, err := engines["cluster"].Query(ctx, q)
		if err != nil {
			t.Fatalf("cluster: %s: %v", q, err)
		}
		if !reflect.DeepEqual(got.Rows, want.Rows) {
			t.Errorf("%s:\ncluster %v\nsingle  %v", q, got.Rows, want.Rows)
		}
		var measurement string
		for _, s := range take() {
			switch {
			case strings.HasPrefix(s, "SELECT a.attname"), strings.HasPrefix(s, "SELECT c.reltuples"):
			case strings.Contains(s, "pg_catalog.count(") || strings.Contains(s, "pg_catalog.sum("):
				measurement = s
			default:
				t.Errorf("%s: the cluster was sent a statement other than the compiled one: %s", q, s)
			}
		}
		if measurement == "" {
			t.Fatalf("%s: no compiled statement reached the coordinator", q)
		}
		plan := explain(t, coordinator.DSN(), measurement)
		for i := range servers {
			if !strings.Contains(plan, fmt.Sprintf("Aggregate on (public.visits_p%d", i)) {
				t.Errorf("%s: the coordinator does not aggregate per unit on shard %d:\n%s\n%s", q, i, measurement, plan)
			}
		}
	}
}

// exec runs statements on a database, each on its own.
func exec(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	withConn(t, dsn, func(conn *pgx.Conn) {
		for _, s := range stmts {
			if _, err := conn.Exec(context.Background(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	})
}

// count runs a query of one integer.
func count(t *testing.T, dsn, q string) int64 {
	t.Helper()
	var n int64
	withConn(t, dsn, func(conn *pgx.Conn) {
		if err := conn.QueryRow(context.Background(), q).Scan(&n); err != nil {
			t.Fatal(err)
		}
	})
	return n
}

// explain is the coordinator's EXPLAIN VERBOSE of a statement (whose
// parameters, if any, are text: the statements here have none).
func explain(t *testing.T, dsn, stmt string) string {
	t.Helper()
	var lines []string
	withConn(t, dsn, func(conn *pgx.Conn) {
		rows, err := conn.Query(context.Background(), "EXPLAIN (VERBOSE) "+stmt)
		if err != nil {
			t.Fatalf("EXPLAIN %s: %v", stmt, err)
		}
		defer rows.Close()
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, line)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	})
	return strings.Join(lines, "\n")
}

// withConn runs f on a connection to dsn.
func withConn(t *testing.T, dsn string, f func(*pgx.Conn)) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	f(conn)
}

// literal is a PostgreSQL string literal.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
