//go:build cgo

package totality_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/ducktest"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
)

// TestDuckDBCompiledMeasurementIsTotal is the totality property on
// DuckDB: over the adversarial table (ducktest.Adversarial), every
// aggregate kind over every column, with declared and chosen bounds
// (including bounds at the edges of what the fixed-point sums allow),
// grouped and filtered by every column, with and without units, succeeds
// — no emitted expression raises on any value — and equals the reference
// evaluator's answer (zero noise, bounds no unit reaches). Each policy
// has a file of its own and each column a subtest of its own, in
// parallel. Half of the (column, aggregate, filter) triples run (by
// parity), which still runs every pair: each aggregate with each filter
// on some column, each column with each aggregate and each filter.
func TestDuckDBCompiledMeasurementIsTotal(t *testing.T) {
	t.Parallel()
	cols := []string{"i8", "i16", "i32", "i64", "u32", "b", "f4", "f8", "s", "bl", "h", "d", "ts"}
	aggs, filters := totalityAggs, totalityFilters
	policies := []string{
		`CREATE PRIVACY POLICY ON a`,
		`CREATE PRIVACY POLICY ON a OPTIONS (privacy_unit_column = uid, max_groups_contributed = 100, max_rows_contributed = 100);
		 ALTER PRIVACY POLICY ON a SET DOMAIN g ('a', 'b', 'c', 'zz')`,
	}
	m := triples{aggs: aggs, filters: filters,
		filterColumn: func(fi int, c string) string {
			if fi > 0 && fi%3 == 0 {
				return "i64"
			}
			return c
		},
		raised: func(got string) bool {
			return strings.Contains(got, "DuckDB") || strings.Contains(got, "Conversion Error") || strings.Contains(got, "Out of Range")
		}}
	var compiled, compiledFailed atomic.Int64
	t.Run("policies", func(t *testing.T) {
		for pi, pol := range policies {
			duck := filepath.Join(t.TempDir(), fmt.Sprintf("adv%d.duckdb", pi))
			if err := ducktest.Adversarial(context.Background(), duck); err != nil {
				t.Fatal(err)
			}
			owner := enginetest.OpenDuckDB(t, duck, true, nil)
			if _, err := owner.Query(context.Background(), `SET BUDGET epsilon = 1e6`); err != nil {
				t.Fatal(err)
			}
			if err := owner.Run(context.Background(), pol, func(*dpsql.Result) error { return nil }); err != nil {
				t.Fatal(err)
			}
			for ci, c := range cols {
				t.Run(fmt.Sprintf("policy%d/%s", pi, c), func(t *testing.T) {
					t.Parallel()
					k := &knobs.Knobs{FixedRandomness: true}
					e := enginetest.OpenDuckDB(t, duck, false, k)
					m.compare(t, e, k, c, ci)
					compiled.Add(k.Compiled.Load())
					compiledFailed.Add(k.CompiledFailed.Load())
				})
			}
		}
	})
	if n := compiled.Load(); n < 500 {
		t.Errorf("only %d scans ran compiled", n)
	}
	if n := compiledFailed.Load(); n > 0 {
		t.Errorf("%d compiled statements failed in DuckDB (the reference measured them instead)", n)
	}
}

