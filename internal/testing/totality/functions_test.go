//go:build cgo

package totality_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/ducktest"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
)

// declinedOn is a statement (after SELECT, %s the column) and the
// columns on which it is not compiled, by design: space-separated, "*"
// for every column.
type declinedOn struct{ statement, declined string }

// sameCompiledOn is sameCompiled with each statement's own expectation
// (compiled on every column but those it names) and the statement's
// OPTIONS (epsilon = 1 and the given extra, such as a delta).
func sameCompiledOn(t *testing.T, duck, c, options string, cases []declinedOn) {
	t.Parallel()
	k := &knobs.Knobs{}
	e := enginetest.OpenDuckDB(t, duck, false, k)
	for _, cs := range cases {
		q := "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1" + options + ") " + strings.ReplaceAll(cs.statement, "%s", c)
		k.ReferenceOnly = true
		want := enginetest.Outcome(e, q)
		k.ReferenceOnly = false
		before := k.Compiled.Load()
		got := enginetest.Outcome(e, q)
		if got != want {
			t.Errorf("%s:\ncompiled:  %s\nreference: %s", q, got, want)
		}
		declined := strings.Fields(cs.declined)
		compiled := !slices.Contains(declined, c) && !slices.Contains(declined, "*")
		if ran := k.Compiled.Load() > before; ran != compiled {
			t.Errorf("%s: compiled %v, want %v", q, ran, compiled)
		}
	}
	if n := k.CompiledFailed.Load(); n > 0 {
		t.Errorf("%d compiled statements failed in DuckDB", n)
	}
}

