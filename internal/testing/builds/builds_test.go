package builds_test

import (
	"debug/elf"
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

// movedLinkFlags link the dpsql command with its code at another
// address: -T for Go's own linker (a build without cgo), -Ttext-segment
// for the C linker that links a build with DuckDB. Only the link runs
// again; no package is compiled anew.
const movedLinkFlags = "-ldflags=-T=0x8001000 -extldflags=-Wl,-Ttext-segment=0x8000000"

// mainAddress is the address of main.main in the executable at bin.
func mainAddress(t *testing.T, bin string) uint64 {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == "main.main" {
			return s.Value
		}
	}
	t.Fatalf("%s has no main.main", bin)
	return 0
}

// TestRepeatsAreFreeAcrossBuilds: a query repeated by another build of
// dpsql — here one linked with its code and data at another address —
// gets the cached answer, free: the cache's keys hold values, never an
// address. Four runs by the two builds spend ε once.
func TestRepeatsAreFreeAcrossBuilds(t *testing.T) {
	dir := t.TempDir()
	plain := build(t, dir, "dpsql")
	moved := build(t, dir, "dpsql-moved", movedLinkFlags)
	if a, b := mainAddress(t, plain), mainAddress(t, moved); a == b {
		t.Fatalf("both builds have main.main at %#x: the test's premise, code at another address, does not hold", a)
	}
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
	for _, bin := range []string{plain, moved, moved, plain} {
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
