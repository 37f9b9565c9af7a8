package dpsql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dpsql/dpsql"
)

// TestSessionsKeepTheirSettings: two sessions of one engine have their
// own settings; SET on one leaves the other and the engine's default
// session alone.
func TestSessionsKeepTheirSettings(t *testing.T) {
	e := open(t, newDB(t), dpsql.Options{Epsilon: 1})
	ctx := context.Background()
	a, err := e.NewSession(dpsql.SessionOptions{Epsilon: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.NewSession(dpsql.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`SET epsilon = 0.25`, `SET noise = 'Gaussian'`, `SET show_bounds = on`, `SET delta = 1e-6`, `SET bounds_epsilon_fraction = 0.3`} {
		if _, err := b.Query(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	want := dpsql.Settings{Epsilon: 0.25, Delta: 1e-6, BoundsFraction: 0.3, Noise: "gaussian", ShowBounds: true}
	if got := b.Settings(); got != want {
		t.Errorf("b: %+v, want %+v", got, want)
	}
	if got := a.Settings(); got != (dpsql.Settings{Epsilon: 0.5}) {
		t.Errorf("a: %+v", got)
	}
	if got := e.Settings(); got != (dpsql.Settings{Epsilon: 1}) {
		t.Errorf("default session: %+v", got)
	}
	// A bad value changes nothing.
	if _, err := b.Query(ctx, `SET epsilon = -1`); !errors.Is(err, dpsql.ErrInvalidOption) {
		t.Errorf("SET epsilon = -1: %v", err)
	}
	if got := b.Settings(); got != want {
		t.Errorf("after a refused SET: %+v", got)
	}
	// An analyst session cannot be an owner's, nor an owner session made
	// from an engine that is not in owner mode.
	if _, err := e.NewSession(dpsql.SessionOptions{Owner: true}); !errors.Is(err, dpsql.ErrOwnerOnly) {
		t.Errorf("owner session of an analyst engine: %v", err)
	}
}

// TestExplainSpendsNothing: Session.Explain plans a SELECT without
// running or charging it, and refuses anything else.
func TestExplainSpendsNothing(t *testing.T) {
	e := open(t, newDB(t), dpsql.Options{Epsilon: 1})
	ctx := context.Background()
	res, err := e.Explain(ctx, `SELECT COUNT(*) FROM t WHERE x > ?`, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) == 0 || res.Cost.Epsilon != 0 {
		t.Errorf("EXPLAIN: %d rows, cost %+v", len(res.Rows), res.Cost)
	}
	if s := spent(t, e); s != 0 {
		t.Errorf("spent %v", s)
	}
	if _, err := e.Explain(ctx, `SET epsilon = 1`); !errors.Is(err, dpsql.ErrUnsupported) {
		t.Errorf("EXPLAIN SET: %v", err)
	}
}

// TestErrorsCarryTheirSQLState: every layer's error has a kind, and the
// kind its SQLSTATE (what the wire server sends), whatever the message.
func TestErrorsCarryTheirSQLState(t *testing.T) {
	e := open(t, newDB(t), dpsql.Options{Epsilon: 1})
	ctx := context.Background()
	for _, tc := range []struct{ sql, state string }{
		{`SELEC 1`, "42601"},
		{`SELECT COUNT(*) FROM nope`, "42P01"},
		{`SELECT SUM(nope) FROM t`, "42703"},
		{`SELECT * FROM t`, "ZD003"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1000) COUNT(*) FROM t`, "ZD001"},
		{`SELECT MAX(x) FROM t`, "0A000"},
		{`SET epsilon = 0`, "22023"},
		{`SET BUDGET epsilon = 1`, "42501"},
		{`SELECT COUNT(*) FROM t JOIN lookup AS t ON t.g = t.code`, "22023"},
	} {
		_, err := e.Query(ctx, tc.sql)
		if err == nil {
			t.Errorf("%s: no error", tc.sql)
			continue
		}
		if got := dpsql.SQLState(err); got != tc.state {
			t.Errorf("%s: SQLSTATE %s, want %s (%v)", tc.sql, got, tc.state, err)
		}
	}
	var pe *dpsql.Error
	_, err := e.Query(ctx, `SELECT SUM(nope) FROM t`)
	if !errors.As(err, &pe) || pe.Pos.Line != 1 || pe.Pos.Col != 12 || !errors.Is(err, dpsql.ErrUnknownName) {
		t.Errorf("unknown column: %#v", err)
	}
}
