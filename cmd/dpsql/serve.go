package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/access"
	"github.com/dpsql/dpsql/auth"
	"github.com/dpsql/dpsql/console"
	"github.com/dpsql/dpsql/server"
)

const serveUsage = `Usage: dpsql serve --db FILE [--listen ADDR] [--http ADDR] [--tls-cert FILE --tls-key FILE] [options]

Serves the database to analysts over the PostgreSQL wire protocol: psql,
pgx, psycopg, JDBC and BI tools connect unchanged. Analysts are declared by
the owner (CREATE ANALYST name PASSWORD '...' BUDGET epsilon = E, with
dpsql --owner on the file, or over the wire as the owner user); each logs
in with SCRAM-SHA-256, gets only differentially private answers, and
spends a budget of their own, capped by the database's total. The file
stays with whoever runs the server.

With --tls-cert and --tls-key every connection must use TLS. With
--owner-user NAME, the user NAME may log in as the owner with the password
in the environment variable DPSQL_OWNER_PASSWORD (never on the command
line). SIGTERM or SIGINT shuts down gracefully: no new connections, idle
ones closed, running statements given --shutdown-grace to finish, then
cancelled (a private query cancelled after its charge stays charged).

With --http ADDR it also serves the web console there (--listen off: the
console alone): analysts log in with the same name and password, write
queries with completion, see each answer as a table with its 95% intervals
and as a chart with error bars, ask EXPLAIN for free and watch their budget.
Owner statements are never reachable from it. With --tls-cert and --tls-key
the console is HTTPS only.

Each statement is logged (analyst, statement, cost, duration; never result
values) to standard error, or to --log FILE. docs/server.md has the rest.

Options:
`

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dpsql serve", flag.ContinueOnError)
	f := defineServeFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), serveUsage)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, "dpsql serve", func() error { return fs.Parse(args) }, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "error: unexpected argument %q (see dpsql serve --help)\n", fs.Arg(0))
		return 2
	}
	cfg, closeLog, code, ok := f.config(stderr)
	if !ok {
		return code
	}
	defer closeLog()
	eng, code, ok := f.open(stderr)
	if !ok {
		return code
	}
	defer eng.Close()
	cfg.Engine = eng
	return f.serve(ctx, cfg, stderr)
}

// serveFlags are dpsql serve's options.
type serveFlags struct {
	db          *string
	state       *string
	listen      *string
	httpAddr    *string
	cert        *string
	key         *string
	ownerUser   *string
	maxConns    *int
	idle        *time.Duration
	stmtTimeout *time.Duration
	grace       *time.Duration
	authDelay   *time.Duration
	logFile     *string
}

func defineServeFlags(fs *flag.FlagSet) *serveFlags {
	f := &serveFlags{}
	f.db = fs.String("db", "", "database `FILE` to serve (required; it must exist), or postgres://USER@HOST:PORT/DBNAME with --state")
	f.state = fs.String("state", "", "with a PostgreSQL --db: the SQLite `FILE` that keeps its table mirrors and answer cache (default: one in ~/.cache/dpsql; policies, budget and analysts live in PostgreSQL, schema dpsql)")
	f.listen = fs.String("listen", "127.0.0.1:5433", "`ADDRESS` of the PostgreSQL wire protocol listener (off: none, with --http)")
	f.httpAddr = fs.String("http", "", "also serve the web console for analysts on `ADDRESS` (e.g. 127.0.0.1:8080)")
	f.cert = fs.String("tls-cert", "", "TLS certificate `FILE` (PEM); with --tls-key, TLS is required")
	f.key = fs.String("tls-key", "", "TLS private key `FILE` (PEM)")
	f.ownerUser = fs.String("owner-user", "", "a user `NAME` that logs in as the owner, with the password in $DPSQL_OWNER_PASSWORD")
	f.maxConns = fs.Int("max-conns", 100, "most concurrent connections")
	f.idle = fs.Duration("idle-timeout", 0, "close connections idle this long (e.g. 30m; 0: never)")
	f.stmtTimeout = fs.Duration("statement-timeout", 0, "cancel statements running this long (e.g. 5m; 0: never)")
	f.grace = fs.Duration("shutdown-grace", 30*time.Second, "how long running statements may finish after SIGTERM")
	f.authDelay = fs.Duration("auth-failure-delay", time.Second, "wait this long before answering a failed login (slows password guessing; 0: no wait)")
	f.logFile = fs.String("log", "", "write the log to `FILE` instead of standard error")
	return f
}

