package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/testing/tlstest"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/access"
	"github.com/dpsql/dpsql/auth"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/server"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// fixture is a server on a loopback port over a fresh database:
//
//	t(i INTEGER, x INTEGER, g TEXT, y REAL): 1,000 private rows, one per unit,
//	    x in [0, 100) declared (0, 100), g in the public domain a, b, c, d
//	lookup(code, label): a public table
//	big(n, k): a public table of 2,000 rows, k = 0 (for slow joins)
//
// with analysts alice and bob (password "secret", ε = 1 each) and carol
// (no budget of her own), the owner user "admin" (password "root-pw"),
// and a database total of ε = 1.5, δ = 0 (pure accounting: every
// admitted query costs exactly its ε).
type fixture struct {
	path string
	addr string
	eng  *dpsql.Engine
	srv  *server.Server
	log  *syncBuffer
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newFixture(t testing.TB, mutate func(*server.Config)) *fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE t (i INTEGER, x INTEGER, g TEXT, y REAL);
		WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
		INSERT INTO t SELECT i, i % 100, substr('abcd', i % 4 + 1, 1), i / 10.0 FROM n;
		CREATE TABLE lookup (code TEXT, label TEXT, n INTEGER, r REAL);
		INSERT INTO lookup VALUES ('a', 'Alpha', 1, 0.5), ('b', 'Beta', NULL, 2.25);
		CREATE TABLE big (n INTEGER, k INTEGER);
		WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 1999)
		INSERT INTO big SELECT n, 0 FROM k;`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := dpsql.Open(path, dpsql.Options{Owner: true, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	err = eng.Run(context.Background(), `CREATE PRIVACY POLICY ON t;
		ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 100);
		ALTER PRIVACY POLICY ON t SET DOMAIN g ('a', 'b', 'c', 'd');
		ALTER TABLE lookup SET PUBLIC;
		ALTER TABLE big SET PUBLIC;
		SET BUDGET epsilon = 1.5, delta = 0;
		CREATE ANALYST alice PASSWORD 'secret' BUDGET epsilon = 1;
		CREATE ANALYST bob PASSWORD 'secret' BUDGET epsilon = 1;
		CREATE ANALYST carol PASSWORD 'secret';`, func(*dpsql.Result) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := auth.NewVerifier("root-pw")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{path: path, eng: eng, log: &syncBuffer{}}
	cfg := server.Config{Engine: eng, OwnerUser: "admin", OwnerVerifier: verifier,
		Logger: slog.New(slog.NewTextHandler(f.log, nil))}
	if mutate != nil {
		mutate(&cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	f.srv = server.New(cfg)
	served := make(chan error, 1)
	go func() { served <- f.srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, server.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		eng.Close()
	})
	return f
}

// dsn is a connection string for user with password.
func (f *fixture) dsn(user, password string) string {
	host, port, _ := net.SplitHostPort(f.addr)
	return fmt.Sprintf("host=%s port=%s user=%s password=%s dbname=dpsql sslmode=disable", host, port, user, password)
}

func (f *fixture) connect(t testing.TB, user, password string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, f.dsn(user, password))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// sqlState is the SQLSTATE of a server error ("" for any other error).
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestAuthentication: the right password gets in; a wrong one and an
// unknown user get the same 28P01 error; passwords never reach the log.
func TestAuthentication(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	c := f.connect(t, "alice", "secret")
	var who string
	if err := c.QueryRow(ctx, `SELECT current_user`).Scan(&who); err != nil || who != "alice" {
		t.Errorf("current_user: %q %v", who, err)
	}
	var wrong, unknown string
	for _, tc := range []struct {
		user, pw string
		msg      *string
	}{{"alice", "guess", &wrong}, {"mallory", "secret", &unknown}, {"admin", "secret", nil}} {
		_, err := pgx.Connect(ctx, f.dsn(tc.user, tc.pw))
		if sqlState(err) != "28P01" {
			t.Errorf("%s/%s: want 28P01, got %v", tc.user, tc.pw, err)
			continue
		}
		if tc.msg != nil {
			*tc.msg = strings.ReplaceAll(err.(interface{ Unwrap() error }).Unwrap().Error(), tc.user, "USER")
		}
	}
	if wrong != unknown {
		t.Errorf("a wrong password and an unknown user must look alike:\n%s\n%s", wrong, unknown)
	}
	// With a failure delay, a wrong password is answered no sooner.
	g := newFixture(t, func(c *server.Config) { c.AuthFailureDelay = 300 * time.Millisecond })
	start := time.Now()
	if _, err := pgx.Connect(ctx, g.dsn("alice", "guess")); sqlState(err) != "28P01" || time.Since(start) < 300*time.Millisecond {
		t.Errorf("failure delay: %v after %v", err, time.Since(start))
	}
	owner := f.connect(t, "admin", "root-pw")
	if _, err := owner.Exec(ctx, `SHOW ANALYSTS`); err != nil {
		t.Errorf("owner: %v", err)
	}
	if strings.Contains(f.log.String(), "secret") || strings.Contains(f.log.String(), "root-pw") {
		t.Errorf("a password reached the log:\n%s", f.log)
	}
}

// TestPlaintextRefusedWithTLSConfigured: with TLS configured, a client
// that does not use it is refused before any password is exchanged.
func TestPlaintextRefusedWithTLSConfigured(t *testing.T) {
	cert, err := selfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(c *server.Config) { c.TLS = cert })
	ctx := context.Background()
	_, err = pgx.Connect(ctx, f.dsn("alice", "secret"))
	if sqlState(err) != "28000" || !strings.Contains(err.Error(), "requires TLS") {
		t.Errorf("plaintext: %v", err)
	}
	c, err := pgx.Connect(ctx, strings.Replace(f.dsn("alice", "secret"), "sslmode=disable", "sslmode=require", 1))
	if err != nil {
		t.Fatalf("TLS: %v", err)
	}
	defer c.Close(ctx)
	if _, ok := c.PgConn().Conn().(*tls.Conn); !ok {
		t.Errorf("not TLS: %T", c.PgConn().Conn())
	}
	if _, err := c.Exec(ctx, `SELECT code FROM lookup`); err != nil {
		t.Error(err)
	}
}

// TestQueryProtocols: private and public queries, in the simple and the
// extended protocol (with $N parameters), come back with the types
// PostgreSQL clients expect: int8 for COUNT and integer columns, float8
// for other aggregates and real columns, text, bool, and NULL.
func TestQueryProtocols(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	c := f.connect(t, "alice", "secret")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec} {
		t.Run(mode.String(), func(t *testing.T) {
			// A public table is answered exactly, with its types.
			rows, err := c.Query(ctx, `SELECT code, label, n, r FROM lookup WHERE code >= $1 ORDER BY code`, mode, "a")
			if err != nil {
				t.Fatal(err)
			}
			type row struct {
				code, label string
				n           *int64
				r           float64
			}
			var got []row
			for rows.Next() {
				var r row
				if err := rows.Scan(&r.code, &r.label, &r.n, &r.r); err != nil {
					t.Fatal(err)
				}
				got = append(got, r)
			}
			if rows.Err() != nil {
				t.Fatal(rows.Err())
			}
			if len(got) != 2 || got[0].code != "a" || got[0].label != "Alpha" || got[0].n == nil || *got[0].n != 1 || got[0].r != 0.5 ||
				got[1].n != nil || got[1].r != 2.25 {
				t.Errorf("public rows: %+v", got)
			}
			// A private count (ε = 0.05 with OPTIONS, so three modes fit
			// in alice's budget): int8, close to the truth.
			var n int64
			if err := c.QueryRow(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.05) COUNT(*) FROM t WHERE x < $1`, mode, 50).Scan(&n); err != nil {
				t.Fatal(err)
			}
			// Laplace with scale 20: |noise| > 20·ln(1e6) ≈ 276 with
			// probability 1e-6.
			if math.Abs(float64(n)-500) > 276 {
				t.Errorf("COUNT: %d, want 500 ± 276", n)
			}
			var avg float64
			if err := c.QueryRow(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.05) AVG(x) FROM t`, mode).Scan(&avg); err != nil {
				t.Fatal(err)
			}
			if avg < 0 || avg > 100 {
				t.Errorf("AVG outside the declared bounds: %v", avg)
			}
			var super string
			if err := c.QueryRow(ctx, `SHOW is_superuser`, mode).Scan(&super); err != nil || super != "off" {
				t.Errorf("SHOW is_superuser: %q %v", super, err)
			}
		})
	}
	// Row descriptions name PostgreSQL's types.
	rows, err := c.Query(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.05) g, COUNT(*), SUM(x) FROM t GROUP BY g`)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for rows.Next() {
		var g string
		var n int64
		var s float64
		if err := rows.Scan(&g, &n, &s); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, g)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	var oids []uint32
	var names []string
	for _, fd := range rows.FieldDescriptions() {
		oids = append(oids, fd.DataTypeOID)
		names = append(names, fd.Name)
	}
	if fmt.Sprint(oids) != "[25 20 701]" || strings.Join(keys, ",") != "a,b,c,d" {
		t.Errorf("grouped: oids %v keys %v", oids, keys)
	}
	// Columns are named as PostgreSQL names them (\gset and ORMs read them).
	if got := strings.Join(names, ","); got != "g,count,sum" {
		t.Errorf("column names %s; want g,count,sum", got)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheDescribe} {
		rows, err := c.Query(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.05) AVG(x) AS mean, COUNT(*) + 1, CAST(SUM(x) AS REAL) FROM t`, mode)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, fd := range rows.FieldDescriptions() {
			got = append(got, fd.Name)
		}
		rows.Close()
		if strings.Join(got, ",") != "mean,?column?,sum" {
			t.Errorf("mode %v: column names %v; want mean,?column?,sum", mode, got)
		}
	}
}

// TestMultipleStatementsInOneQuery: a simple query with several
// statements answers each in order and stops at the first error.
func TestMultipleStatementsInOneQuery(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	c := f.connect(t, "alice", "secret")
	results, err := c.PgConn().Exec(ctx, `SET epsilon = 0.1; SELECT COUNT(*) FROM t; SELECT label FROM lookup WHERE code = 'b'`).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || results[0].CommandTag.String() != "SET" || results[1].CommandTag.String() != "SELECT 1" ||
		len(results[2].Rows) != 1 || string(results[2].Rows[0][0]) != "Beta" {
		t.Errorf("results: %d %+v", len(results), results)
	}
	results, err = c.PgConn().Exec(ctx, `SELECT label FROM lookup; SELECT nope FROM lookup; SELECT code FROM lookup`).ReadAll()
	if sqlState(err) != "42703" || len(results) != 1 {
		t.Errorf("stops at the first error: %v, %d results", err, len(results))
	}
}

// TestErrorsCarrySQLSTATE: each kind of refusal has its SQLSTATE, the
// CLI's message, and a position for syntax errors.
func TestErrorsCarrySQLSTATE(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	alice := f.connect(t, "alice", "secret")
	carol := f.connect(t, "carol", "secret")
	for _, tc := range []struct {
		conn       *pgx.Conn
		sql, state string
		msg        string
		position   int32
	}{
		{alice, `SELECT COUNT(*) FROM t WHER x > 1`, "42601", "", 29},
		{alice, `SELECT COUNT(*) FROM nosuch`, "42P01", "nosuch", 0},
		{alice, `SELECT COUNT(nosuch) FROM t`, "42703", "nosuch", 0},
		{alice, `SELECT * FROM t`, "ZD003", "", 0},
		{alice, `SELECT x FROM t WHERE i = 7`, "ZD003", "", 0},
		{alice, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 5) COUNT(*) FROM t`, "ZD001", "", 0},
		{carol, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) FROM t`, "ZD002", "", 0},
		{alice, `SELECT relname FROM pg_catalog.pg_class WHERE relname ~~ '^t'`, "0A000", "", 0}, // a PostgreSQL operator the emulated catalog lacks
		{alice, `SELECT * FROM pg_catalog.pg_statistic`, "0A000", "", 0},
		{alice, `SET BUDGET epsilon = 100`, "42501", "owner", 0},
		{alice, `SET delta = 2`, "22023", "delta", 0}, // reaches the engine, not the emulation
	} {
		_, err := tc.conn.Exec(ctx, tc.sql, pgx.QueryExecModeSimpleProtocol)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != tc.state || !strings.Contains(pe.Message, tc.msg) || (tc.position != 0 && pe.Position != tc.position) {
			t.Errorf("%s: want %s at %d, got %v (position %d)", tc.sql, tc.state, tc.position, err, func() int32 {
				if pe != nil {
					return pe.Position
				}
				return 0
			}())
		}
	}
	// The connection is usable after every error, in the extended
	// protocol too.
	if _, err := alice.Exec(ctx, `SELECT COUNT(*) FROM t WHER x > $1`, 1); sqlState(err) != "42601" {
		t.Errorf("extended syntax error: %v", err)
	}
	var label string
	if err := alice.QueryRow(ctx, `SELECT label FROM lookup WHERE code = $1`, "a").Scan(&label); err != nil || label != "Alpha" {
		t.Errorf("after errors: %q %v", label, err)
	}
}

// TestOwnerStatementsRefusedForAnalysts: whatever an analyst sends, in
// either protocol, no owner statement runs and nothing changes; the
// owner user can run them over the wire.
func TestOwnerStatementsRefusedForAnalysts(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	alice := f.connect(t, "alice", "secret")
	owner := f.connect(t, "admin", "root-pw")
	before := analystsTable(t, owner)
	for _, stmt := range []string{
		`SET BUDGET epsilon = 100`,
		`RESET BUDGET`,
		`CREATE ANALYST eve PASSWORD 'x' BUDGET epsilon = 10`,
		`ALTER ANALYST alice BUDGET epsilon = 100`,
		`ALTER ANALYST bob PASSWORD 'mine'`,
		`DROP ANALYST bob`,
		`SHOW ANALYSTS`,
		`SHOW LEDGER`,
		`SHOW CACHE`,
		`RESET CACHE`,
		`CREATE PRIVACY POLICY ON lookup`,
		`DROP PRIVACY POLICY ON t`,
		`ALTER PRIVACY POLICY ON t SET BOUNDS x (0, 1)`,
		`ALTER TABLE t SET PUBLIC`,
	} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
			if _, err := alice.Exec(ctx, stmt, mode); sqlState(err) != "42501" {
				t.Errorf("%s (%v): want 42501, got %v", stmt, mode, err)
			}
		}
	}
	if after := analystsTable(t, owner); after != before {
		t.Errorf("analysts changed:\n%s\n%s", before, after)
	}
	if _, err := alice.Exec(ctx, `SELECT x FROM t`); sqlState(err) != "ZD003" {
		t.Errorf("t is still private: %v", err)
	}
	// The owner user can declare an analyst, who can then log in.
	if _, err := owner.Exec(ctx, `CREATE ANALYST dave PASSWORD 'pw2' BUDGET epsilon = 0.5`); err != nil {
		t.Fatal(err)
	}
	dave := f.connect(t, "dave", "pw2")
	if _, err := dave.Exec(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) FROM t`); err != nil {
		t.Error(err)
	}
	if _, err := dave.Exec(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) COUNT(*) FROM t`); sqlState(err) != "ZD001" {
		t.Errorf("dave's own budget: %v", err)
	}
	if _, err := owner.Exec(ctx, `ALTER ANALYST dave PASSWORD 'pw3'`); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, f.dsn("dave", "pw2")); sqlState(err) != "28P01" {
		t.Errorf("old password after ALTER: %v", err)
	}
	// The statements are logged without their passwords.
	if log := f.log.String(); !strings.Contains(log, "CREATE ANALYST dave PASSWORD '***'") || strings.Contains(log, "pw2") || strings.Contains(log, "pw3") {
		t.Errorf("log:\n%s", log)
	}
}

func analystsTable(t *testing.T, owner *pgx.Conn) string {
	t.Helper()
	rows, err := owner.Query(context.Background(), `SHOW ANALYSTS`, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&sb, vals...)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return sb.String()
}

// TestBudgetsUnderConcurrency: 50 connections of two analysts (ε = 1
// each) race for a database total of ε = 1.5 with queries of ε = 0.1
// each: exactly 15 are admitted, neither analyst passes their own 1,
// every refusal is ZD001 (no lock errors), and the ledger agrees.
func TestBudgetsUnderConcurrency(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	const conns = 50
	var (
		mu       sync.Mutex
		admitted = map[string]int{}
		failures []string
		wg       sync.WaitGroup
	)
	for i := range conns {
		user := []string{"alice", "bob"}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pgx.Connect(ctx, f.dsn(user, "secret"))
			if err != nil {
				mu.Lock()
				failures = append(failures, err.Error())
				mu.Unlock()
				return
			}
			defer c.Close(ctx)
			for q := range 3 {
				// Distinct statements: nothing is answered from a cache.
				_, err := c.Exec(ctx, fmt.Sprintf(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) FROM t WHERE i <> %d`, i*10+q))
				mu.Lock()
				switch {
				case err == nil:
					admitted[user]++
				case sqlState(err) != "ZD001":
					failures = append(failures, err.Error())
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d failures other than an exhausted budget, e.g. %s", len(failures), failures[0])
	}
	if admitted["alice"]+admitted["bob"] != 15 || admitted["alice"] > 10 || admitted["bob"] > 10 {
		t.Errorf("admitted %v: want 15 in all, at most 10 each", admitted)
	}
	owner := f.connect(t, "admin", "root-pw")
	rows, err := owner.Query(ctx, `SHOW LEDGER`, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	charged := map[string]int{}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		charged[fmt.Sprint(vals[2])]++
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if charged["alice"] != admitted["alice"] || charged["bob"] != admitted["bob"] || len(charged) != 2 {
		t.Errorf("ledger %v, admitted %v", charged, admitted)
	}
}

