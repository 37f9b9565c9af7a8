// Package access is what every way into a served database shares: the
// PostgreSQL wire server (package server) and the web console (package
// console) look analysts up and check their passwords here, and run each
// statement here, under its timeout and cancellation, with one log line.
package access

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/auth"
	"github.com/dpsql/dpsql/parser"
	"github.com/xdg-go/scram"
)

// Accounts looks up who may log in to an engine: its analysts (their
// stored SCRAM verifiers) and, when configured, one owner user.
type Accounts struct {
	engine                   *dpsql.Engine
	ownerUser, ownerVerifier string

	mu     sync.Mutex
	secret []byte // the engine's decoy secret, read once
}

// NewAccounts returns the accounts of eng; ownerUser with ownerVerifier
// (auth.NewVerifier) may log in as the owner ("": nobody).
func NewAccounts(eng *dpsql.Engine, ownerUser, ownerVerifier string) *Accounts {
	return &Accounts{engine: eng, ownerUser: ownerUser, ownerVerifier: ownerVerifier}
}

// Credentials are user's SCRAM credentials: the stored verifier's, or,
// for a user that does not exist, a decoy that no password matches (known
// false), so that an unknown name and a wrong password look alike. owner
// says the user is the owner user.
func (a *Accounts) Credentials(ctx context.Context, user string) (cred scram.StoredCredentials, known, owner bool, err error) {
	if a.ownerUser != "" && user == a.ownerUser && a.ownerVerifier != "" {
		if cr, err := auth.ParseVerifier(a.ownerVerifier); err == nil {
			return cr, true, true, nil
		}
	} else if v, ok, err := a.engine.AnalystVerifier(ctx, user); err != nil {
		return cred, false, false, err
	} else if ok {
		if cr, err := auth.ParseVerifier(v); err == nil {
			return cr, true, false, nil
		}
	}
	secret, err := a.decoySecret(ctx)
	if err != nil {
		return cred, false, false, err
	}
	return auth.Decoy(secret, user), false, false, nil
}

func (a *Accounts) decoySecret(ctx context.Context) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.secret == nil {
		secret, err := a.engine.AuthSecret(ctx)
		if err != nil {
			return nil, err
		}
		a.secret = secret
	}
	return a.secret, nil
}

// CheckAnalyst reports whether password is analyst user's (never the
// owner user's: a listener that calls it serves analysts only). An
// unknown name costs the same work as a known one.
func (a *Accounts) CheckAnalyst(ctx context.Context, user, password string) (bool, error) {
	cred, known, owner, err := a.Credentials(ctx, user)
	if err != nil {
		return false, err
	}
	ok := auth.CheckPassword(cred, password)
	return ok && known && !owner, nil
}

// Statement is one statement to run for a listener.
type Statement struct {
	// Who and Remote name the session's user and client, Via the
	// listener ("wire", "console"), for the log line.
	Who, Remote, Via string
	Text             string
	// Timeout cancels the statement after that long (0: never).
	Timeout time.Duration
	// Track is told the statement's cancel func when it starts (for a
	// cancel request, a log-out, a shutdown) and returns what forgets it;
	// nil: nothing to tell.
	Track func(cancel context.CancelFunc) (untrack func())
}

// Cancelled is the error of a statement stopped by a cancel request, a
// shutdown or its timeout. Err is the engine's, which says whether the
// query's ε was charged before it stopped.
type Cancelled struct {
	// Timeout is the timeout that stopped it (0: cancelled).
	Timeout time.Duration
	Err     error
}

func (e *Cancelled) Error() string { return e.Reason() + ": " + e.Err.Error() }

// Reason says why the statement stopped, as PostgreSQL words it.
func (e *Cancelled) Reason() string {
	if e.Timeout > 0 {
		return fmt.Sprintf("canceling statement due to statement timeout (%s)", e.Timeout)
	}
	return "canceling statement due to user request"
}

func (e *Cancelled) Unwrap() error { return e.Err }

// Run runs st with run (a session's Query or Explain) under its timeout
// and cancellation, and logs one line (the listener, the analyst, the
// statement, its duration and, for a private query, its cost; never a
// value; errorCode names an error for the log, "" for none).
func Run(ctx context.Context, log *slog.Logger, st Statement, run func(context.Context) (*dpsql.Result, error), errorCode func(error) string) (*dpsql.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	if st.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, st.Timeout)
	}
	if st.Track != nil {
		defer st.Track(cancel)()
	} else {
		defer cancel()
	}
	start := time.Now()
	res, err := run(ctx)
	attrs := []any{"analyst", st.Who, "statement", OneLine(st.Text), "duration", time.Since(start).Round(time.Microsecond), "via", st.Via, "remote", st.Remote}
	if err != nil && ctx.Err() != nil {
		c := &Cancelled{Err: err}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			c.Timeout = st.Timeout
		}
		err = c
	}
	if err != nil {
		code := "error"
		if errorCode != nil {
			code = errorCode(err)
		}
		log.Info("statement", append(attrs, "error", code)...)
		return nil, err
	}
	if res.Cost.Epsilon > 0 || res.Cost.Delta > 0 {
		attrs = append(attrs, "epsilon", res.Cost.Epsilon, "delta", res.Cost.Delta, "rho", res.Rho, "mechanism", res.Mechanism)
	}
	log.Info("statement", attrs...)
	return res, nil
}

// OneLine shortens a statement for the log: its words joined by single
// spaces, passwords masked ('***'), at most 500 bytes.
func OneLine(s string) string {
	s = strings.Join(strings.Fields(parser.RedactPasswords(s)), " ")
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}
