// Package pgcompiled_test tests the compiled measurement on PostgreSQL
// (measuresql.Postgres, run by the backend's exec.Measurer) against the
// reference evaluator over the same rows (the mirror read into SQLite):
// random statements over adversarial values of every PostgreSQL type
// give the same outcome on both — the same answers with zero noise, or
// the same error — and no compiled statement fails in PostgreSQL (each
// printed expression is total there).
package pgcompiled_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
	"github.com/dpsql/dpsql/internal/testopts"
)

// table has a column of every type the mirror reads, filled with the
// edges of each: NULL, NaN, ±Infinity, −0, the extremes of every integer
// width and of doubles, text with quotes, NUL-free control characters,
// trailing spaces, case and accents, under the database's default
// collation and under another.
const table = `CREATE TABLE e (uid int8, i2 int2, i4 int4, i8 int8, n numeric, f4 float4, f8 float8,
	t text, v varchar(12), tc text COLLATE "POSIX", c char(4), b bool, d date, ts timestamp)`

// values are the candidates of each column (SQL literals).
var values = map[string][]string{
	"i2": {"NULL", "-32768", "32767", "0", "1", "-1", "7", "100"},
	"i4": {"NULL", "-2147483648", "2147483647", "0", "3", "-5", "42", "1000"},
	"i8": {"NULL", "-9223372036854775808", "9223372036854775807", "0", "9007199254740993", "-12", "64", "999"},
	"n":  {"NULL", "'NaN'", "0", "1.5", "-1e300", "12345678901234567890.5", "3"},
	"f4": {"NULL", "'NaN'", "'Infinity'", "'-Infinity'", "'-0'", "0.5", "3.4e38", "-2"},
	"f8": {"NULL", "'NaN'", "'Infinity'", "'-Infinity'", "'-0'", "0.5", "1.7976931348623157e308", "-1e-300", "12", "2.5"},
	"t":  {"NULL", "''", "'a'", "'A'", "'a '", "'é'", "'it''s'", "'%_'", "'ab\\c'", "'zz'", "'10'"},
	"v":  {"NULL", "''", "'a'", "'B'", "'b'", "'x y'", "'é'", "'12'"},
	"tc": {"NULL", "'a'", "'B'", "'b'", "'é'"},
	"c":  {"NULL", "'a'", "'a  '", "'b'"},
	"b":  {"NULL", "true", "false"},
	"d":  {"NULL", "'2020-01-01'", "'infinity'", "'1999-12-31'"},
	"ts": {"NULL", "'2020-01-01 10:00'", "'-infinity'"},
}

// columns in table order (uid first).
var columns = []string{"uid", "i2", "i4", "i8", "n", "f4", "f8", "t", "v", "tc", "c", "b", "d", "ts"}

// numeric are the columns a SUM or AVG may read; keyed those a GROUP BY
// may (with the domains of the policy).
var (
	numeric = []string{"i2", "i4", "i8", "f4", "f8", "n", "b"}
	keyed   = []string{"i4", "t", "v", "tc", "c", "b"}
)

const policy = `CREATE PRIVACY POLICY ON e OPTIONS (privacy_unit_column = uid, max_groups_contributed = 100, max_rows_contributed = 1000);
ALTER PRIVACY POLICY ON e SET DOMAIN i4 (0, 3, -5, 42, 2147483647);
ALTER PRIVACY POLICY ON e SET DOMAIN t ('a', 'A', 'a ', 'é', '', 'zz', '10');
ALTER PRIVACY POLICY ON e SET DOMAIN v ('a', 'b', 'B', 'é', '12');
ALTER PRIVACY POLICY ON e SET DOMAIN tc ('a', 'b', 'B');
ALTER PRIVACY POLICY ON e SET DOMAIN c ('a', 'b');
ALTER PRIVACY POLICY ON e SET DOMAIN b (0, 1);
SET BUDGET epsilon = 1e6, delta = 0.5`