// config checks the options and builds the servers' configuration: TLS,
// the owner user, the log (closeLog closes its file). ok false: exit
// with code.
func (f *serveFlags) config(stderr io.Writer) (cfg server.Config, closeLog func(), code int, ok bool) {
	fail := func(code int, err any) (server.Config, func(), int, bool) {
		fmt.Fprintln(stderr, "error:", err)
		return server.Config{}, nil, code, false
	}
	switch {
	case *f.db == "":
		return fail(2, "--db FILE is required")
	case (*f.cert == "") != (*f.key == ""):
		return fail(2, "--tls-cert and --tls-key go together")
	case *f.listen == "off" && *f.httpAddr == "":
		return fail(2, "--listen off leaves nothing to serve: add --http ADDR for the web console")
	}
	// One count of failed log-ins for both listeners: 5 per user name or
	// client address in 15 minutes lock it out for 15 minutes.
	cfg = server.Config{MaxConns: *f.maxConns, IdleTimeout: *f.idle, StatementTimeout: *f.stmtTimeout, AuthFailureDelay: *f.authDelay, Lockout: &access.Lockout{}}
	if *f.cert != "" {
		pair, err := tls.LoadX509KeyPair(*f.cert, *f.key)
		if err != nil {
			return fail(1, err)
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	if *f.ownerUser != "" {
		pw := os.Getenv("DPSQL_OWNER_PASSWORD")
		if pw == "" {
			return fail(2, "--owner-user needs the owner's password in $DPSQL_OWNER_PASSWORD")
		}
		v, err := auth.NewVerifier(pw)
		if err != nil {
			return fail(1, err)
		}
		cfg.OwnerUser, cfg.OwnerVerifier = *f.ownerUser, v
	}
	logOut, closeLog := stderr, func() {}
	if *f.logFile != "" {
		file, err := os.OpenFile(*f.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fail(1, err)
		}
		logOut, closeLog = file, func() { file.Close() }
	}
	cfg.Logger = slog.New(slog.NewTextHandler(logOut, nil))
	return cfg, closeLog, 0, true
}

// open opens the served database as its owner: analysts' sessions are
// analyst sessions of it, and only the owner user may run owner
// statements. The database must exist (a PostgreSQL or DuckDB one's state
// file is made when missing).
func (f *serveFlags) open(stderr io.Writer) (*dpsql.Engine, int, bool) {
	engOpts := dpsql.Options{Owner: true}
	path, err := stateFile(*f.db, *f.state, &engOpts)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return nil, 2, false
	}
	if engOpts.DuckDB != "" {
		if _, err := os.Stat(engOpts.DuckDB); err != nil {
			fmt.Fprintf(stderr, "error: %v (the owner creates the database first, e.g. with 'dpsql import --db %s --table t file.csv')\n", err, engOpts.DuckDB)
			return nil, 1, false
		}
	}
	if _, err := os.Stat(path); err != nil && engOpts.Postgres == "" && engOpts.DuckDB == "" {
		fmt.Fprintf(stderr, "error: %v (the owner creates the database first, e.g. with 'dpsql import')\n", err)
		return nil, 1, false
	}
	eng, err := dpsql.Open(path, engOpts)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return nil, 1, false
	}
	return eng, 0, true
}

