//go:build cgo

package dpsql_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/ducktest"
)

// TestDuckDBNestedArithmeticStaysLinear is the PostgreSQL test of the
// same name on DuckDB: the fourth privacy review's nested float
// arithmetic ((x * y + x) nested d times, and ABS around each level, whose
// operand DuckDB's CASE would otherwise copy) at depths 1–12 over 20,000
// rows compiles at every depth, answers as the reference evaluator does,
// and takes time that grows no faster than the expression.
func TestDuckDBNestedArithmeticStaysLinear(t *testing.T) {
	parallel(t)
	duck := filepath.Join(t.TempDir(), "f.duckdb")
	if err := ducktest.Exec(context.Background(), duck,
		`CREATE TABLE f AS SELECT range AS uid, (range % 97) / 97.0 AS x, (range % 89) / 100.0 AS y FROM range(20000)`); err != nil {
		t.Fatal(err)
	}
	k := &knobs.Knobs{}
	e := openDuck(t, duck, true, k, nil)
	mustRun(t, e, `CREATE PRIVACY POLICY ON f OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 1);
		ALTER PRIVACY POLICY ON f SET BOUNDS x (0, 1);
		ALTER PRIVACY POLICY ON f SET BOUNDS y (0, 1);
		SET BUDGET epsilon = 1000`)
	for _, abs := range []bool{false, true} {
		var times []time.Duration
		for d := 1; d <= 12; d++ {
			expr := "x"
			for i := 0; i < d; i++ {
				expr = "(" + expr + " * y - x)"
				if abs {
					expr = "ABS" + expr
				}
			}
			q := fmt.Sprintf("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) SUM(%s, contribution_bounds_per_group => (0, 100)) FROM f", expr)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			compiled := k.Compiled.Load()
			start := time.Now()
			got, err := e.Query(ctx, q)
			times = append(times, time.Since(start))
			cancel()
			if err != nil {
				t.Fatalf("depth %d: %v", d, err)
			}
			if k.Compiled.Load() == compiled {
				t.Fatalf("depth %d (abs %v): not compiled", d, abs)
			}
			k.ReferenceOnly = true
			want := query(t, e, strings.Replace(q, "epsilon = 1)", "epsilon = 1.5)", 1))
			k.ReferenceOnly = false
			if g, w := fmt.Sprint(got.Rows[0][0]), fmt.Sprint(want.Rows[0][0]); g != w {
				t.Errorf("depth %d (abs %v): DuckDB %s, reference %s", d, abs, g, w)
			}
		}
		t.Logf("abs %v: time by depth %v", abs, times)
		if limit := 4*times[5] + 2*time.Second; times[11] > limit {
			t.Errorf("abs %v: depth 12 took %v, depth 6 %v: faster than linear growth (%v)", abs, times[11], times[5], times)
		}
	}
}