// filters are WHERE conditions over every class, with literals of the
// other classes, arithmetic that overflows or divides by zero, LIKE and
// CASE.
var filters = []string{
	"i2 > 5", "i4 >= 0.5", "i8 < 9007199254740993", "i8 = 9.223372036854776e18", "f8 > 1e308", "f8 = -0", "f4 < 0.5",
	"f8 IS NULL", "f8 IS NOT NULL", "n > 2", "t = 'a'", "t < 'b'", "t >= ''", "v IN ('a', 'b', 'é')", "tc > 'a'",
	"t LIKE 'a%'", "t NOT LIKE '%\\_%'", "v LIKE '_'", "c = 'a'", "b", "NOT b", "d > '2000-01-01'",
	"i8 * 2 > 10", "i4 + 2147483647 > 0", "i8 / 0 IS NULL", "i2 % 3 = 1", "f8 * 1e308 > 1", "ABS(i8) > 5", "-i8 < 0",
	"COALESCE(i4, 0) > 1", "NULLIF(i2, 7) IS NULL", "CASE WHEN f8 > 1 THEN 1 ELSE 0 END = 1", "i4 BETWEEN -5 AND 42",
	"t = 10", "i4 = '42'", "i8 > f8", "uid > 3",
	// float arithmetic at the edges: overflow to ±Inf, underflow to ±0
	"f8 + 1.7976931348623157e308 > 0", "f8 - 1e308 < -1e308", "f8 * 1e-300 = 0", "f4 * 1e-320 < 0",
	"f8 * f8 > 1e300", "(f8 + i4) * 0.5 > 1", "i8 * 0.5 > 1e18", "f8 * -1e308 < 0", "f4 * 3.4e38 * 3.4e38 > 0",
	// functions analysts write: casts, remainders, quotients of 64-bit
	// integers, divisions by constants, comparisons of two expressions,
	// and text functions over accents, quotes, padding and empty text
	"CAST(f8 AS INTEGER) > 1", "CAST(f4 AS INTEGER) = 9223372036854775807", "CAST(f8 * 0.5 AS INTEGER) <= -9223372036854775807",
	"CAST(i8 AS REAL) / 3 > 1", "CAST(i4 AS REAL) >= 2147483647", "i8 / 1000 > 0", "i8 % 7 = 1", "i2 % -3 < 0", "i8 / 1000.0 < -1",
	"f8 / 4 > 1", "f4 / 0.5 < -1", "f8 / 3 > 1", "ROUND(f8, -1) > 1", "f8 > i4", "i4 = i2", "NOT (f4 <= f8)", "i8 * 2 IS NULL",
	"ABS(i4) IN (1, 5, 42)", "i2 / 2 NOT IN (0, 3)", "UPPER(t) = 'A'", "LOWER(v) = 'b'", "LENGTH(t) = 1", "LENGTH(c) > 1",
	"SUBSTR(t, 1, 1) = 'a'", "SUBSTR(v, 2) = ''", "TRIM(t) = 'a'", "UPPER(t) IN ('A', 'É', 'IT''S')", "t > v", "UPPER(tc) <> LOWER(tc)",
	"COALESCE(UPPER(t), 'x') = 'x'", "COALESCE(i2 % 3, -1) = -1", "IFNULL(i8 / 10, 0) > 1",
	"COALESCE(f8 * 0.5, 2.5) > 2", "IFNULL(f4 - 0.25, f8) < 0",
	"CASE WHEN f8 > 1 THEN 'big' ELSE 'small' END = 'big'", "CASE WHEN t = 'a' THEN UPPER(v) ELSE t END = 'B'",
	"CASE i4 WHEN 3 THEN 2.5 WHEN 42 THEN f8 END < 2", "CASE WHEN i2 IS NULL THEN -1 ELSE i2 / 2 END > 0",
}

// keyExpressions are GROUP BY expressions without a public domain,
// grouped by partition selection.
var keyExpressions = []string{"UPPER(t)", "SUBSTR(v, 1, 1)", "LENGTH(t)", "CAST(f8 AS INTEGER)", "i8 % 3", "i8 / 1000", "LOWER(c)", "TRIM(tc)",
	"COALESCE(v, 'none')", "i4 > 3", "f8 IS NULL OR f8 < 0", "ROUND(i4 / 10)", "t LIKE 'a%'",
	"CASE WHEN i4 > 0 THEN i2 % 10 ELSE -1 END", "CASE WHEN v IS NULL THEN 'none' ELSE UPPER(v) END"}