// TestCancelRequest: a CancelRequest (pgx sends one when the context
// ends) stops the running statement with 57014, and the connection goes
// on; a statement timeout does the same by itself.
func TestCancelRequest(t *testing.T) {
	f := newFixture(t, func(c *server.Config) { c.StatementTimeout = 0 })
	ctx := context.Background()
	c := f.connect(t, "alice", "secret")
	// A public three-way join of 2,000 rows each (8·10⁹ pairs): far
	// longer than this test waits before cancelling.
	slow := `SELECT COUNT(*) FROM big a JOIN big b ON a.k = b.k JOIN big c ON b.k = c.k WHERE a.n + b.n + c.n = -1`
	errc := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, slow)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	// A cancel request with the wrong secret key is ignored.
	sendCancel(t, f.addr, c.PgConn().PID(), []byte{1, 2, 3, 4})
	select {
	case err := <-errc:
		t.Fatalf("a cancel request with a wrong key stopped the query: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := c.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; sqlState(err) != "57014" {
		t.Fatalf("cancelled: want 57014, got %v", err)
	}
	var label string
	if err := c.QueryRow(ctx, `SELECT label FROM lookup WHERE code = 'a'`).Scan(&label); err != nil || label != "Alpha" {
		t.Errorf("after cancel: %q %v", label, err)
	}

	g := newFixture(t, func(c *server.Config) { c.StatementTimeout = 200 * time.Millisecond })
	d := g.connect(t, "alice", "secret")
	if _, err := d.Exec(ctx, slow); sqlState(err) != "57014" {
		t.Errorf("statement timeout: %v", err)
	}
	if err := d.QueryRow(ctx, `SELECT label FROM lookup WHERE code = 'a'`).Scan(&label); err != nil || label != "Alpha" {
		t.Errorf("after a timeout: %v", err)
	}
}

