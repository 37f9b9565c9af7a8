package workloads_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
	"github.com/dpsql/dpsql/internal/testopts"
)

// streamSize is the analyst stream's length; streamGoal the share of
// its answered statements that must compile on DuckDB and PostgreSQL
// (the 60%), and streamAtLeast how many did when last raised
// (docs/benchmarks.md): the stream is drawn from a fixed seed, so the
// count is the same each run and must not fall.
const (
	streamSize    = 400
	streamGoal    = 0.6
	streamAtLeast = 336
)

// TestAnalystStreamOnPostgres measures how much of the analyst stream
// runs as one compiled PostgreSQL statement and checks every compiled
// answer against the reference's over the same rows.
func TestAnalystStreamOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := pgtest.StartT(t)
	conn, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range streamTables("int8", "int4", "float8", "text") {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%.200s: %v", s, err)
		}
	}
	conn.Close(ctx)
	k := &knobs.Knobs{FixedRandomness: true}
	e, err := dpsql.Open(filepath.Join(t.TempDir(), "stream.dpsql"), dpsql.Options{Owner: true, NoCache: true, Postgres: srv.DSN(),
		Testing: &testopts.Options{Noise: testopts.ZeroNoise(), Knobs: k}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	enginetest.Run(t, e, streamPolicy)
	answered, compiled := streamCoverage(t, e, k, streamStatements(streamSize))
	if float64(compiled) < streamGoal*float64(answered) || compiled < streamAtLeast {
		t.Errorf("%d of %d answered statements compiled: below %.0f%% or %d", compiled, answered, 100*streamGoal, streamAtLeast)
	}
}