// TestDuckDBComparesLiteralsOfEveryClass is the differential test of
// comparisons across classes: over the adversarial table, every numeric
// column compared (=, <>, <, <=, >, >=, under NOT, and in IN and NOT IN
// lists) with numbers its class does not hold — fractions and −0 against
// integers, integers beyond 2^53 between two doubles, numbers beyond
// int64's range — counts the same rows compiled as in the reference
// evaluator, which compares across classes exactly (zero noise), and
// every such statement runs compiled.
func TestDuckDBComparesLiteralsOfEveryClass(t *testing.T) {
	t.Parallel()
	duck := filepath.Join(t.TempDir(), "adv.duckdb")
	if err := ducktest.Adversarial(context.Background(), duck); err != nil {
		t.Fatal(err)
	}
	owner := enginetest.OpenDuckDB(t, duck, true, nil)
	if err := owner.Run(context.Background(), `SET BUDGET epsilon = 1e6; CREATE PRIVACY POLICY ON a`, func(*dpsql.Result) error { return nil }); err != nil {
		t.Fatal(err)
	}
	literals := []string{"0.5", "-0.0", "1e-09", "4.5", "5.0", "127.5", "-128.5", "4294967295.5", "1e19", "-1e19",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "9007199254740993", "-9007199254740993", "3.4e38"}
	var conds []string
	for _, l := range literals {
		for _, op := range []string{"=", "<>", "<", "<=", ">", ">="} {
			conds = append(conds, "%s "+op+" "+l, "NOT (%s "+op+" "+l+")")
		}
		conds = append(conds, "%s IN ("+l+", 1)", "%s NOT IN ("+l+")", "%s IN ("+l+")", "%s BETWEEN "+l+" AND 1e19")
	}
	var statements []string
	for _, cond := range conds {
		statements = append(statements, "COUNT(*) FROM a WHERE "+cond)
	}
	for _, c := range []string{"i8", "i16", "i32", "i64", "u32", "b", "f4", "f8"} {
		t.Run(c, func(t *testing.T) { sameCompiled(t, duck, c, statements, true) })
	}
}

// TestDuckDBComparesTextWithNumbers is the differential test of
// comparisons between the classes, as SQLite's type affinity decides
// them: a stored number column reads a text that is a decimal number
// (spaces around it, a sign, a fraction, an exponent) as that number,
// and every other text ('a', the empty text, '12abc', '0x10', 'inf') is above every
// number; an arithmetic expression converts nothing (a number is below
// every text); a text column reads an integer as its decimal text. Over
// the adversarial table, each statement runs compiled and counts the
// reference's rows; a text the printer does not reproduce (more than 15
// significant digits) is declined and answers alike.
func TestDuckDBComparesTextWithNumbers(t *testing.T) {
	t.Parallel()
	duck := adversarialFile(t, "CREATE PRIVACY POLICY ON a")
	texts := []string{"'12'", "' 4.5 '", "'1e1'", "'-0'", "'+.5'", "'5.'", "'-128'", "'127.5e0'", "'4294967295'",
		"'\t7\n'", "'\v\f8\r'", "'a'", "''", "'12abc'", "'0x10'", "'inf'", "' '", "'1e'", "'9007199254740992'"}
	var compiled []string
	for _, l := range texts {
		for _, op := range []string{"=", "<", ">="} {
			compiled = append(compiled, "COUNT(*) FROM a WHERE %s "+op+" "+l, "COUNT(*) FROM a WHERE NOT (%s <> "+l+")")
		}
		compiled = append(compiled, "COUNT(*) FROM a WHERE %s IN ("+l+", 1)", "COUNT(*) FROM a WHERE %s NOT IN ("+l+")",
			"COUNT(*) FROM a WHERE %s BETWEEN "+l+" AND 1e19", "COUNT(*) FROM a WHERE -%s < "+l)
	}
	for _, c := range []string{"i32", "i64", "u32", "b", "f4", "f8"} { // a column of each class (i8 and i16 read as i32 does)
		declined := []string{"COUNT(*) FROM a WHERE %s = '0.1000000000000000055511151231257827'", "COUNT(*) FROM a WHERE %s < '123456789012345678'"}
		var own []string
		for _, st := range compiled {
			if strings.Contains(st, "-%s") && !(c == "i8" || c == "i16" || c == "i32" || c == "f4" || c == "f8") {
				continue // arithmetic on a wide integer is declined (TestDuckDBArithmeticIsExact)
			}
			own = append(own, st)
		}
		t.Run(c, func(t *testing.T) { sameCompiled(t, duck, c, own, true) })
		if c != "f4" && c != "f8" {
			declined = declined[:1] // an integer column holds the 18-digit integer exactly, as SQLite reads it
		}
		t.Run(c+"/declined", func(t *testing.T) { sameCompiled(t, duck, c, declined, false) })
	}
	var numbers []string
	for _, n := range []string{"5", "-1", "0", "12", "9223372036854775807"} {
		numbers = append(numbers, "COUNT(*) FROM a WHERE s = "+n, "COUNT(*) FROM a WHERE s < "+n, "COUNT(*) FROM a WHERE s IN ("+n+", 'abc')")
	}
	t.Run("s", func(t *testing.T) { sameCompiled(t, duck, "s", numbers, true) })
	t.Run("s/declined", func(t *testing.T) { sameCompiled(t, duck, "s", []string{"COUNT(*) FROM a WHERE s = 2.5"}, false) })
}