// selfSignedCert is a TLS configuration with a fresh self-signed
// certificate for 127.0.0.1.
func selfSignedCert() (*tls.Config, error) {
	der, key, err := tlstest.SelfSigned()
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}, nil
}

// sendCancel sends a CancelRequest for pid with key on a new connection.
func sendCancel(t *testing.T, addr string, pid uint32, key []byte) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msg, err := (&pgproto3.CancelRequest{ProcessID: pid, SecretKey: key}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(msg); err != nil {
		t.Fatal(err)
	}
	// The server closes the connection without answering.
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _ := nc.Read(make([]byte, 1)); n != 0 {
		t.Error("the server answered a cancel request")
	}
}

// TestPsql drives the server with the real psql client (Debian's
// postgresql-client): a script of private and public queries, \dt and \d.
// It skips when psql is absent, except in CI, whose script installs it.
func TestPsql(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("psql is not installed; .ci/run installs postgresql-client")
		}
		t.Skip("psql not found (apt-get install postgresql-client): the end-to-end test with the real client is skipped")
	}
	f := newFixture(t, nil)
	host, port, _ := net.SplitHostPort(f.addr)
	script := `\dt
\d t
\d+ t
SET epsilon = 0.1;
SELECT COUNT(*) AS n FROM t;
SELECT code, label FROM lookup ORDER BY code;
SELECT g, COUNT(*) AS n FROM t GROUP BY g;
SELECT version();
SHOW BUDGET;
SET interval_columns = on;
SELECT COUNT(*) AS m FROM t WHERE x > 0;
SELECT g, AVG(x) AS a FROM t WHERE g = 'a' GROUP BY g ORDER BY g;
SHOW epsilon;
SHOW ALL;
`
	cmd := exec.Command(psql, "-X", "-v", "ON_ERROR_STOP=1", "--no-psqlrc", "-P", "pager=off",
		fmt.Sprintf("host=%s port=%s user=alice dbname=dpsql sslmode=disable", host, port))
	cmd.Stdin = strings.NewReader(script)
	cmd.Env = append(os.Environ(), "PGPASSWORD=secret", "PGCONNECT_TIMEOUT=10")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"List of relations", "main   | big    | table", "main   | lookup | table", "main   | t      | table",
		`Table "main.t"`, "x      | bigint", "g      | text", "y      | double precision",
		"SET", "(1 row)", "a    | Alpha", "b    | Beta", "(2 rows)", "(4 rows)", "dpsql",
		// Each private query's cost and 95% intervals as a NOTICE; the
		// intervals as columns after SET interval_columns = on.
		"NOTICE:  spent ε=0.1, δ=0; 95% intervals: row 1: n [", "| m_lo | m_hi",
		// Groups the WHERE leaves without rows are marked, in a column and
		// in the NOTICE.
		"| few_rows \n", "100 | a\n", "a [0, 100] (few rows)",
		// \d+ gets the columns it reads (psql 15 crashed on \d's shape).
		"| Storage  | Compression | Stats target | Description", "| extended |", "Access method: heap",
		// SHOW of dpsql's settings, one or all.
		" epsilon \n---------\n 0.1\n", " interval_columns              | on ", " noise                         | auto ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("psql output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "_dpsql") {
		t.Errorf("internal tables listed:\n%s", text)
	}
	// A refusal ends the script with the server's message and a non-zero
	// exit, as psql does for PostgreSQL's errors.
	cmd = exec.Command(psql, "-X", "-v", "ON_ERROR_STOP=1", "--no-psqlrc",
		fmt.Sprintf("host=%s port=%s user=alice dbname=dpsql sslmode=disable", host, port), "-c", "SELECT x FROM t")
	cmd.Env = append(os.Environ(), "PGPASSWORD=secret")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "ERROR:") {
		t.Errorf("psql on a refused query: %v\n%s", err, out)
	}
	t.Logf("psql:\n%s", text)
}

