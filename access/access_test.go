package access_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// TestLockout: MaxFailures failures within the window lock a name out
// from one address for the window, and never from another; an address
// locks after 4 × MaxFailures failures whatever the names; failures spread
// beyond the window do not add up; a success forgets its pair's failures
// (not the address's).
func TestLockout(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	l := &access.Lockout{MaxFailures: 3, Window: 10 * time.Minute, Now: func() time.Time { return now }}
	from1, from2 := access.Keys("alice", "10.0.0.1:5000"), access.Keys("alice", "10.0.0.2")
	l.Fail(from1...)
	l.Fail(from1...)
	if _, locked := l.Locked(from1...); locked {
		t.Fatal("locked after 2 failures of 3")
	}
	l.Fail(from1...)
	until, locked := l.Locked(from1...)
	if !locked || !until.Equal(now.Add(10*time.Minute)) {
		t.Errorf("after 3 failures: locked %v until %v", locked, until)
	}
	if _, locked := l.Locked(from2...); locked {
		t.Error("failures from 10.0.0.1 locked alice out from 10.0.0.2")
	}
	if _, locked := l.Locked(access.AddrKey("10.0.0.1")); locked {
		t.Error("the address (3 failures of 12) was locked with the pair")
	}
	for i := range 9 {
		l.Fail(access.Keys(fmt.Sprintf("u%d", i), "10.0.0.1")...)
	}
	if _, locked := l.Locked(access.Keys("bob", "10.0.0.1")...); !locked {
		t.Error("12 failures from one address did not lock it")
	}
	now = now.Add(11 * time.Minute)
	if _, locked := l.Locked(from1...); locked {
		t.Error("still locked after the window")
	}
	// Failures spread over more than the window start the count again.
	bob := access.Keys("bob", "10.0.0.3")
	l.Fail(bob...)
	now = now.Add(11 * time.Minute)
	l.Fail(bob...)
	l.Fail(bob...)
	if _, locked := l.Locked(bob...); locked {
		t.Error("failures 11 minutes apart added up")
	}
	l.Succeed(bob[0])
	l.Fail(bob...)
	l.Fail(bob...)
	if _, locked := l.Locked(bob...); locked {
		t.Error("a success did not forget the pair's failures")
	}
}
