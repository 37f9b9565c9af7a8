package rewrite

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
	_ "modernc.org/sqlite"
)

// TestDomainSearchIsTheFlatCase: the binary search by IN lists a large
// domain is mapped with gives every value the position the flat CASE
// gives it, in SQLite itself — across columns of each affinity and
// collation, domains of mixed types with entries equal under the
// column's rules (1 and 1.0, 'a' and 'A' under NOCASE, '10' and 10 under
// TEXT affinity), and values outside the domain or NULL.
func TestDomainSearchIsTheFlatCase(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE v (i INTEGER, r REAL, t TEXT, n TEXT COLLATE NOCASE, b)`); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	value := func() any {
		switch r.IntN(6) {
		case 0:
			return int64(r.IntN(60) - 10)
		case 1:
			return float64(r.IntN(40)) / 2
		case 2:
			return fmt.Sprint(r.IntN(50))
		case 3:
			return string(rune('a' + r.IntN(26)))
		case 4:
			return string(rune('A' + r.IntN(26)))
		}
		return nil
	}
	for i := 0; i < 400; i++ {
		v := value()
		if _, err := db.Exec(`INSERT INTO v VALUES (?, ?, ?, ?, ?)`, v, v, v, v, v); err != nil {
			t.Fatal(err)
		}
	}
	for trial := 0; trial < 20; trial++ {
		var domain []any
		for len(domain) < 17+r.IntN(300) {
			if v := value(); v != nil {
				domain = append(domain, v)
			}
		}
		for _, col := range []string{"i", "r", "t", "n", "b"} {
			k := planner.GroupKey{SQL: col, Domain: domain}
			tree := domainIndex(k)
			lits := make([]string, len(domain))
			for j, d := range domain {
				lits[j] = parser.SQLLiteral(d)
			}
			flat := flatCase(col, lits, 0)
			var differ int
			if err := db.QueryRow(`SELECT COUNT(*) FROM v WHERE (` + tree + `) IS NOT (` + flat + `)`).Scan(&differ); err != nil {
				t.Fatal(err)
			}
			if differ != 0 {
				t.Errorf("domain of %d values on column %s: %d rows mapped otherwise than by the flat CASE", len(domain), col, differ)
			}
		}
	}
}
