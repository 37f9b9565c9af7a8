package dpsql_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/dpsql/dpsql"
)

// Example opens a database through database/sql, declares a policy and a
// budget as the owner, and asks a private question as an analyst. The
// count is noisy, so the example prints only what does not depend on the
// noise.
func Example() {
	dir, _ := os.MkdirTemp("", "dpsql-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "clinic.db")

	// The owner loads data (here with plain SQLite), then sets the policy.
	raw, _ := sql.Open("sqlite", path)
	raw.Exec(`CREATE TABLE visits (age INTEGER, ward TEXT);
		INSERT INTO visits VALUES (34, 'A'), (51, 'B'), (72, 'A'), (29, 'B');`)
	raw.Close()
	owner, err := sql.Open("dpsql", "file:"+path+"?role=owner")
	if err != nil {
		log.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE PRIVACY POLICY ON visits`,
		`ALTER PRIVACY POLICY ON visits SET DOMAIN ward ('A', 'B', 'C')`,
		`SET BUDGET epsilon = 2`,
	} {
		if _, err := owner.Exec(stmt); err != nil {
			log.Fatal(err)
		}
	}
	owner.Close()

	analyst, _ := sql.Open("dpsql", "file:"+path+"?epsilon=0.5")
	defer analyst.Close()
	rows, err := analyst.Query(`SELECT ward, COUNT(*) AS n FROM visits WHERE age >= ? GROUP BY ward`, 30)
	if err != nil {
		log.Fatal(err)
	}
	for rows.Next() {
		var ward string
		var n int64
		rows.Scan(&ward, &n)
		fmt.Println("ward", ward, "count is a non-negative integer:", n >= 0)
	}
	budget, _ := analyst.Query(`SHOW BUDGET`)
	for budget.Next() {
		var what string
		var eps, delta float64
		budget.Scan(&what, &eps, &delta)
		fmt.Printf("%s ε: %g\n", what, eps)
	}
	// Output:
	// ward A count is a non-negative integer: true
	// ward B count is a non-negative integer: true
	// ward C count is a non-negative integer: true
	// total ε: 2
	// spent ε: 0.5
	// remaining ε: 1.5
}

// ExampleEngine_NewSession opens one engine and two sessions on it: each
// has its own settings, and both draw on the database's one budget.
func ExampleEngine_NewSession() {
	dir, _ := os.MkdirTemp("", "dpsql-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "clinic.db")
	raw, _ := sql.Open("sqlite", path)
	raw.Exec(`CREATE TABLE visits (age INTEGER, ward TEXT); INSERT INTO visits VALUES (34, 'A'), (51, 'B');`)
	raw.Close()

	ctx := context.Background()
	eng, err := dpsql.Open(path, dpsql.Options{Owner: true})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	if err := eng.Run(ctx, `CREATE PRIVACY POLICY ON visits; SET BUDGET epsilon = 2`, func(*dpsql.Result) error { return nil }); err != nil {
		log.Fatal(err)
	}
	a, _ := eng.NewSession(dpsql.SessionOptions{Epsilon: 0.5})
	b, _ := eng.NewSession(dpsql.SessionOptions{})
	defer a.Close()
	defer b.Close()
	if _, err := b.Query(ctx, `SET epsilon = 0.25`); err != nil {
		log.Fatal(err)
	}
	for _, s := range []*dpsql.Session{a, b} {
		res, err := s.Query(ctx, `SELECT COUNT(*) FROM visits`)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("session ε %g: charged ε %g\n", s.Settings().Epsilon, res.Cost.Epsilon)
	}
	st, _ := eng.Budget(ctx)
	fmt.Printf("spent ε: %g\n", st.Spent.Epsilon)
	// Output:
	// session ε 0.5: charged ε 0.5
	// session ε 0.25: charged ε 0.25
	// spent ε: 0.75
}
