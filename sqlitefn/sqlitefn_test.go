package sqlitefn

import (
	"database/sql"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func open(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// TestScalars pins each scalar function on the edges of 64-bit integers,
// decimal text beyond them, NULL and halves.
func TestScalars(t *testing.T) {
	t.Parallel()
	db := open(t)
	for _, c := range []struct{ q, want string }{
		{"dpsql_mul(9223372036854775807, 2)", "18446744073709551614"},
		{"dpsql_mul(-9223372036854775807 - 1, -1)", "9223372036854775808"},
		{"dpsql_mul(-9223372036854775807 - 1, 1)", "-9223372036854775808"},
		{"dpsql_mul(3037000499, 3037000499)", "9223372030926249001"},
		{"dpsql_mul('18446744073709551614', '-2')", "-36893488147419103228"},
		{"dpsql_mul(NULL, 2)", "<nil>"},
		{"dpsql_sub(-9223372036854775807 - 1, 1)", "-9223372036854775809"},
		{"dpsql_sub(9223372036854775807, -1)", "9223372036854775808"},
		{"dpsql_sub(5, 7)", "-2"},
		{"dpsql_sub('9223372036854775808', 1)", "9223372036854775807"},
		{"dpsql_div(-7, 2)", "-3"},
		{"dpsql_div('-36893488147419103228', 4)", "-9223372036854775807"},
		{"dpsql_div(7, 0)", "<nil>"},
		{"dpsql_div(7, NULL)", "<nil>"},
		{"dpsql_round(2.5)", "2"}, {"dpsql_round(3.5)", "4"}, {"dpsql_round(-2.5)", "-2"}, {"dpsql_round(-3.5)", "-4"},
		{"dpsql_round(0.49999999999999994)", "0"}, {"dpsql_round(4611686018427387904.0)", "4611686018427387904"},
		{"dpsql_round(1e300)", "9223372036854775807"}, {"dpsql_round(-1e300)", "-9223372036854775808"}, {"dpsql_round(NULL)", "<nil>"},
		{"dpsql_translate('aBc-é', 'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')", "ABC-é"},
		{"dpsql_translate('abc', 'ab', 'x')", "xc"},
		{"dpsql_translate(NULL, 'a', 'b')", "<nil>"},
		{"dpsql_match('abc', '(?s)^(?:a.c)$')", "1"}, {"dpsql_match('abcd', '(?s)^(?:a.c)$')", "0"}, {"dpsql_match(NULL, 'a')", "<nil>"},
		{"dpsql_match('a', '(')", "<nil>"},
	} {
		var got any
		if err := db.QueryRow("SELECT " + c.q).Scan(&got); err != nil {
			t.Errorf("%s: %v", c.q, err)
			continue
		}
		if b, ok := got.([]byte); ok {
			got = string(b)
		}
		if s := fmt.Sprint(got); s != c.want {
			t.Errorf("%s = %s, want %s", c.q, s, c.want)
		}
	}
}

// TestSumIsExact sums random 64-bit integers (many near the edges, so
// that the total leaves int64 and comes back) with dpsql_sum and its
// clipped form, as an aggregate and as a window over a sliding frame
// (which calls WindowInverse), and compares each with big.Int arithmetic.
func TestSumIsExact(t *testing.T) {
	t.Parallel()
	db := open(t)
	if _, err := db.Exec(`CREATE TABLE v (i INTEGER PRIMARY KEY, x INTEGER, g INTEGER)`); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var xs []int64
	for i := 0; i < 3000; i++ {
		x := int64(r.Uint64())
		if i%3 == 0 {
			x = math.MaxInt64 - int64(r.IntN(10))
		}
		xs = append(xs, x)
		var v any = x
		if i%17 == 0 {
			v = nil
		}
		if _, err := db.Exec(`INSERT INTO v VALUES (?, ?, ?)`, i, v, i%7); err != nil {
			t.Fatal(err)
		}
	}
	want := map[int64]*big.Int{}
	for i, x := range xs {
		if i%17 == 0 {
			continue
		}
		g := int64(i % 7)
		if want[g] == nil {
			want[g] = new(big.Int)
		}
		want[g].Add(want[g], big.NewInt(x))
	}
	rows, err := db.Query(`SELECT g, CAST(dpsql_sum(x) AS TEXT), CAST(dpsql_sum_clip(x, -5, 5) AS TEXT) FROM v GROUP BY g`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var g int64
		var s, clipped string
		if err := rows.Scan(&g, &s, &clipped); err != nil {
			t.Fatal(err)
		}
		if s != want[g].String() {
			t.Errorf("group %d: sum %s, want %s", g, s, want[g])
		}
		c := new(big.Int).Set(want[g])
		if c.Cmp(big.NewInt(-5)) < 0 {
			c.SetInt64(-5)
		} else if c.Cmp(big.NewInt(5)) > 0 {
			c.SetInt64(5)
		}
		if clipped != c.String() {
			t.Errorf("group %d: clipped sum %s, want %s", g, clipped, c)
		}
	}
	rows.Close()
	// A sliding frame of 4 rows: each value leaves the sum again.
	rows, err = db.Query(`SELECT i, CAST(dpsql_sum(x) OVER (ORDER BY i ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS TEXT) FROM v ORDER BY i`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		var s sql.NullString
		if err := rows.Scan(&i, &s); err != nil {
			t.Fatal(err)
		}
		w, n := new(big.Int), 0
		for j := max(0, i-3); j <= i; j++ {
			if j%17 != 0 {
				w.Add(w, big.NewInt(xs[j]))
				n++
			}
		}
		if n == 0 && s.Valid || n > 0 && s.String != w.String() {
			t.Errorf("row %d: window sum %v, want %s", i, s, w)
		}
	}
}

// TestHashTellsClassesApart: the keyed hash is deterministic, depends on
// the key, and tells apart values that SQLite compares equal across
// classes (1 and 1.0, '1' and 1). (Texts that differ only past a NUL
// hash alike: SQLite hands a Go function a text up to its first NUL; the
// ranks then order them by their bytes, which SQLite compares whole.)
func TestHashTellsClassesApart(t *testing.T) {
	t.Parallel()
	db := open(t)
	var a, b, c, d, e int64
	if err := db.QueryRow(`SELECT dpsql_hash(1, 1), dpsql_hash(1, 1), dpsql_hash(2, 1), dpsql_hash(1, 1.0), dpsql_hash(1, '1')`).Scan(&a, &b, &c, &d, &e); err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("not deterministic: %d, %d", a, b)
	}
	if a == c || a == d || a == e || d == e {
		t.Errorf("collisions: %d %d %d %d", a, c, d, e)
	}
}
