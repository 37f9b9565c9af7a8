// Package demo builds the demo database that 'dpsql demo' opens: a
// synthetic clinic table generated here (no outside data), with a privacy
// policy, public domains, bounds and a budget.
package demo

import (
	"context"
	"database/sql"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	_ "modernc.org/sqlite" // the embedded backend
)

// Rows is the number of rows of the demo table.
const Rows = 20_000

// Regions and Diagnoses are the public domains of the demo's group keys.
var (
	Regions   = []string{"North", "South", "East", "West", "Central"}
	Diagnoses = []string{"asthma", "diabetes", "flu", "hypertension", "none"}
)

// Setup is the owner script that declares the demo's policy and budget.
const Setup = `
CREATE PRIVACY POLICY ON patients;
ALTER PRIVACY POLICY ON patients SET BOUNDS age (0, 100);
ALTER PRIVACY POLICY ON patients SET BOUNDS income (0, 200000);
ALTER PRIVACY POLICY ON patients SET BOUNDS visits (0, 20);
ALTER PRIVACY POLICY ON patients SET DOMAIN region ('North', 'South', 'East', 'West', 'Central');
ALTER PRIVACY POLICY ON patients SET DOMAIN diagnosis ('asthma', 'diabetes', 'flu', 'hypertension', 'none');
SET BUDGET epsilon = 10, delta = 1e-6;
`

// Queries are the example private queries the demo prints.
var Queries = []string{
	`SELECT COUNT(*) AS patients FROM patients`,
	`SELECT region, COUNT(*) AS n, ROUND(AVG(age), 1) AS avg_age FROM patients GROUP BY region ORDER BY n DESC`,
	`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) diagnosis, ROUND(AVG(income)) AS avg_income FROM patients WHERE age >= 65 GROUP BY diagnosis`,
}

// Generate creates the patients table in the SQLite file at path with a
// deterministic synthetic population (the seed makes the demo repeatable;
// it has nothing to do with the noise, which always comes from crypto/rand).
func Generate(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE patients (id INTEGER, age INTEGER, sex TEXT, region TEXT, diagnosis TEXT, visits INTEGER, income REAL)`); err != nil {
		return err
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO patients VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	if err := eachRow(func(row []any) error {
		_, err := ins.ExecContext(ctx, row...)
		return err
	}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

// Columns are the patients table's columns, in order.
var Columns = []string{"id", "age", "sex", "region", "diagnosis", "visits", "income"}

// WriteCSV writes the same synthetic patients as a CSV file with a header
// line: a data set a fresh clone can import as its own (dpsql demo --csv).
func WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(Columns); err != nil {
		return err
	}
	rec := make([]string, len(Columns))
	if err := eachRow(func(row []any) error {
		for i, v := range row {
			rec[i] = fmt.Sprint(v)
		}
		return cw.Write(rec)
	}); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// eachRow generates the population, one row at a time.
func eachRow(fn func(row []any) error) error {
	r := rand.New(rand.NewPCG(2026, 11))
	for i := 0; i < Rows; i++ {
		age := int(math.Max(0, math.Min(99, 40+18*r.NormFloat64())))
		sex := "F"
		if r.IntN(2) == 0 {
			sex = "M"
		}
		region := Regions[r.IntN(len(Regions))]
		if r.IntN(4) == 0 {
			region = "North" // a larger region, so the groups differ
		}
		diag := Diagnoses[r.IntN(len(Diagnoses))]
		if age > 60 && r.IntN(3) == 0 {
			diag = "hypertension"
		}
		visits := r.IntN(6)
		if diag != "none" {
			visits += r.IntN(8)
		}
		income := math.Round(math.Exp(10.3+0.6*r.NormFloat64())*100) / 100
		if err := fn([]any{i + 1, age, sex, region, diag, visits, income}); err != nil {
			return err
		}
	}
	return nil
}