// TestDuckDBFoldsConstants is the differential test of column-free
// expressions, which the engine computes in SQLite before it compiles
// (the reference's own values, from no row): functions of constants in
// comparisons, IN lists, BETWEEN and arguments, and conditions the same
// for every row, among them NULL ones, in AND, OR and NOT. Over the
// adversarial table each runs compiled and counts the reference's rows;
// what is not folded — a CAST (it has a type affinity), an infinity — is
// declined and answers alike.
func TestDuckDBFoldsConstants(t *testing.T) {
	t.Parallel()
	duck := adversarialFile(t, "CREATE PRIVACY POLICY ON a")
	folded := []string{"COUNT(*) FROM a WHERE %s > LENGTH('abc')", "COUNT(*) FROM a WHERE %s < -(1 + 2) * 2",
		"COUNT(*) FROM a WHERE -1 IS NOT NULL AND %s > 0", "COUNT(*) FROM a WHERE NOT (NULL > 1) OR %s = 5",
		"COUNT(*) FROM a WHERE '%' NOT LIKE '' OR %s IS NULL", "COUNT(*) FROM a WHERE %s IN (LENGTH('ab'), PI(), 'x' || 'y')",
		"COUNT(*) FROM a WHERE %s BETWEEN ROUND(1.5) AND POWER(2, 10)", "COUNT(*) FROM a WHERE %s > '1' || '2'",
		"COUNT(*) FROM a WHERE (EXP(1000) - EXP(1000)) IS NULL AND NOT (%s <= ABS(-9223372036854775807))",
		"SUM(ABS(-2.5), contribution_bounds_per_row => (0, 5)) FROM a WHERE %s >= SQRT(4)", "COUNT(*) FROM a WHERE 'abc' OR %s < 0",
		"COUNT(LENGTH('x')) FROM a WHERE 1e308 * 10 > 0 AND %s <> 0"}
	declined := []string{"COUNT(*) FROM a WHERE %s = CAST('5' AS INTEGER)", "COUNT(*) FROM a WHERE %s > EXP(1000)", "COUNT(*) FROM a WHERE %s < 1e400 * 2"}
	for _, c := range []string{"i8", "i64", "b", "f4", "f8"} {
		t.Run(c, func(t *testing.T) { sameCompiled(t, duck, c, folded, true) })
		t.Run(c+"/declined", func(t *testing.T) { sameCompiled(t, duck, c, declined, false) })
	}
}

// sameCompiled runs each statement (after SELECT, with %s standing for
// column c) on the DuckDB file duck, compiled and through the reference
// evaluator, and checks that the two answers are the same and that each
// ran compiled exactly when compiled says.
func sameCompiled(t *testing.T, duck, c string, statements []string, compiled bool) {
	cases := make([]declinedOn, len(statements))
	for i, st := range statements {
		cases[i] = declinedOn{statement: st}
		if !compiled {
			cases[i].declined = "*"
		}
	}
	sameCompiledOn(t, duck, c, "", cases)
}

