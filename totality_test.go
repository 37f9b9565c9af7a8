package dpsql_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/parser"
)

// adversarial are the argument expressions of the totality property: the
// two columns of the adversarial table (whose rows hold INT64 min and max,
// ±huge reals, the smallest subnormal, empty and long strings, numeric
// text that overflows, blobs and NULL) and constants of the same kinds,
// including ±Inf and NaN produced by expressions.
var adversarial = []string{
	"v", "w",
	"(-9223372036854775807 - 1)", "9223372036854775807", "1e308", "-1e308",
	"EXP(1000)", "-EXP(1000)", "(EXP(1000) - EXP(1000))", "''", "NULL", "0", "-1", "'-9223372036854775808'",
}

const adversarialTable = `CREATE TABLE adv (uid INTEGER, v, w);
	INSERT INTO adv VALUES
	(1, NULL, 0), (1, 0, NULL), (2, -1, 9223372036854775807), (2, 9223372036854775807, -9223372036854775807 - 1),
	(3, -9223372036854775807 - 1, 1e308), (3, 1e308, -1e308), (4, -1e308, 4.9e-324), (4, 4.9e-324, ''),
	(5, '', 'abc'), (5, 'abc', '-9223372036854775808'), (6, '-9223372036854775808', '1e999'),
	(6, '1e999', x'00ff'), (7, x'00ff', x''), (7, x'', -9223372036854775807 - 1),
	(8, '` + "%s" + `', '%%'), (8, '%%', '` + "%s" + `');`

// TestEveryFunctionAndOperatorIsTotal is the property behind class 2: every
// whitelisted function and operator, on adversarial values, in WHERE, in
// aggregate arguments, in CASE branches and in per-unit subqueries
// (grouped by it, and inside SUM, AVG, MIN, MAX), never makes the backend
// raise at run time. Expressions are checked many per statement; a failing
// statement is then split to name the expression.
func TestEveryFunctionAndOperatorIsTotal(t *testing.T) {
	testEveryFunctionAndOperatorIsTotal(t, parallel(t))
}

func testEveryFunctionAndOperatorIsTotal(t *testing.T, h *harness) {
	long := strings.Repeat("x", 5000)
	path := h.hardDB(t, fmt.Sprintf(adversarialTable, long, long),
		`CREATE PRIVACY POLICY ON adv OPTIONS (privacy_unit_column = uid, max_rows_contributed = 10)`)
	e := h.open(t, path, dpsql.Options{Epsilon: 1})
	r := rand.New(rand.NewPCG(8, 9))
	pick := func() string { return adversarial[r.IntN(len(adversarial))] }
	var exprs []string
	funcs := parser.ScalarFunctions()
	var names []string
	for name := range funcs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		lim := funcs[name]
		hi := lim[1]
		if hi < 0 {
			hi = lim[0] + 1
		}
		for n := lim[0]; n <= hi; n++ {
			combos := 1
			for i := 0; i < n; i++ {
				combos *= len(adversarial)
			}
			if n == 0 {
				exprs = append(exprs, name+"()")
				continue
			}
			if n <= 1 {
				for _, a := range adversarial {
					exprs = append(exprs, name+"("+a+")")
				}
				continue
			}
			for k := 0; k < min(combos, 120); k++ {
				var args []string
				for i := 0; i < n; i++ {
					args = append(args, pick())
				}
				if name == "JSON_EXTRACT" || name == "JSON_VALUE" {
					// The path is a constant the planner checks; the
					// document is anything, including JSON nested past
					// SQLite's depth limit and a path through an array.
					paths := []string{"'$'", "'$.a'", "'$[0]'", "'$[999999999]'", "'$.result.value'"}
					args[1] = paths[k%len(paths)]
					if k%7 == 0 {
						args[0] = "'" + strings.Repeat("[", 3000) + strings.Repeat("]", 3000) + "'"
					} else if k%7 == 1 {
						args[0] = `'{"a": [1, {"b": 2}]}'`
					}
				}
				exprs = append(exprs, name+"("+strings.Join(args, ", ")+")")
			}
		}
	}
	for _, op := range []string{"+", "-", "*", "/", "%", "||", "=", "<>", "<", "<=", ">", ">=", "AND", "OR"} {
		for _, a := range adversarial {
			for _, b := range adversarial {
				exprs = append(exprs, "("+a+" "+op+" "+b+")")
			}
		}
	}
	for _, a := range adversarial {
		exprs = append(exprs, "(- "+a+")", "(NOT "+a+")", "("+a+" IS NULL)", "("+a+" LIKE '%a_')",
			"("+a+" IN ("+pick()+", "+pick()+"))", "("+a+" BETWEEN "+pick()+" AND "+pick()+")",
			"CASE "+a+" WHEN "+pick()+" THEN "+pick()+" ELSE "+pick()+" END")
		for _, typ := range []string{"INTEGER", "REAL", "TEXT", "NUMERIC", "INT64", "FLOAT64", "DOUBLE", "STRING", "VARCHAR"} {
			exprs = append(exprs, "CAST("+a+" AS "+typ+")")
		}
	}
	// Nesting: the growth operators on their own results.
	for i := 0; i < 50; i++ {
		x := pick()
		for d := 0; d < 4; d++ {
			switch r.IntN(3) {
			case 0:
				x = "REPLACE(" + x + ", " + pick() + ", " + x + ")"
			case 1:
				x = "(" + x + " || " + x + ")"
			default:
				x = "ABS(" + x + ")"
			}
		}
		exprs = append(exprs, x)
	}
	contexts := []func(batch []string) string{
		func(b []string) string { // WHERE
			return "SELECT COUNT(*) FROM adv WHERE " + sumIsNull(b) + " >= 0"
		},
		func(b []string) string { // aggregate arguments
			var parts []string
			for _, x := range b {
				parts = append(parts, "COUNT("+x+")", "SUM("+x+", contribution_bounds_per_group => (-5, 5))")
			}
			return "SELECT " + strings.Join(parts, ", ") + " FROM adv"
		},
		func(b []string) string { // CASE branches
			var parts []string
			for _, x := range b {
				parts = append(parts, "COUNT(CASE WHEN w IS NULL THEN "+x+" WHEN v IS NULL THEN 1 ELSE "+x+" END)")
			}
			return "SELECT " + strings.Join(parts, ", ") + " FROM adv"
		},
		func(b []string) string { // per-unit subquery: group key and aggregates
			var items []string
			for i, x := range b {
				items = append(items, fmt.Sprintf("SUM(%s) AS s%d, AVG(%s) AS a%d, MIN(%s) AS m%d, MAX(%s) AS x%d", x, i, x, i, x, i, x, i))
			}
			key := "CAST(" + b[0] + " AS TEXT)" // a bare integer would be a column position
			return "SELECT COUNT(*) FROM (SELECT uid, " + key + " AS k, " + strings.Join(items, ", ") + " FROM adv GROUP BY uid, " + key + ") s"
		},
	}
	const per = 25
	checked := 0
	for ci, ctxf := range contexts {
		for i := 0; i < len(exprs); i += per {
			batch := exprs[i:min(i+per, len(exprs))]
			if bad := firstFailing(e, ctxf, batch); bad != "" {
				t.Errorf("context %d: %s", ci, bad)
			}
			checked += len(batch)
		}
	}
	t.Logf("%d expressions × %d contexts ran without a run-time error", len(exprs), len(contexts))
}

