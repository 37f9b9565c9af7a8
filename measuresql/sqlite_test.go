package measuresql

import (
	"database/sql"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// TestSQLiteFloatsAreExact checks SQLite.Float over 20,000 doubles of
// random bit patterns (every exponent, subnormals among them) and the
// edges: SQLite reads each literal back as the same double, as a REAL
// (never an integer, whose arithmetic would truncate a division).
func TestSQLiteFloatsAreExact(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := rand.New(rand.NewPCG(3, 5))
	fs := []float64{0, 1, -1, 2, 0.1, -2.5, 1e300, -1e-300, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64,
		0x1p62, -0x1p63, 0x1p-1074, 9007199254740993, math.Inf(1), math.Inf(-1)}
	for len(fs) < 20000 {
		f := math.Float64frombits(r.Uint64())
		if !math.IsNaN(f) {
			fs = append(fs, f)
		}
	}
	var lits []string
	for _, f := range fs {
		lits = append(lits, printed(SQLite{}, SQLite{}.Float(f)))
	}
	for i := 0; i < len(fs); i += 500 {
		end := min(i+500, len(fs))
		var cols []string
		for _, l := range lits[i:end] {
			cols = append(cols, l, "typeof("+l+")")
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for j := range vals {
			ptrs[j] = &vals[j]
		}
		if err := db.QueryRow("SELECT " + strings.Join(cols, ", ")).Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for j, f := range fs[i:end] {
			got, ok := vals[2*j].(float64)
			if typ := vals[2*j+1]; !ok || typ != "real" || got != f {
				t.Errorf("%s (%v) reads back as %v (%v)", lits[i+j], f, vals[2*j], typ)
			}
		}
	}
}
