// Package console is dpsql's web console for analysts: a page to log in
// with the analyst's password (checked against the stored SCRAM
// verifier), write queries with completion, see each answer as a table
// with its 95% intervals and as a chart with error bars, ask EXPLAIN for
// free, and watch the budget. It serves one engine over HTTP(S) beside
// (or without) the PostgreSQL wire server; analysts get analyst sessions
// only, so owner statements are refused as in the shell.
//
// Security: sessions are random tokens in HttpOnly, SameSite=Strict
// cookies (Secure with TLS); every state-changing request needs the
// session's CSRF token in a header, a JSON body and, when the browser
// sends one, an Origin of this host; failed log-ins are delayed and lock
// out the name and the client address after repeated failures; every
// response says no-store, and a strict Content-Security-Policy allows
// only the console's own script. docs/server.md has the rest.
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/access"
)

// Config configures a Console.
type Config struct {
	// Engine is an owner-mode engine on the database (as the wire
	// server's); each logged-in analyst gets an analyst session of it.
	Engine *dpsql.Engine
	// Secure marks cookies Secure: set it when the console is served over
	// TLS.
	Secure bool
	// StatementTimeout cancels a statement running that long (0: never);
	// a private query cancelled after its charge stays charged, and the
	// error says so.
	StatementTimeout time.Duration
	// IdleTimeout ends a session unused that long (0: 30 minutes).
	IdleTimeout time.Duration
	// MaxFailures failed log-ins for one name from one address (four
	// times as many from one address, whatever the names) within LockOut
	// lock it out for LockOut (0: 5 and 15 minutes).
	MaxFailures int
	// OwnerUser is the wire listener's owner name (dpsql serve
	// --owner-user): the console has no owner log-in, and its failures for
	// that name count against the client's address only.
	OwnerUser string
	LockOut   time.Duration
	// Lockout, when set, is the failure count to share with another
	// listener (dpsql serve gives the wire server the same one);
	// MaxFailures and LockOut are then its.
	Lockout *access.Lockout
	// FailureDelay is how long a failed log-in waits before its answer
	// (slows guessing; 0: none).
	FailureDelay time.Duration
	// MaxSessions caps the live sessions (0: 1000); a log-in past it is
	// refused.
	MaxSessions int
	// Logger receives a line per log-in, log-out and statement (analyst,
	// statement, cost, duration; never result values). nil: none.
	Logger *slog.Logger
	// Now is the clock (nil: time.Now), for tests of expiry and lock-out.
	Now func() time.Time
}

// Console is an http.Handler serving the page and its API.
type Console struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux

	mu       sync.Mutex
	sessions map[string]*session // by cookie token
	closed   bool
	accounts *access.Accounts
	lockout  *access.Lockout
}

// session is one logged-in analyst in one browser.
type session struct {
	token, csrf string
	analyst     string
	db          *dpsql.Session
	lastSeen    time.Time

	// run serializes the session's statements; running cancels the one
	// running (Cancel, log-out, shutdown).
	run     sync.Mutex
	mu      sync.Mutex
	running context.CancelFunc
	history []HistoryEntry
}

// HistoryEntry is one statement of a session's history.
type HistoryEntry struct {
	Statement string    `json:"statement"`
	At        time.Time `json:"at"`
	Epsilon   float64   `json:"epsilon"`
	Delta     float64   `json:"delta"`
	// Cached: a repeat answered from the cache, free.
	Cached bool   `json:"cached"`
	Error  string `json:"error,omitempty"`
	// Explain: EXPLAIN, free.
	Explain bool `json:"explain,omitempty"`
}

// cookieName is the session cookie's name.
const cookieName = "dpsql_session"

