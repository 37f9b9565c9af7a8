// Package server is dpsql serve: a PostgreSQL wire-protocol server over
// one dpsql database, so that analysts connect with psql, pgx, psycopg,
// JDBC or a BI tool, authenticate with a password (SCRAM-SHA-256) and get
// only what the engine releases, each against a budget of their own.
//
// The protocol codec is github.com/jackc/pgx/v5/pgproto3; this package
// does the server's part: startup and TLS negotiation, authentication
// against the analysts the owner declared (CREATE ANALYST), the simple and
// extended query protocols, cancellation, and a small emulation of the
// pg_catalog queries that clients send (pgcatalog.go). Every statement
// runs in a dpsql session (dpsql.Engine.Session) as the connected analyst;
// the server never reads the database by any other path. docs/server.md
// describes it for operators.
package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/access"
	"github.com/dpsql/dpsql/auth"
	"github.com/jackc/pgx/v5/pgproto3"
)

// ServerVersion is what the server reports as server_version: clients
// pick their catalog queries by it, so it names the PostgreSQL release
// whose client queries the emulation answers.
const ServerVersion = "15.0 (dpsql)"

// Config configures a Server.
type Config struct {
	// Engine is an owner-mode engine on the database; each connection
	// gets a session of it.
	Engine *dpsql.Engine
	// TLS, when set, is offered to clients, and required: a connection
	// that does not upgrade to TLS is refused.
	TLS *tls.Config
	// OwnerUser and OwnerVerifier (a SCRAM verifier, auth.NewVerifier)
	// let one user log in as the owner; empty: nobody can.
	OwnerUser, OwnerVerifier string
	// MaxConns caps concurrent connections (0: 100).
	MaxConns int
	// IdleTimeout closes a connection idle for that long (0: never);
	// StatementTimeout cancels a statement running for that long (0:
	// never). A private query cancelled after its charge stays charged.
	IdleTimeout, StatementTimeout time.Duration
	// AuthFailureDelay is how long a failed password check waits before
	// the error is sent (0: none), to slow down guessing; the connection
	// keeps its slot meanwhile, so MaxConns bounds the guesses per delay.
	AuthFailureDelay time.Duration
	// Lockout counts failed log-ins per user name and per client address
	// and refuses a locked-out one before its password is checked (nil: a
	// Lockout of its own, 5 failures in 15 minutes). dpsql serve gives the
	// wire server and the web console one, so that guesses add up across
	// both.
	Lockout *access.Lockout
	// Logger receives a line per connection and per statement (analyst,
	// statement, cost, duration; never result values). nil: no logging.
	Logger *slog.Logger
}

// Server serves one database to many analysts.
type Server struct {
	cfg   Config
	log   *slog.Logger
	slots chan struct{}
	// sockets bounds every open connection, authenticated or not
	// (2·MaxConns + 8): a flood of connections that never finish their
	// startup would otherwise hold a goroutine and a socket each for the
	// 30 s startup deadline. Past it a new connection is closed at once.
	sockets chan struct{}

	mu      sync.Mutex
	conns   map[uint32]*conn
	lns     []net.Listener
	closing bool
	wg      sync.WaitGroup

	accounts *access.Accounts
}

// New returns a server; Serve starts it.
func New(cfg Config) *Server {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 100
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Lockout == nil {
		cfg.Lockout = &access.Lockout{}
	}
	return &Server{cfg: cfg, log: lg, slots: make(chan struct{}, cfg.MaxConns), sockets: make(chan struct{}, 2*cfg.MaxConns+8), conns: map[uint32]*conn{},
		accounts: access.NewAccounts(cfg.Engine, cfg.OwnerUser, cfg.OwnerVerifier)}
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("server closed")

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		select {
		case s.sockets <- struct{}{}:
		default:
			s.log.Warn("connection refused: too many open connections", "remote", nc.RemoteAddr().String())
			nc.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.sockets }()
			s.handle(nc)
		}()
	}
}

// Shutdown stops accepting connections, closes idle ones, and lets
// running statements finish until ctx ends; then it cancels them (a
// private query already charged stays charged: the ledger is consistent
// either way) and closes every connection.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for _, ln := range s.lns {
		ln.Close()
	}
	for _, c := range s.conns {
		c.shutdown(false)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for _, c := range s.conns {
		c.shutdown(true)
	}
	s.mu.Unlock()
	<-done
	return ctx.Err()
}

// register gives c a process id and secret key for cancel requests.
func (s *Server) register(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := binary.BigEndian.Uint32(b[:4]) & 0x7fffffff
		if _, taken := s.conns[id]; id != 0 && !taken {
			c.pid, c.secret = id, b[4:]
			s.conns[id] = c
			return
		}
	}
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.conns, c.pid)
	s.mu.Unlock()
}

