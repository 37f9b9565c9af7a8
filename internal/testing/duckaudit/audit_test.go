//go:build cgo

package duckaudit_test

import (
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/audit"
	"github.com/dpsql/dpsql/internal/testing/ducktest"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testopts"
	"github.com/dpsql/dpsql/mechanism"
)

var auditSeed = flag.Uint64("audit.seed", 1, "seed of the sensitivity auditor's runs on DuckDB")

// duckOpener returns an audit.Opener that moves the database at path
// into a DuckDB file beside it (ducktest.Move: its untyped columns as
// doubles, so that their numbers are summed in DuckDB) and opens the
// engine over it with the knobs k.
func duckOpener(k *knobs.Knobs) audit.Opener {
	return func(path string, noise mechanism.Noiser) (audit.Engine, error) {
		duck := path + ".duckdb"
		state := dpsql.DuckDBStateFile(duck)
		if err := ducktest.Move(path, state, duck, "double precision"); err != nil {
			return nil, err
		}
		return dpsql.Open(state, dpsql.Options{Epsilon: 1, DuckDB: duck, Testing: &testopts.Options{Noise: noise, Knobs: k}})
	}
}

// TestDuckDBMeasuresLikeTheReference is the differential test of the
// DuckDB printer: on the sensitivity auditor's generated databases
// (moved into DuckDB: extremes of int64 and float64, NULLs, text and
// blobs in numeric columns, units alone in their group) and its
// generated statements, every answer computed with the measurement
// compiled for DuckDB equals, exactly, the answer of the reference
// evaluator (the measurement aggregate, reading the same DuckDB rows
// through the mirror) — with zero noise, and contribution bounds large
// enough that bounding selects no row at random (the sampling is checked
// statistically by TestDuckDBBoundingSamplesUniformly). Errors must
// agree too. Thousands of scans must have run compiled.
func TestDuckDBMeasuresLikeTheReference(t *testing.T) {
	databases, perDatabase := 12, 120
	if testing.Short() {
		databases = 3
	}
	t.Parallel()
	k := &knobs.Knobs{FixedRandomness: true}
	r := rand.New(rand.NewPCG(7, 11))
	compared, compiled := 0, int64(0)
	for d := 0; d < databases; d++ {
		duck := ducktest.FromAudit(t, r)
		owner := enginetest.OpenDuckDB(t, duck, true, k)
		// Bounds no unit reaches: bounding keeps every row, in both.
		enginetest.Run(t, owner, `CREATE PRIVACY POLICY ON p OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1000, max_rows_contributed = 100000);
			CREATE PRIVACY POLICY ON p2 OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1000, max_rows_contributed = 100000)`)
		e := enginetest.OpenDuckDB(t, duck, false, k)
		enginetest.Run(t, e, "SET epsilon = 1")
		c, scans := audit.CompareCompiled(t, e, k, r, perDatabase, d)
		compared, compiled = compared+c, compiled+scans
		owner.Close()
		e.Close()
	}
	t.Logf("%d statements compared, %d scans compiled", compared, compiled)
	if n := k.CompiledFailed.Load(); n > 0 {
		t.Errorf("%d compiled statements failed in DuckDB", n)
	}
	if compared < databases {
		t.Errorf("only %d of %d statements ran compiled", compared, databases*perDatabase)
	}
}

// TestDuckDBPrivacyAuditor runs the sensitivity auditor's checks with
// every database in DuckDB: the auditor's own run (generated statements;
// most have expressions, which the reference evaluator measures), and
// plain statements whose measurement compiles (audit.PlainStatements), on the
// auditor's neighbouring databases with their small contribution bounds,
// so that the compiled bounding samples. Keys are fixed (the per-query
// key is the compiled bounding's only randomness, so neighbours are
// coupled); every plan's sensitivity claim must hold on the compiled
// measurements.
func TestDuckDBPrivacyAuditor(t *testing.T) {
	t.Parallel()
	hooks := &knobs.Knobs{FixedRandomness: true}
	auditOpener := duckOpener(hooks)
	// Two pairs (200 statements): the SQLite auditor runs 2,000 on the same
	// planner; this run checks what DuckDB measures. Rows-as-units joins
	// are left out: DuckDB's rowids shift after the removed row.
	cfg := audit.Config{Seed: *auditSeed + 100, Databases: 2, PerDatabase: 100, NearMiss: 0.15, UnstableRowIdentities: true}
	rep, err := audit.Run(auditOpener, t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep.ReportFindings(t, 20, "")
	audit.CheckCompiledOnNeighbours(t, auditOpener, hooks, rand.New(rand.NewPCG(*auditSeed, 31)), "DuckDB")
}
