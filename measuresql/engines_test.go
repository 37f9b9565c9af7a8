//go:build cgo

package measuresql

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/dpsql/dpsql/internal/testing/pgtest"
	"github.com/dpsql/dpsql/measure"
)

// enginesSchema is compileCases' tables, in both engines, with rows that
// reach their edges: NULLs, NaN, ±Inf, -0, the extremes of int64 and
// of doubles, text with quotes and non-ASCII letters.
var enginesSchema = []struct{ duck, pg string }{
	{`CREATE TABLE t (u BIGINT, x BIGINT, y DOUBLE, g VARCHAR, n BIGINT, b BLOB, i INTEGER, w BIGINT)`,
		`CREATE TABLE t (u int8, x int8, y float8, g text, n int8, b bytea, i int4, w int8)`},
	{`CREATE TABLE dim (g VARCHAR, region VARCHAR, y DOUBLE, n VARCHAR)`, `CREATE TABLE dim (g text, region text, y float8, n text)`},
	{`CREATE TABLE t2 (u BIGINT, z DOUBLE)`, `CREATE TABLE t2 (u int8, z float8)`},
}

var enginesRows = []string{
	`INSERT INTO t VALUES (1, 5, 2.5, 'a', 1, NULL, 7, 1), (1, -3, 'NaN', 'b', 2, NULL, -2147483648, 2), (2, 9223372036854775807, 'Infinity', 'a', NULL, NULL, 2147483647, 3),
		(2, -9223372036854775808, '-Infinity', 'b', 3, NULL, 0, 4), (3, 0, '-0', 'é''q', 1, NULL, 5, 5), (3, NULL, NULL, NULL, 2, NULL, NULL, NULL),
		(4, 1000, 1.7976931348623157e308, 'a', 1, NULL, -5, 6), (4, 7, -1e-300, 'b', 2, NULL, 3, 7), (NULL, 1, 1, 'a', 1, NULL, 1, 1), (5, 12, 0.5, 'a', 2, NULL, 12, 8)`,
	`INSERT INTO dim VALUES ('a', 'r1', 2.5, '1'), ('b', 'r2', 'NaN', '2'), ('a', 'r0', 1, 'x'), (NULL, 'r1', NULL, NULL)`,
	`INSERT INTO t2 VALUES (1, 0.5), (1, 'NaN'), (2, -1), (3, 2), (4, NULL), (9, 1)`,
}

// TestDialectsAgree runs every plan of compileCases that both dialects
// compile in DuckDB and in PostgreSQL, over the same rows, and compares
// the decoded measurements: equal groups, keys and values — the
// PostgreSQL printer's differential test against the DuckDB one (itself
// tested against the reference evaluator). Bounding chooses rows by each
// engine's own hash, so the plans run with bounds no unit reaches (the
// choice is tested statistically on each backend).
func TestDialectsAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	duckPath := filepath.Join(t.TempDir(), "e.duckdb")
	duck, err := sql.Open("duckdb", duckPath)
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	pgs := pgtest.StartT(t)
	pg, err := sql.Open("pgx", pgs.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	for _, s := range enginesSchema {
		mustExec(t, duck, s.duck)
		mustExec(t, pg, s.pg)
	}
	for _, r := range enginesRows {
		mustExec(t, duck, r)
		mustExec(t, pg, r)
	}
	compared := 0
	for _, c := range compileCases {
		m := c.m
		if !m.Unit.IsZero() && !m.Unit.Identity {
			// Which rows and groups bounding keeps depends on each engine's
			// hash: bounds no unit reaches keep them all, in both.
			m.MaxGroups, m.MaxRows = 1000, 1000
		}
		dst, ok1 := Compile(&m, types, DuckDB{}, 42)
		pst, ok2 := Compile(&m, types, Postgres{}, 42)
		if !ok1 || !ok2 {
			continue
		}
		dg, err := run(ctx, duck, dst)
		if err != nil {
			t.Errorf("%s: DuckDB: %v", c.name, err)
			continue
		}
		pgGroups, err := run(ctx, pg, pst)
		if err != nil {
			t.Errorf("%s: PostgreSQL: %v\n%s", c.name, err, pst.SQL)
			continue
		}
		if d, p := describe(dg), describe(pgGroups); d != p {
			t.Errorf("%s:\nDuckDB:     %s\nPostgreSQL: %s", c.name, d, p)
		}
		if d, p := fmt.Sprintf("%v %v", dst.decoded, dst.decodedProfile), fmt.Sprintf("%v %v", pst.decoded, pst.decodedProfile); d != p {
			t.Errorf("%s: what bounding dropped, the profile:\nDuckDB:     %s\nPostgreSQL: %s", c.name, d, p)
		}
		if m.Profile {
			// Units 1, 2 and 4 have one row in each of a and b, unit 5
			// one in a (unit 3's rows are outside the domain, a row
			// without a unit is nobody's): 1 unit of one group, 3 of
			// two; every group of one row, each unit's weight 2^20.
			want := measure.NewProfile()
			want.Groups[0], want.Groups[1], want.Rows[0] = 1, 3, 4<<measure.ProfileBits
			if got := fmt.Sprint(dst.decodedProfile); got != fmt.Sprint(want) {
				t.Errorf("%s: profile %s, want %v", c.name, got, want)
			}
		}
		if m.Dropped {
			// Under bounds no unit reaches, nothing dropped of 4 units.
			if d := dst.decoded; d == nil || d.Units != 4 || d.Affected != 0 || d.Share.Sign() != 0 {
				t.Errorf("%s: dropped %+v, want 4 units and nothing dropped", c.name, d)
			}
		}
		compared++
	}
	t.Logf("%d plans compared", compared)
	if compared < 10 {
		t.Errorf("only %d plans compared", compared)
	}
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// run runs a compiled statement and decodes its rows, each value as the
// backends normalize it (integers as int64, NaN as NULL).
func run(ctx context.Context, db *sql.DB, st *Statement) ([]*Group, error) {
	rows, err := db.QueryContext(ctx, st.SQL, st.Args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return st.Read(rows)
}

// describe prints groups in a canonical order.
func describe(groups []*Group) string {
	var lines []string
	for _, g := range groups {
		var vals []string
		for _, v := range g.Values {
			if v == nil {
				vals = append(vals, "-")
				continue
			}
			vals = append(vals, v.Text('g', 30))
		}
		var details []string
		for i, d := range g.Details {
			details = append(details, fmt.Sprintf("%v×%d", d, g.Weights[i]))
		}
		sort.Strings(details)
		lines = append(lines, fmt.Sprintf("%v %v %v", g.Keys, vals, details))
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}