// TestDuckDBArithmeticIsExact is the differential test of integer
// arithmetic (+, −, × of columns and constants) in filters and
// aggregates: over the adversarial table, for every numeric column, each
// statement gives the reference's answer, and runs compiled exactly when
// the column has at most 32 bits (then no value can leave ±2^62: exact
// in both engines; wider columns could overflow, and are declined).
// Products that would overflow a 32-bit integer are among them, so an
// engine computing in the column's own width would raise.
func TestDuckDBArithmeticIsExact(t *testing.T) {
	t.Parallel()
	duck := adversarialFile(t, "CREATE PRIVACY POLICY ON a")
	statements := []string{
		"COUNT(*) FROM a WHERE %s * 2 > 4.5", "COUNT(*) FROM a WHERE -%s + 3 <= 0", "COUNT(*) FROM a WHERE (%s - 1) * 3 = 12",
		"COUNT(*) FROM a WHERE %s * 100000 > 2147483647", "COUNT(*) FROM a WHERE 2 * %s - %s * 3 < 0", "COUNT(*) FROM a WHERE %s * %s >= 4611686018427387904",
		"COUNT(*) FROM a WHERE NOT (%s + 1 <> 6)", "SUM(%s * 2, contribution_bounds_per_row => (-300, 300)) FROM a",
		"AVG(%s - 1, contribution_bounds_per_row => (-10, 10)) FROM a", "SUM(CASE WHEN %s * 3 > 0 THEN %s * 1000000 ELSE 0 END, contribution_bounds_per_row => (0, 5e6)) FROM a",
		"VARIANCE(%s * -7, contribution_bounds_per_row => (-100, 100)) FROM a", "COUNT(*) FROM a WHERE ABS(%s - 3) <= 2",
		"SUM(ABS(%s), contribution_bounds_per_row => (0, 1000)) FROM a",
	}
	// With a float in it, SQLite computes in doubles where the float
	// meets it (±Inf and NaN, which it makes NULL, among the results).
	floats := []string{"COUNT(*) FROM a WHERE %s * 2.5 > 3", "SUM(%s * 0.5 + 1, contribution_bounds_per_row => (-50, 50)) FROM a",
		"COUNT(*) FROM a WHERE %s - %s * 1e308 < 0", "COUNT(*) FROM a WHERE %s * 1e308 * 10 > 0", "AVG(-1.5 * %s, contribution_bounds_per_row => (-9, 9)) FROM a",
		"VARIANCE(%s + 0.25, contribution_bounds_per_row => (-100, 100)) FROM a", "SUM(CASE WHEN %s * 3.0 < 1 THEN %s - 0.5 ELSE 2 END, contribution_bounds_per_row => (-5, 5)) FROM a",
		"AVG(ABS(%s * 0.5), contribution_bounds_per_row => (0, 100)) FROM a", "COUNT(*) FROM a WHERE ABS(%s - 0.5) > 1e300"}
	for _, c := range []string{"i8", "i16", "i32", "i64", "u32", "b", "f4", "f8"} {
		// Integer arithmetic is exact on columns of at most 32 bits; a
		// float column makes it double arithmetic, exact in both engines.
		exact := c == "i8" || c == "i16" || c == "i32" || c == "f4" || c == "f8"
		t.Run(c, func(t *testing.T) { sameCompiled(t, duck, c, statements, exact) })
		t.Run(c+"/floats", func(t *testing.T) { sameCompiled(t, duck, c, floats, true) })
	}
}

