package dpsql_test

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
)

func TestDriverQueriesThroughDatabaseSQL(t *testing.T) {
	testDriverQueriesThroughDatabaseSQL(t, parallel(t))
}

func testDriverQueriesThroughDatabaseSQL(t *testing.T, h *harness) {
	path := h.newDB(t)
	db, err := sql.Open("dpsql", h.driverDSN(t, path, "?epsilon=0.5"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one session, so SET statements stick
	var n int64
	if err := db.QueryRow(`SELECT COUNT(*) FROM t WHERE x >= ? AND g = $2`, 50, "a").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < 0 || n > 2000 {
		t.Errorf("noisy count %d is implausible", n)
	}
	rows, err := db.Query(`SELECT g, COUNT(*) AS n FROM t GROUP BY g`)
	if err != nil {
		t.Fatal(err)
	}
	types, _ := rows.ColumnTypes()
	if types[0].DatabaseTypeName() != "TEXT" || types[1].DatabaseTypeName() != "INTEGER" || types[1].ScanType() != reflect.TypeOf(int64(0)) {
		t.Errorf("column types %s %s %v", types[0].DatabaseTypeName(), types[1].DatabaseTypeName(), types[1].ScanType())
	}
	groups := 0
	for rows.Next() {
		var g string
		var c int64
		if err := rows.Scan(&g, &c); err != nil {
			t.Fatal(err)
		}
		groups++
	}
	rows.Close()
	if groups != 4 {
		t.Errorf("%d groups", groups)
	}
	// Prepared statements bind values as literals: an injection attempt is
	// just a string that matches no row.
	st, err := db.Prepare(`SELECT COUNT(*) FROM t WHERE g = ?`)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.QueryRow("a' OR 1=1 --").Scan(&n); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := db.Exec(`SET epsilon = 0.25`); err != nil {
		t.Fatal(err)
	}
}

// TestBoundParameterIsALiteral checks, with the noise off, that a bound
// string cannot change the statement.
func TestBoundParameterIsALiteral(t *testing.T) { testBoundParameterIsALiteral(t, parallel(t)) }

func testBoundParameterIsALiteral(t *testing.T, h *harness) {
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	r, err := e.Query(context.Background(), `SELECT COUNT(*) FROM t WHERE g = ?`, "a' OR 1=1 --")
	if err != nil {
		t.Fatal(err)
	}
	if r.Rows[0][0].(int64) != 0 {
		t.Errorf("injection matched %v rows", r.Rows[0][0])
	}
	r, _ = e.Query(context.Background(), `SELECT COUNT(*) FROM t WHERE g = $1 AND x < $2`, "a", -0.5)
	if r.Rows[0][0].(int64) != 0 {
		t.Errorf("x < -0.5 matched %v rows", r.Rows[0][0])
	}
}

func TestDriverErrors(t *testing.T) { testDriverErrors(t, parallel(t)) }

func testDriverErrors(t *testing.T, h *harness) {
	path := h.newDB(t)
	db, _ := sql.Open("dpsql", h.driverDSN(t, path, ""))
	defer db.Close()
	_, err := db.Query("SELECT COUNT(*)\nFROM t WHERE")
	var se *dpsql.SyntaxError
	if !errors.As(err, &se) || se.Line != 2 || se.Column != 13 {
		t.Errorf("syntax error: %v (%+v)", err, se)
	}
	if _, err := db.Query(`SELECT x FROM t`); !errors.Is(err, dpsql.ErrNotPrivate) {
		t.Errorf("raw column: %v", err)
	}
	if _, err := db.Query(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 999) COUNT(*) FROM t`); !errors.Is(err, dpsql.ErrBudgetExhausted) {
		t.Errorf("over budget: %v", err)
	}
	if _, err := db.Exec(`SET BUDGET epsilon = 5`); !errors.Is(err, dpsql.ErrOwnerOnly) {
		t.Errorf("owner statement: %v", err)
	}
	if _, err := db.Query(`SELECT COUNT(*) FROM t WHERE x = ?`); err == nil || !strings.Contains(err.Error(), "1 parameters, got 0") {
		t.Errorf("missing parameter: %v", err)
	}
	if _, err := db.Begin(); !errors.Is(err, dpsql.ErrNoTransactions) {
		t.Errorf("Begin: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := db.QueryContext(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM t`); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	for _, dsn := range []string{"file:x.db?role=admin", "file:x.db?colour=red", "file:x.db?epsilon=-1", ""} {
		if db, err := sql.Open("dpsql", dsn); err == nil {
			t.Errorf("DSN %q accepted", dsn)
			db.Close()
		}
	}
	// An owner statement without role=owner says how to get it.
	if _, err := db.Exec(`SET BUDGET epsilon = 1`); !errors.Is(err, dpsql.ErrOwnerOnly) || !strings.Contains(err.Error(), "role=owner") {
		t.Errorf("owner statement as an analyst: %v", err)
	}
	owner, _ := sql.Open("dpsql", h.driverDSN(t, path, "?role=owner"))
	defer owner.Close()
	if _, err := owner.Exec(`SET BUDGET epsilon = ?`, 200.0); err != nil {
		t.Errorf("owner SET BUDGET with a parameter: %v", err)
	}
}

// TestDriverSetEpsilonIsPerConnection: SET epsilon applies to the pooled
// connection that ran it, the DSN's epsilon to every connection (as the
// README says; issue 11).
func TestDriverSetEpsilonIsPerConnection(t *testing.T) {
	testDriverSetEpsilonIsPerConnection(t, parallel(t))
}

func testDriverSetEpsilonIsPerConnection(t *testing.T, h *harness) {
	path := h.newDB(t)
	ctx := context.Background()
	db, err := sql.Open("dpsql", h.driverDSN(t, path, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c1, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c1.ExecContext(ctx, "SET epsilon = 0.5"); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := c1.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil {
		t.Errorf("the connection that ran SET: %v", err)
	}
	if err := c2.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); !errors.Is(err, dpsql.ErrNoEpsilon) {
		t.Errorf("another connection: %v, want ErrNoEpsilon", err)
	}
	withDSN, err := sql.Open("dpsql", h.driverDSN(t, path, "?epsilon=0.5"))
	if err != nil {
		t.Fatal(err)
	}
	defer withDSN.Close()
	for i := 0; i < 2; i++ {
		c, err := withDSN.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil {
			t.Errorf("DSN epsilon, connection %d: %v", i, err)
		}
	}
}

// TestDriverCacheOption: cache=off in the DSN answers repeats afresh (and
// charges them); by default a repeat is free.
func TestDriverCacheOption(t *testing.T) {
	h := parallel(t)
	path := h.newDB(t)
	for _, tc := range []struct {
		dsn   string
		spent float64
	}{{"?epsilon=0.5", 0.5}, {"?epsilon=0.5&cache=off", 1}} {
		db, err := sql.Open("dpsql", h.driverDSN(t, path, tc.dsn))
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		owner, _ := sql.Open("dpsql", h.driverDSN(t, path, "?role=owner"))
		for _, q := range []string{"RESET CACHE", "RESET BUDGET"} {
			if _, err := owner.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		owner.Close()
		var n int64
		for i := 0; i < 2; i++ {
			if err := db.QueryRow(`SELECT COUNT(*) FROM t WHERE x > 5`).Scan(&n); err != nil {
				t.Fatal(err)
			}
		}
		var what string
		var eps, delta float64
		rows, err := db.Query(`SHOW BUDGET`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var e, d float64
			if err := rows.Scan(&what, &e, &d); err != nil {
				t.Fatal(err)
			}
			if what == "spent" {
				eps, delta = e, d
			}
		}
		rows.Close()
		if eps != tc.spent || delta != 0 {
			t.Errorf("%s: spent ε=%v after two identical queries, want %v", tc.dsn, eps, tc.spent)
		}
		db.Close()
	}
	if _, err := sql.Open("dpsql", h.driverDSN(t, path, "?cache=maybe")); err == nil {
		if db, _ := sql.Open("dpsql", h.driverDSN(t, path, "?cache=maybe")); db.Ping() == nil {
			t.Error("cache=maybe accepted")
		}
	}
}