// New returns a console on cfg.Engine.
func New(cfg Config) *Console {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Minute
	}
	if cfg.MaxFailures <= 0 {
		cfg.MaxFailures = 5
	}
	if cfg.LockOut <= 0 {
		cfg.LockOut = 15 * time.Minute
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 1000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := &Console{cfg: cfg, log: lg, sessions: map[string]*session{}, accounts: access.NewAccounts(cfg.Engine, "", ""),
		lockout: cfg.Lockout}
	if c.lockout == nil {
		c.lockout = &access.Lockout{MaxFailures: cfg.MaxFailures, Window: cfg.LockOut, Now: cfg.Now}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", c.page)
	mux.HandleFunc("GET /static/{file}", c.static)
	mux.HandleFunc("POST /api/login", c.login)
	mux.HandleFunc("POST /api/logout", c.authed(c.logout))
	mux.HandleFunc("GET /api/session", c.authed(c.whoami))
	mux.HandleFunc("GET /api/schema", c.authed(c.schema))
	mux.HandleFunc("GET /api/budget", c.authed(c.budget))
	mux.HandleFunc("GET /api/history", c.authed(c.historyOf))
	mux.HandleFunc("POST /api/query", c.authed(c.query))
	mux.HandleFunc("POST /api/explain", c.authed(c.explain))
	mux.HandleFunc("POST /api/cancel", c.authed(c.cancel))
	c.mux = mux
	return c
}

// ServeHTTP serves the console, with the headers every answer carries.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
	if c.cfg.Secure {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
	c.mux.ServeHTTP(w, r)
}

// Close cancels every running statement and ends every session; later
// requests are refused.
func (c *Console) Close() {
	c.mu.Lock()
	c.closed = true
	sessions := c.sessions
	c.sessions = map[string]*session{}
	c.mu.Unlock()
	for _, s := range sessions {
		s.cancelRunning()
	}
}

// apiError is an error answer: {"error": message}.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		writeJSON(w, ae.status, map[string]string{"error": ae.msg})
		return
	}
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
}

// checkRequest is what every state-changing request must pass: a JSON
// body, and an Origin (when the browser sends one) of this host.
func checkRequest(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return &apiError{http.StatusUnsupportedMediaType, "requests must send JSON (Content-Type: application/json)"}
	}
	if o := r.Header.Get("Origin"); o != "" {
		host := strings.TrimPrefix(strings.TrimPrefix(o, "https://"), "http://")
		if host != r.Host {
			return &apiError{http.StatusForbidden, "cross-origin request refused"}
		}
	}
	return nil
}

// decode reads a request's JSON body (at most 1 MB) into v.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &apiError{http.StatusBadRequest, "malformed request: " + err.Error()}
	}
	return nil
}

func newToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// login checks an analyst's password against the stored verifier (a
// decoy for unknown names: both fail alike) and starts a session.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if err := checkRequest(r); err != nil {
		writeError(w, err)
		return
	}
	var req struct {
		User     string `json:"user"`
		Password string `json:"password"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	keys := access.Keys(req.User, r.RemoteAddr)
	if c.cfg.OwnerUser != "" && req.User == c.cfg.OwnerUser {
		// The console has no owner log-in: a guess at the owner's name
		// here counts against the address only, never the owner's pair
		// keys that the wire listener checks.
		keys = keys[1:]
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		writeError(w, &apiError{http.StatusServiceUnavailable, "the console is shutting down"})
		return
	}
	if until, locked := c.lockout.Locked(keys...); locked {
		c.log.Warn("console log-in refused: locked out", "remote", r.RemoteAddr, "user", req.User)
		mins := int(until.Sub(c.cfg.Now()).Minutes()) + 1
		// As the wire listener says it: which pair is locked is not told
		// (it would say whether a name is being guessed at), but that the
		// lock is on the name or the address — a colleague behind the same
		// address is locked out too — and when it ends.
		writeError(w, &apiError{http.StatusTooManyRequests, fmt.Sprintf("too many failed log-ins for this analyst name or from this address (a colleague's guesses from the same network count too), so this log-in was not checked: try again after %s (in %d minute%s)",
			until.UTC().Format("15:04 UTC"), mins, map[bool]string{true: "", false: "s"}[mins == 1])})
		return
	}
	ok, err := c.accounts.CheckAnalyst(r.Context(), req.User, req.Password)
	if err != nil {
		writeError(w, &apiError{http.StatusInternalServerError, "log-in failed to start"})
		return
	}
	if !ok {
		c.lockout.Fail(keys...)
		c.log.Warn("console log-in failed", "remote", r.RemoteAddr, "user", req.User)
		time.Sleep(c.cfg.FailureDelay)
		writeError(w, &apiError{http.StatusUnauthorized, "wrong analyst name or password"})
		return
	}
	db, err := c.cfg.Engine.NewSession(dpsql.SessionOptions{Analyst: req.User})
	if err != nil {
		writeError(w, &apiError{http.StatusInternalServerError, err.Error()})
		return
	}
	s := &session{token: newToken(), csrf: newToken(), analyst: req.User, db: db, lastSeen: c.cfg.Now()}
	c.mu.Lock()
	c.expire()
	if len(c.sessions) >= c.cfg.MaxSessions {
		c.mu.Unlock()
		writeError(w, &apiError{http.StatusServiceUnavailable, fmt.Sprintf("too many sessions (the console allows %d)", c.cfg.MaxSessions)})
		return
	}
	c.sessions[s.token] = s
	c.mu.Unlock()
	c.lockout.Succeed(access.PairKey(req.User, r.RemoteAddr))
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.token, Path: "/", HttpOnly: true, Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode})
	c.log.Info("console log-in", "remote", r.RemoteAddr, "analyst", s.analyst)
	writeJSON(w, http.StatusOK, map[string]string{"analyst": s.analyst, "csrf": s.csrf})
}

// expire drops sessions idle past IdleTimeout (c.mu held).
func (c *Console) expire() {
	now := c.cfg.Now()
	for k, s := range c.sessions {
		if now.Sub(s.lastSeen) > c.cfg.IdleTimeout {
			delete(c.sessions, k)
			s.cancelRunning()
		}
	}
}

// authed wraps a handler that needs a session: the cookie's, live, and
// for POST the session's CSRF token in X-CSRF-Token and checkRequest's
// checks.
func (c *Console) authed(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ck, err := r.Cookie(cookieName)
		if err != nil {
			writeError(w, &apiError{http.StatusUnauthorized, "not logged in"})
			return
		}
		c.mu.Lock()
		c.expire()
		s := c.sessions[ck.Value]
		if s != nil {
			s.lastSeen = c.cfg.Now()
		}
		c.mu.Unlock()
		if s == nil {
			writeError(w, &apiError{http.StatusUnauthorized, "not logged in (the session ended)"})
			return
		}
		if r.Method != http.MethodGet {
			if err := checkRequest(r); err != nil {
				writeError(w, err)
				return
			}
			if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-CSRF-Token")), []byte(s.csrf)) != 1 {
				writeError(w, &apiError{http.StatusForbidden, "missing or wrong CSRF token"})
				return
			}
		}
		h(w, r, s)
	}
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	c.mu.Lock()
	delete(c.sessions, s.token)
	c.mu.Unlock()
	s.cancelRunning()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode})
	c.log.Info("console log-out", "remote", r.RemoteAddr, "analyst", s.analyst)
	writeJSON(w, http.StatusOK, map[string]string{"status": "logged out"})
}

func (c *Console) whoami(w http.ResponseWriter, _ *http.Request, s *session) {
	writeJSON(w, http.StatusOK, map[string]string{"analyst": s.analyst, "csrf": s.csrf})
}

// track makes cancel the running statement's (Cancel, log-out,
// shutdown) and returns what forgets it.
func (s *session) track(cancel context.CancelFunc) (untrack func()) {
	s.mu.Lock()
	s.running = cancel
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.running = nil
		s.mu.Unlock()
		cancel()
	}
}

func (s *session) cancelRunning() {
	s.mu.Lock()
	if s.running != nil {
		s.running()
	}
	s.mu.Unlock()
}

func (c *Console) cancel(w http.ResponseWriter, _ *http.Request, s *session) {
	s.mu.Lock()
	running := s.running != nil
	s.mu.Unlock()
	s.cancelRunning()
	writeJSON(w, http.StatusOK, map[string]bool{"cancelled": running})
}
