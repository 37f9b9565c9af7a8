// Package enginetest holds the small helpers the engine's test packages
// share: running a statement or a script on an engine and failing the
// test on an error, printing an outcome. (A released number reads as a
// float64 with adultdata.Num.)
package enginetest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testopts"
)

// Query runs q (with args) on e and returns its result, failing the test
// on an error.
func Query(t testing.TB, e *dpsql.Engine, q string, args ...any) *dpsql.Result {
	t.Helper()
	r, err := e.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return r
}

// Run runs a script of statements on e, failing the test on an error.
func Run(t testing.TB, e *dpsql.Engine, script string) {
	t.Helper()
	if err := e.Run(context.Background(), script, func(*dpsql.Result) error { return nil }); err != nil {
		t.Fatalf("%s: %v", script, err)
	}
}

// Outcome runs q (with args) and prints what came of it: the columns and
// rows, or the error.
func Outcome(e *dpsql.Engine, q string, args ...any) string {
	r, err := e.Query(context.Background(), q, args...)
	if err != nil {
		return "error: " + err.Error()
	}
	out := fmt.Sprint(r.Columns, r.Rows)
	if d := r.Dropped; d != nil {
		// What bounding dropped: exact under zero noise, the same on
		// every evaluator.
		out += fmt.Sprintf(" dropped: %g units, %g affected, share %g", d.Units, d.Affected, d.Share)
	}
	return out
}

// LogByCount logs counts by their keys, largest first (ties by key):
// the reasons scans were not compiled, in the coverage tests.
func LogByCount(t testing.TB, counts map[string]int64) {
	t.Helper()
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return counts[keys[i]] > counts[keys[j]] || counts[keys[i]] == counts[keys[j]] && keys[i] < keys[j]
	})
	for _, k := range keys {
		t.Logf("%6d  %s", counts[k], k)
	}
}

// OpenDuckDB opens an engine over the DuckDB file duck (its state file
// beside it), as the owner or an analyst, with zero noise and the test
// knobs k (nil: none); the test closes it.
func OpenDuckDB(t testing.TB, duck string, owner bool, k *knobs.Knobs) *dpsql.Engine {
	t.Helper()
	e, err := dpsql.Open("", dpsql.Options{Owner: owner, DuckDB: duck, Testing: &testopts.Options{Noise: testopts.ZeroNoise(), Knobs: k}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// RowSet prints rows in a canonical order (row order without ORDER BY
// follows each backend's scan).
func RowSet(rows [][]any) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%#v", r)
	}
	sort.Strings(out)
	return out
}

// RecordPostgres records the statements an engine sends to PostgreSQL:
// pass observe as the engine's testopts.Options.PostgresStatements (each
// engine its own, so recording tests may run in parallel); take returns
// those recorded since its last call.
func RecordPostgres() (observe func(string), take func() []string) {
	var mu sync.Mutex
	var sent []string
	observe = func(q string) {
		mu.Lock()
		sent = append(sent, q)
		mu.Unlock()
	}
	return observe, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := sent
		sent = nil
		return out
	}
}
