package dpsql_test

import (
	"sort"
	"sync/atomic"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/audit"
	"github.com/dpsql/dpsql/internal/testhooks"
	"github.com/dpsql/dpsql/mechanism"
)

// auditOpener opens engines with the auditor's recording noiser.
func auditOpener(path string, n mechanism.Noiser) (audit.Engine, error) {
	return dpsql.OpenWithNoise(path, dpsql.Options{Epsilon: 1}, n)
}

// TestSensitivityAuditor runs the auditor (internal/audit) on a fixed seed:
// generated statements on generated neighbouring databases, every plan's
// claim checked. It must find nothing.
func TestSensitivityAuditor(t *testing.T) {
	testhooks.FixedRandomness.Store(true)
	defer testhooks.FixedRandomness.Store(false)
	cfg := audit.Config{Seed: 1, Databases: 20, PerDatabase: 100, NearMiss: 0.15}
	if testing.Short() {
		cfg.Databases = 4
	}
	rep, err := audit.Run(auditOpener, t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range rep.Findings {
		if i == 20 {
			t.Errorf("... %d findings in all", len(rep.Findings))
			break
		}
		t.Errorf("%s", f)
	}
	var cs []string
	for c := range rep.Coverage {
		cs = append(cs, c)
	}
	sort.Strings(cs)
	t.Logf("%d statements (%d near-misses) on %d database pairs; %d constructs", rep.Statements, rep.NearMisses, rep.Databases, len(cs))
	for _, c := range cs {
		t.Logf("  %-50s %d", c, rep.Coverage[c])
	}
}

// faults are the bugs the privacy hardening fixed, one per class, each
// re-introduced behind a test-only switch.
var faults = []struct {
	name    string
	switch_ *atomic.Bool
}{
	{"unit taken by name", &testhooks.UnitByName},
	{"per-row sensitivity for a unit's rows", &testhooks.PerRowSensitivity},
	{"centring in doubles far from zero", &testhooks.FloatCentring},
	{"ABS left unwrapped (raises on -2^63)", &testhooks.BareAbs},
}

// TestAuditorCatchesReintroducedBugs is the proof that the auditor can
// fail: with each bug switched back on, a run the size of the CI run
// reports it.
func TestAuditorCatchesReintroducedBugs(t *testing.T) {
	testhooks.FixedRandomness.Store(true)
	defer testhooks.FixedRandomness.Store(false)
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			f.switch_.Store(true)
			defer f.switch_.Store(false)
			cfg := audit.Config{Seed: 1, Databases: 20, PerDatabase: 100, NearMiss: 0.15, StopAtFirst: true}
			rep, err := audit.Run(auditOpener, t.TempDir(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			last := len(rep.Findings) - 1
			if last < 0 || !rep.Findings[last].Privacy() {
				t.Fatalf("not found in %d statements", rep.Statements)
			}
			t.Logf("found after %d statements: %s", rep.Statements, rep.Findings[last])
		})
	}
}