// TestDuckDBNumericFunctionsAreExact is the differential test of the
// numeric functions and forms the analyst stream brought in: CAST to
// INTEGER (truncated, saturating at 64 bits, NaN NULL) and to REAL,
// remainders, ROUND with non-positive digits, divisions of 64-bit
// columns, divisions of doubles by constants, comparisons of two
// expressions, IS NULL and IN of expressions, and expression keys
// chosen by partition selection: over the adversarial table (the
// extremes of every type, NaN, ±Inf, −0, NULL), each gives the
// reference's answer, compiled except where the compiler declines by
// design.
func TestDuckDBNumericFunctionsAreExact(t *testing.T) {
	t.Parallel()
	const floats, wide = "f4 f8", "i64 u32 b"
	filters := []declinedOn{
		{"COUNT(*) FROM a WHERE CAST(%s AS INTEGER) > 1", ""},
		{"COUNT(*) FROM a WHERE CAST(%s AS INTEGER) = 9223372036854775807", ""},
		{"COUNT(*) FROM a WHERE CAST(%s AS INTEGER) <= -9223372036854775807", ""},
		{"COUNT(*) FROM a WHERE CAST(%s * 0.5 AS INTEGER) = 0", ""},
		{"COUNT(*) FROM a WHERE CAST(%s AS INTEGER) / 1000 >= 0", ""},
		{"COUNT(*) FROM a WHERE CAST(%s AS INT64) = 1", ""},
		{"SUM(CAST(%s AS INTEGER) / 4611686018427387904, contribution_bounds_per_row => (-5, 5)) FROM a", ""},
		{"COUNT(*) FROM a WHERE CAST(%s AS REAL) / 3 > 1", ""},
		{"COUNT(*) FROM a WHERE CAST(%s AS REAL) >= 9.2e18", ""},
		{"COUNT(*) FROM a WHERE %s / 0.25 < -1", ""},
		{"COUNT(*) FROM a WHERE %s / 1e-300 > 1", ""},
		{"COUNT(*) FROM a WHERE %s % 7 = 1", floats},
		{"COUNT(*) FROM a WHERE %s % -3 < 0", floats},
		{"COUNT(*) FROM a WHERE %s / 1000 > 0", ""},
		{"COUNT(*) FROM a WHERE %s / -1 > 0", wide},
		{"COUNT(*) FROM a WHERE %s + 1 > 0", wide},
		{"COUNT(*) FROM a WHERE ROUND(%s, -2) > 1", ""},
		{"COUNT(*) FROM a WHERE ROUND(%s, 1) > 1", "i8 i16 i32 i64 u32 b f4 f8"},
		{"COUNT(*) FROM a WHERE %s > i32", ""},
		{"COUNT(*) FROM a WHERE %s = f8", wide},
		{"COUNT(*) FROM a WHERE NOT (%s <= i16 * 2)", ""},
		{"COUNT(*) FROM a WHERE %s * 2 IS NULL", wide},
		{"COUNT(*) FROM a WHERE ABS(%s) IN (1, 5, 2.5)", wide},
		{"COUNT(*) FROM a WHERE %s / 2 NOT IN (0, 2)", ""},
		{"SUM(%s % 10, contribution_bounds_per_row => (-9, 9)) FROM a", floats},
		{"COUNT(*) FROM a WHERE COALESCE(%s % 3, -1) = -1", floats},
		{"COUNT(*) FROM a WHERE COALESCE(%s * 0.5, 2.5) > 2", ""},
		{"SUM(IFNULL(%s - 0.25, -1), contribution_bounds_per_row => (-3, 3)) FROM a", ""},
		{"COUNT(*) FROM a WHERE COALESCE(%s / 0.25, f8) < 0", ""},
		{"COUNT(*) FROM a WHERE CASE WHEN %s > 1 THEN 'big' ELSE 'small' END = 'big'", ""},
		{"COUNT(*) FROM a WHERE CASE WHEN %s IS NULL THEN -1 ELSE %s / 2 END > 0", ""},
		{"COUNT(*) FROM a WHERE CASE %s WHEN 5 THEN 2.5 WHEN 1 THEN i16 END < 2", ""},
		{"SUM(CASE WHEN %s > 0 THEN 3 ELSE %s END * 2, contribution_bounds_per_row => (-9, 9)) FROM a", wide},
		{"COUNT(*) FROM a WHERE CASE WHEN %s > 0 THEN 'pos' ELSE %s END = 'pos'", "i8 i16 i32 i64 u32 b f4 f8"},
		{"COUNT(*) FROM a WHERE IFNULL(%s / 2, 'x') = 'x'", "i8 i16 i32 i64 u32 b f4 f8"},
	}
	keys := []declinedOn{
		{"CAST(%s AS INTEGER) AS k, COUNT(*) FROM a GROUP BY CAST(%s AS INTEGER)", ""},
		{"%s % 3 AS k, COUNT(*) FROM a GROUP BY %s % 3", floats},
		{"%s / 1000 AS k, COUNT(*) FROM a GROUP BY %s / 1000", floats},
		{"ABS(%s) AS k, COUNT(*) FROM a GROUP BY ABS(%s)", wide + " " + floats},
		{"%s > 1 AS k, COUNT(*) FROM a GROUP BY %s > 1", ""},
		{"%s IS NULL OR %s < 0 AS k, COUNT(*) FROM a GROUP BY %s IS NULL OR %s < 0", ""},
		{"ROUND(%s / 10) AS k, COUNT(*) FROM a GROUP BY ROUND(%s / 10)", floats},
		{"CAST(%s AS REAL) AS k, COUNT(*) FROM a GROUP BY CAST(%s AS REAL)", floats},
		{"CASE WHEN %s > 0 THEN %s % 10 ELSE -1 END AS k, COUNT(*) FROM a GROUP BY CASE WHEN %s > 0 THEN %s % 10 ELSE -1 END", floats},
	}
	// A subquery's derived column as a key, and a per-unit distinct count
	// (a subquery keeps the unit column: with units only).
	derived := []declinedOn{
		{"AVG(s.n, contribution_bounds_per_row => (0, 5)), COUNT(*) FROM (SELECT uid, COUNT(DISTINCT %s) AS n FROM a GROUP BY uid) AS s", floats},
		{"k, COUNT(*) FROM (SELECT uid, CAST(%s AS INTEGER) AS k FROM a) AS s GROUP BY k", ""},
		{"k, COUNT(*) FROM (SELECT uid, %s < 2 AS k FROM a WHERE %s IS NOT NULL) AS s GROUP BY k", ""},
	}
	for _, units := range []bool{false, true} {
		duck := adversarialFile(t, adversarialPolicy(units)+"; SET BUDGET epsilon = 1e6, delta = 0.5")
		for _, c := range []string{"i8", "i16", "i32", "i64", "u32", "b", "f4", "f8"} {
			t.Run(fmt.Sprintf("%s/units=%v", c, units), func(t *testing.T) { sameCompiledOn(t, duck, c, "", filters) })
			withUnits := keys
			if units {
				withUnits = append(append([]declinedOn{}, keys...), derived...)
			}
			t.Run(fmt.Sprintf("%s/units=%v/keys", c, units), func(t *testing.T) { sameCompiledOn(t, duck, c, ", delta = 1e-5", withUnits) })
		}
	}
}

