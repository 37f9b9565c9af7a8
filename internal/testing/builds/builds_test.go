package builds_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testing/memtmp"
)

// TestMain keeps the test's files in memory (memtmp).
func TestMain(m *testing.M) { os.Exit(memtmp.Run(m)) }

// build builds the dpsql command into dir with the extra go build flags.
func build(t *testing.T, dir, name string, flags ...string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	args := append(append([]string{"build"}, flags...), "-o", bin, "github.com/dpsql/dpsql/cmd/dpsql")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// run runs bin with args and returns its standard output, failing the
// test on an exit status other than 0.
func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// TestRepeatsAreFreeAcrossBuilds: a query repeated by another build of
// dpsql — here a position-independent one, whose code addresses differ
// from run to run — gets the cached answer, free: the cache's keys hold
// values, never an address. Four runs by the two builds spend ε once.
func TestRepeatsAreFreeAcrossBuilds(t *testing.T) {
	dir := t.TempDir()
	plain := build(t, dir, "dpsql")
	pie := build(t, dir, "dpsql-pie", "-buildmode=pie")
	csv := filepath.Join(dir, "people.csv")
	var sb strings.Builder
	sb.WriteString("Name,Age\n")
	for i := 0; i < 50; i++ {
		sb.WriteString("p" + strings.Repeat("x", i%5) + "," + string(rune('2'+i%7)) + "0\n")
	}
	if err := os.WriteFile(csv, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "p.db")
	run(t, plain, "import", "--db", db, "--table", "people", csv)
	run(t, plain, "--db", db, "--owner", "-c", `CREATE PRIVACY POLICY ON people; SET BUDGET epsilon = 3`)
	const q = `SET epsilon = 0.5; SELECT COUNT(*) FROM people`
	var answers []string
	for _, bin := range []string{plain, pie, pie, plain} {
		answers = append(answers, run(t, bin, "--db", db, "--format", "csv", "-c", q))
	}
	for _, a := range answers[1:] {
		if a != answers[0] {
			t.Errorf("answers differ across builds: %q", answers)
		}
	}
	var rows []map[string]any
	out := run(t, plain, "--db", db, "--format", "json", "-c", `SHOW BUDGET`)
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) < 2 || rows[1]["epsilon"] != 0.5 {
		t.Errorf("four runs by two builds spent %q, want ε = 0.5 once", out)
	}
}