// cancel handles a CancelRequest: it cancels the statement running on
// the connection with that process id, if the secret key matches.
func (s *Server) cancel(req *pgproto3.CancelRequest) {
	s.mu.Lock()
	c := s.conns[req.ProcessID]
	s.mu.Unlock()
	if c == nil || subtle.ConstantTimeCompare(c.secret, req.SecretKey) != 1 {
		return
	}
	c.cancelStatement()
}

// handle runs one client connection from startup to the end.
func (s *Server) handle(nc net.Conn) {
	defer nc.Close()
	c := &conn{srv: s, nc: nc, be: pgproto3.NewBackend(nc, nc), remote: nc.RemoteAddr().String()}
	if !c.startup() {
		return
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		c.fatal("53300", fmt.Sprintf("too many connections (the server allows %d)", s.cfg.MaxConns))
		return
	}
	if !c.authenticate() {
		return
	}
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		c.fatal("57P01", "the server is shutting down")
		return
	}
	defer s.unregister(c)
	s.log.Info("connection", "remote", c.remote, "analyst", c.who(), "tls", c.tls)
	c.serve()
	s.log.Info("disconnection", "remote", c.remote, "analyst", c.who())
}

// startup reads the startup packet, negotiating TLS (and refusing GSS
// encryption) on the way; it answers cancel requests. It reports whether
// a session should follow.
func (c *conn) startup() bool {
	cfg := c.srv.cfg
	_ = c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	defer c.nc.SetDeadline(time.Time{})
	for {
		msg, err := c.be.ReceiveStartupMessage()
		if err != nil {
			return false
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if cfg.TLS == nil || c.tls {
				if _, err := c.nc.Write([]byte{'N'}); err != nil {
					return false
				}
				continue
			}
			if _, err := c.nc.Write([]byte{'S'}); err != nil {
				return false
			}
			tc := tls.Server(c.nc, cfg.TLS)
			if err := tc.Handshake(); err != nil {
				return false
			}
			c.nc, c.tls = tc, true
			c.be = pgproto3.NewBackend(tc, tc)
		case *pgproto3.GSSEncRequest:
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return false
			}
		case *pgproto3.CancelRequest:
			c.srv.cancel(m)
			return false
		case *pgproto3.StartupMessage:
			c.params = m.Parameters
			c.user = m.Parameters["user"]
			if m.ProtocolVersion != pgproto3.ProtocolVersion30 {
				// Protocol 3.2's longer cancel keys are not needed here.
				c.be.Send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0})
			}
			if cfg.TLS != nil && !c.tls {
				c.fatal("28000", "this server requires TLS (sslmode=require): connections without it are refused")
				return false
			}
			if c.user == "" {
				c.fatal("28000", "no user name given")
				return false
			}
			return true
		default:
			return false
		}
	}
}

// authenticate runs SCRAM-SHA-256 for the startup's user against the
// stored verifier (or a decoy for unknown users, so that an unknown name
// and a wrong password look the same), then opens the session.
func (c *conn) authenticate() bool {
	ctx := context.Background()
	cfg := c.srv.cfg
	keys := access.Keys(c.user, c.remote)
	if until, locked := cfg.Lockout.Locked(keys...); locked {
		c.srv.log.Warn("authentication refused: locked out", "remote", c.remote, "user", c.user)
		time.Sleep(cfg.AuthFailureDelay)
		c.fatal("28000", fmt.Sprintf("too many failed log-ins for this user or from this address: try again after %s", until.UTC().Format("15:04 UTC")))
		return false
	}
	cred, known, owner, err := c.srv.accounts.Credentials(ctx, c.user)
	if err != nil {
		c.fatal("XX000", "authentication failed to start")
		return false
	}
	conv, err := auth.NewConversation(cred)
	if err != nil {
		c.fatal("XX000", "authentication failed to start")
		return false
	}
	failed := func() bool {
		cfg.Lockout.Fail(keys...)
		c.srv.log.Warn("authentication failed", "remote", c.remote, "user", c.user)
		time.Sleep(cfg.AuthFailureDelay)
		c.fatal("28P01", fmt.Sprintf("password authentication failed for user %q", c.user))
		return false
	}
	_ = c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	defer c.nc.SetDeadline(time.Time{})
	c.be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{"SCRAM-SHA-256"}})
	if c.be.Flush() != nil || c.be.SetAuthType(pgproto3.AuthTypeSASL) != nil {
		return false
	}
	msg, err := c.be.Receive()
	if err != nil {
		return false
	}
	first, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok || first.AuthMechanism != "SCRAM-SHA-256" {
		c.fatal("28000", "expected a SCRAM-SHA-256 exchange (this server accepts no other password method)")
		return false
	}
	reply, err := conv.Step(string(first.Data))
	if err != nil {
		return failed()
	}
	c.be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(reply)})
	if c.be.Flush() != nil || c.be.SetAuthType(pgproto3.AuthTypeSASLContinue) != nil {
		return false
	}
	if msg, err = c.be.Receive(); err != nil {
		return false
	}
	final, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return failed()
	}
	reply, err = conv.Step(string(final.Data))
	if err != nil || !conv.Valid() || !known {
		return failed()
	}
	cfg.Lockout.Succeed(keys[0])
	opts := dpsql.SessionOptions{Analyst: c.user}
	if owner {
		opts = dpsql.SessionOptions{Owner: true}
	}
	sess, err := cfg.Engine.NewSession(opts)
	if err != nil {
		c.fatal("XX000", err.Error())
		return false
	}
	c.sess, c.owner = sess, owner
	if code, msg := c.applyStartupOptions(); code != "" {
		c.fatal(code, msg)
		return false
	}
	c.be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte(reply)})
	c.be.Send(&pgproto3.AuthenticationOk{})
	c.register()
	return true
}