// TestDuckDBTextFunctionsAreExact is the differential test of UPPER,
// LOWER (ASCII letters only, as SQLite), TRIM (spaces only), LENGTH and
// SUBSTR (characters up to the first NUL, where SQLite stops reading)
// in filters, arguments and keys: over texts with NUL, non-ASCII
// letters (É, the Kelvin sign), tabs, leading and trailing spaces and a
// column declared NOCASE (the compiled statement compares bytes), each
// gives the reference's answer, compiled; on an integer column (SQLite
// reads the number's text) none is compiled.
func TestDuckDBTextFunctionsAreExact(t *testing.T) {
	t.Parallel()
	duck := filepath.Join(t.TempDir(), "text.duckdb")
	if err := ducktest.Exec(context.Background(), duck,
		`CREATE TABLE l (uid BIGINT, s VARCHAR COLLATE NOCASE, n INTEGER)`,
		`INSERT INTO l VALUES (1, 'a' || chr(0) || 'b', 1), (1, 'ab', 2), (2, 'AB', 3), (2, 'É', 4), (3, 'é', 5), (3, '`+"\u212a"+`', 6), (4, 'k', 7),
			(4, ' ab ', 8), (5, chr(9) || 'ab', 9), (5, '', 10), (6, NULL, 11), (6, '  ', 12), (7, 'école', 13), (7, 'Abc' || chr(0), 14), (8, '🇺🇸x', 15)`); err != nil {
		t.Fatal(err)
	}
	owner := enginetest.OpenDuckDB(t, duck, true, nil)
	enginetest.Run(t, owner, `SET BUDGET epsilon = 1e6, delta = 0.5; CREATE PRIVACY POLICY ON l OPTIONS (privacy_unit_column = uid, max_groups_contributed = 100, max_rows_contributed = 100)`)
	owner.Close()
	filters := []declinedOn{
		{"COUNT(*) FROM l WHERE UPPER(%s) = 'AB'", "n"}, {"COUNT(*) FROM l WHERE LOWER(%s) = 'é'", "n"}, {"COUNT(*) FROM l WHERE LOWER(%s) = 'k'", "n"},
		{"COUNT(*) FROM l WHERE UPPER(%s) = 'A' || chr(0) || 'B'", "n s"}, {"COUNT(*) FROM l WHERE LENGTH(%s) = 1", "n"}, {"COUNT(*) FROM l WHERE LENGTH(%s) > 2", "n"},
		{"COUNT(*) FROM l WHERE SUBSTR(%s, 1, 1) = 'a'", "n"}, {"COUNT(*) FROM l WHERE SUBSTR(%s, 2) = 'b'", "n"}, {"COUNT(*) FROM l WHERE SUBSTR(%s, 3, 0) = ''", "n"},
		{"COUNT(*) FROM l WHERE SUBSTR(%s, 2, 1) = 'x'", "n"}, {"COUNT(*) FROM l WHERE TRIM(%s) = 'ab'", "n"}, {"COUNT(*) FROM l WHERE TRIM(%s) = ''", "n"},
		{"COUNT(*) FROM l WHERE UPPER(%s) < LOWER(%s)", "n"}, {"COUNT(*) FROM l WHERE UPPER(%s) IS NULL", "n"}, {"COUNT(*) FROM l WHERE UPPER(%s) IN ('AB', 'É')", "n"},
		{"COUNT(*) FROM l WHERE LENGTH(%s) + 1 > 2", "n"}, {"COUNT(*) FROM l WHERE %s > SUBSTR(%s, 2)", "n"}, {"COUNT(*) FROM l WHERE UPPER(%s) > 1", "n"},
		{"AVG(LENGTH(%s), contribution_bounds_per_row => (0, 10)) FROM l", "n"},
		{"COUNT(*) FROM l WHERE LENGTH(TRIM(LOWER(%s))) = 2", "n"},
		{"COUNT(*) FROM l WHERE COALESCE(UPPER(%s), 'none') = 'none'", "n"},
		{"COUNT(*) FROM l WHERE CASE WHEN LENGTH(%s) > 2 THEN UPPER(%s) ELSE %s END = 'AB'", "n"}, {"COUNT(*) FROM l WHERE IFNULL(SUBSTR(%s, 2), 'b') = 'b'", "n"},
	}
	keys := []declinedOn{
		{"AVG(s.n, contribution_bounds_per_row => (0, 5)) FROM (SELECT uid, COUNT(DISTINCT %s) AS n FROM l GROUP BY uid) AS s", ""},
		{"UPPER(%s) AS k, COUNT(*) FROM l GROUP BY UPPER(%s)", "n"}, {"SUBSTR(%s, 1, 1) AS k, COUNT(*) FROM l GROUP BY SUBSTR(%s, 1, 1)", "n"},
		{"LENGTH(%s) AS k, COUNT(*) FROM l GROUP BY LENGTH(%s)", "n"},
		{"%s LIKE 'a%' AS k, COUNT(*) FROM l GROUP BY %s LIKE 'a%'", "n"},
		{"COALESCE(%s, 'none') AS k, COUNT(*) FROM l GROUP BY COALESCE(%s, 'none')", "n"},
		{"CASE WHEN %s LIKE 'a%' THEN SUBSTR(%s, 1, 1) ELSE 'other' END AS k, COUNT(*) FROM l GROUP BY CASE WHEN %s LIKE 'a%' THEN SUBSTR(%s, 1, 1) ELSE 'other' END", "n"},
	}
	for _, c := range []string{"s", "n"} {
		t.Run(c, func(t *testing.T) { sameCompiledOn(t, duck, c, "", filters) })
		t.Run(c+"/keys", func(t *testing.T) { sameCompiledOn(t, duck, c, ", delta = 1e-5", keys) })
	}
}
