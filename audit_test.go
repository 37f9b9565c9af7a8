package dpsql_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/audit"
	"github.com/dpsql/dpsql/mechanism"
)

var (
	auditSeed      = flag.Uint64("audit.seed", 1, "seed of the sensitivity auditor's CI run")
	auditDatabases = flag.Int("audit.databases", 20, "database pairs of the sensitivity auditor's run (100 statements each)")
)

var auditSave = flag.Bool("audit.save", false, "minimize the auditor's findings and save them under testdata/audit")

// auditCases is where minimized findings are kept as regression cases.
const auditCases = "testdata/audit"

// keepFinding minimizes a finding and, with -audit.save, writes it under
// testdata/audit; it returns the case's text for the failure message.
func keepFinding(t *testing.T, f audit.Finding, name, fault string) string {
	t.Helper()
	m := audit.Minimize(auditOpener, t.TempDir(), f, 400)
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

// auditOpener opens engines with the auditor's recording noiser.
func auditOpener(path string, n mechanism.Noiser) (audit.Engine, error) {
	return openEngine(path, dpsql.Options{Epsilon: 1}, n)
}

// TestSensitivityAuditor runs the auditor (internal/testing/audit) on a fixed seed:
// generated statements on generated neighbouring databases, every plan's
// claim checked. It must find nothing.
func TestSensitivityAuditor(t *testing.T) {
	parallel(t)
	k := hooksFor(t) // the knobs of this test's engines alone
	k.FixedRandomness = true
	defer func() { k.FixedRandomness = false }()
	cfg := audit.Config{Seed: *auditSeed, Databases: *auditDatabases, PerDatabase: 100, NearMiss: 0.15}
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
	for i, f := range rep.Findings {
		if f.Privacy() {
			t.Errorf("the first privacy finding, minimized:\n%s", keepFinding(t, f, "finding-"+string(rune('a'+i%26)), ""))
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

// faults are the bugs the privacy hardening fixed, one per class, each
// re-introduced behind a test-only switch.
var faults = []struct {
	name    string
	switch_ func(*knobs.Knobs) *bool // the switch among an engine's knobs
}{
	{"unit taken by name", func(k *knobs.Knobs) *bool { return &k.UnitByName }},
	{"per-row sensitivity for a unit's rows", func(k *knobs.Knobs) *bool { return &k.PerRowSensitivity }},
	{"centring in doubles far from zero", func(k *knobs.Knobs) *bool { return &k.FloatCentring }},
	{"ABS left unwrapped (raises on -2^63)", func(k *knobs.Knobs) *bool { return &k.BareAbs }},
}

// TestAuditorCatchesReintroducedBugs is the proof that the auditor can
// fail: with each bug switched back on, a run the size of the CI run
// reports it.
func TestAuditorCatchesReintroducedBugs(t *testing.T) {
	parallel(t)
	k := hooksFor(t) // the knobs of this test's engines alone
	k.FixedRandomness = true
	defer func() { k.FixedRandomness = false }()
	root := t.TempDir() // the runs' databases: under this test's directory, so its knobs apply
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			*f.switch_(k) = true
			defer func() { *f.switch_(k) = false }()
			cfg := audit.Config{Seed: *auditSeed, Databases: *auditDatabases, PerDatabase: 100, NearMiss: 0.15, StopAtFirst: true}
			dir, err := os.MkdirTemp(root, "run")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := audit.Run(auditOpener, dir, cfg)
			if err != nil {
				t.Fatal(err)
			}
			last := len(rep.Findings) - 1
			if last < 0 || !rep.Findings[last].Privacy() {
				t.Fatalf("not found in %d statements", rep.Statements)
			}
			t.Logf("found after %d statements: %s", rep.Statements, rep.Findings[last])
			if *auditSave {
				keepFinding(t, rep.Findings[last], "fault-"+slug(f.name), f.name)
			}
		})
	}
}

func slug(s string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// TestAuditRegressionCases replays the minimized cases under
// testdata/audit: each passes on main, and each case found with a fault
// switched on still fails with that fault.
func TestAuditRegressionCases(t *testing.T) {
	parallel(t)
	k := hooksFor(t) // this test's own knobs (in a suite's backend run: the run's)
	k.FixedRandomness = true
	defer func() { k.FixedRandomness = false }()
	paths, _ := filepath.Glob(filepath.Join(auditCases, "*.case"))
	if len(paths) < len(faults) {
		t.Fatalf("%d regression cases under %s, want at least one per fault (%d)", len(paths), auditCases, len(faults))
	}
	root := t.TempDir() // the cases' databases live under this test's directory (and its backend run)
	check := func(t *testing.T, c audit.Case) []string {
		dir, err := os.MkdirTemp(root, "case")
		if err != nil {
			t.Fatal(err)
		}
		d, d2, err := c.DB.Build(dir)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := audit.OpenPair(auditOpener, d, d2)
		if err != nil {
			t.Fatal(err)
		}
		defer pair.Close()
		return pair.Check(c.Statement)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c, err := audit.ParseCase(string(text))
			if err != nil {
				t.Fatal(err)
			}
			if p := check(t, c); len(p) > 0 {
				t.Errorf("fails on main: %v", p)
			}
			if c.Fault == "none" {
				return
			}
			for _, f := range faults {
				if f.name == c.Fault {
					*f.switch_(k) = true
					p := check(t, c)
					*f.switch_(k) = false
					if !(audit.Finding{Problems: p}).Privacy() {
						t.Errorf("with %q switched on, the case no longer fails a privacy check", c.Fault)
					}
					return
				}
			}
			t.Errorf("unknown fault %q", c.Fault)
		})
	}
}

// FuzzSensitivityAuditor is the auditor for long runs
// (go test -run XXX -fuzz FuzzSensitivityAuditor -fuzztime 1h .): each
// input seeds one database pair and 20 statements.
func FuzzSensitivityAuditor(f *testing.F) {
	hooks.FixedRandomness = true
	f.Cleanup(func() { hooks.FixedRandomness = false })
	for _, seed := range []uint64{1, 2, 3} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		dir, err := os.MkdirTemp("", "dpsql-audit") // the fuzz subtests' TempDir names contain '#'
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		rep, err := audit.Run(auditOpener, dir, audit.Config{Seed: seed, Databases: 1, PerDatabase: 20, NearMiss: 0.15})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Findings {
			t.Errorf("%s", f)
		}
	})
}