func sumIsNull(b []string) string {
	var parts []string
	for _, x := range b {
		parts = append(parts, "(("+x+") IS NULL)")
	}
	return "(" + strings.Join(parts, " + ") + ")"
}

// firstFailing runs the batch's statement; on an error it bisects the
// batch and returns the smallest failing statement with its error.
func firstFailing(e *dpsql.Engine, mk func([]string) string, batch []string) string {
	q := mk(batch)
	_, err := e.Query(context.Background(), q)
	if err == nil {
		return ""
	}
	if len(batch) == 1 {
		return q + ": " + err.Error()
	}
	if s := firstFailing(e, mk, batch[:len(batch)/2]); s != "" {
		return s
	}
	if s := firstFailing(e, mk, batch[len(batch)/2:]); s != "" {
		return s
	}
	return q + ": " + err.Error()
}

// FuzzEngineOnAdversarialTable: every statement that plans and that the
// backend compiles also runs on the adversarial table without a run-time
// error (exec.ErrBackend would mean the outcome could depend on the data).
// go test runs the seeds; go test -fuzz FuzzEngineOnAdversarialTable
// explores further.
func FuzzEngineOnAdversarialTable(f *testing.F) {
	h := newHarness(nil, false) // on SQLite
	long := strings.Repeat("x", 5000)
	path := h.hardDB(f, fmt.Sprintf(adversarialTable, long, long),
		`CREATE PRIVACY POLICY ON adv OPTIONS (privacy_unit_column = uid, max_rows_contributed = 10)`)
	e, err := h.openEngine(path, dpsql.Options{Epsilon: 1}, dpsql.ZeroNoise())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	for _, s := range []string{
		`SELECT COUNT(*) FROM adv WHERE ABS(v) > 0`,
		`SELECT SUM(v * w, contribution_bounds_per_group => (-1, 1)), AVG(w) FROM adv WHERE v || w LIKE '%1%'`,
		`SELECT COUNT(*) FROM (SELECT uid, SUM(v) AS s, MAX(w) AS m FROM adv GROUP BY uid) t WHERE s / m > 1`,
		`SELECT VAR_POP(REPLACE(v, '', w)), STDDEV(LENGTH(v)) FROM adv`,
		`SELECT COUNT(*) FROM adv WHERE CASE WHEN v = 1 THEN ABS(-9223372036854775807 - 1) ELSE ROUND(w, 9223372036854775807) END IS NULL`,
		`SELECT COUNT(DISTINCT uid), SUM(POWER(v, w), contribution_bounds_per_group => (0, 1)) FROM adv`,
		`SELECT COUNT(*) FROM adv WHERE SUBSTR(v, -9223372036854775807 - 1, 9223372036854775807) = INSTR(w, v)`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if len(q) > 4000 {
			return
		}
		_, err := e.Query(context.Background(), q)
		if errors.Is(err, exec.ErrBackend) {
			t.Fatalf("%s: run-time error on the adversarial table", q)
		}
	})
}
