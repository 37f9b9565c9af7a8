package measuresql

import (
	"testing"

	"github.com/dpsql/dpsql/measure"
)

// BenchmarkCompile compiles plans of the golden file's kinds (go test
// -bench Compile ./measuresql): the work per query before the engine
// runs anything, which the printer of the statement's tree must keep
// small beside it.
func BenchmarkCompile(b *testing.B) {
	plans := map[string]measure.Plan{
		"bounded with row sampling": {Table: "t", Unit: col("u"), MaxGroups: 1, MaxRows: 3, Args: []measure.Col{col("x")},
			Keys: []measure.Key{{Column: col("g"), Domain: []any{"a", "b"}}}, Specs: measure.MustParse("n", "s0:0:100", "u")},
		"nested float arithmetic, depth 6": {Table: "t", Args: []measure.Col{measure.Col{}},
			Cases: map[int]*measure.Case{0: {Else: measure.Operand{Arith: nested(6, true)}}}, Specs: measure.MustParse("s0:0:100")},
	}
	for name, m := range plans {
		for _, d := range []Dialect{DuckDB{}, Postgres{}} {
			b.Run(name+"/"+dialectName(d), func(b *testing.B) {
				for b.Loop() {
					if _, ok := Compile(&m, types, d, 1); !ok {
						b.Fatal(WhyNot(&m, types, d))
					}
				}
			})
		}
	}
}

func dialectName(d Dialect) string {
	if _, ok := d.(Postgres); ok {
		return "postgres"
	}
	return "duckdb"
}
