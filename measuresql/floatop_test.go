package measuresql

import (
	"context"
	"database/sql"
	"math"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

// TestPostgresFloatOpIsIEEE evaluates Postgres.FloatOp's +, − and × in a
// real PostgreSQL over every pair of edge values (zeros of both signs,
// ±Inf, NaN, the largest and least doubles, the thresholds the forms
// test, products that overflow, underflow to 0 or land on the least
// subnormal) and compares each result, bit for bit, with Go's IEEE
// arithmetic (NaN with NaN): none may raise, and each must be exact but
// for the one documented gap (a product whose scaled value is exactly
// 2^125, returned as 0).
func TestPostgresFloatOpIsIEEE(t *testing.T) {
	t.Parallel()
	srv := pgtest.StartT(t)
	db, err := sql.Open("pgx", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	edges := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 3, -2.5, 1e308, -1e308, math.MaxFloat64, -math.MaxFloat64,
		0x1p1022, 0x1p1023, -0x1p1023, 0x1p500, 0x1p-500, 0x1p600, 0x1p-600, 0x1p-1074, -0x1p-1074, 0x1p-1022, 1e-308,
		0x1p-537, 0x1p-538, 0x1.0000000000001p-538, 0x1.8p-538, 1e-300, -1e-300, 1e300, 0x1.fffffffffffffp511,
		math.Inf(1), math.Inf(-1), math.NaN(),
		// The plain product's range [1e-150, 1e150] and its neighbours.
		1e150, -1e150, math.Nextafter(1e150, math.Inf(1)), 1e-150, math.Nextafter(1e-150, 0), -math.Nextafter(1e-150, 0), 1e158, 1e-158}
	p := Postgres{}
	ops := map[byte]func(x, y float64) float64{
		'+': func(x, y float64) float64 { return x + y },
		'-': func(x, y float64) float64 { return x - y },
		'*': func(x, y float64) float64 { return x * y },
	}
	checked := 0
	for op, goOp := range ops {
		e, ok := p.FloatOp(raw("$1::float8"), op, raw("$2::float8"))
		if !ok {
			t.Fatalf("%c: not compiled", op)
		}
		stmt, err := db.Prepare("SELECT " + printed(p, e))
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range edges {
			for _, y := range edges {
				var got sql.NullFloat64
				if err := stmt.QueryRowContext(context.Background(), x, y).Scan(&got); err != nil {
					t.Errorf("%g %c %g raised: %v", x, op, y, err)
					continue
				}
				want := goOp(x, y)
				same := got.Valid && (math.Float64bits(got.Float64) == math.Float64bits(want) || math.IsNaN(want) && math.IsNaN(got.Float64))
				if !same {
					t.Errorf("%g %c %g = %v in PostgreSQL, %g in IEEE", x, op, y, got, want)
				}
				checked++
			}
		}
		stmt.Close()
	}
	if checked != 3*len(edges)*len(edges) {
		t.Errorf("%d pairs checked", checked)
	}
	// One operand a constant in the statement, as the compiler prints
	// the analyst's literals: PostgreSQL folds constant products while
	// planning, inside every CASE branch it keeps, so a branch whose
	// scaled copy of the constant would overflow or underflow must be
	// dropped by a condition that folds to FALSE (it raised "value out of
	// range" before any row was read).
	for op, goOp := range ops {
		for _, c := range edges {
			for _, constLeft := range []bool{false, true} {
				x, y := expr(raw("$1::float8")), p.Float(c)
				if constLeft {
					x, y = y, x
				}
				e, _ := p.FloatOp(x, op, y)
				expr := printed(p, e)
				for _, v := range edges {
					var got sql.NullFloat64
					if err := db.QueryRowContext(context.Background(), "SELECT "+expr, v).Scan(&got); err != nil {
						t.Errorf("%s raised for $1 = %g: %v", expr, v, err)
						continue
					}
					want := goOp(v, c)
					if constLeft {
						want = goOp(c, v)
					}
					if !(got.Valid && (math.Float64bits(got.Float64) == math.Float64bits(want) || math.IsNaN(want) && math.IsNaN(got.Float64))) {
						t.Errorf("%s with $1 = %g: %v in PostgreSQL, %g in IEEE", expr, v, got, want)
					}
				}
			}
		}
	}
}

// TestPostgresBoundOperandsAreIEEE evaluates the bound forms (FloatOp of
// an operand that is itself a guarded form, and Let) in a real
// PostgreSQL over pairs of edge values: (x × y) op y, x op (x × y) and
// ABS's test of -2^63 through Let, compared bit for bit with Go's IEEE
// arithmetic. None may raise.
func TestPostgresBoundOperandsAreIEEE(t *testing.T) {
	t.Parallel()
	srv := pgtest.StartT(t)
	db, err := sql.Open("pgx", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	edges := []float64{0, math.Copysign(0, -1), 1, -1.5, 1e308, -1e308, 0x1p600, 0x1p-600, 0x1p-1074, -0x1p63, math.Inf(1), math.NaN()}
	p := Postgres{}
	prod, _ := p.FloatOp(raw("$1::float8"), '*', raw("$2::float8"))
	abs := p.Let(prod, func(v expr) expr {
		return ifThen(bare(v, "=", p.Float(-0x1p63)), raw("NULL"), call{fn: "pg_catalog.abs", args: []expr{v}})
	})
	forms := map[string]func(x, y float64) float64{}
	exprs := map[string]expr{}
	for _, op := range []byte{'+', '-', '*'} {
		goOp := map[byte]func(x, y float64) float64{'+': func(x, y float64) float64 { return x + y },
			'-': func(x, y float64) float64 { return x - y }, '*': func(x, y float64) float64 { return x * y }}[op]
		left, _ := p.FloatOp(prod, op, raw("$2::float8"))
		right, _ := p.FloatOp(raw("$1::float8"), op, prod)
		exprs["(x*y)"+string(op)+"y"], forms["(x*y)"+string(op)+"y"] = left, func(x, y float64) float64 { return goOp(x*y, y) }
		exprs["x"+string(op)+"(x*y)"], forms["x"+string(op)+"(x*y)"] = right, func(x, y float64) float64 { return goOp(x, x*y) }
	}
	exprs["abs(x*y)"], forms["abs(x*y)"] = abs, func(x, y float64) float64 {
		if x*y == -0x1p63 {
			return math.NaN() // NULL
		}
		return math.Abs(x * y)
	}
	for name, e := range exprs {
		stmt, err := db.Prepare("SELECT " + printed(p, e))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, x := range edges {
			for _, y := range edges {
				var got sql.NullFloat64
				if err := stmt.QueryRowContext(context.Background(), x, y).Scan(&got); err != nil {
					t.Errorf("%s at %g, %g raised: %v", name, x, y, err)
					continue
				}
				want := forms[name](x, y)
				if !got.Valid {
					got.Float64 = math.NaN()
				}
				if math.Float64bits(got.Float64) != math.Float64bits(want) && !(math.IsNaN(want) && math.IsNaN(got.Float64)) {
					t.Errorf("%s at %g, %g = %v in PostgreSQL, %g in IEEE", name, x, y, got, want)
				}
			}
		}
		stmt.Close()
	}
}
