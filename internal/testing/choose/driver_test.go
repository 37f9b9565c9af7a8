package choose_test

import (
	"database/sql"
	"testing"

	_ "github.com/dpsql/dpsql" // the "dpsql" database/sql driver
)

// TestChoiceThroughTheDriver: the three forms through database/sql, as a
// Go program or a BI tool would send them (real noise: only the shapes
// are checked).
func TestChoiceThroughTheDriver(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 9, 0)
	db, err := sql.Open("dpsql", "file:"+f.path+"?cache=off")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(q string) int {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(rangeQuery); n > 3 {
		t.Errorf("threshold query: %d rows, at most 3", n)
	}
	if n := count(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) product, COUNT(*) AS n FROM purchases GROUP BY product ORDER BY n DESC LIMIT 3`); n != 3 {
		t.Errorf("top-k: %d rows, want 3", n)
	}
	if _, err := db.Exec(`CREATE WATCH w OPTIONS (threshold = 100, sensitivity = 1, epsilon = 1)`); err != nil {
		t.Fatal(err)
	}
	var answer string
	if err := db.QueryRow(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = w) COUNT(*) FROM people WHERE age > 200`).Scan(&answer); err != nil || (answer != "above" && answer != "below") {
		t.Errorf("a query to a watch: %q, %v", answer, err)
	}
}
