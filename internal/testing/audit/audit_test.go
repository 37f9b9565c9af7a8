package audit

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dpsql/dpsql/parser"
)

// TestGeneratedStatementsParse: the generator writes only statements of
// the grammar (near-misses are refused by the planner, not the parser),
// and the same seed gives the same statements.
func TestGeneratedStatementsParse(t *testing.T) {
	gen := func() []Statement {
		r := rand.New(rand.NewPCG(5, 6))
		var out []Statement
		for i := 0; i < 20000; i++ {
			out = append(out, Generate(r, 0.15))
		}
		return out
	}
	a, b := gen(), gen()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the generator is not deterministic for a seed")
	}
	for _, st := range a {
		if _, err := parser.ParseStatement(st.SQL); err != nil {
			t.Errorf("%s: %v", st.SQL, err)
		}
		s, err := parser.ParseStatement(st.SQL)
		if err != nil {
			continue // reported above
		}
		if n := len(parser.Placeholders(s)); n != len(st.Args) {
			t.Errorf("%s: %d placeholders, %d arguments", st.SQL, n, len(st.Args))
		}
	}
}

// TestCaseRoundTrip: a regression case reads back as written.
func TestCaseRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	db := NewDatabase(r)
	st := Statement{SQL: "SELECT COUNT(*) FROM p WHERE v > ? AND h = ?", Args: []any{int64(-3), "a\nb", 2.5, nil, []byte("x"), true}}
	f := Finding{DB: db, Statement: st, Problems: []string{"a problem"}}
	c, err := ParseCase(FormatCase(f, "some fault"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Fault != "some fault" || !reflect.DeepEqual(c.DB, db) || !reflect.DeepEqual(c.Statement.Args, st.Args) || c.Statement.SQL != st.SQL {
		t.Errorf("round trip changed the case:\n%+v\n%+v", c, f)
	}
	if _, err := ParseCase("stray text\n-- statement\nSELECT 1"); err == nil {
		t.Error("text outside a section was accepted")
	}
}

// TestShrinkFindsTheSmallestFailingSubset: the minimizer's deletion loop
// keeps exactly the items a failure needs, when they are few.
func TestShrinkFindsTheSmallestFailingSubset(t *testing.T) {
	items := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	need := map[int]bool{3: true, 11: true}
	shrink(len(items), func(keep func(int) bool) bool {
		var kept []int
		for i, x := range items {
			if keep(i) {
				kept = append(kept, x)
			}
		}
		n := 0
		for _, x := range kept {
			if need[x] {
				n++
			}
		}
		if n == len(need) {
			items = kept
			return true
		}
		return false
	})
	if !reflect.DeepEqual(items, []int{3, 11}) {
		t.Errorf("kept %v, want [3 11]", items)
	}
}