// serve runs the wire listener and the console until a signal, then
// shuts them down, giving running statements the grace period.
func (f *serveFlags) serve(ctx context.Context, cfg server.Config, stderr io.Writer) int {
	eng := cfg.Engine
	var err error
	var ln, hln net.Listener
	if *f.listen != "off" {
		if ln, err = net.Listen("tcp", *f.listen); err != nil {
			fmt.Fprintln(stderr, "error:", err)
			return 1
		}
	}
	if *f.httpAddr != "" {
		if hln, err = net.Listen("tcp", *f.httpAddr); err != nil {
			fmt.Fprintln(stderr, "error:", err)
			return 1
		}
	}
	sigs, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	done := make(chan error, 2)
	running := 0
	var srv *server.Server
	if ln != nil {
		srv = server.New(cfg)
		running++
		go func() { done <- srv.Serve(ln) }()
		tlsNote := "without TLS (SCRAM keeps passwords off the wire; answers travel in clear)"
		if cfg.TLS != nil {
			tlsNote = "TLS required"
		}
		fmt.Fprintf(stderr, "dpsql serve: %s on %s, %s; connect with: psql \"host=%s port=%s user=ANALYST\"\n", *f.db, ln.Addr(), tlsNote, reachableHost(ln.Addr()), portOf(ln.Addr()))
	}
	var web *console.Console
	var hsrv *http.Server
	if hln != nil {
		web = console.New(console.Config{Engine: eng, Secure: cfg.TLS != nil, StatementTimeout: *f.stmtTimeout, FailureDelay: *f.authDelay, Logger: cfg.Logger, Lockout: cfg.Lockout, OwnerUser: *f.ownerUser})
		limits := console.HTTPLimits{MaxConns: *f.maxConns}
		hsrv = console.NewHTTPServer(web, cfg.TLS, limits)
		hln = console.Listen(hln, limits)
		scheme := "http"
		if cfg.TLS != nil {
			scheme = "https"
			hln = tls.NewListener(hln, cfg.TLS)
		}
		running++
		go func() {
			if err := hsrv.Serve(hln); !errors.Is(err, http.ErrServerClosed) {
				done <- err
				return
			}
			done <- server.ErrServerClosed
		}()
		fmt.Fprintln(stderr, "dpsql serve: "+consoleLine(scheme, hln.Addr()))
	}
	select {
	case err := <-done:
		fmt.Fprintln(stderr, "error:", err)
		return 1
	case <-sigs.Done():
	}
	fmt.Fprintf(stderr, "dpsql serve: shutting down (running statements have %s to finish)\n", *f.grace)
	sctx, cancel := context.WithTimeout(context.Background(), *f.grace)
	defer cancel()
	code := 0
	if hsrv != nil {
		if err := hsrv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintln(stderr, "error:", err)
			code = 1
		}
		web.Close()
	}
	if srv != nil {
		if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintln(stderr, "error:", err)
			code = 1
		}
	}
	for ; running > 0; running-- {
		<-done
	}
	fmt.Fprintln(stderr, "dpsql serve: stopped")
	return code
}

func hostOf(a net.Addr) string {
	h, _, _ := net.SplitHostPort(a.String())
	return h
}

// reachableHost is a host a user on this machine can connect to at a:
// localhost when a listens on every address (0.0.0.0, ::), whose
// printed form is no address to type.
func reachableHost(a net.Addr) string {
	h := hostOf(a)
	if ip := net.ParseIP(h); ip != nil && ip.IsUnspecified() {
		return "localhost"
	}
	return h
}

// consoleLine is what serve says of its web console at a: the address to
// open (localhost, and that every address listens, when it does), and,
// without TLS, that log-in passwords travel in clear.
func consoleLine(scheme string, a net.Addr) string {
	host, every := reachableHost(a), ""
	if host != hostOf(a) {
		every = " (listening on every address of this machine)"
	}
	line := fmt.Sprintf("web console for analysts at %s://%s/%s", scheme, net.JoinHostPort(host, portOf(a)), every)
	if scheme == "http" {
		line += "; without TLS the analysts' passwords and answers cross the network in clear: give --tls-cert and --tls-key beyond this machine"
	}
	return line
}

func portOf(a net.Addr) string {
	_, p, _ := net.SplitHostPort(a.String())
	return p
}