// TestPostgresCompiledMeasuresLikeTheReference: random statements, each
// run compiled in PostgreSQL and through the reference evaluator, give
// the same outcome; none of the compiled ones fails in PostgreSQL; most
// of them compile.
func TestPostgresCompiledMeasuresLikeTheReference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := pgtest.StartT(t)
	r := rand.New(rand.NewPCG(37, 41))
	var rows []string
	for i := 0; i < 400; i++ {
		vals := []string{fmt.Sprint(i % 60)}
		for _, c := range columns[1:] {
			vals = append(vals, values[c][r.IntN(len(values[c]))])
		}
		rows = append(rows, "("+strings.Join(vals, ", ")+")")
	}
	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{table, "INSERT INTO e VALUES " + strings.Join(rows, ", ")} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	conn.Close(ctx)

	compiledKnobs, referenceKnobs := &knobs.Knobs{}, &knobs.Knobs{ReferenceOnly: true}
	open := func(name string, k *knobs.Knobs) *dpsql.Engine {
		e, err := dpsql.Open(filepath.Join(t.TempDir(), name+".dpsql"), dpsql.Options{Owner: true, Epsilon: 1, NoCache: true, Postgres: srv.DSN(),
			Testing: &testopts.Options{Noise: testopts.ZeroNoise(), Knobs: k}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		if err := e.Run(ctx, policy, func(*dpsql.Result) error { return nil }); err != nil {
			t.Fatal(err)
		}
		return e
	}
	compiled, reference := open("compiled", compiledKnobs), open("reference", referenceKnobs)

	const statements = 300
	var stmts []string
	mustCompile := map[int]bool{} // the expression keys and per-unit distinct counts
	for q := 0; q < statements; q++ {
		stmts = append(stmts, statement(r))
	}
	for _, k := range keyExpressions {
		mustCompile[len(stmts)] = true
		stmts = append(stmts, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-5) "+k+" AS k, COUNT(*), SUM(i4, contribution_bounds_per_row => (0, 10)) FROM e GROUP BY "+k)
	}
	// Every filter at least once, in the WHERE clause and in a CASE
	// inside a sum (the random statements draw them by chance).
	for _, f := range filters {
		stmts = append(stmts, "SELECT COUNT(*), SUM(CASE WHEN "+f+" THEN i4 ELSE 0 END, contribution_bounds_per_row => (-10, 10)) FROM e WHERE "+f)
	}
	// Per-unit distinct counts of integers and of text (bytes, under
	// either collation; char without its padding).
	for _, col := range []string{"i8", "t", "tc", "c"} {
		mustCompile[len(stmts)] = true
		stmts = append(stmts, "SELECT AVG(s.n, contribution_bounds_per_row => (0, 5)), COUNT(*) FROM (SELECT uid, COUNT(DISTINCT "+col+") AS n FROM e GROUP BY uid) AS s")
	}
	for i, stmt := range stmts {
		want, werr := reference.Query(ctx, stmt)
		before := compiledKnobs.Compiled.Load()
		got, gerr := compiled.Query(ctx, stmt)
		if mustCompile[i] && compiledKnobs.Compiled.Load() == before {
			t.Errorf("%s: not compiled (every expression key and per-unit distinct count is)", stmt)
		}
		switch {
		case (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error():
			t.Errorf("%s:\ncompiled error  %v\nreference error %v", stmt, gerr, werr)
		case werr == nil && !reflect.DeepEqual(enginetest.RowSet(got.Rows), enginetest.RowSet(want.Rows)):
			t.Errorf("%s:\ncompiled  %v\nreference %v", stmt, got.Rows, want.Rows)
		case werr == nil && !reflect.DeepEqual(got.Dropped, want.Dropped):
			t.Errorf("%s: what bounding dropped:\ncompiled  %+v\nreference %+v", stmt, got.Dropped, want.Dropped)
		}
	}
	if n := compiledKnobs.CompiledFailed.Load(); n > 0 {
		t.Errorf("%d compiled statements failed in PostgreSQL (a printed expression is not total)", n)
	}
	n := compiledKnobs.Compiled.Load()
	t.Logf("%d of %d scans compiled; the rest by reason:\n%s", n, len(stmts), reasons(compiledKnobs.NotCompiled()))
	if n < int64(len(stmts))/3 {
		t.Errorf("only %d of %d scans compiled", n, len(stmts))
	}
	if referenceKnobs.Compiled.Load() != 0 {
		t.Error("the reference engine compiled a scan")
	}
}

// statement is a random private query over e: keys with public domains,
// one to three aggregates with random bounds, up to two filters.
func statement(r *rand.Rand) string {
	var keys, items []string
	for _, k := range keyed {
		if r.IntN(6) == 0 {
			keys = append(keys, k)
		}
	}
	items = append(items, keys...)
	for n := 1 + r.IntN(3); n > 0; n-- {
		col := numeric[r.IntN(len(numeric))]
		lo := []string{"0", "-10", "-0.5", "1"}[r.IntN(4)]
		hi := []string{"10", "100", "2.5", "1e6"}[r.IntN(4)]
		bounds := fmt.Sprintf(", contribution_bounds_per_row => (%s, %s)", lo, hi)
		switch r.IntN(6) {
		case 0:
			items = append(items, "COUNT(*)")
		case 1:
			items = append(items, "COUNT("+col+")")
		case 2:
			items = append(items, "SUM("+col+bounds+")")
		case 3:
			items = append(items, "AVG("+col+bounds+")")
		case 4:
			items = append(items, "SUM(CASE WHEN "+filters[r.IntN(len(filters))]+" THEN "+col+" ELSE 0 END"+bounds+")")
		default:
			items = append(items, "COUNT(DISTINCT "+keyed[r.IntN(len(keyed))]+")")
		}
	}
	stmt := "SELECT " + strings.Join(items, ", ") + " FROM e"
	var where []string
	for n := r.IntN(3); n > 0; n-- {
		where = append(where, filters[r.IntN(len(filters))])
	}
	if len(where) > 0 {
		stmt += " WHERE " + strings.Join(where, " AND ")
	}
	if len(keys) > 0 {
		stmt += " GROUP BY " + strings.Join(keys, ", ")
	}
	return stmt
}

// reasons lists the reasons scans were not compiled, most frequent first,
// each shortened to its kind (up to a parenthesis).
func reasons(m map[string]int64) string {
	byKind := map[string]int64{}
	for why, n := range m {
		if i := strings.Index(why, " ("); i > 0 {
			why = why[:i]
		}
		byKind[why] += n
	}
	var lines []string
	for why, n := range byKind {
		lines = append(lines, fmt.Sprintf("%5d %s", n, why))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(lines)))
	return strings.Join(lines, "\n")
}