// register sends what a client expects after authentication: the
// parameters drivers check, the cancel key, and ReadyForQuery.
func (c *conn) register() {
	c.srv.register(c)
	for _, p := range [][2]string{
		{"server_version", ServerVersion},
		{"server_encoding", "UTF8"},
		{"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"},
		{"IntervalStyle", "postgres"},
		{"TimeZone", "UTC"},
		{"integer_datetimes", "on"},
		{"standard_conforming_strings", "on"},
		{"is_superuser", "off"},
		{"session_authorization", c.user},
		{"application_name", c.params["application_name"]},
	} {
		c.be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
	}
	c.be.Send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret})
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	_ = c.be.Flush()
}

// applyStartupOptions applies the startup packet's options (libpq's
// options=-c name=value, PGOPTIONS): dpsql's settings and
// statement_timeout take effect, the PostgreSQL settings the server
// reports are accepted, and any other name is refused, as PostgreSQL
// refuses it — never silently ignored. It returns a SQLSTATE and message
// for the FATAL, or "".
func (c *conn) applyStartupOptions() (code, msg string) {
	for _, opt := range startupOptions(c.params["options"]) {
		name, value, ok := strings.Cut(opt, "=")
		if !ok {
			return "22023", fmt.Sprintf("invalid startup option %q (options take -c name=value)", opt)
		}
		name = strings.ToLower(strings.ReplaceAll(name, "-", "_"))
		switch {
		case name == "statement_timeout":
			if err := c.setStatementTimeout(value); err != nil {
				return "22023", err.Error()
			}
		case engineSettings[name]:
			if _, err := c.sess.Query(context.Background(), "SET "+name+" = "+settingLiteral(value)); err != nil {
				return dpsql.SQLState(err), fmt.Sprintf("startup option %s=%s: %v", name, value, err)
			}
		case serverSettings[name] != "" || name == "application_name":
		default:
			return "42704", fmt.Sprintf("unrecognized configuration parameter %q in the startup options (dpsql's: %s, statement_timeout)", name, strings.Join(dpsql.SettingNames(), ", "))
		}
	}
	return "", ""
}

// startupOptions splits libpq's options string into name=value settings:
// "-c a=1 -c b=2", "-ca=1", "--a=1"; a backslash escapes the next
// character (a space inside a value).
func startupOptions(s string) []string {
	var words []string
	var w strings.Builder
	escaped, in := false, false
	for _, r := range s {
		switch {
		case escaped:
			w.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped, in = true, true
		case r == ' ' || r == '\t':
			if in {
				words, in = append(words, w.String()), false
				w.Reset()
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	var out []string
	for i := 0; i < len(words); i++ {
		switch word := words[i]; {
		case word == "-c" && i+1 < len(words):
			out = append(out, words[i+1])
			i++
		case strings.HasPrefix(word, "-c"):
			out = append(out, word[2:])
		case strings.HasPrefix(word, "--"):
			out = append(out, word[2:])
		default:
			out = append(out, word)
		}
	}
	return out
}

// settingLiteral writes a startup option's value as a SET value: a
// number or on/off as is, anything else as a string literal.
func settingLiteral(v string) string {
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return v
	}
	switch strings.ToLower(v) {
	case "on", "off", "true", "false":
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}
