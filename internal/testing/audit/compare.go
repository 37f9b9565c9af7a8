package audit

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
)

// CompareCompiled runs n generated statements (Generate, drawn from r) on
// e, through the reference evaluator and then compiled (k.ReferenceOnly),
// and reports as an error of t each compiled outcome that differs from
// the reference's (database d names it in the message); it returns how
// many ran compiled, and their compiled scans. Left out are statements
// with their own contribution bounds, where bounding samples, and top-k
// choices over a join of rows as units by an inequality, where each row
// falls in many ranges and each evaluator keeps it in one by its own hash
// of the row (a threshold query keeps it in all, and is compared).
func CompareCompiled(t testing.TB, e *dpsql.Engine, k *knobs.Knobs, r *rand.Rand, n, d int) (compared int, scans int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		st := Generate(r, 0.15)
		if strings.Contains(st.SQL, "_contributed") {
			continue
		}
		if slices.Contains(st.Constructs, "choice FROM rows as units JOIN public by an inequality") && slices.Contains(st.Constructs, "top-k (ORDER BY aggregate DESC LIMIT k)") {
			continue
		}
		k.ReferenceOnly = true
		want := enginetest.Outcome(e, st.SQL, st.Args...)
		k.ReferenceOnly = false
		before := k.Compiled.Load()
		got := enginetest.Outcome(e, st.SQL, st.Args...)
		if k.Compiled.Load() == before {
			continue // not compiled: the same path twice
		}
		scans += k.Compiled.Load() - before
		compared++
		if got != want {
			t.Errorf("database %d, %s %v:\ncompiled:  %s\nreference: %s", d, st.SQL, st.Args, got, want)
		}
	}
	return compared, scans
}