// TestDuckDBFloorAndDivisionAreExact is the differential test of FLOOR,
// CEIL, ROUND (SQLite's: x ± 0.5 truncated within ±2^52, x beyond) and
// division by a constant in filters and aggregates: over the
// adversarial table, for every numeric column, each statement gives the
// reference's answer — an integer divided with truncation toward zero
// (negative divisors too), FLOOR and CEIL of an integer that integer, of
// a double IEEE's (±Inf, NaN made NULL, -0) — and runs compiled unless
// it adds or multiplies a 64-bit column.
func TestDuckDBFloorAndDivisionAreExact(t *testing.T) {
	t.Parallel()
	duck := adversarialFile(t, "CREATE PRIVACY POLICY ON a")
	// A 64-bit column (and the widened unsigned and boolean ones) may be
	// divided by a constant other than -1 and floored; what adds or
	// multiplies it could leave ±2^62, and is declined.
	const wide = "i64 u32 b"
	statements := []declinedOn{
		{"COUNT(*) FROM a WHERE FLOOR(%s / 10) = 1", ""}, {"COUNT(*) FROM a WHERE CEIL(%s / 3) > 0", ""}, {"COUNT(*) FROM a WHERE FLOOR(%s) - CEIL(%s) < 0", wide},
		{"COUNT(*) FROM a WHERE %s / -4 < 2", ""}, {"COUNT(*) FROM a WHERE %s / 7 * 7 - %s = 0", wide}, {"SUM(FLOOR(%s / 2), contribution_bounds_per_row => (-50, 50)) FROM a", ""},
		{"AVG(%s / 3, contribution_bounds_per_row => (-100, 100)) FROM a", ""},
	}
	// With a float in it, in doubles: every numeric column compiles.
	floats := []string{"COUNT(*) FROM a WHERE CEIL(%s * 0.5) >= 1", "COUNT(*) FROM a WHERE %s / 2.5 > 1",
		"COUNT(*) FROM a WHERE ROUND(%s) = 0", "COUNT(*) FROM a WHERE ROUND(%s * 0.5) < -1", "SUM(ROUND(%s / 3.0), contribution_bounds_per_row => (-20, 20)) FROM a",
		"COUNT(*) FROM a WHERE ROUND(%s - 0.49999999999999994) > 0", "COUNT(*) FROM a WHERE ROUND(%s * 0.0 + 0.49999999999999994) = 1", "COUNT(*) FROM a WHERE ROUND(%s * 1e-10) <> 0", "COUNT(*) FROM a WHERE ROUND(%s + 4503599627370495.5) > 4503599627370496",
		"COUNT(*) FROM a WHERE FLOOR(%s / 1e-300) < 0", "SUM(CEIL(%s - 0.5), contribution_bounds_per_row => (-9, 9)) FROM a"}
	for _, c := range []string{"i8", "i16", "i32", "i64", "u32", "b", "f4", "f8"} {
		t.Run(c, func(t *testing.T) { sameCompiledOn(t, duck, c, "", statements) })
		t.Run(c+"/floats", func(t *testing.T) { sameCompiled(t, duck, c, floats, true) })
	}
}

// TestDuckDBConditionalsAreExact is the differential test of the
// conditional functions and constants compiled as CASE (COALESCE,
// IFNULL, NULLIF, IF, IIF; numbers and TRUE as arguments), and of
// COALESCE and IFNULL of a column and a number compared with a number in
// filters: over the
// adversarial table, for every numeric column (NULLs, NaN, extremes
// among its values), each statement runs compiled and gives the
// reference's answer.
func TestDuckDBConditionalsAreExact(t *testing.T) {
	t.Parallel()
	duck := adversarialFile(t, "CREATE PRIVACY POLICY ON a")
	statements := []string{
		"SUM(COALESCE(%s, 3), contribution_bounds_per_row => (-10, 10)) FROM a", "COUNT(NULLIF(%s, 0)) FROM a",
		"SUM(IF(%s > 1, 1, 0), contribution_bounds_per_row => (0, 1)) FROM a", "SUM(IIF(%s IS NULL, 2.5, %s), contribution_bounds_per_row => (-4, 4)) FROM a",
		"AVG(IFNULL(%s, -1), contribution_bounds_per_row => (-100, 100)) FROM a", "COUNT(1), SUM(TRUE, contribution_bounds_per_row => (0, 1)) FROM a WHERE %s > 0",
		"SUM(2.5, contribution_bounds_per_row => (0, 5)), COUNT(COALESCE(%s, %s, 0)) FROM a",
		// In filters: x op v where x is not NULL, c op v where it is.
		"COUNT(*) FROM a WHERE COALESCE(%s, 3) > 2", "COUNT(*) FROM a WHERE IFNULL(%s, -1) <= 0", "COUNT(*) FROM a WHERE NOT (COALESCE(%s, 0.5) = 0.5)",
		"COUNT(*) FROM a WHERE 1 < COALESCE(%s, 2)", "COUNT(*) FROM a WHERE COALESCE(%s, 1e308) >= 9223372036854775807", "COUNT(*) FROM a WHERE COALESCE(%s, 0) <> 0 OR %s IS NULL",
	}
	for _, c := range []string{"i8", "i16", "i32", "i64", "u32", "b", "f4", "f8"} {
		t.Run(c, func(t *testing.T) { sameCompiled(t, duck, c, statements, true) })
	}
	// A text column would convert the number (its TEXT affinity), the
	// COALESCE expression not: not translated, answered alike.
	t.Run("s", func(t *testing.T) {
		sameCompiled(t, duck, "s", []string{"COUNT(*) FROM a WHERE COALESCE(%s, 3) > 2", "COUNT(*) FROM a WHERE IFNULL(%s, 0) = 0"}, false)
	})
}