// TestPsqlDescribeFamily: every \d-family command of psql 15 either
// answers in the shape psql reads or is refused with a clear error; psql
// never crashes (it read past \d's columns on \d+ and died with SIGSEGV).
func TestPsqlDescribeFamily(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("psql is not installed; .ci/run installs postgresql-client")
		}
		t.Skip("psql not found")
	}
	f := newFixture(t, nil)
	host, port, _ := net.SplitHostPort(f.addr)
	want := map[string]string{
		`\d`: "| lookup | table |", `\d+`: "| lookup | table |", `\d+ t`: "| extended |", `\dt+`: "| Access method |",
		`\l+`: "| Tablespace |", `\dv`: "Did not find any relations.", `\di`: "Did not find any relations.", `\dn`: " main ",
	}
	for _, cmdText := range []string{`\d`, `\d+`, `\d t`, `\d+ t`, `\dt`, `\dt+`, `\dn`, `\dn+`, `\df`, `\du`, `\l`, `\l+`, `\dv`, `\di`, `\dT`, `\dx`} {
		cmd := exec.Command(psql, "-X", "--no-psqlrc", "-P", "pager=off",
			fmt.Sprintf("host=%s port=%s user=alice dbname=dpsql sslmode=disable", host, port), "-c", cmdText)
		cmd.Env = append(os.Environ(), "PGPASSWORD=secret", "PGCONNECT_TIMEOUT=10")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() != 1 {
			t.Errorf("%s: psql exited with %v (a crash, not an error):\n%s", cmdText, err, out)
			continue
		}
		if err != nil && !strings.Contains(string(out), "ERROR:") {
			t.Errorf("%s: %v without an ERROR message:\n%s", cmdText, err, out)
		}
		if w, ok := want[cmdText]; ok && !strings.Contains(string(out), w) {
			t.Errorf("%s: output lacks %q:\n%s", cmdText, w, out)
		}
		t.Logf("%s:\n%s", cmdText, out)
	}
}

// slowPrivate is a private query that runs for seconds: ten rows of t
// (x = 0) joined with 2,000 × 2,000 rows of big.
const slowPrivate = `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) COUNT(*) FROM t JOIN big b ON t.x = b.k JOIN big c ON b.k = c.k`

// waitForCharges polls the ledger (through the owner's engine) until it
// has n charges.
func waitForCharges(t *testing.T, f *fixture, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		res, err := f.eng.Query(context.Background(), `SHOW LEDGER`)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) >= n {
			return
		}
	}
	t.Fatalf("the ledger never had %d charges", n)
}

// TestCancelledPrivateQueryStaysCharged: a private query cancelled after
// its charge was committed gets 57014, and its ε stays spent.
func TestCancelledPrivateQueryStaysCharged(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	c := f.connect(t, "alice", "secret")
	errc := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, slowPrivate)
		errc <- err
	}()
	waitForCharges(t, f, 1)
	if err := c.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("want 57014, got %v", err)
	}
	// PostgreSQL's message, and in the detail what dpsql charged.
	if !strings.Contains(pe.Detail, "ε=0.1") || !strings.Contains(pe.Detail, "was charged") {
		t.Errorf("cancel detail %q does not say what was charged", pe.Detail)
	}
	var spent float64
	rows, err := c.Query(ctx, `SHOW BUDGET`, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var what string
		var eps, delta float64
		if err := rows.Scan(&what, &eps, &delta); err != nil {
			t.Fatal(err)
		}
		if what == "spent" {
			spent = eps
		}
	}
	if rows.Err() != nil || spent != 0.1 {
		t.Errorf("spent after a cancelled query: %v (%v), want 0.1", spent, rows.Err())
	} // SET statement_timeout is honoured (not accepted and ignored), and a
	// bad value refused.
	if _, err := c.Exec(ctx, `SET statement_timeout = 'soon'`); sqlState(err) != "22023" {
		t.Errorf("SET statement_timeout = 'soon': %v", err)
	}
	if _, err := c.Exec(ctx, `SET statement_timeout = '100ms'`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.Exec(ctx, slowPrivate)
	if !errors.As(err, &pe) || pe.Code != "57014" || !strings.Contains(pe.Message, "statement timeout") || time.Since(start) > 5*time.Second {
		t.Errorf("after SET statement_timeout = '100ms': %v after %v", err, time.Since(start))
	}
	var shown string
	if err := c.QueryRow(ctx, `SHOW statement_timeout`, pgx.QueryExecModeSimpleProtocol).Scan(&shown); err != nil || shown != "100ms" {
		t.Errorf("SHOW statement_timeout: %q %v", shown, err)
	}
	if _, err := c.Exec(ctx, `SET statement_timeout = 0`); err != nil {
		t.Fatal(err)
	}
}

// TestShutdown: Shutdown closes idle connections at once (57P01), gives a
// running statement until its context ends, then cancels it; the ledger
// keeps the charge, and new connections are refused.
func TestShutdown(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	idle := f.connect(t, "bob", "secret")
	busy := f.connect(t, "alice", "secret")
	errc := make(chan error, 1)
	go func() {
		_, err := busy.Exec(ctx, slowPrivate)
		errc <- err
	}()
	waitForCharges(t, f, 1)
	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := f.srv.Shutdown(sctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("shutdown with a running statement: %v", err)
	}
	if err := <-errc; err == nil {
		t.Error("the running statement finished despite the shutdown")
	}
	if _, err := idle.Exec(ctx, `SELECT code FROM lookup`); err == nil {
		t.Error("an idle connection outlived the shutdown")
	}
	if _, err := pgx.Connect(ctx, f.dsn("alice", "secret")); err == nil {
		t.Error("a new connection after shutdown")
	}
	res, err := f.eng.Query(ctx, `SHOW LEDGER`)
	if err != nil || len(res.Rows) != 1 {
		t.Errorf("ledger after shutdown: %v %v", res, err)
	}
}

// TestConnectionLimitAndIdleTimeout: one connection over MaxConns gets
// 53300; a connection idle past IdleTimeout is closed with 57P05.
func TestConnectionLimitAndIdleTimeout(t *testing.T) {
	f := newFixture(t, func(c *server.Config) { c.MaxConns = 2; c.IdleTimeout = 300 * time.Millisecond })
	ctx := context.Background()
	a := f.connect(t, "alice", "secret")
	f.connect(t, "bob", "secret")
	if _, err := pgx.Connect(ctx, f.dsn("carol", "secret")); sqlState(err) != "53300" {
		t.Errorf("third connection: %v", err)
	}
	time.Sleep(600 * time.Millisecond)
	if _, err := a.Exec(ctx, `SELECT code FROM lookup`); err == nil {
		t.Error("an idle connection outlived the idle timeout")
	}
	// Both slots are free again.
	c := f.connect(t, "carol", "secret")
	var ver string
	if err := c.QueryRow(ctx, `SELECT version()`).Scan(&ver); err != nil || !strings.Contains(ver, "dpsql") {
		t.Errorf("version(): %q %v", ver, err)
	}
	for name, want := range map[string]string{"server_version": server.ServerVersion, "client_encoding": "UTF8", "standard_conforming_strings": "on",
		"integer_datetimes": "on", "DateStyle": "ISO, MDY"} {
		if got := c.PgConn().ParameterStatus(name); got != want {
			t.Errorf("ParameterStatus %s = %q, want %q", name, got, want)
		}
	}
}

