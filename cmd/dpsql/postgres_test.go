package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

// TestPostgresContract is TestImportPolicyQueryContract with the data in
// PostgreSQL: import with COPY, owner setup, an analyst's query, the
// ledger in the state file; and the flags' errors.
func TestPostgresContract(t *testing.T) {
	srv := pgtest.StartT(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "people.dpsql")
	pg := srv.URL()
	out, errOut, code := runCLI(t, "", "import", "--db", pg, "--state", state, "--table", "people", writeCSV(t, dir, 300))
	if code != 0 || out != "imported 300 rows into people\n" {
		t.Fatalf("import: code %d, out %q, err %q", code, out, errOut)
	}
	// A malformed file changes nothing in PostgreSQL or the state file.
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("a,b\n1,2\n3\n"), 0o644)
	if _, errOut, code := runCLI(t, "", "import", "--db", pg, "--state", state, "--table", "broken", bad); code != 1 || !strings.Contains(errOut, "line 3") {
		t.Errorf("broken CSV: code %d, %q", code, errOut)
	}
	if _, errOut, code := runCLI(t, "", "import", "--db", pg, "--state", state, "--table", "people", writeCSV(t, dir, 3)); code != 1 || !strings.Contains(errOut, "already exists") {
		t.Errorf("second import of people: code %d, %q", code, errOut)
	}
	_, errOut, code = runCLI(t, "", "--db", pg, "--state", state, "--owner", "-c", `CREATE PRIVACY POLICY ON people;
		ALTER PRIVACY POLICY ON people SET BOUNDS "Age" (0, 100);
		ALTER PRIVACY POLICY ON people SET DOMAIN "Education-Num" (0, 1, 2, 3);
		SET BUDGET epsilon = 3`)
	if code != 0 {
		t.Fatalf("owner setup: %d %s", code, errOut)
	}
	out, errOut, code = runCLI(t, "", "--db", pg, "--state", state, "--format", "csv", "-c",
		`SET epsilon = 1; SELECT "Education-Num" AS edu, COUNT(*) AS n, AVG("Age") AS a FROM people GROUP BY "Education-Num"; SHOW TABLES`)
	if code != 0 {
		t.Fatalf("query: %d %s", code, errOut)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) < 5 || lines[0] != "edu,n,a" || !strings.HasPrefix(lines[4], "3,") || strings.Contains(out, "broken") {
		t.Errorf("csv output:\n%s", out)
	}
	if _, errOut, code := runCLI(t, "", "--db", pg, "--state", state, "-c", `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2.5) COUNT(*) FROM people`); code != 5 || !strings.Contains(errOut, "privacy budget exhausted") {
		t.Errorf("over budget: code %d, %q", code, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--db", state, "--state", state, "-c", "SHOW TABLES"}, "--state goes with a PostgreSQL or DuckDB --db"},
		{[]string{"--db", state, "-c", "SHOW TABLES"}, "open it with that database's connection string"},
	} {
		if _, errOut, code := runCLI(t, "", c.args...); code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: code %d, stderr %q (want %q)", c.args, code, errOut, c.want)
		}
	}
	// Without --state, dpsql keeps one state file per database in the
	// user's cache directory; the policy and the budget, in PostgreSQL,
	// are the ones set through the named state file above.
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	out, errOut, code = runCLI(t, "", "--db", pg, "--format", "csv", "-c", "SHOW BUDGET; SHOW TABLES")
	if code != 0 || !strings.Contains(out, "people,private,declared") || !strings.Contains(out, "total,3,0\nspent,1,0") ||
		!strings.Contains(errOut, "dpsql keeps this database's table mirrors and answer cache in "+cache) {
		t.Errorf("without --state: code %d, %q, %q", code, out, errOut)
	}
	// dpsql serve too, with no state file yet (it used to refuse a
	// missing one).
	startServe(t, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "--db", pg)
	if _, errOut, code := runCLI(t, "", "import", "--db", pg, "--table", "more", writeCSV(t, dir, 3)); code != 0 {
		t.Errorf("import without --state: code %d, %q", code, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "dpsql", "*.dpsql"))
	if len(files) != 1 {
		t.Errorf("state files in the cache directory: %v, want one", files)
	}
}

// TestServeOnPostgres: `dpsql serve` with the tables in PostgreSQL; an
// analyst's query over the wire reads them and is charged in the state
// file; SIGTERM stops the server.
func TestServeOnPostgres(t *testing.T) {
	srv := pgtest.StartT(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "people.dpsql")
	pg := srv.URL()
	if _, errOut, code := runCLI(t, "", "import", "--db", pg, "--state", state, "--table", "people", writeCSV(t, dir, 300)); code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	if _, errOut, code := runCLI(t, "", "--db", pg, "--state", state, "--owner", "-c", `CREATE PRIVACY POLICY ON people;
		SET BUDGET epsilon = 3; CREATE ANALYST alice PASSWORD 'change me' BUDGET epsilon = 1`); code != 0 {
		t.Fatalf("owner setup: %s", errOut)
	}
	cmd, stderr, port := startServe(t, nil, "--db", pg, "--state", state)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%s user=alice password='change me' sslmode=disable", port))
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	if err := c.QueryRow(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) + 0.0 FROM people`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < 250 || n > 350 { // 300 rows; Laplace noise of scale 2
		t.Errorf("COUNT(*) = %v over 300 rows", n)
	}
	c.Close(ctx)
	cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(stderr)
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", err, rest)
	}
	out, errOut, code := runCLI(t, "", "--db", pg, "--state", state, "--owner", "--format", "csv", "-c", "SHOW ANALYSTS")
	if code != 0 || !strings.Contains(out, "alice,1,0,0.5,0,0.5,0,") {
		t.Errorf("SHOW ANALYSTS after the query: %d %q %q", code, out, errOut)
	}
}
