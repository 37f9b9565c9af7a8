package dpsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/planner"
)

// rowsOf prints a result's rows as "k:v k:v …" for exact comparison.
func rowsOf(r *dpsql.Result) string {
	var parts []string
	for _, row := range r.Rows {
		var cells []string
		for _, v := range row {
			if f, ok := v.(float64); ok && f == math.Trunc(f) {
				v = int64(f)
			}
			cells = append(cells, fmt.Sprint(v))
		}
		parts = append(parts, strings.Join(cells, ":"))
	}
	return strings.Join(parts, " ")
}

// TestExpressionGroupKeys: GROUP BY an expression whose values the policy
// determines (FLOOR/CEIL/ROUND bins over declared bounds, CASE buckets)
// outputs every bin, empty ones included, with exact answers under zero
// noise; the select list may repeat the expression, name its alias, or
// GROUP BY may give its position (issue 10's numeric histograms).
func TestExpressionGroupKeys(t *testing.T) { testExpressionGroupKeys(t, parallel(t)) }

func testExpressionGroupKeys(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	// t: 1,000 rows, x = i % 100 with declared bounds (0, 100).
	decades := func() string {
		var parts []string
		for d := 0; d <= 100; d += 10 {
			n := 100
			if d == 100 {
				n = 0
			}
			parts = append(parts, fmt.Sprintf("%d:%d", d, n))
		}
		return strings.Join(parts, " ")
	}()
	for _, tc := range []struct{ sql, want string }{
		{`SELECT FLOOR(x / 10) * 10 AS decade, COUNT(*) FROM t GROUP BY decade`, decades},
		{`SELECT FLOOR(x / 10) * 10, COUNT(*) FROM t GROUP BY FLOOR(x / 10) * 10`, decades},
		{`SELECT 10 * FLOOR(x / 10) AS d, COUNT(*) FROM t GROUP BY 1`, decades},
		{`SELECT FLOOR(x / 25) AS q, COUNT(*), SUM(x) FROM t GROUP BY q`, "0:250:3000 1:250:9250 2:250:15500 3:250:21750 4:0:0"},
		{`SELECT CASE WHEN x < 30 THEN 'low' WHEN x < 70 THEN 'mid' ELSE 'high' END AS band, COUNT(*) FROM t GROUP BY band`,
			"low:300 mid:400 high:300"},
		// A CASE key with a public-domain key beside it: the cross product.
		{`SELECT g, CASE WHEN x < 50 THEN 0 ELSE 1 END AS half, COUNT(*) FROM t GROUP BY g, half ORDER BY g, half`, func() string {
			var parts []string
			for gi, g := range []string{"a", "b", "c", "d"} {
				for half := 0; half < 2; half++ {
					// The fourth value of g in the data is 'z', outside its domain.
					n := bruteCount(func(i int) bool { return i%4 == gi && g != "d" && (i%100 >= 50) == (half == 1) })
					parts = append(parts, fmt.Sprintf("%s:%d:%d", g, half, n))
				}
			}
			return strings.Join(parts, " ")
		}()},
		// Outputs computed from the key, after noise, and HAVING on it.
		{`SELECT FLOOR(x / 50) AS h, FLOOR(x / 50) + 1 AS next, COUNT(*) AS n FROM t GROUP BY h HAVING h > 0`, "1:2:500 2:3:0"},
	} {
		if got := rowsOf(query(t, e, tc.sql)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.want)
		}
	}
	d, err := e.Describe(context.Background(), `SELECT FLOOR(x / 10) * 10 AS decade, COUNT(*) FROM t GROUP BY decade`)
	if err != nil || fmt.Sprint(d.Types) != "[INTEGER INTEGER]" {
		t.Errorf("Describe: %+v %v", d, err)
	}
}

// TestExpressionKeysDropValuesOutsideTheBins: rows whose key falls outside
// the bins the bounds enumerate (values beyond the bounds, NULL) are not
// counted, and no bin appears for them.
func TestExpressionKeysDropValuesOutsideTheBins(t *testing.T) {
	testExpressionKeysDropValuesOutsideTheBins(t, parallel(t))
}

func testExpressionKeysDropValuesOutsideTheBins(t *testing.T, h *harness) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE h (v REAL); INSERT INTO h VALUES (0), (49.9), (50), (99.5), (100), (250), (-5), (NULL), (1e300)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, h.open(t, path, dpsql.Options{Owner: true}), `CREATE PRIVACY POLICY ON h; ALTER PRIVACY POLICY ON h SET BOUNDS v (0, 100); SET BUDGET epsilon = 100`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	if got, want := rowsOf(query(t, e, `SELECT FLOOR(v / 50) AS b, COUNT(*) FROM h GROUP BY b`)), "0:2 1:2 2:1"; got != want {
		t.Errorf("bins: got %s, want %s", got, want)
	}
	if got, want := rowsOf(query(t, e, `SELECT ROUND(v) AS r, COUNT(*) FROM h WHERE v > 99 GROUP BY r HAVING r >= 99`)), "99:0 100:2"; got != want {
		t.Errorf("ROUND: got %s, want %s", got, want)
	}
}

// TestExpressionKeysRefused: expressions whose values the policy does not
// determine need δ (partition selection); too many bins and expressions
// of the privacy unit that are not enumerated are refused, whatever the
// data.
func TestExpressionKeysRefused(t *testing.T) { testExpressionKeysRefused(t, parallel(t)) }

func testExpressionKeysRefused(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	ctx := context.Background()
	for _, tc := range []struct {
		sql  string
		kind error
		msg  string
	}{
		{`SELECT x % 10 AS m, COUNT(*) FROM t GROUP BY m`, dpsql.ErrNotPrivate, "partition selection"},
		{`SELECT FLOOR(y / 10), COUNT(*) FROM t GROUP BY 1`, dpsql.ErrNotPrivate, "declared bounds"},
		{`SELECT CASE WHEN x < 5 THEN g ELSE 'z' END AS k, COUNT(*) FROM t GROUP BY k`, dpsql.ErrNotPrivate, "CASE whose results are constants"},
		{`SELECT FLOOR(x / 0.001), COUNT(*) FROM t GROUP BY 1`, dpsql.ErrUnsupported, "at most 10000"},
		{`SELECT COUNT(*) FROM t GROUP BY 3`, planner.ErrInvalidOption, "position"},
		{`SELECT COUNT(*) AS n FROM t GROUP BY 1`, planner.ErrInvalidOption, "position"},
	} {
		_, err := e.Query(ctx, tc.sql)
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v", tc.sql, err)
		}
	}
	// With δ the same expression's groups go through partition selection.
	if _, err := e.Query(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-7) x % 10 AS m, COUNT(*) FROM t GROUP BY m`); err != nil {
		t.Errorf("with delta: %v", err)
	}
	units := h.open(t, h.unitsDB(t, generateVisits(20, 1), `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = uid); ALTER PRIVACY POLICY ON visits SET BOUNDS uid (0, 1000)`), dpsql.Options{Epsilon: 1})
	q := `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-6) uid + 0, COUNT(*) FROM visits GROUP BY 1`
	if _, err := units.Query(ctx, q); !errors.Is(err, dpsql.ErrNotPrivate) || !strings.Contains(err.Error(), "privacy unit") {
		t.Errorf("%s: %v", q, err)
	}
	// Bins of the unit's declared bounds are public: they release no id.
	if r, err := units.Query(ctx, `SELECT FLOOR(uid / 250) AS u, COUNT(*) FROM visits GROUP BY u`); err != nil || len(r.Rows) != 5 {
		t.Errorf("bins of the unit: %v %v", r, err)
	}
}