// TestDuckDBLikeIsExact is the differential test of LIKE: over texts
// with NUL (where SQLite's LIKE stops reading), non-ASCII letters (which
// SQLite does not fold: É is not é, the Kelvin sign is not k), newlines,
// wildcards and regular-expression characters among their characters,
// every pattern gives the reference's count, compiled; a LIKE on a
// number (SQLite matches its text) is not compiled and answers alike.
func TestDuckDBLikeIsExact(t *testing.T) {
	t.Parallel()
	duck := filepath.Join(t.TempDir(), "like.duckdb")
	if err := ducktest.Exec(context.Background(), duck,
		`CREATE TABLE l (s VARCHAR, n INTEGER)`,
		`INSERT INTO l VALUES ('a' || chr(0) || 'b', 1), ('ab', 2), ('AB', 3), ('É', 4), ('é', 5), ('`+"\u212a"+`', 6), ('k', 7),
			('a'|| chr(10) || 'b', 8), ('%_', 9), ('a.b', 10), ('[a]x', 11), ('', 12), (NULL, 13), ('a*b', 14), ('école', 15), ('Abc', 16)`); err != nil {
		t.Fatal(err)
	}
	owner := enginetest.OpenDuckDB(t, duck, true, nil)
	enginetest.Run(t, owner, `SET BUDGET epsilon = 1e6; CREATE PRIVACY POLICY ON l`)
	var statements []string
	for _, p := range []string{"a%", "%b", "_", "__", "%é%", "É%", "k", "K", "a_b", "%\\%", "%_%", "", "%", "a.b", "[a]%", "%*%", "ab", "a", "A%C", "_cole", "%" + "\u212a"} {
		p = strings.ReplaceAll(p, "'", "''")
		statements = append(statements, "COUNT(*) FROM l WHERE %s LIKE '"+p+"'", "COUNT(*) FROM l WHERE %s NOT LIKE '"+p+"'")
	}
	t.Run("s", func(t *testing.T) { sameCompiled(t, duck, "s", statements, true) })
	t.Run("n", func(t *testing.T) { sameCompiled(t, duck, "n", []string{"COUNT(*) FROM l WHERE %s LIKE '1%'"}, false) })
}

// TestDuckDBBinsAreExact is the differential test of binned keys
// (GROUP BY FLOOR(c / w) * m and its kin, enumerated from the declared
// bounds): over the adversarial table, for every numeric column (its
// extremes, NaN, ±Inf, -0 and NULL fall outside the bins or in them as
// SQLite decides), with and without units, each statement runs compiled
// and gives the reference's answer — integer division truncating toward
// zero, FLOOR of an integer that integer, products that would leave 64
// bits dropped; ROUND(c) and its multiples (a double of an integer) too.
func TestDuckDBBinsAreExact(t *testing.T) {
	t.Parallel()
	columns := []string{"i8", "i16", "i32", "i64", "u32", "b", "f4", "f8"}
	keys := []string{"FLOOR(%s / 10) * 10", "10 * FLOOR(%s / 3)", "FLOOR(%s / 3) * 0.5", "CEIL(%s / 4)", "CEIL(%s / 2.5)", "FLOOR(%s)",
		"FLOOR(%s / 7) * 1000000000000", "FLOOR(%s / 2.0) * -3", "CEIL(%s) * 0", "ROUND(%s)", "ROUND(%s) * 2"}
	var statements []string
	for _, k := range keys {
		statements = append(statements, k+" AS bin, COUNT(*), SUM(uid, contribution_bounds_per_row => (0, 5)) FROM a GROUP BY "+k)
	}
	for _, units := range []bool{false, true} {
		script := adversarialPolicy(units)
		for _, c := range columns {
			script += "; ALTER PRIVACY POLICY ON a SET BOUNDS " + c + " (-100, 100)"
		}
		duck := adversarialFile(t, script)
		for _, c := range columns {
			t.Run(fmt.Sprintf("%s/units=%v", c, units), func(t *testing.T) { sameCompiled(t, duck, c, statements, true) })
		}
	}
}

