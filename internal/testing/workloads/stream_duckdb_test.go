//go:build cgo

package workloads_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/ducktest"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
)

// TestAnalystStreamOnDuckDB measures how much of the analyst stream
// (streamStatements) runs as one compiled DuckDB statement and checks
// every compiled answer against the reference's.
func TestAnalystStreamOnDuckDB(t *testing.T) {
	t.Parallel()
	duck := filepath.Join(t.TempDir(), "stream.duckdb")
	if err := ducktest.Exec(context.Background(), duck, streamTables("BIGINT", "INTEGER", "DOUBLE", "VARCHAR")...); err != nil {
		t.Fatal(err)
	}
	owner := enginetest.OpenDuckDB(t, duck, true, nil)
	enginetest.Run(t, owner, streamPolicy)
	owner.Close()
	k := &knobs.Knobs{FixedRandomness: true}
	e := enginetest.OpenDuckDB(t, duck, false, k)
	answered, compiled := streamCoverage(t, e, k, streamStatements(streamSize))
	if float64(compiled) < streamGoal*float64(answered) || compiled < streamAtLeast {
		t.Errorf("%d of %d answered statements compiled: below %.0f%% or %d", compiled, answered, 100*streamGoal, streamAtLeast)
	}
}
