package pgengine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

// nestedSum is the fourth privacy review's statement at depth d: the
// pattern (e * y + x) nested d times, summed under per-unit bounds.
func nestedSum(d int) string {
	e := "x"
	for i := 0; i < d; i++ {
		e = "(" + e + " * y + x)"
	}
	return fmt.Sprintf("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) SUM(%s, contribution_bounds_per_group => (0, 100)) FROM f", e)
}

// TestPostgresNestedArithmeticStaysLinear runs the review's nested float
// arithmetic on PostgreSQL at depths 1–12 over 20,000 rows: every depth
// compiles, answers as the reference evaluator does (zero noise), and
// takes time that grows no faster than the expression (before, depth 2
// ran for minutes and depth 5 took 24 GB). The statement's size is
// checked linear by measuresql's TestStatementsGrowLinearly; here each
// query runs under a deadline, so an exponential statement fails the
// test instead of hanging it.
func TestPostgresNestedArithmeticStaysLinear(t *testing.T) {
	parallel(t)
	h := newHarness(t)
	srv := pgtest.StartT(t)
	pgExec(t, srv.DSN(), `CREATE TABLE f (uid int8, x float8, y float8);
		INSERT INTO f SELECT i, (i % 97) / 97.0, (i % 89) / 100.0 FROM generate_series(1, 20000) i`)
	e := h.open(filepath.Join(t.TempDir(), "f.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, NoCache: true, Postgres: srv.DSN()})
	mustRun(t, e, `CREATE PRIVACY POLICY ON f OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 1);
		ALTER PRIVACY POLICY ON f SET BOUNDS x (0, 1);
		ALTER PRIVACY POLICY ON f SET BOUNDS y (0, 1);
		SET BUDGET epsilon = 1000`)
	var times []time.Duration
	for d := 1; d <= 12; d++ {
		q := nestedSum(d)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		compiled := h.knobs.Compiled.Load()
		start := time.Now()
		got, err := e.Query(ctx, q)
		times = append(times, time.Since(start))
		cancel()
		if err != nil {
			t.Fatalf("depth %d: %v", d, err)
		}
		if h.knobs.Compiled.Load() == compiled {
			t.Fatalf("depth %d: not compiled", d)
		}
		h.knobs.ReferenceOnly = true
		want, err := e.Query(context.Background(), strings.Replace(q, "epsilon = 1)", "epsilon = 1.5)", 1))
		h.knobs.ReferenceOnly = false
		if err != nil {
			t.Fatal(err)
		}
		if g, w := fmt.Sprint(got.Rows[0][0]), fmt.Sprint(want.Rows[0][0]); g != w {
			t.Errorf("depth %d: PostgreSQL %s, reference %s", d, g, w)
		}
	}
	t.Logf("time by depth: %v", times)
	// Linear growth: depth 12 within 4× depth 6's time (2× when linear,
	// twice that for a loaded machine) and 2 s of slack; the review's
	// statements grew ~100× per level.
	if limit := 4*times[5] + 2*time.Second; times[11] > limit {
		t.Errorf("depth 12 took %v, depth 6 %v: faster than linear growth (%v)", times[11], times[5], times)
	}
}