// TestPsycopg drives the server from Python's psycopg2 (Debian's
// python3-psycopg2), which wraps every statement in a transaction and
// formats parameters client-side. It skips when psycopg2 is absent,
// except in CI, whose script installs it.
func TestPsycopg(t *testing.T) {
	python := ""
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import psycopg2").Run() == nil {
			python = path
			break
		}
	}
	if python == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 with psycopg2 is not installed; .ci/run installs python3-psycopg2")
		}
		t.Skip("python3 with psycopg2 not found (apt-get install python3-psycopg2): the psycopg test is skipped")
	}
	f := newFixture(t, nil)
	host, port, _ := net.SplitHostPort(f.addr)
	script := fmt.Sprintf(`
import psycopg2
c = psycopg2.connect(host=%q, port=%s, user="alice", password="secret", dbname="dpsql")
cur = c.cursor()
cur.execute("SET epsilon = 0.1")
cur.execute("SELECT COUNT(*) FROM t WHERE x < %%s", (50,))
(n,), = cur.fetchall()
print("count", cur.description[0].type_code, 0 <= n <= 1000)
cur.execute("SELECT label FROM lookup WHERE code = %%s", ("b",))
print("label", cur.fetchall())
try:
    cur.execute("SELECT * FROM t")
except psycopg2.Error as e:
    print("refused", e.pgcode)
c.rollback()
cur.execute("SHOW BUDGET")
print("budget", cur.fetchall()[1])
named = c.cursor("report")
named.itersize = 2
named.execute("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) g, COUNT(*) FROM t GROUP BY g")
print("named", [r[0] for r in named])
named.close()
scroll = c.cursor("again", scrollable=True)
scroll.execute("SELECT code FROM lookup ORDER BY code")
first = scroll.fetchall()
scroll.scroll(0, mode="absolute")
again = scroll.fetchone()
scroll.scroll(-1)
print("scroll", first, again, scroll.fetchall())
scroll.close()
c.close()
`, host, port)
	out, err := exec.Command(python, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	want := "count 20 True\nlabel [('Beta',)]\nrefused ZD003\nbudget ('spent', 0.1, 0.0)\nnamed ['a', 'b', 'c', 'd']\nscroll [('a',), ('b',)] ('a',) [('a',), ('b',)]\n"
	if string(out) != want {
		t.Errorf("psycopg2:\n%s\nwant:\n%s", out, want)
	}
}

// saltOf starts a SCRAM exchange as user and returns the salt the server
// sends, then hangs up.
func saltOf(t *testing.T, addr, user string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": user, "database": "dpsql"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	if msg, err := fe.Receive(); err != nil {
		t.Fatal(err)
	} else if _, ok := msg.(*pgproto3.AuthenticationSASL); !ok {
		t.Fatalf("expected AuthenticationSASL, got %T", msg)
	}
	fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=abcdefghijklmnop")})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	msg, err := fe.Receive()
	if err != nil {
		t.Fatal(err)
	}
	cont, ok := msg.(*pgproto3.AuthenticationSASLContinue)
	if !ok {
		t.Fatalf("expected AuthenticationSASLContinue, got %T", msg)
	}
	for _, field := range strings.Split(string(cont.Data), ",") {
		if s, ok := strings.CutPrefix(field, "s="); ok {
			return s
		}
	}
	t.Fatalf("no salt in %q", cont.Data)
	return ""
}

// TestUnknownUsersLookKnown: the salt the server sends an unknown user is
// the same at every attempt and after a restart, as a known user's is,
// so the exchange does not tell whether a name exists.
func TestUnknownUsersLookKnown(t *testing.T) {
	f := newFixture(t, nil)
	known, unknown := saltOf(t, f.addr, "alice"), saltOf(t, f.addr, "mallory")
	if saltOf(t, f.addr, "alice") != known || saltOf(t, f.addr, "mallory") != unknown {
		t.Error("a salt changed between attempts")
	}
	if saltOf(t, f.addr, "trudy") == unknown {
		t.Error("two unknown users share a salt")
	}
	// A second server on the same file (a restart) sends the same salts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	eng, err := dpsql.Open(f.path, dpsql.Options{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := server.New(server.Config{Engine: eng})
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	if saltOf(t, ln.Addr().String(), "mallory") != unknown || saltOf(t, ln.Addr().String(), "alice") != known {
		t.Error("salts changed with a restart")
	}
}

// TestHalfOpenConnectionsAreBounded: connections that never send a
// startup message hold at most 2·MaxConns + 8 sockets; past that a new
// one is closed at once, and authenticated work goes on when they leave.
func TestHalfOpenConnectionsAreBounded(t *testing.T) {
	f := newFixture(t, func(c *server.Config) { c.MaxConns = 1 })
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 10 { // 2·1 + 8
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	extra, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := extra.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the 11th half-open connection was kept: %v", err)
	}
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	// The slots free up as the server notices the closed sockets.
	var c *pgx.Conn
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err = pgx.Connect(context.Background(), f.dsn("alice", "secret")); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("after the half-open connections left: %v", err)
	}
	c.Close(context.Background())
}

// TestSQLOverReleasedResultsOverTheWire: a DP query inside an outer
// query, with a window function over its answer, in every protocol mode:
// rows come back typed (int8 counts and ranks, text keys), each mode
// charged the DP part's ε once.
func TestSQLOverReleasedResultsOverTheWire(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	c := f.connect(t, "alice", "secret")
	q := `SELECT g, n, RANK() OVER (ORDER BY n DESC, g) AS r FROM (SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) g, COUNT(*) AS n FROM t WHERE x < $1 GROUP BY g) AS q ORDER BY g`
	for i, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement, pgx.QueryExecModeDescribeExec} {
		rows, err := c.Query(ctx, q, mode, 50+i) // a new parameter each time: not from the cache
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		ranks := map[int64]bool{}
		for rows.Next() {
			var g string
			var n, r int64
			if err := rows.Scan(&g, &n, &r); err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			keys = append(keys, g)
			ranks[r] = true
		}
		if rows.Err() != nil {
			t.Fatalf("%s: %v", mode, rows.Err())
		}
		if strings.Join(keys, ",") != "a,b,c,d" || len(ranks) != 4 {
			t.Errorf("%s: keys %v ranks %v", mode, keys, ranks)
		}
	}
	st, err := f.eng.NewSession(dpsql.SessionOptions{Analyst: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Budget(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b.Spent.Epsilon-0.3) > 1e-9 {
		t.Errorf("alice spent ε=%g, want 0.3 (0.1 per mode)", b.Spent.Epsilon)
	}
}

// TestStartupOptions: libpq's options (-c name=value, as PGOPTIONS sets
// them) are honoured for dpsql's settings and statement_timeout, and an
// unknown name is refused, never ignored (issue 29).
func TestStartupOptions(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, f.dsn("alice", "secret")+` options='-c epsilon=0.05 -c noise=laplace -cstatement_timeout=5s'`)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for name, want := range map[string]string{"epsilon": "0.05", "noise": "laplace", "statement_timeout": "5000ms"} {
		var got string
		if err := c.QueryRow(ctx, "SHOW "+name, pgx.QueryExecModeSimpleProtocol).Scan(&got); err != nil || got != want {
			t.Errorf("SHOW %s: %q %v, want %q", name, got, err, want)
		}
	}
	for opts, state := range map[string]string{
		`-c nonsense=1`:   "42704",
		`-c epsilon=-1`:   "22023",
		`-c epsilon`:      "22023",
		`-c noise=purple`: "22023",
	} {
		if _, err := pgx.Connect(ctx, f.dsn("alice", "secret")+` options='`+opts+`'`); sqlState(err) != state {
			t.Errorf("options %q: %v, want %s", opts, err, state)
		}
	}
}

