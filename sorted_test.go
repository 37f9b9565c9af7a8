package dpsql_test

import (
	"database/sql"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
)

// TestBoundingIsOrderFree: on SQLite a bounded scan reads its rows sorted
// by unit (so that it holds one unit at a time), and what it keeps
// depends only on each unit's own rows: the same rows stored in two
// orders give the same answers under fixed randomness, with rows and
// groups dropped by bounding. The units are of every storage class,
// SQLite-equal ones among them (1 and 1.0, 0.0 and -0.0, and 'a' and 'A'
// in a NOCASE column), each still one unit of its own.
func TestBoundingIsOrderFree(t *testing.T) {
	h := parallel(t)
	units := []string{"1", "1.0", "0.0", "-0.0", "'a'", "'A'", "x'61'", "2", "'b'", "2.5", "'B'", "x'41'"}
	var rows []string
	for i, u := range units {
		for j := 0; j < 3+i%4; j++ { // 3 to 6 rows, in one to three groups
			rows = append(rows, fmt.Sprintf("(%s, '%c', %d)", u, 'p'+rune(j%(1+i%3)), 1+(i*7+j*3)%10))
		}
	}
	reversed := make([]string, len(rows))
	for i, r := range rows {
		reversed[len(rows)-1-i] = r
	}
	policy := `CREATE PRIVACY POLICY ON s OPTIONS (privacy_unit_column = uid, max_groups_contributed = 2, max_rows_contributed = 2);
		ALTER PRIVACY POLICY ON s SET DOMAIN g ('p', 'q', 'r');
		ALTER PRIVACY POLICY ON s SET BOUNDS v (0, 10)`
	k := &knobs.Knobs{FixedRandomness: true}
	answers := func(order []string) (string, *sql.DB) {
		path := h.hardDB(t, "CREATE TABLE s (uid COLLATE NOCASE, g TEXT, v INTEGER); INSERT INTO s VALUES "+strings.Join(order, ", "), policy)
		e, err := h.openEngineWith(path, dpsql.Options{Epsilon: 1}, dpsql.ZeroNoise(), k)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		var out []string
		for _, q := range []string{
			`SELECT g, COUNT(*), SUM(v), COUNT(DISTINCT uid) FROM s GROUP BY g`,
			`SELECT COUNT(*), SUM(v) FROM s`,
		} {
			res := query(t, e, q)
			out = append(out, fmt.Sprint(res.Rows))
			if res.Dropped == nil {
				t.Fatalf("%s: no estimate of what bounding dropped", q)
			}
			out = append(out, fmt.Sprint(res.Dropped.Units, res.Dropped.Affected))
		}
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return strings.Join(out, "\n"), db
	}
	stored, db := answers(rows)
	if other, _ := answers(reversed); other != stored {
		t.Errorf("the same rows in two orders answer differently:\n%s\n%s", stored, other)
	}
	// The units as the reference tells them apart: by class and value
	// (the sign of a zero included), bytes compared exactly.
	ids := map[string]bool{}
	r, err := db.Query(`SELECT uid FROM s`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var v any
		if err := r.Scan(&v); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("%T %v", v, v)
		if f, ok := v.(float64); ok && f == 0 && math.Signbit(f) {
			id = "negative zero"
		}
		ids[id] = true
	}
	r.Close()
	if !strings.Contains(stored, fmt.Sprintf("\n%d ", len(ids))) {
		t.Errorf("the estimate of units is not %d (the units' identities %v):\n%s", len(ids), ids, stored)
	}
}
