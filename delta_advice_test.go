package dpsql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
)

// TestDeltaAdviceSaysWhoseBudget: on a database whose budget allows a δ,
// an analyst whose own budget has none is told so, with the statement
// that gives her one: a GROUP BY without a domain (whose refusal suggests
// OPTIONS (delta = D)) and the OPTIONS (delta = D) itself both name her
// budget and ALTER ANALYST, not the database's SET BUDGET (issue 51 U1).
// An analyst with a δ gets the plain advice, and it works.
func TestDeltaAdviceSaysWhoseBudget(t *testing.T) {
	h := parallel(t)
	ctx := context.Background()
	path := h.newDB(t)
	owner := h.open(t, path, dpsql.Options{Owner: true})
	mustRun(t, owner, `SET BUDGET epsilon = 10, delta = 1e-6; CREATE ANALYST alice PASSWORD 'pw' BUDGET epsilon = 1; CREATE ANALYST bob PASSWORD 'pw' BUDGET epsilon = 1, delta = 1e-7`)
	alice, err := owner.NewSession(dpsql.SessionOptions{Analyst: "alice", Epsilon: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = alice.Query(ctx, `SELECT i, COUNT(*) FROM t GROUP BY i`)
	if err == nil || !strings.Contains(err.Error(), "OPTIONS (delta = D)") || !strings.Contains(err.Error(), "your budget (analyst alice) has δ = 0") || !strings.Contains(err.Error(), `ALTER ANALYST "alice" BUDGET`) {
		t.Errorf("GROUP BY without a domain, for an analyst without δ: %v", err)
	}
	_, err = alice.Query(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-7) i, COUNT(*) FROM t GROUP BY i`)
	if err == nil || !strings.Contains(err.Error(), "your budget (analyst alice) has δ = 0") || !strings.Contains(err.Error(), "ALTER ANALYST") || strings.Contains(err.Error(), "this database's budget") {
		t.Errorf("OPTIONS (delta) for an analyst without δ: %v", err)
	}
	bob, err := owner.NewSession(dpsql.SessionOptions{Analyst: "bob", Epsilon: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Query(ctx, `SELECT i, COUNT(*) FROM t GROUP BY i`); err == nil || strings.Contains(err.Error(), "δ = 0") {
		t.Errorf("GROUP BY without a domain, for an analyst with δ: %v", err)
	}
	if _, err := bob.Query(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (delta = 1e-8) i, COUNT(*) FROM t GROUP BY i`); err != nil {
		t.Errorf("the advice followed: %v", err)
	}
}
