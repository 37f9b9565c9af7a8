package measuresql

import (
	"flag"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/rewrite"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

var types = map[string]Type{"u": Integer, "x": Integer, "y": Real, "g": Text, "n": Integer, "b": Other}

// compileCases are measurement plans and what the DuckDB printer must do
// with them: print (golden file testdata/duckdb.txt) or decline.
var compileCases = []struct {
	name string
	m    rewrite.Measurement
}{
	{"count and clipped sum of an integer", rewrite.Measurement{Table: "t", Args: []string{"x"}, Specs: []string{"n", "s0:0:1000", "c0"}}},
	{"float sum on the fixed-point grid", rewrite.Measurement{Table: "t", Args: []string{"y"}, Specs: []string{"s0:-0.5:100", "c0"}}},
	{"domain key and a filter", rewrite.Measurement{Table: "t", Args: []string{"x"}, Keys: []rewrite.MeasureKey{{Column: "g", Domain: []any{"a", "b"}}},
		Where: rewrite.Or{Parts: []rewrite.Filter{rewrite.Compare{Column: "y", Op: ">", Value: 2.5}, rewrite.Not{X: rewrite.In{Column: "x", Values: []any{int64(1), int64(2)}}}, rewrite.IsNull{Column: "y"}}},
		Specs: []string{"n", "q0:0:10"}}},
	{"histogram of a bound search", rewrite.Measurement{Table: "t", Args: []string{"y"}, Keys: []rewrite.MeasureKey{{Column: "n", Domain: []any{int64(1), int64(2)}}}, Specs: []string{"h0", "c0"}}},
	{"bounding with row sampling", rewrite.Measurement{Table: "t", Unit: "u", MaxGroups: 1, MaxRows: 3, Args: []string{"x"},
		Keys: []rewrite.MeasureKey{{Column: "g", Domain: []any{"a", "b"}}}, Specs: []string{"n", "s0:0:100", "u"}}},
	{"per-unit clamp", rewrite.Measurement{Table: "t", Unit: "u", MaxGroups: 1, MaxRows: 5, Args: []string{"x"},
		Keys: []rewrite.MeasureKey{{Column: "g", Domain: []any{"a"}}}, Specs: []string{"S0:-5:5", "R:0:2", "C0"}}},
	{"partition selection's raw key", rewrite.Measurement{Table: "t", Unit: "u", MaxGroups: 1, MaxRows: 1, Keys: []rewrite.MeasureKey{{Column: "g"}}, Specs: []string{"u", "n"}}},
	{"declines: a column of another type", rewrite.Measurement{Table: "t", Args: []string{"b"}, Specs: []string{"s0:0:1"}}},
	{"declines: a float unit", rewrite.Measurement{Table: "t", Unit: "y", MaxGroups: 1, MaxRows: 1, Specs: []string{"n"}}},
	{"declines: a text literal compared with a number", rewrite.Measurement{Table: "t", Where: rewrite.Compare{Column: "x", Op: "=", Value: "1"}, Specs: []string{"n"}}},
	{"declines: bounds off the grid", rewrite.Measurement{Table: "t", Args: []string{"y"}, Specs: []string{"s0:0:" + fmt.Sprint(math.Ldexp(1, -1070))}}},
	{"declines: histogram under bounding", rewrite.Measurement{Table: "t", Unit: "u", MaxGroups: 1, MaxRows: 1, Args: []string{"y"}, Specs: []string{"h0"}}},
}

// TestDuckDBPrinter prints each plan (golden file, -update to rewrite).
func TestDuckDBPrinter(t *testing.T) {
	var sb strings.Builder
	for _, c := range compileCases {
		st, ok := Compile(&c.m, types, DuckDB{}, 42)
		fmt.Fprintf(&sb, "# %s\n", c.name)
		if !ok {
			sb.WriteString("declined\n\n")
			if !strings.HasPrefix(c.name, "declines") {
				t.Errorf("%s: declined", c.name)
			}
			continue
		}
		if strings.HasPrefix(c.name, "declines") {
			t.Errorf("%s: compiled", c.name)
		}
		fmt.Fprintf(&sb, "%s\n\n", st.SQL)
	}
	golden := filepath.Join("testdata", "duckdb.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != sb.String() {
		t.Errorf("printed SQL differs from %s (go test -update to accept):\n%s", golden, sb.String())
	}
}

// TestFixedPoint: the largest F with |bound|·2^F ≤ 2^62, bounds on the grid.
func TestFixedPoint(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		f      int
		ok     bool
	}{
		{0, 1000, 52, true}, {-0.5, 100, 55, true}, {0, 1, 61, true}, {0, 0, 0, true},
		{0, 1e300, 62 - 997, true}, {0, 0.1, 65, true}, {0, math.Ldexp(1, -1070), 0, false},
	} {
		f, ok := FixedPoint(c.lo, c.hi)
		if f != c.f || ok != c.ok {
			t.Errorf("FixedPoint(%v, %v) = %d, %v; want %d, %v", c.lo, c.hi, f, ok, c.f, c.ok)
		}
		if ok {
			m := math.Max(math.Abs(c.lo), math.Abs(c.hi))
			if math.Ldexp(m, f) > math.Ldexp(1, 62) {
				t.Errorf("FixedPoint(%v, %v): a term reaches %v", c.lo, c.hi, math.Ldexp(m, f))
			}
		}
	}
}

// TestDecode reads rows as the driver gives them: domain keys mapped to
// positions (groups outside the domain dropped), sums added across
// detail rows and scaled, q from its three columns.
func TestDecode(t *testing.T) {
	m := rewrite.Measurement{Table: "t", Args: []string{"y", "x"}, Keys: []rewrite.MeasureKey{{Column: "g", Domain: []any{"a", "b"}}},
		Specs: []string{"h0", "s0:0:1", "q1:0:4"}}
	st, ok := Compile(&m, types, DuckDB{}, 1)
	if !ok {
		t.Fatal("declined")
	}
	// keys, detail y, weight, then s (1 column), q (3 columns).
	half := new(big.Int).Lsh(big.NewInt(1), 60).String() // 0.5 at F = 61
	rows := [][]any{
		{"b", 0.5, int64(2), half, "3", "5", "2"},
		{"b", nil, int64(1), nil, "1", "1", "1"},
		{"z", 0.5, int64(1), half, "1", "1", "1"}, // outside the domain
		{nil, 0.5, int64(1), half, "1", "1", "1"}, // NULL key
	}
	groups, err := st.Decode(rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups[0].Keys[0] != int64(1) {
		t.Fatalf("groups %+v", groups)
	}
	g := groups[0]
	if v, _ := g.Values[1].Float64(); v != 0.5 {
		t.Errorf("s = %v; want 0.5", v)
	}
	// Σc = 4, Σc² = 6, n = 3, m = 2: Σ (c − 2)² = 6 − 16 + 12 = 2.
	if v, _ := g.Values[2].Float64(); v != 2 {
		t.Errorf("q = %v; want 2", v)
	}
	if len(g.Details) != 2 || g.Weights[0] != 2 {
		t.Errorf("details %v weights %v", g.Details, g.Weights)
	}
}
