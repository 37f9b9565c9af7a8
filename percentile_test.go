package dpsql_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/planner"
)

// TestPercentilesWithoutNoise: with zero noise the quantile tree's
// descent finds the value at rank p·n to within a leaf ((hi − lo)/65,536),
// per group; MEDIAN is PERCENTILE_CONT(x, 0.5) (issue 10).
func TestPercentilesWithoutNoise(t *testing.T) { testPercentilesWithoutNoise(t, parallel(t)) }

func testPercentilesWithoutNoise(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	// t: x = i % 100 over 1,000 rows (ten of each 0..99), bounds (0, 100).
	leaf := 100.0 / 65536
	r := query(t, e, `SELECT MEDIAN(x), PERCENTILE_CONT(x, 0.1), PERCENTILE_CONT(x, 0.9), PERCENTILE_CONT(x, 0), PERCENTILE_CONT(x, 1) FROM t`)
	// rank p·n: 500 → 49, 100 → 9, 900 → 89 (the end of their leaves), 0 → 0, 1000 → 99.
	for j, want := range []float64{49, 9, 89, 0, 99} {
		if got := num(r.Rows[0][j]); math.Abs(got-want) > 2*leaf {
			t.Errorf("column %d = %v, want %v ± %v", j, got, want, 2*leaf)
		}
	}
	// Per group: g = 'a' has x ∈ {0, 4, ..., 96}, ten each; 'd' has no rows
	// (its domain value is not in the data): the descent spreads evenly
	// and lands on the middle of the bounds.
	r = query(t, e, `SELECT g, MEDIAN(x, contribution_bounds_per_row => (0, 100)) FROM t GROUP BY g`)
	if len(r.Rows) != 4 || math.Abs(num(r.Rows[0][1])-48) > 2*leaf || math.Abs(num(r.Rows[3][1])-50) > 2*leaf {
		t.Errorf("grouped medians: %v", r.Rows)
	}
	// Bounds chosen privately (y has none): the scan counts fine buckets
	// (relative width 1/8192) and the tree is laid over the chosen bounds.
	// y = i/10 on even i: 500 values 0, 0.2, ..., 99.8; rank 250 is 49.8,
	// rank 50 is 9.8.
	r = query(t, e, `SELECT MEDIAN(y), PERCENTILE_CONT(y, 0.1) FROM t`)
	for j, want := range []float64{49.8, 9.8} {
		if got := num(r.Rows[0][j]); math.Abs(got-want) > want/8192+2*128.0/65536 {
			t.Errorf("chosen bounds, column %d = %v, want %v", j, got, want)
		}
	}
	d, err := e.Describe(context.Background(), `SELECT MEDIAN(x) FROM t`)
	if err != nil || d.Types[0] != dpsql.TypeReal {
		t.Errorf("Describe: %+v %v", d, err)
	}
	for _, tc := range []struct {
		sql  string
		kind error
		msg  string
	}{
		{`SELECT PERCENTILE_CONT(x, 1.5) FROM t`, planner.ErrInvalidOption, "in [0, 1]"},
		{`SELECT PERCENTILE_CONT(x, x) FROM t`, planner.ErrInvalidOption, "constant"},
		{`SELECT PERCENTILE_CONT(x) FROM t`, dpsql.ErrUnsupported, "percentile p"},
		{`SELECT MEDIAN(x, contribution_bounds_per_group => (0, 1)) FROM t`, planner.ErrInvalidOption, "contribution_bounds_per_row"},
	} {
		if _, err := e.Query(context.Background(), tc.sql); !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v", tc.sql, err)
		}
	}
}

// TestPercentileNeighboursEmpirically: with real noise, a percentile on D
// and on D′ = D without one unit have output distributions within e^ε of
// each other in every well-filled bin. The data put the 0.4-quantile of
// D′ among the 30s and that of D (one more unit, at 0) among the 10s, by
// a margin of a fraction of a rank, so noise that were too small would
// separate them (checked by mutation: a sensitivity 200 times too small
// fails).
func TestPercentileNeighboursEmpirically(t *testing.T) {
	testPercentileNeighboursEmpirically(t, parallel(t))
}