// TestDuckDBCaseKeysAreExact is the differential test of CASE buckets
// as GROUP BY keys (searched and simple, text and numeric values, NULL
// and ELSE): over the adversarial table, for every numeric column, with
// and without units, each statement runs compiled and gives the
// reference's answer; a CASE of text and numbers is not compiled.
func TestDuckDBCaseKeysAreExact(t *testing.T) {
	t.Parallel()
	keys := []string{"CASE WHEN %s < 0 THEN 'neg' WHEN %s < 10 THEN 'small' ELSE 'big' END", "CASE WHEN %s IS NULL THEN NULL WHEN %s > 1 THEN 2 ELSE 1 END",
		"CASE %s WHEN 1 THEN 1.5 WHEN 5 THEN 2 END", "CASE WHEN %s BETWEEN -1 AND 1 OR %s IN (5, 127) THEN TRUE ELSE FALSE END"}
	var statements []string
	for _, k := range keys {
		statements = append(statements, k+" AS bucket, COUNT(*), SUM(uid, contribution_bounds_per_row => (0, 5)) FROM a GROUP BY "+k)
	}
	mixed := []string{"CASE WHEN %s > 0 THEN 'pos' ELSE 0 END AS bucket, COUNT(*) FROM a GROUP BY CASE WHEN %s > 0 THEN 'pos' ELSE 0 END"}
	for _, units := range []bool{false, true} {
		duck := adversarialFile(t, adversarialPolicy(units))
		for _, c := range []string{"i8", "i16", "i32", "i64", "u32", "b", "f4", "f8"} {
			t.Run(fmt.Sprintf("%s/units=%v", c, units), func(t *testing.T) { sameCompiled(t, duck, c, statements, true) })
			t.Run(fmt.Sprintf("%s/units=%v/mixed", c, units), func(t *testing.T) { sameCompiled(t, duck, c, mixed, false) })
		}
	}
}

// adversarialFile makes the adversarial table (ducktest.Adversarial) in
// a DuckDB file of the test's own, runs the owner's script on it after a
// budget of 10^6, and returns the file's path.
func adversarialFile(t *testing.T, script string) string {
	t.Helper()
	duck := filepath.Join(t.TempDir(), "adv.duckdb")
	if err := ducktest.Adversarial(context.Background(), duck); err != nil {
		t.Fatal(err)
	}
	owner := enginetest.OpenDuckDB(t, duck, true, nil)
	enginetest.Run(t, owner, "SET BUDGET epsilon = 1e6; "+script)
	owner.Close()
	return duck
}

// adversarialPolicy is the adversarial table's policy: every row its own
// unit, or units of uid with bounds no unit reaches.
func adversarialPolicy(units bool) string {
	if units {
		return "CREATE PRIVACY POLICY ON a OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1000, max_rows_contributed = 1000)"
	}
	return "CREATE PRIVACY POLICY ON a"
}

