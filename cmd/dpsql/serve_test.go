package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/testing/tlstest"

	"github.com/jackc/pgx/v5"
)

// TestServeCommand runs `dpsql serve` as a user would: on the demo
// database, with an analyst the owner declared with the CLI and an owner
// user whose password comes from the environment; an analyst queries it
// with pgx, and SIGTERM stops it cleanly.
func TestServeCommand(t *testing.T) {
	dir, db := demoWithAnalyst(t)
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

// demoWithAnalyst builds the demo database in a temporary directory, with
// analyst alice (password 'change me', ε = 2), and returns both paths.
func demoWithAnalyst(t *testing.T) (dir, db string) {
	t.Helper()
	dir = t.TempDir()
	db = filepath.Join(dir, "demo.db")
	if _, errOut, code := runCLI(t, "", "demo", "--db", db); code != 0 {
		t.Fatalf("demo: %s", errOut)
	}
	if _, errOut, code := runCLI(t, "", "--db", db, "--owner", "-c", `CREATE ANALYST alice PASSWORD 'change me' BUDGET epsilon = 2`); code != 0 {
		t.Fatalf("create analyst: %s", errOut)
	}
	return dir, db
}

// startServe starts `dpsql serve` on a free loopback port with args (and
// env added to the environment), checks its first line, and returns the
// process (killed at the end of the test), the rest of its stderr and
// the port.
func startServe(t *testing.T, env []string, args ...string) (*exec.Cmd, io.Reader, string) {
	t.Helper()
	cmd, r, m := startServeMatching(t, env, `on 127\.0\.0\.1:(\d+),.*psql`, append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	return cmd, r, m[1]
}

// startServeMatching starts `dpsql serve args...` (killed at the end of
// the test) and returns the process, the rest of its stderr and the
// submatches of pattern in its first line, which must match.
func startServeMatching(t *testing.T, env []string, pattern string, args ...string) (*exec.Cmd, io.Reader, []string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve"}, args...)...)
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
	m := regexp.MustCompile(pattern).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("serve's first line: %q", first)
	}
	return cmd, r, m
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

// TestServeConsole runs `dpsql serve --listen off --http ...`: the console
// alone, on the demo database; an analyst logs in over HTTP with the
// password the owner set, gets an answer with a chart, and SIGTERM stops
// it.
func TestServeConsole(t *testing.T) {
	_, db := demoWithAnalyst(t)
	cmd, r, m := startServeMatching(t, nil, `web console for analysts at (http://127\.0\.0\.1:\d+)/`, "--db", db, "--listen", "off", "--http", "127.0.0.1:0")
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	post := func(path, csrf, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", m[1]+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-CSRF-Token", csrf)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if code, _ := post("/api/login", "", `{"user":"alice","password":"wrong"}`); code != 401 {
		t.Errorf("wrong password: %d", code)
	}
	code, out := post("/api/login", "", `{"user":"alice","password":"change me"}`)
	if code != 200 {
		t.Fatalf("log-in: %d %v", code, out)
	}
	code, out = post("/api/query", out["csrf"].(string), `{"sql":"SELECT region, COUNT(*) FROM patients GROUP BY region","epsilon":0.5}`)
	if code != 200 || out["chart"].(map[string]any)["kind"] != "bars" {
		t.Fatalf("query: %d %v", code, out)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil || !strings.Contains(string(rest), "dpsql serve: stopped") {
		t.Errorf("serve after SIGTERM: %v\n%s", err, rest)
	}
	if _, errOut, code := runCLI(t, "", "serve", "--db", db, "--listen", "off"); code != 2 || !strings.Contains(errOut, "--http") {
		t.Errorf("--listen off alone: %d %q", code, errOut)
	}
}

// TestChartOption: --chart draws each result with a key and numbers to
// an image file (SVG here; PNG by extension), later ones numbered; a
// file name without .svg or .png is refused before anything runs.
func TestChartOption(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "demo.db")
	if _, errOut, code := runCLI(t, "", "demo", "--db", db); code != 0 {
		t.Fatalf("demo: %s", errOut)
	}
	chart := filepath.Join(dir, "regions.svg")
	_, errOut, code := runCLI(t, "", "--db", db, "--epsilon", "0.5", "--chart", chart, "-c",
		"SELECT region, COUNT(*) AS n FROM patients GROUP BY region; SHOW TABLES; SELECT diagnosis, AVG(age) AS mean_age FROM patients GROUP BY diagnosis")
	if code != 0 || !strings.Contains(errOut, "chart written to "+chart) {
		t.Fatalf("--chart: %d %s", code, errOut)
	}
	for path, want := range map[string]string{chart: "North", filepath.Join(dir, "regions-2.svg"): "mean_age"} {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasPrefix(string(b), "<svg") || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v, lacks %q", path, err, want)
		}
		if fi, err := os.Stat(path); err != nil {
			t.Error(err)
		} else if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is open to others: %v", path, fi.Mode())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "regions-3.svg")); err == nil {
		t.Error("SHOW TABLES was drawn")
	}
	if _, errOut, code := runCLI(t, "", "--db", db, "--chart", filepath.Join(dir, "x.gif"), "-c", "SHOW TABLES"); code != 2 || !strings.Contains(errOut, ".svg or .png") {
		t.Errorf("--chart x.gif: %d %q", code, errOut)
	}
	// A key need not come first; an answer without aggregates gets no
	// chart, and a note says why.
	if _, errOut, code := runCLI(t, "", "--db", db, "--epsilon", "0.5", "--chart", filepath.Join(dir, "late.svg"), "-c", "SELECT COUNT(*) AS n, region FROM patients GROUP BY region"); code != 0 || !strings.Contains(errOut, "chart written to") {
		t.Errorf("key not first: %d %q", code, errOut)
	}
	if _, errOut, code := runCLI(t, "", "--db", db, "--epsilon", "0.5", "--chart", filepath.Join(dir, "keys.svg"), "-c", "SELECT region FROM patients GROUP BY region"); code != 0 || !strings.Contains(errOut, "no chart for this answer") {
		t.Errorf("keys only: %d %q", code, errOut)
	}
	// A chart that cannot be written is refused before the query runs:
	// nothing is charged.
	before, _, _ := runCLI(t, "", "--db", db, "-c", "SHOW BUDGET")
	if _, errOut, code := runCLI(t, "", "--db", db, "--epsilon", "0.5", "--chart", filepath.Join(dir, "missing", "x.svg"), "-c", "SELECT region, COUNT(*) FROM patients GROUP BY region"); code != 2 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("--chart in a missing directory: %d %q", code, errOut)
	}
	if after, _, _ := runCLI(t, "", "--db", db, "-c", "SHOW BUDGET"); after != before {
		t.Errorf("a refused --chart charged the budget:\n%s\n%s", before, after)
	}
}