func testPercentileNeighboursEmpirically(t *testing.T, h *harness) {
	base := `CREATE TABLE m (x REAL); INSERT INTO m VALUES (10), (10), (10), (10), (10), (30), (30), (30), (30), (30), (30), (30), (30);`
	policy := `CREATE PRIVACY POLICY ON m; ALTER PRIVACY POLICY ON m SET BOUNDS x (0, 64)`
	d := h.hardDB(t, base+` INSERT INTO m VALUES (0);`, policy)
	d2 := h.hardDB(t, base, policy)
	h.empiricalNeighbours(t, d, d2, `SELECT PERCENTILE_CONT(x, 0.4) FROM m`, 1, 4)
	// With bounds chosen privately (x + 0 has no declared bounds): the
	// search and the tree together stay within e^ε. 2,000 rows, so that
	// the search settles on the same bounds ([0, 30]) on both sides: the
	// 0.40025-quantile of D′ (800 tens, 1,200 thirties) is among the
	// thirties, that of D (one more unit, at 0) among the tens (checked by
	// mutation: leaf counts 200 times too large fail).
	many := `CREATE TABLE m (x REAL); WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 1999) INSERT INTO m SELECT CASE WHEN i < 800 THEN 10 ELSE 30 END FROM n;`
	policy = `CREATE PRIVACY POLICY ON m`
	d = h.hardDB(t, many+` INSERT INTO m VALUES (0);`, policy)
	d2 = h.hardDB(t, many, policy)
	h.empiricalNeighbours(t, d, d2, `SELECT PERCENTILE_CONT(x + 0, 0.40025) FROM m`, 1, 4)
}

// TestApproxQuantiles: APPROX_QUANTILES(x, n) is BigQuery's array of the
// n + 1 quantiles 0, 1/n, ..., 1, as JSON text. Under zero noise each is
// the PERCENTILE_CONT of its p; with real noise all are read from one
// noisy tree (each node's count drawn once), so the array is never out of
// order — descents with independent noise would cross — and the query
// costs one ε share, not n + 1 (issue 10).
func TestApproxQuantiles(t *testing.T) { testApproxQuantiles(t, parallel(t)) }

func testApproxQuantiles(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	r := query(t, e, `SELECT APPROX_QUANTILES(x, 4) AS q FROM t`)
	var want []string
	for _, p := range []float64{0, 0.25, 0.5, 0.75, 1} {
		one := query(t, e, fmt.Sprintf(`SELECT PERCENTILE_CONT(x, %g) FROM t`, p))
		want = append(want, strconv.FormatFloat(num(one.Rows[0][0]), 'g', -1, 64))
	}
	if got, w := r.Rows[0][0], "["+strings.Join(want, ",")+"]"; got != w {
		t.Errorf("APPROX_QUANTILES(x, 4) = %v, want %s", got, w)
	}
	// EXPLAIN names what it releases: the five quantiles, not a median.
	plan := query(t, e, `EXPLAIN SELECT APPROX_QUANTILES(x, 4) AS q FROM t`)
	if text := fmt.Sprint(plan.Rows); !strings.Contains(text, "the 5 quantiles 0, 1/4, …, 1 (a JSON array)") || strings.Contains(text, "0.5-quantile") {
		t.Errorf("EXPLAIN APPROX_QUANTILES: %s", text)
	}
	for _, bad := range []string{`SELECT APPROX_QUANTILES(x, 0) FROM t`, `SELECT APPROX_QUANTILES(x, 2.5) FROM t`, `SELECT APPROX_QUANTILES(x) FROM t`, `SELECT APPROX_QUANTILES(x, x) FROM t`, `SELECT APPROX_QUANTILES(x, 1001) FROM t`} {
		if _, err := e.Query(t.Context(), bad); !errors.Is(err, planner.ErrInvalidOption) || !strings.Contains(err.Error(), "constant integer n") {
			t.Errorf("%s: %v", bad, err)
		}
	}

	real, err := h.openEngine(e.Path(), dpsql.Options{Epsilon: 0.05, NoCache: true}, nil) // real noise
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	// ε = 0.05 on 1,000 rows: node counts carry noise of scale 80, so
	// independent descents would often disagree on order.
	for run := 0; run < 100; run++ {
		r := query(t, real, `SELECT APPROX_QUANTILES(x, 20) AS q FROM t`)
		var qs []float64
		if err := json.Unmarshal([]byte(r.Rows[0][0].(string)), &qs); err != nil || len(qs) != 21 {
			t.Fatalf("not an array of 21 numbers: %v (%v)", r.Rows[0][0], err)
		}
		if !sort.Float64sAreSorted(qs) {
			t.Fatalf("run %d: quantiles out of order: %v", run, qs)
		}
		if r.Cost.Epsilon != 0.05 {
			t.Fatalf("cost %v", r.Cost)
		}
	}
}
