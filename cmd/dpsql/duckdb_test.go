//go:build cgo

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDuckDBContract: import into a DuckDB file (created by the import,
// with its state file beside it), a policy, an analyst's query, and a
// failed import that leaves no file behind.
func TestDuckDBContract(t *testing.T) {
	dir := t.TempDir()
	duck := filepath.Join(dir, "shop.duckdb")
	csv := filepath.Join(dir, "orders.csv")
	if err := os.WriteFile(csv, []byte("amount,region\n10,north\n20,south\n30,north\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("amount,region\n10,north\n20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.duckdb")
	if _, stderr, code := runCLI(t, "", "import", "--db", other, "--table", "orders", bad); code == 0 || !strings.Contains(stderr, "line 3") {
		t.Errorf("bad import: code %d, %s", code, stderr)
	}
	for _, f := range []string{other, other + ".dpsql"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("a failed first import left %s", f)
		}
	}
	if _, stderr, code := runCLI(t, "", "import", "--db", duck, "--table", "orders", csv); code != 0 {
		t.Fatalf("import: %d %s", code, stderr)
	}
	if _, err := os.Stat(duck + ".dpsql"); err != nil {
		t.Errorf("no state file beside the DuckDB file: %v", err)
	}
	if _, stderr, code := runCLI(t, "", "--db", duck, "--owner", "-c", `SET BUDGET epsilon = 5; CREATE PRIVACY POLICY ON orders;
		ALTER PRIVACY POLICY ON orders SET BOUNDS amount (0, 100); ALTER PRIVACY POLICY ON orders SET DOMAIN region ('north', 'south')`); code != 0 {
		t.Fatalf("policy: %d %s", code, stderr)
	}
	stdout, stderr, code := runCLI(t, "", "--db", "duckdb:"+duck, "--format", "csv", "-c", "SET epsilon = 1; SELECT region, COUNT(*) FROM orders GROUP BY region")
	if code != 0 || !strings.Contains(stdout, "north,") || !strings.Contains(stdout, "south,") {
		t.Errorf("query: %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, _, _ = runCLI(t, "", "--db", duck, "--owner", "-c", "SHOW BUDGET")
	if !strings.Contains(stdout, "4") {
		t.Errorf("the query's ε was not charged in the state file:\n%s", stdout)
	}
}
