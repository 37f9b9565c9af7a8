package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestServeCommand runs `dpsql serve` as a user would: on the demo
// database, with an analyst the owner declared with the CLI and an owner
// user whose password comes from the environment; an analyst queries it
// with pgx, and SIGTERM stops it cleanly.
func TestServeCommand(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "demo.db")
	if _, errOut, code := runCLI(t, "", "demo", "--db", db); code != 0 {
		t.Fatalf("demo: %s", errOut)
	}
	if _, errOut, code := runCLI(t, "", "--db", db, "--owner", "-c", `CREATE ANALYST alice PASSWORD 'change me' BUDGET epsilon = 2`); code != 0 {
		t.Fatalf("create analyst: %s", errOut)
	}
	logPath := filepath.Join(dir, "serve.log")
	cmd, stderr, port := startServe(t, []string{"DPSQL_OWNER_PASSWORD=owner pw"}, "--db", db, "--owner-user", "admin", "--log", logPath)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := func(user, pw string) string {
		return fmt.Sprintf("host=127.0.0.1 port=%s user=%s password='%s' sslmode=disable", port, user, pw)
	}
	c, err := pgx.Connect(ctx, dsn("alice", "change me"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := c.QueryRow(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) FROM patients`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `SHOW LEDGER`); err == nil || !strings.Contains(err.Error(), "42501") {
		t.Errorf("analyst SHOW LEDGER: %v", err)
	}
	c.Close(ctx)
	owner, err := pgx.Connect(ctx, dsn("admin", "owner pw"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := owner.Query(ctx, `SHOW LEDGER`, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	charges := 0
	for rows.Next() {
		vals, _ := rows.Values()
		if vals[2] == "alice" {
			charges++
		}
	}
	if rows.Err() != nil || charges != 1 {
		t.Errorf("ledger: %d charges by alice, %v", charges, rows.Err())
	}
	owner.Close(ctx)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stderr)
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", err, rest)
	}
	if !strings.Contains(string(rest), "dpsql serve: stopped") {
		t.Errorf("serve's last words: %s", rest)
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "msg=statement analyst=alice") || !strings.Contains(string(log), "epsilon=0.5") ||
		strings.Contains(string(log), "owner pw") || strings.Contains(string(log), "change me") {
		t.Errorf("log:\n%s", log)
	}
}

// startServe starts `dpsql serve` on a free loopback port with args (and
// env added to the environment), checks its first line, and returns the
// process (killed at the end of the test), the rest of its stderr and
// the port.
func startServe(t *testing.T, env []string, args ...string) (*exec.Cmd, io.Reader, string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	r := bufio.NewReader(stderr)
	first, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed nothing: %v", err)
	}
	m := regexp.MustCompile(`on 127\.0\.0\.1:(\d+),`).FindStringSubmatch(first)
	if m == nil || !strings.Contains(first, "psql") {
		t.Fatalf("serve's first line: %q", first)
	}
	return cmd, r, m[1]
}

// TestServeUsage: --help tells the truth on stdout; missing or wrong
// options exit 2 with one line.
func TestServeUsage(t *testing.T) {
	out, _, code := runCLI(t, "", "serve", "--help")
	if code != 0 || !strings.Contains(out, "Usage: dpsql serve --db FILE") || !strings.Contains(out, "-statement-timeout") {
		t.Errorf("serve --help: %d\n%s", code, out)
	}
	for _, args := range [][]string{{"serve"}, {"serve", "--db", "x.db", "--tls-cert", "c.pem"}, {"serve", "--db", "x.db", "--owner-user", "admin"}} {
		_, errOut, code := runCLI(t, "", args...)
		if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "error: ") {
			t.Errorf("%v: %d %q", args, code, errOut)
		}
	}
	_, errOut, code := runCLI(t, "", "serve", "--db", filepath.Join(t.TempDir(), "missing.db"))
	if code != 1 || !strings.Contains(errOut, "dpsql import") {
		t.Errorf("missing database: %d %q", code, errOut)
	}
}

// TestHistoryKeepsNoPasswords: the shell's history file gets a password
// statement without its password.
func TestHistoryKeepsNoPasswords(t *testing.T) {
	got := historyEntry("CREATE ANALYST alice\n  PASSWORD 'hunter2' BUDGET epsilon = 1")
	if got != "CREATE ANALYST alice PASSWORD '***' BUDGET epsilon = 1" {
		t.Errorf("history entry: %q", got)
	}
}
