package access_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/access"
	"github.com/dpsql/dpsql/auth"
)

func engine(t *testing.T) *dpsql.Engine {
	t.Helper()
	eng, err := dpsql.Open(filepath.Join(t.TempDir(), "a.db"), dpsql.Options{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	if _, err := eng.Query(context.Background(), "CREATE ANALYST alice PASSWORD 'wonderland'"); err != nil {
		t.Fatal(err)
	}
	return eng
}

func TestCheckAnalyst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v, err := auth.NewVerifier("root pw")
	if err != nil {
		t.Fatal(err)
	}
	a := access.NewAccounts(engine(t), "admin", v)
	for _, tc := range []struct {
		user, password string
		want           bool
	}{
		{"alice", "wonderland", true},
		{"alice", "Wonderland", false},
		{"nobody", "wonderland", false},
		{"admin", "root pw", false}, // the owner user is not an analyst
	} {
		got, err := a.CheckAnalyst(ctx, tc.user, tc.password)
		if err != nil || got != tc.want {
			t.Errorf("CheckAnalyst(%q, %q) = %v, %v; want %v", tc.user, tc.password, got, err, tc.want)
		}
	}
	if _, known, owner, err := a.Credentials(ctx, "admin"); !known || !owner || err != nil {
		t.Errorf("the owner user: known %v owner %v %v", known, owner, err)
	}
	// A decoy's salt is the same at every attempt, as a real user's is.
	c1, known, _, _ := a.Credentials(ctx, "nobody")
	c2, _, _, _ := a.Credentials(ctx, "nobody")
	if known || c1.Salt != c2.Salt {
		t.Errorf("decoy: known %v, salts differ: %v", known, c1.Salt != c2.Salt)
	}
}

// TestRun: a statement past its timeout ends in Cancelled with the
// timeout; the log line masks passwords and carries the cost, not values.
func TestRun(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var tracked, untracked bool
	st := access.Statement{Who: "alice", Via: "test", Text: "CREATE ANALYST bob\n PASSWORD 'sekrit'", Timeout: 20 * time.Millisecond,
		Track: func(cancel context.CancelFunc) func() { tracked = true; return func() { untracked = true; cancel() } }}
	_, err := access.Run(context.Background(), log, st, func(ctx context.Context) (*dpsql.Result, error) {
		<-ctx.Done()
		return nil, errors.New("engine: stopped; nothing was charged")
	}, nil)
	var c *access.Cancelled
	if !errors.As(err, &c) || c.Timeout != 20*time.Millisecond || !strings.Contains(err.Error(), "statement timeout") || !strings.Contains(err.Error(), "nothing was charged") {
		t.Errorf("timed out: %v", err)
	}
	if !tracked || !untracked {
		t.Error("the statement was not tracked and forgotten")
	}
	st.Timeout, st.Text = 0, "SELECT COUNT(*) FROM t"
	res, err := access.Run(context.Background(), log, st, func(context.Context) (*dpsql.Result, error) {
		return &dpsql.Result{Columns: []string{"n"}, Rows: [][]any{{int64(424242)}}}, nil
	}, nil)
	if err != nil || res == nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "sekrit") || !strings.Contains(out, "PASSWORD '***'") || strings.Contains(out, "424242") || strings.Count(out, "msg=statement") != 2 {
		t.Errorf("log:\n%s", out)
	}
}

// TestLockout: MaxFailures failures within the window lock a key out for
// the window; failures spread beyond the window do not add up; a success
// forgets a name's failures; keys are independent.
func TestLockout(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	l := &access.Lockout{MaxFailures: 3, Window: 10 * time.Minute, Now: func() time.Time { return now }}
	u, a := access.UserKey("alice"), access.AddrKey("10.0.0.1")
	l.Fail(u, a)
	l.Fail(u)
	if _, locked := l.Locked(u, a); locked {
		t.Fatal("locked after 2 failures of 3")
	}
	l.Fail(u)
	until, locked := l.Locked(u)
	if !locked || !until.Equal(now.Add(10*time.Minute)) {
		t.Errorf("after 3 failures: locked %v until %v", locked, until)
	}
	if _, locked := l.Locked(a); locked {
		t.Error("the address (1 failure) was locked with the name")
	}
	now = now.Add(11 * time.Minute)
	if _, locked := l.Locked(u); locked {
		t.Error("still locked after the window")
	}
	// Failures spread over more than the window start the count again.
	l.Fail(a)
	now = now.Add(11 * time.Minute)
	l.Fail(a)
	l.Fail(a)
	if _, locked := l.Locked(a); locked {
		t.Error("failures 11 minutes apart added up")
	}
	l.Succeed(access.UserKey("bob"))
	l.Fail(access.UserKey("bob"))
	l.Fail(access.UserKey("bob"))
	l.Succeed(access.UserKey("bob"))
	l.Fail(access.UserKey("bob"))
	if _, locked := l.Locked(access.UserKey("bob")); locked {
		t.Error("a success did not forget the failures")
	}
}