// TestServeConsoleTLS: with --tls-cert and --tls-key the console is HTTPS
// only, its session cookie Secure and HSTS sent; plain HTTP gets no page.
func TestServeConsoleTLS(t *testing.T) {
	dir, db := demoWithAnalyst(t)
	certPath, keyPath, pool := writeSelfSignedCert(t, dir)
	_, _, m := startServeMatching(t, nil, `web console for analysts at (https://127\.0\.0\.1:\d+)/`,
		"--db", db, "--listen", "off", "--http", "127.0.0.1:0", "--tls-cert", certPath, "--tls-key", keyPath)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Post(m[1]+"/api/login", "application/json", strings.NewReader(`{"user":"alice","password":"change me"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != 200 || len(cookies) != 1 || !cookies[0].Secure || !cookies[0].HttpOnly || resp.Header.Get("Strict-Transport-Security") == "" {
		t.Errorf("log-in over TLS: %d, cookies %+v, HSTS %q", resp.StatusCode, cookies, resp.Header.Get("Strict-Transport-Security"))
	}
	plain := strings.Replace(m[1], "https://", "http://", 1)
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(plain + "/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("the console answered plain HTTP")
		}
	}
}

// writeSelfSignedCert writes a self-signed certificate for 127.0.0.1 and
// its key as PEM files in dir, and returns their paths and a pool that
// trusts the certificate.
func writeSelfSignedCert(t *testing.T, dir string) (certPath, keyPath string, pool *x509.CertPool) {
	t.Helper()
	der, key, err := tlstest.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certPath, keyPath, pool
}

// TestConsoleLine: serve's start-up line names an address to open (not
// http://[::]:PORT/ for a console on every address) and, without TLS,
// says that passwords cross the network in clear (issue 51).
func TestConsoleLine(t *testing.T) {
	for _, c := range []struct {
		scheme string
		addr   net.Addr
		want   []string
		not    []string
	}{
		{"http", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, []string{"http://localhost:8080/", "every address", "in clear"}, []string{"[::]"}},
		{"http", &net.TCPAddr{IP: net.IPv4zero, Port: 8080}, []string{"http://localhost:8080/", "every address"}, []string{"0.0.0.0"}},
		{"http", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, []string{"http://127.0.0.1:8080/", "in clear"}, []string{"every address"}},
		{"https", &net.TCPAddr{IP: net.IPv6loopback, Port: 443}, []string{"https://[::1]:443/"}, []string{"in clear"}},
	} {
		line := consoleLine(c.scheme, c.addr)
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s %v: %q lacks %q", c.scheme, c.addr, line, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(line, n) {
				t.Errorf("%s %v: %q has %q", c.scheme, c.addr, line, n)
			}
		}
	}
}