// TestSessionSQLCommands: PREPARE/EXECUTE/DEALLOCATE, DECLARE/FETCH/CLOSE
// and COPY (SELECT ...) TO STDOUT, as ORMs, psycopg2's named cursors and
// psql's \copy send them; each inner statement runs (and is charged)
// once.
func TestSessionSQLCommands(t *testing.T) {
	f := newFixture(t, nil)
	c := f.connect(t, "alice", "secret")
	ctx := context.Background()
	mode := pgx.QueryExecModeSimpleProtocol
	if _, err := c.Exec(ctx, "PREPARE lab AS SELECT label FROM lookup WHERE code = $1", mode); err != nil {
		t.Fatal(err)
	}
	var label string
	if err := c.QueryRow(ctx, "EXECUTE lab('b')", mode).Scan(&label); err != nil || label != "Beta" {
		t.Errorf("EXECUTE: %q %v", label, err)
	}
	if _, err := c.Exec(ctx, "PREPARE lab AS SELECT 1", mode); sqlState(err) != "42P05" {
		t.Errorf("PREPARE twice: %v", err)
	}
	if _, err := c.Exec(ctx, "DEALLOCATE lab", mode); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "EXECUTE lab('b')", mode); sqlState(err) != "26000" {
		t.Errorf("EXECUTE after DEALLOCATE: %v", err)
	}
	if _, err := c.Exec(ctx, "DECLARE cur CURSOR FOR SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) g, COUNT(*) FROM t GROUP BY g", mode); err != nil {
		t.Fatal(err)
	}
	// fetch runs a FETCH and returns the group keys of the rows it got.
	fetch := func(stmt string) []string {
		rows, err := c.Query(ctx, stmt, mode)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var keys []string
		for rows.Next() {
			var g string
			var n int64
			if err := rows.Scan(&g, &n); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, g)
		}
		return keys
	}
	var got []string
	for i := 0; i < 3; i++ {
		got = append(got, fetch("FETCH 2 FROM cur")...)
	}
	if strings.Join(got, ",") != "a,b,c,d" {
		t.Errorf("FETCH: %v", got)
	}
	// Scrolling as PostgreSQL does (psycopg2's scrollable cursors send
	// MOVE): the rows released at DECLARE, nothing read or charged again.
	for _, step := range []struct{ stmt, want string }{
		{"FETCH LAST FROM cur", "d"}, {"FETCH PRIOR FROM cur", "c"}, {"FETCH BACKWARD 2 FROM cur", "b,a"},
		{"MOVE ABSOLUTE 0 IN cur", "MOVE 0"}, {"FETCH ALL cur", "a,b,c,d"}, {"MOVE -1 FROM cur", "MOVE 1"},
		{"FETCH RELATIVE 0 FROM cur", "d"}, {"FETCH ABSOLUTE -2 FROM cur", "c"}, {"FETCH FIRST FROM cur", "a"},
		{"FETCH FORWARD ALL FROM cur", "b,c,d"}, {"FETCH BACKWARD ALL FROM cur", "d,c,b,a"}, {"FETCH PRIOR FROM cur", ""},
		{"FETCH ABSOLUTE 9 FROM cur", ""}, {"FETCH -1 FROM cur", "d"},
	} {
		if strings.HasPrefix(step.stmt, "MOVE") {
			tag, err := c.Exec(ctx, step.stmt, mode)
			if err != nil || tag.String() != step.want {
				t.Errorf("%s: %v %v, want %s", step.stmt, tag, err, step.want)
			}
			continue
		}
		keys := fetch(step.stmt)
		if strings.Join(keys, ",") != step.want {
			t.Errorf("%s: %v, want %s", step.stmt, keys, step.want)
		}
	}
	if _, err := c.Exec(ctx, "CLOSE cur", mode); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tag, err := c.PgConn().CopyTo(ctx, &out, "COPY (SELECT code, label FROM lookup ORDER BY code) TO STDOUT WITH (FORMAT csv, HEADER)")
	if err != nil || tag.RowsAffected() != 2 || out.String() != "code,label\na,Alpha\nb,Beta\n" {
		t.Errorf("COPY: %q %v %v", out.String(), tag, err)
	}
	out.Reset()
	if _, err := c.PgConn().CopyTo(ctx, &out, "COPY (SELECT code, label FROM lookup ORDER BY code) TO STDOUT"); err != nil || out.String() != "a\tAlpha\nb\tBeta\n" {
		t.Errorf("COPY text: %q %v", out.String(), err)
	}
	// Spent: the cursor's query once.
	var spent float64
	var what string
	var delta float64
	rows, err := c.Query(ctx, "SHOW BUDGET", mode)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var a, b any
		_ = rows.Scan(&what, &a, &b)
		if what == "spent" {
			spent, _ = a.(float64)
			delta, _ = b.(float64)
		}
	}
	rows.Close()
	if math.Abs(spent-0.1) > 1e-9 || delta != 0 {
		t.Errorf("spent %v, want 0.1 (the cursor's query, once)", spent)
	}
}

// TestCatalogQueriesOfTools: the catalog queries GUI tools and drivers
// send on connect and when browsing (information_schema, pg_catalog,
// :: casts, current_user) are answered from an emulated catalog of the
// tables and columns.
func TestCatalogQueriesOfTools(t *testing.T) {
	f := newFixture(t, nil)
	c := f.connect(t, "alice", "secret")
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
		for q, want := range map[string]string{
			`SELECT current_user, session_user`: "[[alice alice]]",
			`SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY table_name`:                                                                                                                                  "[[big] [lookup] [t]]",
			`SELECT column_name, data_type, ordinal_position FROM information_schema.columns WHERE table_name = 't' ORDER BY ordinal_position`:                                                                                                  "[[i bigint 1] [x bigint 2] [g text 3] [y double precision 4]]",
			`SELECT schema_name FROM information_schema.schemata ORDER BY 1`:                                                                                                                                                                    "[[information_schema] [main] [pg_catalog]]",
			`SELECT n.nspname, c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r'::"char" ORDER BY 2`:                                                                          "[[main big] [main lookup] [main t]]",
			`SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid WHERE c.relname = 't' AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`: "[[i bigint] [x bigint] [g text] [y double precision]]",
			`SELECT typname FROM pg_catalog.pg_type WHERE oid = 701::oid`:                                                                                                                                                                       "[[float8]]",
			`SELECT datname FROM pg_catalog.pg_database`:                                                                                                                                                                                        "[[dpsql]]",
		} {
			rows, err := c.Query(ctx, q, mode)
			if err != nil {
				t.Errorf("%s: %v", q, err)
				continue
			}
			var got [][]any
			for rows.Next() {
				vals, _ := rows.Values()
				got = append(got, vals)
			}
			rows.Close()
			if fmt.Sprint(got) != want {
				t.Errorf("mode %v: %s:\n%v\nwant %s", mode, q, got, want)
			}
		}
	}
	// The emulated catalog is all such a query can read: no ATTACH of the
	// database file, no PRAGMA, no write.
	for _, q := range []string{
		`ATTACH DATABASE 's.db' AS pg_catalog_x`,
		`SELECT * FROM pg_catalog.pg_class; ATTACH DATABASE 's.db' AS x`,
		`PRAGMA pg_catalog.table_info(pg_class)`,
		`DELETE FROM pg_catalog.pg_class`,
	} {
		if _, err := c.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err == nil {
			t.Errorf("%s: accepted", q)
		}
	}
}

