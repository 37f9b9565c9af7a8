package dpsql_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/testing/audit"
	"github.com/dpsql/dpsql/mechanism"
)

// auditCases is where minimized findings are kept as regression cases.
const auditCases = "testdata/audit"

// auditOpener opens engines with the auditor's recording noiser.
func (h *harness) auditOpener(path string, n mechanism.Noiser) (audit.Engine, error) {
	return h.openEngine(path, dpsql.Options{Epsilon: 1}, n)
}

// TestAuditRegressionCases replays the minimized cases under
// testdata/audit: each passes on main, and each case found with a fault
// switched on still fails with that fault.
func TestAuditRegressionCases(t *testing.T) { testAuditRegressionCases(t, parallel(t)) }

func testAuditRegressionCases(t *testing.T, h *harness) {
	k := h.knobs // the knobs of this test's engines (its harness's)
	k.FixedRandomness = true
	defer func() { k.FixedRandomness = false }()
	paths, _ := filepath.Glob(filepath.Join(auditCases, "*.case"))
	if len(paths) < len(audit.Faults) {
		t.Fatalf("%d regression cases under %s, want at least one per fault (%d)", len(paths), auditCases, len(audit.Faults))
	}
	root := t.TempDir() // the cases' databases live under this test's directory
	openCase := func(t *testing.T, c audit.Case) *audit.Pair {
		dir, err := os.MkdirTemp(root, "case")
		if err != nil {
			t.Fatal(err)
		}
		d, d2, err := c.DB.Build(dir)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := audit.OpenPair(h.auditOpener, d, d2)
		if err != nil {
			t.Fatal(err)
		}
		return pair
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
			// One pair of databases serves both checks: the engines read
			// the knobs at each query, and keep no answer (NoCache).
			pair := openCase(t, c)
			defer pair.Close()
			if p := pair.Check(c.Statement); len(p) > 0 {
				t.Errorf("fails on main: %v", p)
			}
			if c.Fault == "none" {
				return
			}
			for _, f := range audit.Faults {
				if f.Name == c.Fault {
					*f.Switch(k) = true
					p := pair.Check(c.Statement)
					*f.Switch(k) = false
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
