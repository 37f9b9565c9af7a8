package audit_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/audit"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testing/stricttest"
	"github.com/dpsql/dpsql/internal/testopts"
	"github.com/dpsql/dpsql/mechanism"
)

// strictOpener returns an audit.Opener that copies the database at path
// into one of STRICT tables beside it (stricttest.Copy: untyped columns
// as REAL) and opens the engine over the copy with the knobs k, which
// turn on the compiled SQLite measurement.
func strictOpener(k *knobs.Knobs) audit.Opener {
	return func(path string, noise mechanism.Noiser) (audit.Engine, error) {
		strict := path + ".strict.db"
		if err := stricttest.Copy(path, strict); err != nil {
			return nil, err
		}
		return dpsql.Open(strict, dpsql.Options{Epsilon: 1, Testing: &testopts.Options{Noise: noise, Knobs: k}})
	}
}

// The compiled SQLite measurement (backend/sqlite, on for tests by
// knobs.CompileSQLite) on the auditor's databases, copied STRICT.

// TestSQLiteMeasuresLikeTheReference is the differential test of the
// SQLite printer: on the sensitivity auditor's generated databases
// (copied STRICT: extremes of int64 and float64, NULLs, units alone in
// their group) and its generated statements, every answer computed with
// the measurement compiled for SQLite equals, exactly, the reference
// evaluator's over the same rows — with zero noise, and contribution
// bounds large enough that bounding selects no row at random. Errors
// must agree too, and hundreds of scans must have run compiled.
func TestSQLiteMeasuresLikeTheReference(t *testing.T) {
	databases, perDatabase := 10, 120
	if testing.Short() {
		databases = 3
	}
	t.Parallel()
	k := &knobs.Knobs{FixedRandomness: true, CompileSQLite: true}
	r := rand.New(rand.NewPCG(7, 11))
	compared, compiled := 0, int64(0)
	for d := 0; d < databases; d++ {
		dir := t.TempDir()
		built, _, err := audit.NewDatabase(r).Build(dir)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "strict.db")
		if err := stricttest.Copy(built, path); err != nil {
			t.Fatal(err)
		}
		owner, err := dpsql.Open(path, dpsql.Options{Owner: true})
		if err != nil {
			t.Fatal(err)
		}
		// Bounds no unit reaches: bounding keeps every row, in both.
		enginetest.Run(t, owner, `DROP PRIVACY POLICY ON p; DROP PRIVACY POLICY ON p2;
			CREATE PRIVACY POLICY ON p OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1000, max_rows_contributed = 100000);
			CREATE PRIVACY POLICY ON p2 OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1000, max_rows_contributed = 100000)`)
		owner.Close()
		e, err := dpsql.Open(path, dpsql.Options{Testing: &testopts.Options{Noise: testopts.ZeroNoise(), Knobs: k}})
		if err != nil {
			t.Fatal(err)
		}
		enginetest.Run(t, e, "SET epsilon = 1")
		c, scans := audit.CompareCompiled(t, e, k, r, perDatabase, d)
		compared, compiled = compared+c, compiled+scans
		e.Close()
	}
	t.Logf("%d statements compared, %d scans compiled", compared, compiled)
	if n := k.CompiledFailed.Load(); n > 0 {
		t.Errorf("%d compiled statements failed in SQLite", n)
	}
	if compared < 5*databases {
		t.Errorf("only %d of %d statements ran compiled", compared, databases*perDatabase)
	}
}

// TestSQLitePrivacyAuditor runs the sensitivity auditor's checks with
// every database copied STRICT and measured by the compiled SQLite
// statement: the auditor's own run (generated statements; those with
// expressions the printer declines run in the reference evaluator), and
// plain statements whose measurement compiles (audit.PlainStatements),
// on the auditor's neighbouring databases with their small contribution
// bounds, so that the compiled bounding samples (SQLite's row_number over
// the keyed hash). Keys are fixed (the per-query key is the compiled
// bounding's only randomness, so neighbours are coupled); every plan's
// sensitivity claim must hold on the compiled measurements.
func TestSQLitePrivacyAuditor(t *testing.T) {
	t.Parallel()
	hooks := &knobs.Knobs{FixedRandomness: true, CompileSQLite: true}
	opener := strictOpener(hooks)
	cfg := audit.Config{Seed: *auditSeed + 200, Databases: 2, PerDatabase: 100, NearMiss: 0.15}
	rep, err := audit.Run(opener, t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep.ReportFindings(t, 20, "")
	audit.CheckCompiledOnNeighbours(t, opener, hooks, rand.New(rand.NewPCG(*auditSeed, 37)), "SQLite")
}