// TestJDBC drives the server from PostgreSQL's JDBC driver (Debian's
// libpostgresql-jdbc-java with a headless JDK), which BI tools use:
// DatabaseMetaData.getSchemas/getTables/getColumns (answered by the
// emulated catalog), the calls DBeaver makes opening a table
// (getPrimaryKeys, getIndexInfo, getImportedKeys/getExportedKeys:
// none; getTypeInfo; getFunctions: none), a PreparedStatement with a parameter, and
// ResultSetMetaData types. It skips without Java and the driver, except
// in CI, whose script installs them.
func TestJDBC(t *testing.T) {
	java, err := exec.LookPath("java")
	jar := "/usr/share/java/postgresql.jar"
	if _, jerr := os.Stat(jar); err != nil || jerr != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("java or the PostgreSQL JDBC driver is not installed; .ci/run installs default-jdk-headless and libpostgresql-jdbc-java")
		}
		t.Skip("java and /usr/share/java/postgresql.jar not found (apt-get install default-jdk-headless libpostgresql-jdbc-java): the JDBC test is skipped")
	}
	f := newFixture(t, nil)
	url := "jdbc:postgresql://" + f.addr + "/dpsql?sslmode=disable"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, java, "-cp", jar, "testdata/jdbc/Probe.java", url, "alice", "secret").CombinedOutput()
	if err != nil {
		t.Fatalf("java: %v\n%s", err, out)
	}
	want := `product PostgreSQL ` + server.ServerVersion + `
schema information_schema
schema main
schema pg_catalog
table main.big
table main.lookup
table main.t
column i int8 -5
column x int8 -5
column g text 12
column y float8 8
primary keys 0
indexes 0
imported keys 0
exported keys 0
types true text true
functions true
meta n int8
meta avg float8
row true
`
	if string(out) != want {
		t.Errorf("JDBC:\n%s\nwant:\n%s", out, want)
	}
}

// TestNodePg drives the server from Node's pg client (the npm package;
// .ci/run installs it into a cache directory and sets NODE_PATH). It
// skips without node and pg, except in CI.
func TestNodePg(t *testing.T) {
	node, err := exec.LookPath("node")
	if err == nil {
		err = exec.Command(node, "-e", "require('pg')").Run()
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node with the pg package is not installed; .ci/run installs nodejs, npm and pg")
		}
		t.Skip("node with the pg package not found (npm install pg, then NODE_PATH): the Node test is skipped")
	}
	f := newFixture(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "testdata/node/probe.js", f.addr).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	want := "fields count:20,mean:701\ncount true\nlabel Beta\nrefused ZD003\n"
	if string(out) != want {
		t.Errorf("node pg:\n%s\nwant:\n%s", out, want)
	}
}

// TestSessionCommandsCannotRecurse: no form of PREPARE, EXECUTE, DECLARE
// and COPY can run itself (PREPARE a AS EXECUTE a once overflowed the
// stack and ended every session): each is refused with a syntax error,
// the connection goes on, and another analyst's session is untouched.
func TestSessionCommandsCannotRecurse(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c := f.connect(t, "alice", "secret")
	other := f.connect(t, "bob", "secret")
	ctx := context.Background()
	mode := pgx.QueryExecModeSimpleProtocol
	for _, q := range []string{
		"PREPARE a AS EXECUTE a",
		"PREPARE b AS EXECUTE c",
		"PREPARE b AS /* x */ ( EXECUTE c )",
		"PREPARE d AS PREPARE e AS SELECT 1",
		"PREPARE f AS COPY (EXECUTE f) TO STDOUT",
		"DECLARE cur CURSOR FOR EXECUTE a",
		"DECLARE cur CURSOR FOR FETCH ALL FROM cur",
		"PREPARE g AS DECLARE cur CURSOR FOR EXECUTE g",
	} {
		if _, err := c.Exec(ctx, q, mode); sqlState(err) != "42601" {
			t.Errorf("%s: %v, want a syntax error (42601)", q, err)
		}
	}
	var out bytes.Buffer
	if _, err := c.PgConn().CopyTo(ctx, &out, "COPY (EXECUTE a) TO STDOUT"); sqlState(err) != "42601" {
		t.Errorf("COPY (EXECUTE a): %v", err)
	}
	// Mutual recursion cannot be set up: each PREPARE above was refused,
	// so none of these names exists.
	for _, name := range []string{"a", "b", "c", "f", "g"} {
		if _, err := c.Exec(ctx, "EXECUTE "+name, mode); sqlState(err) != "26000" {
			t.Errorf("EXECUTE %s: %v, want 26000 (no such prepared statement)", name, err)
		}
	}
	for _, conn := range []*pgx.Conn{c, other} {
		var label string
		if err := conn.QueryRow(ctx, "SELECT label FROM lookup WHERE code = 'a'", mode).Scan(&label); err != nil || label != "Alpha" {
			t.Errorf("after the refusals: %q %v", label, err)
		}
	}
}

