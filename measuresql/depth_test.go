package measuresql

import (
	"testing"

	"github.com/dpsql/dpsql/measure"
)

// nested is the analyst's (((y * y + i) * y + i) ...) at depth d, or with
// abs ABS(ABS(y * y + i) * y + i)...: each level one operator deeper.
func nested(d int, abs bool) *measure.Arith {
	e := &measure.Arith{Column: col("y")}
	for i := 0; i < d; i++ {
		e = &measure.Arith{Op: '+', X: &measure.Arith{Op: '*', X: e, Y: &measure.Arith{Column: col("y")}}, Y: &measure.Arith{Column: col("i")}}
		if abs {
			e = &measure.Arith{Op: 'a', X: e}
		}
	}
	return e
}

// TestStatementsGrowLinearly compiles nested float arithmetic (and ABS
// around each level) at depths 1–12 for every dialect and checks that
// each level adds the same number of bytes: the printed statement is
// linear in the expression (the fourth privacy review's PostgreSQL
// statement grew ~100× per level, to 117 MB at depth 3).
func TestStatementsGrowLinearly(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{DuckDB{}, Postgres{}} {
		for _, abs := range []bool{false, true} {
			var sizes []int
			for depth := 1; depth <= 12; depth++ {
				m := measure.Plan{Table: "t", Unit: col("u"), MaxGroups: 1, MaxRows: 2, Args: []measure.Col{measure.Col{}},
					Cases: map[int]*measure.Case{0: {Else: measure.Operand{Arith: nested(depth, abs)}}}, Specs: measure.MustParse("s0:0:100", "c0")}
				st, ok := Compile(&m, types, d, 1)
				if !ok {
					t.Fatalf("%T depth %d: not compiled: %s", d, depth, WhyNot(&m, types, d))
				}
				sizes = append(sizes, len(st.SQL))
			}
			step := sizes[2] - sizes[1]
			for i := 2; i < len(sizes); i++ {
				if inc := sizes[i] - sizes[i-1]; inc != step {
					t.Errorf("%T (abs %v): depth %d adds %d bytes, depth 3 added %d: not linear (%v)", d, abs, i+1, inc, step, sizes)
					break
				}
			}
			t.Logf("%T abs=%v: %v", d, abs, sizes)
		}
	}
}

// nestedCase is CASE WHEN i > 0 THEN (CASE WHEN ... THEN c ...) ELSE 1
// END at depth d, c the column c: each level a CASE whose value is the
// next.
func nestedCase(d int, c string) *measure.Arith {
	e := &measure.Arith{Column: col(c)}
	for range d {
		e = &measure.Arith{Op: 'K', Case: &measure.Case{Whens: []measure.When{{Cond: measure.Compare{Column: col("i"), Op: ">", Value: int64(0)}, Then: measure.Operand{Arith: e}}},
			Else: measure.Operand{Value: int64(1)}}}
	}
	return e
}

// TestNestedCasesAreLinear compiles CASEs nested in their values, of an
// integer and of a double column, in every dialect: each level adds the
// same bytes, and 300 levels (near the parser's limit) compile — each
// CASE's class and each node's text are found once (the compiler keeps
// them), where reading a node again for its class and for its text took
// time exponential in the depth.
func TestNestedCasesAreLinear(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{DuckDB{}, Postgres{}} {
		for _, c := range []string{"i", "y"} {
			plan := func(depth int) *measure.Plan {
				return &measure.Plan{Table: "t", Args: []measure.Col{{}}, Cases: map[int]*measure.Case{0: {Else: measure.Operand{Arith: nestedCase(depth, c)}}},
					Specs: measure.MustParse("s0:0:100")}
			}
			var sizes []int
			for _, depth := range []int{1, 2, 3, 300} {
				st, ok := Compile(plan(depth), types, d, 1)
				if !ok {
					t.Fatalf("%T %s depth %d: not compiled: %s", d, c, depth, WhyNot(plan(depth), types, d))
				}
				sizes = append(sizes, len(st.SQL))
			}
			step := sizes[2] - sizes[1]
			if sizes[1]-sizes[0] != step || sizes[3]-sizes[2] != 297*step {
				t.Errorf("%T %s: sizes at depths 1, 2, 3, 300: %v, not linear", d, c, sizes)
			}
		}
	}
}
