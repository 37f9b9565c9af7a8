package audit_test

import (
	"flag"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/audit"
	"github.com/dpsql/dpsql/internal/testopts"
	"github.com/dpsql/dpsql/mechanism"
)

var (
	auditSeed      = flag.Uint64("audit.seed", 1, "seed of the sensitivity auditor's CI run")
	auditDatabases = flag.Int("audit.databases", 20, "database pairs of the sensitivity auditor's run (100 statements each)")
	auditSave      = flag.Bool("audit.save", false, "minimize the auditor's findings and save them under the module's testdata/audit")
)

// auditCases is where minimized findings are kept as regression cases:
// the module's testdata/audit, which the engine's TestAuditRegressionCases
// replays on every backend.
const auditCases = "../../../testdata/audit"

// opener opens SQLite engines with the auditor's recording noiser and
// the test's knobs k.
func opener(k *knobs.Knobs) audit.Opener {
	return func(path string, n mechanism.Noiser) (audit.Engine, error) {
		return dpsql.Open(path, dpsql.Options{Epsilon: 1, Testing: &testopts.Options{Noise: n, Knobs: k}})
	}
}

// keepFinding minimizes a finding and, with -audit.save, writes it under
// testdata/audit; it returns the case's text for the failure message.
func keepFinding(t *testing.T, open audit.Opener, f audit.Finding, name, fault string) string {
	t.Helper()
	m := audit.Minimize(open, t.TempDir(), f, 400)
	if *auditSave {
		if err := os.MkdirAll(auditCases, 0o755); err != nil {
			t.Fatal(err)
		}
		path, err := audit.SaveCase(auditCases, name, m, fault)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("saved %s", path)
	}
	return audit.FormatCase(m, fault)
}

// TestSensitivityAuditor runs the auditor on SQLite on a fixed seed:
// generated statements on generated neighbouring databases, every plan's
// claim checked. It must find nothing. (The engine's tests run it on
// PostgreSQL and DuckDB.)
func TestSensitivityAuditor(t *testing.T) {
	t.Parallel()
	open := opener(&knobs.Knobs{FixedRandomness: true})
	cfg := audit.Config{Seed: *auditSeed, Databases: *auditDatabases, PerDatabase: 100, NearMiss: 0.15}
	if testing.Short() {
		cfg.Databases = 4
	}
	rep, err := audit.Run(open, t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep.ReportFindings(t, 20, "")
	for i, f := range rep.Findings {
		if f.Privacy() {
			t.Errorf("the first privacy finding, minimized:\n%s", keepFinding(t, open, f, "finding-"+string(rune('a'+i%26)), ""))
			break
		}
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

// TestAuditorCatchesReintroducedBugs is the proof that the auditor can
// fail: with each bug switched back on, a run the size of the CI run
// reports it.
func TestAuditorCatchesReintroducedBugs(t *testing.T) {
	t.Parallel()
	for _, f := range audit.Faults {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			k := &knobs.Knobs{FixedRandomness: true}
			*f.Switch(k) = true
			open := opener(k)
			cfg := audit.Config{Seed: *auditSeed, Databases: *auditDatabases, PerDatabase: 100, NearMiss: 0.15, StopAtFirst: true}
			rep, err := audit.Run(open, t.TempDir(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			last := len(rep.Findings) - 1
			if last < 0 || !rep.Findings[last].Privacy() {
				t.Fatalf("not found in %d statements", rep.Statements)
			}
			t.Logf("found after %d statements: %s", rep.Statements, rep.Findings[last])
			if *auditSave {
				keepFinding(t, open, rep.Findings[last], "fault-"+slug(f.Name), f.Name)
			}
		})
	}
}

func slug(s string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// FuzzSensitivityAuditor is the auditor for long runs
// (go test -run XXX -fuzz FuzzSensitivityAuditor -fuzztime 1h ./internal/testing/audit):
// each input seeds one database pair and 20 statements.
func FuzzSensitivityAuditor(f *testing.F) {
	open := opener(&knobs.Knobs{FixedRandomness: true})
	for _, seed := range []uint64{1, 2, 3} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		dir, err := os.MkdirTemp("", "dpsql-audit") // the fuzz subtests' TempDir names contain '#'
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		rep, err := audit.Run(open, dir, audit.Config{Seed: seed, Databases: 1, PerDatabase: 20, NearMiss: 0.15})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Findings {
			t.Errorf("%s", f)
		}
	})
}