// TestCatalogQueriesAreBounded: a catalog query (answered on the emulated
// catalog, beside the engine) is bounded like any statement: in time by
// the session's statement_timeout and by a CancelRequest, in what it may
// build (no function whose result outgrows its arguments, no recursion,
// at most 32 KB of text) and in the answer it returns; the connection and
// the other sessions go on.
func TestCatalogQueriesAreBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *server.Config) { c.StatementTimeout = 0 })
	ctx := context.Background()
	c := f.connect(t, "alice", "secret")
	other := f.connect(t, "bob", "secret")
	mode := pgx.QueryExecModeSimpleProtocol
	cross := func(n int) string {
		var from []string
		for i := 0; i < n; i++ {
			from = append(from, fmt.Sprintf("pg_catalog.pg_attribute a%d", i))
		}
		return "SELECT COUNT(*) FROM " + strings.Join(from, ", ")
	}
	for q, code := range map[string]string{
		"SELECT length(zeroblob(1000000000)) FROM pg_catalog.pg_class":            "0A000",
		"SELECT length(printf('%.*c', 1000000000, 'x')) FROM pg_catalog.pg_class": "0A000",
		"SELECT length(replace(replace(replace(relname, 'o', '" + strings.Repeat("o", 1000) + "'), 'o', '" + strings.Repeat("o", 1000) + "'), 'o', 'oo')) FROM pg_catalog.pg_class": "54000",
		"SELECT length(group_concat(a.attname)) FROM pg_catalog.pg_attribute a, pg_catalog.pg_attribute b":                                                                          "0A000",
		"WITH RECURSIVE s(x) AS (SELECT 'ab' UNION ALL SELECT x || x FROM s) SELECT length(x) FROM s, pg_catalog.pg_class LIMIT 40":                                                 "0A000",
		"SELECT a.typname FROM pg_catalog.pg_type a, pg_catalog.pg_type b, pg_catalog.pg_type c, pg_catalog.pg_type d, pg_catalog.pg_type e":                                        "54000",
		"SELECT relname FROM pg_catalog.pg_class WHERE relname = '" + strings.Repeat("x", 40000) + "'":                                                                              "54000",
	} {
		if _, err := c.Exec(ctx, q, mode); sqlState(err) != code {
			t.Errorf("%.100s: %v, want %s", q, err, code)
		}
	}
	// What the emulation lacks is named in PostgreSQL's terms, never with
	// SQLite's own error (psql's \df, \du and \dx).
	for q, want := range map[string]string{
		"SELECT pg_catalog.pg_get_function_result(p.oid) FROM pg_catalog.pg_class p": "uses the function pg_get_function_result",
		"SELECT 1 FROM pg_catalog.pg_extension":                                      "uses the table pg_catalog.pg_extension",
		"SELECT ARRAY(SELECT 1) FROM pg_catalog.pg_class":                            "SQL beyond what the emulation reads",
	} {
		_, err := c.Exec(ctx, q, mode)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "SQL logic error") || strings.Contains(err.Error(), "(1)") {
			t.Errorf("%s: %v", q, err)
		}
	}
	// Time: statement_timeout, then a CancelRequest.
	if _, err := c.Exec(ctx, "SET statement_timeout = 300", mode); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.Exec(ctx, cross(12), mode); sqlState(err) != "57014" {
		t.Errorf("a catalog query past statement_timeout: %v, want 57014", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("statement_timeout of 300 ms stopped the catalog query after %v", d)
	}
	if _, err := c.Exec(ctx, "SET statement_timeout = 0", mode); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	start = time.Now()
	go func() {
		_, err := c.Exec(ctx, cross(12), mode)
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond)
	var label string
	if err := other.QueryRow(ctx, "SELECT label FROM lookup WHERE code = 'a'", mode).Scan(&label); err != nil || label != "Alpha" {
		t.Errorf("another session while a catalog query runs: %q %v", label, err)
	}
	if err := c.PgConn().CancelRequest(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; sqlState(err) != "57014" {
		t.Errorf("a cancelled catalog query: %v, want 57014", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the cancel took effect after %v", d)
	}
	if err := c.QueryRow(ctx, "SELECT relname FROM pg_catalog.pg_class WHERE relname = 'lookup'", mode).Scan(&label); err != nil || label != "lookup" {
		t.Errorf("a catalog query after the refusals: %q %v", label, err)
	}
}

// TestResetSetting: RESET of a dpsql setting gives it back the value the
// session started with (it used to be accepted and ignored), as RESET
// statement_timeout does for the timeout.
func TestResetSetting(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c := f.connect(t, "alice", "secret")
	ctx := context.Background()
	mode := pgx.QueryExecModeSimpleProtocol
	show := func(name string) string {
		var v string
		if err := c.QueryRow(ctx, "SHOW "+name, mode).Scan(&v); err != nil {
			t.Fatalf("SHOW %s: %v", name, err)
		}
		return v
	}
	for name, value := range map[string]string{"epsilon": "0.3", "delta": "1e-07", "noise": "'gaussian'", "statement_timeout": "250"} {
		before := show(name)
		if _, err := c.Exec(ctx, "SET "+name+" = "+value, mode); err != nil {
			t.Fatal(err)
		}
		if show(name) == before {
			t.Fatalf("SET %s = %s changed nothing (%s)", name, value, before)
		}
		if _, err := c.Exec(ctx, "RESET "+name, mode); err != nil {
			t.Fatal(err)
		}
		if got := show(name); got != before {
			t.Errorf("after RESET %s: %s, want %s", name, got, before)
		}
	}
}

// TestStatementTimeoutsTellTheTruth: 30 private queries over the wire at
// once under a 1 ms statement timeout: each either answers, or gets 57014
// whose detail says whether its ε was charged, and the ledger agrees with
// each (a charge is kept with outcome "unanswered: timed out" or
// "answered"; "nothing was charged" has no row). The timeout used to say
// "nothing was charged" for charges the ledger held as answered.
func TestStatementTimeoutsTellTheTruth(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(c *server.Config) { c.StatementTimeout = time.Millisecond })
	ctx := context.Background()
	const n = 30
	said := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		c := f.connect(t, "alice", "secret")
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := c.Exec(ctx, fmt.Sprintf("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.01) COUNT(*) FROM t WHERE x > %d", i), pgx.QueryExecModeSimpleProtocol)
			var pe *pgconn.PgError
			switch {
			case err == nil:
				said[i] = "answered"
			case errors.As(err, &pe) && pe.Code == "57014" && strings.Contains(pe.Detail, "nothing was charged"):
				said[i] = "none"
			case errors.As(err, &pe) && pe.Code == "57014" && strings.Contains(pe.Detail, "was charged"):
				said[i] = "unanswered"
			default:
				said[i] = fmt.Sprintf("unexpected: %v", err)
			}
		}(i)
	}
	wg.Wait()
	res, err := f.eng.Query(ctx, `SHOW LEDGER`)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[int][]string{}
	for _, row := range res.Rows {
		text := fmt.Sprint(row[3])
		var i int
		if k := strings.LastIndex(text, ">"); k >= 0 {
			if _, err := fmt.Sscanf(strings.TrimLeft(text[k+1:], " "), "%d", &i); err == nil {
				rows[i] = append(rows[i], fmt.Sprint(row[8]))
			}
		}
	}
	for i, s := range said {
		got := rows[i]
		switch {
		case strings.HasPrefix(s, "unexpected"):
			t.Errorf("query %d: %s", i, s)
		case s == "none" && len(got) != 0:
			t.Errorf("query %d said nothing was charged; the ledger has %v", i, got)
		case s == "answered" && (len(got) != 1 || got[0] != "answered"):
			t.Errorf("query %d was answered; the ledger has %v", i, got)
		case s == "unanswered" && (len(got) != 1 || !strings.HasPrefix(got[0], "unanswered")):
			t.Errorf("query %d said it was charged; the ledger has %v", i, got)
		}
	}
	t.Logf("outcomes: %v", said)
}

// TestLockOut: failed log-ins lock the user name out from the client's
// address (and, four times as many, the address), whatever password comes
// next; the lock ends with its window. The count is shared with another
// listener given the same access.Lockout. Every test client is on
// 127.0.0.1; failures counted for another address never refuse it.
func TestLockOut(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	later := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	lock := &access.Lockout{MaxFailures: 3, Window: 10 * time.Minute, Now: clock}
	f := newFixture(t, func(c *server.Config) { c.Lockout = lock })
	ctx := context.Background()
	for range 2 {
		if _, err := pgx.Connect(ctx, f.dsn("alice", "guess")); sqlState(err) != "28P01" {
			t.Fatalf("wrong password: %v", err)
		}
	}
	// Two failures of three: the right password still gets in, and
	// forgets alice's failures from here (not the address's).
	c := f.connect(t, "alice", "secret")
	c.Close(ctx)
	// Failures for alice from anywhere else (the console, another
	// client) never refuse her here.
	for range 5 {
		lock.Fail(access.Keys("alice", "10.9.9.9")...)
	}
	c = f.connect(t, "alice", "secret")
	c.Close(ctx)
	// Three failures for bob from here lock bob out from here.
	for range 3 {
		if _, err := pgx.Connect(ctx, f.dsn("bob", "guess")); sqlState(err) != "28P01" {
			t.Fatalf("wrong password: %v", err)
		}
	}
	if _, err := pgx.Connect(ctx, f.dsn("bob", "secret")); sqlState(err) != "28000" || !strings.Contains(err.Error(), "too many failed log-ins") {
		t.Errorf("bob during his lock-out: %v", err)
	}
	// Failures counted by another listener from this address add up to
	// 12 (2 + 3 + 7): now everyone here is refused.
	for i := range 7 {
		lock.Fail(access.Keys(fmt.Sprintf("m%d", i), "127.0.0.1")...)
	}
	if _, err := pgx.Connect(ctx, f.dsn("alice", "secret")); sqlState(err) != "28000" {
		t.Errorf("alice from a locked-out address: %v", err)
	}
	later(11 * time.Minute)
	c = f.connect(t, "bob", "secret")
	c.Close(ctx)
}

// TestEveryShowKindIsTheEngines: each of dpsql's own SHOW statements
// (parser.ShowKinds) is answered by the engine over the wire, in both
// protocols — SHOW WATCHES was taken for a PostgreSQL setting
// ("unrecognized configuration parameter") — and an unknown name is
// still PostgreSQL's 42704, naming dpsql's own.
func TestEveryShowKindIsTheEngines(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	c := f.connect(t, "alice", "secret")
	defer c.Close(ctx)
	for _, kind := range parser.ShowKinds {
		q := "SHOW " + kind
		if kind == "POLICY" {
			q += " t"
		}
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeDescribeExec} {
			rows, err := c.Query(ctx, q, mode)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
			}
			if err != nil && (sqlState(err) == "42704" || strings.Contains(err.Error(), "configuration parameter")) {
				t.Errorf("%s (mode %v): taken for a PostgreSQL setting: %v", q, mode, err)
			}
		}
	}
	_, err := c.Exec(ctx, "SHOW nosuch_setting")
	if sqlState(err) != "42704" || !strings.Contains(err.Error(), "WATCHES") {
		t.Errorf("SHOW nosuch_setting: %v", err)
	}
}
