package console_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/access"
	"github.com/dpsql/dpsql/console"
	_ "modernc.org/sqlite"
)

// harness is one database, its console and an HTTP test server.
type harness struct {
	eng *dpsql.Engine
	con *console.Console
	srv *httptest.Server
	now *clock
}

// clock is a settable time for lock-out and expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newHarness builds a database with a private table visits (1,000 rows:
// dept from a public domain, age bounded to [0, 100]), a public table big
// (2,000 rows, k = 0: joins of it take long), a budget of ε = 10
// and analysts alice (ε = 1), bob (ε = 1) and carol (no budget), all with
// password 'wonderland'.
func newHarness(t testing.TB, opts dpsql.Options, mutate func(*console.Config)) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE visits (id INTEGER, dept TEXT, age INTEGER);
		WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)
		INSERT INTO visits SELECT i, substr('ABCD', i % 4 + 1, 1), i % 90 FROM n;
		CREATE TABLE big (n INTEGER, k INTEGER);
		WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 1999)
		INSERT INTO big SELECT n, 0 FROM k;`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	opts.Owner = true
	eng, err := dpsql.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	err = eng.Run(context.Background(), `CREATE PRIVACY POLICY ON visits;
		ALTER PRIVACY POLICY ON visits SET BOUNDS age (0, 100);
		ALTER PRIVACY POLICY ON visits SET DOMAIN dept ('A', 'B', 'C', 'D');
		ALTER TABLE big SET PUBLIC;
		SET BUDGET epsilon = 10, delta = 0;
		CREATE ANALYST alice PASSWORD 'wonderland' BUDGET epsilon = 1;
		CREATE ANALYST bob PASSWORD 'wonderland' BUDGET epsilon = 1;
		CREATE ANALYST carol PASSWORD 'wonderland';`, func(*dpsql.Result) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{eng: eng, now: &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}}
	cfg := console.Config{Engine: eng, Now: h.now.Now}
	if mutate != nil {
		mutate(&cfg)
	}
	h.con = console.New(cfg)
	h.srv = httptest.NewServer(h.con)
	t.Cleanup(func() { h.srv.Close(); h.con.Close() })
	return h
}

// client is one browser: a cookie jar and the session's CSRF token.
type client struct {
	t    testing.TB
	base string
	hc   *http.Client
	csrf string
}

func (h *harness) client(t testing.TB) *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: h.srv.URL, hc: &http.Client{Jar: jar}}
}

// do sends a request with a JSON body (nil: none) and the client's CSRF
// token, and decodes the JSON answer.
func (c *client) do(method, path string, body any, header map[string]string) (int, map[string]any) {
	c.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.csrf != "" {
		req.Header.Set("X-CSRF-Token", c.csrf)
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (c *client) login(user, password string) (int, map[string]any) {
	c.t.Helper()
	code, out := c.do("POST", "/api/login", map[string]string{"user": user, "password": password}, nil)
	if code == http.StatusOK {
		c.csrf = out["csrf"].(string)
	}
	return code, out
}

func (c *client) mustLogin(user string) {
	c.t.Helper()
	if code, out := c.login(user, "wonderland"); code != http.StatusOK {
		c.t.Fatalf("log-in as %s: %d %v", user, code, out)
	}
}

func (c *client) query(sql string, eps float64) (int, map[string]any) {
	c.t.Helper()
	return c.do("POST", "/api/query", map[string]any{"sql": sql, "epsilon": eps}, nil)
}

// spent is the analyst's ε spent, from the engine's own view.
func (h *harness) spent(t testing.TB, analyst string) float64 {
	t.Helper()
	s, err := h.eng.NewSession(dpsql.SessionOptions{Analyst: analyst})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.BudgetStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Spent.Epsilon
}

func TestGroupedQueryAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dpsql.Options{}, nil)
	c := h.client(t)
	c.mustLogin("alice")
	code, out := c.query(`SELECT dept, COUNT(*) AS n, AVG(age) AS mean_age FROM visits GROUP BY dept`, 0.5)
	if code != http.StatusOK {
		t.Fatalf("query: %d %v", code, out)
	}
	rel := out["released"].(map[string]any)
	rows := rel["rows"].([]any)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want the 4 departments", len(rows))
	}
	text := rel["text"].([]any)
	ivs := rel["noise_confidence_intervals"].([]any)
	for i := range rows {
		cell := text[i].([]any)[1].(string)
		if !strings.Contains(cell, "±") {
			t.Errorf("row %d count shows %q, without its interval", i, cell)
		}
		iv := ivs[i].([]any)[1].(map[string]any)
		n := rows[i].([]any)[1].(float64)
		if lo, hi := iv["lower_bound"].(float64), iv["upper_bound"].(float64); !(lo <= n && n <= hi) {
			t.Errorf("row %d: value %v outside its interval [%v, %v]", i, n, lo, hi)
		}
	}
	ch := out["chart"].(map[string]any)
	if ch["kind"] != "bars" || ch["whiskers"].(float64) != 8 || !strings.HasPrefix(ch["image"].(string), "data:image/svg+xml;base64,") {
		t.Errorf("chart %v %v, want bars with 8 whiskers and an SVG image", ch["kind"], ch["whiskers"])
	}
	b := out["budget"].(map[string]any)["own"].(map[string]any)
	if b["spent_epsilon"].(float64) != 0.5 || b["remaining_epsilon"].(float64) != 0.5 {
		t.Errorf("budget after the query: %v", b)
	}
	if got := h.spent(t, "alice"); got != 0.5 {
		t.Errorf("the ledger says alice spent %v, want 0.5", got)
	}
	// The repeat is answered from the cache, free, and the history says so.
	code, out = c.query(`SELECT dept, COUNT(*) AS n, AVG(age) AS mean_age FROM visits GROUP BY dept`, 0.5)
	if code != http.StatusOK || out["released"].(map[string]any)["cached"] != true {
		t.Errorf("repeat: %d, cached %v", code, out["released"])
	}
	_, hist := c.do("GET", "/api/history", nil, nil)
	entries := hist["history"].([]any)
	if len(entries) != 2 || entries[1].(map[string]any)["cached"] != true || entries[0].(map[string]any)["epsilon"].(float64) != 0.5 {
		t.Errorf("history: %v", entries)
	}
	// EXPLAIN is free.
	code, out = c.do("POST", "/api/explain", map[string]any{"sql": "SELECT AVG(age) FROM visits", "epsilon": 0.3}, nil)
	if code != http.StatusOK || out["released"].(map[string]any)["epsilon"].(float64) != 0 {
		t.Errorf("explain: %d %v", code, out)
	}
	// A target error instead of ε: the smallest ε with a 95% error ≤ 20.
	code, out = c.do("POST", "/api/query", map[string]any{"sql": "SELECT COUNT(*) FROM visits WHERE age > 30", "target_error": 20.0}, nil)
	if code != http.StatusOK {
		t.Fatalf("target error: %d %v", code, out)
	}
	if eps := out["released"].(map[string]any)["epsilon"].(float64); eps <= 0 || eps >= 0.5 {
		t.Errorf("target error 20 spent ε=%v", eps)
	}
	if got := h.spent(t, "alice"); got >= 1 {
		t.Errorf("spent %v", got)
	}
}

func TestRefusalsChargeNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dpsql.Options{}, nil)
	c := h.client(t)
	c.mustLogin("alice")
	for _, tc := range []struct {
		name string
		body any
		code int
		want string
	}{
		{"raw rows", map[string]any{"sql": "SELECT age FROM visits", "epsilon": 0.1}, 400, "visits"},
		{"owner statement", map[string]any{"sql": "SET BUDGET epsilon = 100", "epsilon": 0.1}, 400, "owner"},
		{"analyst accounts", map[string]any{"sql": "CREATE ANALYST mallory PASSWORD 'x' BUDGET epsilon = 5"}, 400, "owner"},
		{"the ledger", map[string]any{"sql": "SHOW LEDGER"}, 400, "owner"},
		{"a refused first of two statements", map[string]any{"sql": "SELECT age FROM visits; SELECT COUNT(*) FROM visits", "epsilon": 0.1}, 400, "visits"},
		{"empty", map[string]any{"sql": "  "}, 400, "no statement"},
		{"unknown field", map[string]any{"sql": "SELECT COUNT(*) FROM visits", "eps": 1}, 400, "malformed"},
		{"bad epsilon", map[string]any{"sql": "SELECT COUNT(*) FROM visits", "epsilon": -1}, 400, "ε"},
		{"over budget", map[string]any{"sql": "SELECT COUNT(*) FROM visits", "epsilon": 5}, 400, "budget"},
	} {
		code, out := c.do("POST", "/api/query", tc.body, nil)
		msg, _ := out["error"].(string)
		if code != tc.code || !strings.Contains(strings.ToLower(msg), strings.ToLower(tc.want)) {
			t.Errorf("%s: %d %q, want %d and a message naming %q", tc.name, code, msg, tc.code, tc.want)
		}
	}
	if got := h.spent(t, "alice"); got != 0 {
		t.Errorf("refused requests spent ε=%v", got)
	}
	// Carol has no budget of her own: the budget view says so.
	cc := h.client(t)
	cc.mustLogin("carol")
	_, b := cc.do("GET", "/api/budget", nil, nil)
	if b["set"] != false || !strings.Contains(b["message"].(string), "no budget") {
		t.Errorf("carol's budget: %v", b)
	}
}

func TestLoginFailuresAndLockOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dpsql.Options{}, func(c *console.Config) { c.MaxFailures = 3; c.LockOut = 10 * time.Minute })
	login := func(user, password, addr string) (int, string) {
		b, _ := json.Marshal(map[string]string{"user": user, "password": password})
		req := httptest.NewRequest("POST", "/api/login", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = addr + ":40000"
		rec := httptest.NewRecorder()
		h.con.ServeHTTP(rec, req)
		var out map[string]string
		_ = json.NewDecoder(rec.Body).Decode(&out)
		return rec.Code, out["error"]
	}
	// A wrong password and an unknown name read alike.
	c1, m1 := login("alice", "guess", "10.0.0.1")
	c2, m2 := login("nobody", "guess", "10.0.0.2")
	if c1 != 401 || c2 != 401 || m1 != m2 {
		t.Errorf("wrong password %d %q, unknown name %d %q: want the same 401", c1, m1, c2, m2)
	}
	// Three failures for alice from 10.0.0.3 lock alice out from there
	// only: her right password from another address gets in (a name-wide
	// count let anyone lock any analyst out from anywhere).
	for range 3 {
		login("alice", "guess", "10.0.0.3")
	}
	if code, msg := login("alice", "wonderland", "10.0.0.3"); code != 429 || !strings.Contains(msg, "try again after") || !strings.Contains(msg, "from this address") || !strings.Contains(msg, " UTC") {
		t.Errorf("the right password from the guessing address during its lock-out: %d %q, want 429", code, msg)
	}
	if code, msg := login("alice", "wonderland", "10.0.0.5"); code != 200 {
		t.Errorf("alice from another address was refused: %d %q", code, msg)
	}
	// Twelve failures from one address (4 × 3), whatever the names, lock
	// the address (a proxy's users share one: docs/server.md).
	for i := range 11 {
		login(fmt.Sprintf("x%d", i), "guess", "10.0.0.9")
	}
	if code, _ := login("bob", "wonderland", "10.0.0.9"); code != 200 {
		t.Errorf("11 failures of 12 locked the address: %d", code)
	}
	login("x11", "guess", "10.0.0.9")
	if code, _ := login("bob", "wonderland", "10.0.0.9"); code != 429 {
		t.Errorf("a locked-out address logged in: %d", code)
	}
	if code, _ := login("bob", "wonderland", "10.0.0.6"); code != 200 {
		t.Errorf("bob, elsewhere, was refused: %d", code)
	}
	// After the lock-out, the right password works again.
	h.now.Add(11 * time.Minute)
	if code, msg := login("alice", "wonderland", "10.0.0.3"); code != 200 {
		t.Errorf("after the lock-out: %d %q", code, msg)
	}
}

// TestConsoleNeverLocksTheOwnerOut: the console has no owner log-in, and
// its failures for the wire listener's owner name count against the
// client's address only: the shared count never refuses the owner's
// pair key, from the guessing address or any other.
func TestConsoleNeverLocksTheOwnerOut(t *testing.T) {
	t.Parallel()
	lock := &access.Lockout{MaxFailures: 3, Window: 10 * time.Minute}
	h := newHarness(t, dpsql.Options{}, func(c *console.Config) { c.Lockout = lock; c.OwnerUser = "admin" })
	for range 10 {
		b, _ := json.Marshal(map[string]string{"user": "admin", "password": "guess"})
		req := httptest.NewRequest("POST", "/api/login", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = "10.0.0.7:40000"
		h.con.ServeHTTP(httptest.NewRecorder(), req)
	}
	for _, addr := range []string{"10.0.0.7", "10.0.0.8"} {
		if _, locked := lock.Locked(access.PairKey("admin", addr)); locked {
			t.Errorf("console failures locked the owner's name out from %s", addr)
		}
	}
	if _, locked := lock.Locked(access.AddrKey("10.0.0.7")); locked {
		t.Error("10 failures of 12 locked the address")
	}
}

func TestCSRFAndOrigin(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dpsql.Options{}, nil)
	c := h.client(t)
	c.mustLogin("alice")
	q := map[string]any{"sql": "SELECT COUNT(*) FROM visits", "epsilon": 0.2}
	for _, tc := range []struct {
		name   string
		header map[string]string
		code   int
	}{
		{"no token", map[string]string{"X-CSRF-Token": ""}, 403},
		{"wrong token", map[string]string{"X-CSRF-Token": "forged"}, 403},
		{"a form's content type", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"another origin", map[string]string{"Origin": "https://evil.example"}, 403},
	} {
		if code, out := c.do("POST", "/api/query", q, tc.header); code != tc.code {
			t.Errorf("%s: %d %v, want %d", tc.name, code, out, tc.code)
		}
	}
	if code, _ := c.do("POST", "/api/logout", map[string]any{}, map[string]string{"X-CSRF-Token": ""}); code != 403 {
		t.Errorf("log-out without a token: %d, want 403", code)
	}
	// Log-in from another origin is refused too (log-in CSRF).
	other := h.client(t)
	if code, _ := other.do("POST", "/api/login", map[string]string{"user": "bob", "password": "wonderland"}, map[string]string{"Origin": "http://evil.example"}); code != 403 {
		t.Errorf("cross-origin log-in: %d, want 403", code)
	}
	if got := h.spent(t, "alice"); got != 0 {
		t.Errorf("forged requests spent ε=%v", got)
	}
	// The same origin with the token works.
	if code, out := c.do("POST", "/api/query", q, map[string]string{"Origin": h.srv.URL}); code != 200 {
		t.Errorf("same origin: %d %v", code, out)
	}
}

func TestCookieAndHeaders(t *testing.T) {
	t.Parallel()
	for _, secure := range []bool{false, true} {
		h := newHarness(t, dpsql.Options{}, func(c *console.Config) { c.Secure = secure })
		b, _ := json.Marshal(map[string]string{"user": "alice", "password": "wonderland"})
		req := httptest.NewRequest("POST", "/api/login", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.con.ServeHTTP(rec, req)
		cookies := rec.Result().Cookies()
		if len(cookies) != 1 {
			t.Fatalf("%d cookies", len(cookies))
		}
		ck := cookies[0]
		if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure != secure || ck.Path != "/" || ck.MaxAge != 0 || !ck.Expires.IsZero() {
			t.Errorf("secure=%v: cookie %+v, want HttpOnly, SameSite=Strict, Secure=%v, a session cookie", secure, ck, secure)
		}
		hd := rec.Result().Header
		if hd.Get("Cache-Control") != "no-store" || !strings.Contains(hd.Get("Content-Security-Policy"), "script-src 'self'") || hd.Get("X-Frame-Options") != "DENY" {
			t.Errorf("headers: %v", hd)
		}
	}
	// Log-out ends the session: the old cookie is refused afterwards.
	h := newHarness(t, dpsql.Options{}, nil)
	c := h.client(t)
	c.mustLogin("alice")
	if code, _ := c.do("POST", "/api/logout", map[string]any{}, nil); code != 200 {
		t.Fatal("log-out failed")
	}
	if code, _ := c.do("GET", "/api/budget", nil, nil); code != 401 {
		t.Errorf("after log-out: %d, want 401", code)
	}
	// An idle session expires.
	c.mustLogin("alice")
	h.now.Add(31 * time.Minute)
	if code, _ := c.do("GET", "/api/budget", nil, nil); code != 401 {
		t.Errorf("after 31 idle minutes: %d, want 401", code)
	}
}

func TestAnalystsIsolated(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dpsql.Options{}, nil)
	alice, bob := h.client(t), h.client(t)
	alice.mustLogin("alice")
	bob.mustLogin("bob")
	if code, _ := alice.query("SELECT COUNT(*) FROM visits WHERE dept = 'A'", 0.3); code != 200 {
		t.Fatal("alice's query failed")
	}
	_, hist := bob.do("GET", "/api/history", nil, nil)
	if n := len(hist["history"].([]any)); n != 0 {
		t.Errorf("bob sees %d history entries", n)
	}
	_, b := bob.do("GET", "/api/budget", nil, nil)
	if own := b["own"].(map[string]any); own["spent_epsilon"].(float64) != 0 {
		t.Errorf("bob's budget shows alice's spending: %v", own)
	}
	// Bob's cookie with alice's token is refused.
	if code, _ := bob.do("POST", "/api/query", map[string]any{"sql": "SELECT COUNT(*) FROM visits", "epsilon": 0.1}, map[string]string{"X-CSRF-Token": alice.csrf}); code != 403 {
		t.Errorf("bob with alice's CSRF token: %d, want 403", code)
	}
}

// TestConcurrentSessionsOneBudget: 50 sessions of one analyst spend her
// ε = 1 at once at 0.1 each: exactly 10 are answered, and the ledger never
// goes past 1.
func TestConcurrentSessionsOneBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dpsql.Options{NoCache: true}, nil)
	clients := make([]*client, 50)
	for i := range clients {
		clients[i] = h.client(t)
		clients[i].mustLogin("alice")
	}
	var answered, refused atomic.Int64
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out := c.query(fmt.Sprintf("SELECT COUNT(*) FROM visits WHERE age > %d", i), 0.1)
			switch {
			case code == 200:
				answered.Add(1)
			case strings.Contains(fmt.Sprint(out["error"]), "budget"):
				refused.Add(1)
			default:
				t.Errorf("session %d: %d %v", i, code, out)
			}
		}()
	}
	wg.Wait()
	if answered.Load() != 10 || refused.Load() != 40 {
		t.Errorf("%d answered, %d refused: want 10 and 40", answered.Load(), refused.Load())
	}
	if got := h.spent(t, "alice"); got > 1+1e-9 {
		t.Errorf("alice spent ε=%v of 1", got)
	}
}

// TestSeveralStatements: statements separated by ; run in order, each
// answered and recorded under its own text; an error stops the run, and
// the answers before it (charged) come with it. SHOW and public answers
// are not drawn as charts of released values.
func TestSeveralStatements(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dpsql.Options{}, nil)
	c := h.client(t)
	c.mustLogin("alice")
	code, out := c.query("SELECT COUNT(*) FROM visits; SHOW BUDGET;\n SELECT age FROM visits; SELECT COUNT(*) FROM visits WHERE age > 3", 0.1)
	if code != http.StatusOK {
		t.Fatalf("script: %d %v", code, out)
	}
	parts, _ := out["parts"].([]any)
	if len(parts) != 2 || !strings.HasPrefix(out["error"].(string), "statement 3 of 4: ") || !strings.Contains(out["error"].(string), "can only appear inside an aggregate") {
		t.Fatalf("parts %v, error %v: want two answers and the third statement's error", parts, out["error"])
	}
	first, second := parts[0].(map[string]any), parts[1].(map[string]any)
	if first["statement"] != "SELECT COUNT(*) FROM visits" || first["chart"].(map[string]any)["kind"] != "bars" {
		t.Errorf("first part: %v", first)
	}
	if second["statement"] != "SHOW BUDGET" || second["chart"].(map[string]any)["kind"] != "table" || out["statement"] != "SHOW BUDGET" {
		t.Errorf("SHOW BUDGET's part: %v %v (a budget is not a chart of released values)", second["statement"], second["chart"])
	}
	if got := h.spent(t, "alice"); got < 0.1-1e-9 || got > 0.1+1e-9 {
		t.Errorf("spent %v, want the first statement's 0.1 only", got)
	}
	_, hist := c.do("GET", "/api/history", nil, nil)
	var texts []string
	for _, e := range hist["history"].([]any) {
		texts = append(texts, e.(map[string]any)["statement"].(string))
	}
	if strings.Join(texts, "|") != "SELECT COUNT(*) FROM visits|SHOW BUDGET|SELECT age FROM visits" {
		t.Errorf("history %q, want each statement that ran, under its own text", texts)
	}
	// One statement: no parts. Its error is the request's.
	if code, out := c.query("SELECT COUNT(*) FROM visits;", 0.1); code != http.StatusOK || out["parts"] != nil {
		t.Errorf("one statement: %d %v", code, out["parts"])
	}
	if code, out := c.query("SELECT age FROM visits; SELECT COUNT(*) FROM visits", 0.1); code != http.StatusBadRequest || out["parts"] != nil {
		t.Errorf("a first statement's error: %d %v", code, out)
	}
	if got := h.spent(t, "alice"); got > 0.2+1e-9 {
		t.Errorf("spent %v: a statement after a failed first one ran", got)
	}
	// A public table's answer is a table, not a chart.
	if code, out := c.query("SELECT n, k FROM big WHERE n < 5", 0.1); code != http.StatusOK || out["chart"].(map[string]any)["kind"] != "table" {
		t.Errorf("public answer: %d chart %v", code, out["chart"])
	}
}

func TestPageAndSchema(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dpsql.Options{}, nil)
	resp, err := http.Get(h.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("page: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, p := range []string{"/static/app.js", "/static/app.css"} {
		resp, err := http.Get(h.srv.URL + p)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("%s: %v %v", p, err, resp.StatusCode)
		}
		resp.Body.Close()
	}
	c := h.client(t)
	if code, _ := c.do("GET", "/api/schema", nil, nil); code != 401 {
		t.Errorf("schema without a session: %d", code)
	}
	c.mustLogin("alice")
	_, s := c.do("GET", "/api/schema", nil, nil)
	tables := s["tables"].([]any)
	if len(tables) != 2 || tables[1].(map[string]any)["name"] != "visits" || len(tables[1].(map[string]any)["columns"].([]any)) != 3 {
		t.Errorf("schema: %v", s)
	}
	// The explorer's policy facts: the table's unit, each column's bounds
	// or domain.
	visits := tables[1].(map[string]any)
	cols := visits["columns"].([]any)
	if visits["policy"] != "private; each row is a privacy unit" || tables[0].(map[string]any)["policy"] != "public: queried without noise" ||
		cols[1].(map[string]any)["policy"] != "domain of 4 values (GROUP BY without δ)" || cols[2].(map[string]any)["policy"] != "bounds [0, 100]" {
		t.Errorf("explorer facts: %v", tables)
	}
	for _, k := range s["keywords"].([]any) {
		if strings.Contains(k.(string), "BUDGET epsilon") || strings.Contains(k.(string), "POLICY ON") {
			t.Errorf("the analyst is offered the owner's %q", k)
		}
	}
}

// slowPrivate is a private query that takes minutes: visits joined with
// big twice (4·10⁹ rows), charged before its scan starts.
const slowPrivate = `SELECT COUNT(*) FROM visits v JOIN big a ON v.id >= a.k JOIN big b ON a.k = b.k`

// TestCancelAndTimeout: Cancel stops the session's running statement, a
// second statement meanwhile is refused (409), and the error says the ε
// was charged; a statement timeout does the same by itself. The session
// goes on afterwards.
func TestCancelAndTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, dpsql.Options{NoCache: true}, nil)
	c := h.client(t)
	c.mustLogin("alice")
	type result struct {
		code int
		out  map[string]any
	}
	done := make(chan result, 1)
	go func() {
		code, out := c.query(slowPrivate, 0.25)
		done <- result{code, out}
	}()
	// Wait until the statement is charged (it then scans for minutes).
	deadline := time.Now().Add(20 * time.Second)
	for h.spent(t, "alice") == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if code, out := c.query("SELECT COUNT(*) FROM visits", 0.1); code != http.StatusConflict {
		t.Errorf("a second statement while one runs: %d %v, want 409", code, out)
	}
	if code, out := c.do("POST", "/api/cancel", map[string]any{}, nil); code != 200 || out["cancelled"] != true {
		t.Errorf("cancel: %d %v", code, out)
	}
	select {
	case r := <-done:
		msg := fmt.Sprint(r.out["error"])
		if r.code != http.StatusConflict || !strings.Contains(msg, "cancelled at your request") || !strings.Contains(msg, "ε=0.25, δ=0 was charged") {
			t.Errorf("cancelled statement: %d %q", r.code, msg)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cancel did not stop the statement")
	}
	if code, _ := c.query("SELECT COUNT(*) FROM visits", 0.1); code != 200 {
		t.Errorf("after cancel the session is stuck: %d", code)
	}

	g := newHarness(t, dpsql.Options{NoCache: true}, func(c *console.Config) { c.StatementTimeout = 300 * time.Millisecond })
	d := g.client(t)
	d.mustLogin("bob")
	code, out := d.query(slowPrivate, 0.25)
	if msg := fmt.Sprint(out["error"]); code != http.StatusGatewayTimeout || !strings.Contains(msg, "statement timeout (300ms)") || !strings.Contains(msg, "was charged") {
		t.Errorf("timeout: %d %q", code, msg)
	}
	if got := g.spent(t, "bob"); got != 0.25 {
		t.Errorf("bob spent %v, want the timed-out query's 0.25", got)
	}
}
