//go:build cgo

package choose_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/ducktest"
	"github.com/dpsql/dpsql/internal/testopts"
)

// TestChoiceOnDuckDB: the threshold and top-k queries answer on DuckDB as
// on SQLite, and what DuckDB is sent does not depend on the private rows.
func TestChoiceOnDuckDB(t *testing.T) {
	t.Parallel()
	fs := [2]*fixture{newFixture(t, 7, 0), newFixture(t, 7, 5)}
	ref := reference(t, fs)
	var outs, sent [2][]string
	for n, f := range fs {
		dir := t.TempDir()
		state, duck := filepath.Join(dir, "state.dpsql"), filepath.Join(dir, "t.duckdb")
		if err := ducktest.Move(f.path, state, duck, ""); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var log []string
		e, err := dpsql.Open(state, dpsql.Options{DuckDB: duck, NoCache: true, Testing: &testopts.Options{Noise: testopts.ZeroNoise(), Knobs: &knobs.Knobs{FixedRandomness: true},
			DuckDBStatements: func(q string) { mu.Lock(); log = append(log, strings.TrimSpace(q)); mu.Unlock() }}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		outs[n], sent[n] = outcomes(t, e, func() []string { mu.Lock(); defer mu.Unlock(); out := log; log = nil; return out })
		compiledJoins(t, e, "DuckDB", "")
	}
	compareBackend(t, "DuckDB", ref, outs, sent)
}