// TestDuckDBAbsOfMinusTwoTo63 checks the one value where the reference's
// ABS (ABS(NULLIF(x, -2^63)), as SQLite raises on the integer -2^63)
// gives NULL for a double: -2^63 itself, compiled alike.
func TestDuckDBAbsOfMinusTwoTo63(t *testing.T) {
	t.Parallel()
	duck := filepath.Join(t.TempDir(), "abs.duckdb")
	if err := ducktest.Exec(context.Background(), duck, `CREATE TABLE m (f DOUBLE)`,
		`INSERT INTO m VALUES (-9223372036854775808.0), (-1.5), (2), (NULL), ('NaN')`); err != nil {
		t.Fatal(err)
	}
	owner := enginetest.OpenDuckDB(t, duck, true, nil)
	enginetest.Run(t, owner, `SET BUDGET epsilon = 1e6; CREATE PRIVACY POLICY ON m`)
	owner.Close()
	t.Run("f", func(t *testing.T) {
		sameCompiled(t, duck, "f", []string{"COUNT(ABS(%s * 1.0)), SUM(ABS(%s + 0.0), contribution_bounds_per_row => (0, 1e19)) FROM m"}, true)
	})
}

// TestDuckDBPerUnitSumsAreExact is the differential test of per-unit
// sums and means (contribution_bounds_per_group) on their grid
// (measure.UnitGrid): units whose rows cancel on either side of the
// rows' clamp r (2^32 for the float bounds here, 2^30 for the integer
// ones) and far past it (1e300, ±∞, int64's ends), whose values fall
// between grid points (0.1, half a grid step), and whose means are not
// on the grid: compiled, every answer is the reference's.
func TestDuckDBPerUnitSumsAreExact(t *testing.T) {
	t.Parallel()
	duck := filepath.Join(t.TempDir(), "units.duckdb")
	var rows []string
	uid := 0
	unit := func(g string, xs []string, ns []string) {
		uid++
		for i := range xs {
			rows = append(rows, fmt.Sprintf("(%d, '%s', %s, %s)", uid, g, xs[i], ns[i]))
		}
	}
	for _, m := range []string{"0.6 * 4294967296", "0.99 * 4294967296", "4294967296", "1.5 * 4294967296", "1e300", "'inf'::DOUBLE"} {
		unit("a", []string{m, "-(" + m + ")", "1.25"}, []string{"1073741823", "-1073741823", "2"})
		unit("b", []string{m, "2 - (" + m + ")"}, []string{"1073741825", "-1073741823", "NULL"})
	}
	unit("a", []string{"0.1", "0.2", "0.3"}, []string{"9223372036854775807", "-9223372036854775808", "3"})
	unit("b", []string{"3 * 2.0 ^ -31", "2.0 ^ -31", "'nan'::DOUBLE"}, []string{"1", "0", "0"})
	unit("a", []string{"-0.7", "NULL", "-0.0"}, []string{"NULL", "NULL", "NULL"})
	unit("b", []string{"'-inf'::DOUBLE", "'inf'::DOUBLE", "1e-310"}, []string{"-2", "5", "1"})
	unit("a", []string{"-5", "-3"}, []string{"-7", "-9"})
	unit("b", []string{"4", "9.5"}, []string{"70", "9"})
	if err := ducktest.Exec(context.Background(), duck, `CREATE TABLE p (uid BIGINT, g VARCHAR, x DOUBLE, n BIGINT)`,
		`INSERT INTO p VALUES `+strings.Join(rows, ", ")); err != nil {
		t.Fatal(err)
	}
	owner := enginetest.OpenDuckDB(t, duck, true, nil)
	enginetest.Run(t, owner, `SET BUDGET epsilon = 1e6;
		CREATE PRIVACY POLICY ON p OPTIONS (privacy_unit_column = uid, max_groups_contributed = 10, max_rows_contributed = 10);
		ALTER PRIVACY POLICY ON p SET DOMAIN g ('a', 'b')`)
	owner.Close()
	var statements []string
	for _, agg := range []string{"SUM(%s, contribution_bounds_per_group => (-0.75, 2.5))", "AVG(%s, contribution_bounds_per_group => (-0.75, 2.5))",
		"SUM(%s, contribution_bounds_per_group => (0, 3))", "AVG(%s, contribution_bounds_per_group => (-1, 3))"} {
		statements = append(statements, agg+" FROM p", "g, "+agg+" FROM p GROUP BY g")
	}
	for _, c := range []string{"x", "n"} {
		t.Run(c, func(t *testing.T) { sameCompiled(t, duck, c, statements, true) })
	}
}
