// Package budget is dpsql's privacy accountant and its durable ledger.
//
// Where it sits: after a query is planned and before any of its results is
// released, the engine calls Charge. The charge is committed to the
// _dpsql_ledger table of the same SQLite file in a write transaction opened
// with BEGIN IMMEDIATE, so two connections (or processes) cannot both read
// the old total and overspend. A crash after the commit loses the answer,
// never the charge. Accounting is basic sequential composition: the spent
// (ε, δ) is the sum of all charges.
package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"
)

// Sentinel errors, checkable with errors.Is.
var (
	// ErrBudgetExhausted: the charge would exceed the total budget.
	ErrBudgetExhausted = errors.New("privacy budget exhausted")
	// ErrNoBudget: the owner has not set a budget yet.
	ErrNoBudget = errors.New("no privacy budget set")
	// ErrInvalidCost: a cost or total that is negative, NaN or infinite.
	ErrInvalidCost = errors.New("invalid privacy cost")
)

const schema = `
CREATE TABLE IF NOT EXISTS _dpsql_budget (
	id      INTEGER PRIMARY KEY CHECK (id = 1),
	epsilon REAL NOT NULL,
	delta   REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS _dpsql_budget_resets (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	reset       TEXT NOT NULL,
	after_entry INTEGER NOT NULL -- charges with a larger ledger id count
);
CREATE TABLE IF NOT EXISTS _dpsql_ledger (
	id        INTEGER PRIMARY KEY AUTOINCREMENT,
	charged   TEXT NOT NULL,
	statement TEXT NOT NULL,
	epsilon   REAL NOT NULL,
	delta     REAL NOT NULL
);
`

// Init creates the budget tables when they are missing.
func Init(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, schema)
	return err
}

// Cost is a privacy cost (or total) in (ε, δ).
type Cost struct {
	Epsilon float64
	Delta   float64
}

func (c Cost) validate() error {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }
	if bad(c.Epsilon) || bad(c.Delta) || c.Delta >= 1 {
		return fmt.Errorf("%w: epsilon must be a finite number ≥ 0 and delta in [0, 1), got ε=%v δ=%v", ErrInvalidCost, c.Epsilon, c.Delta)
	}
	return nil
}

// Status is the budget's state.
type Status struct {
	Set   bool // the owner has set a total
	Total Cost
	Spent Cost
}

// Remaining is Total - Spent, never below zero.
func (s Status) Remaining() Cost {
	return Cost{Epsilon: math.Max(0, s.Total.Epsilon-s.Spent.Epsilon), Delta: math.Max(0, s.Total.Delta-s.Spent.Delta)}
}

// tolerance absorbs floating-point error in sums of charges: a query may
// spend exactly what remains.
const tolerance = 1e-9

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readStatus(ctx context.Context, q querier) (Status, error) {
	var s Status
	err := q.QueryRowContext(ctx, `SELECT epsilon, delta FROM _dpsql_budget WHERE id = 1`).Scan(&s.Total.Epsilon, &s.Total.Delta)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return s, err
	default:
		s.Set = true
	}
	err = q.QueryRowContext(ctx, `SELECT COALESCE(SUM(epsilon), 0), COALESCE(SUM(delta), 0) FROM _dpsql_ledger
		WHERE id > (SELECT COALESCE(MAX(after_entry), 0) FROM _dpsql_budget_resets)`).Scan(&s.Spent.Epsilon, &s.Spent.Delta)
	return s, err
}

// Reset starts the budget afresh (owner): charges so far stay in the
// ledger for audit but no longer count as spent.
func Reset(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, `INSERT INTO _dpsql_budget_resets (reset, after_entry)
		SELECT ?, COALESCE(MAX(id), 0) FROM _dpsql_ledger`, time.Now().UTC().Format(time.RFC3339Nano))
	return err
}

// GetStatus reads the budget's total and what has been spent.
func GetStatus(ctx context.Context, db *sql.DB) (Status, error) { return readStatus(ctx, db) }

// SetTotal sets the total budget of the database (owner). What was spent
// stays spent: the remaining budget is the new total minus the ledger.
func SetTotal(ctx context.Context, db *sql.DB, total Cost) error {
	if err := total.validate(); err != nil {
		return err
	}
	if total.Epsilon == 0 {
		return fmt.Errorf("%w: the total epsilon must be positive", ErrInvalidCost)
	}
	_, err := db.ExecContext(ctx, `INSERT INTO _dpsql_budget (id, epsilon, delta) VALUES (1, ?, ?)
		ON CONFLICT (id) DO UPDATE SET epsilon = excluded.epsilon, delta = excluded.delta`, total.Epsilon, total.Delta)
	return err
}

// Charge durably records cost for statement, or refuses it without
// recording anything when it would exceed the total. It returns only after
// the ledger row is committed.
func Charge(ctx context.Context, db *sql.DB, cost Cost, statement string) (err error) {
	if err := cost.validate(); err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("budget: cannot lock the ledger: %w", err)
	}
	defer func() {
		if err != nil {
			// Use a fresh context: the caller's may be the reason we fail.
			_, _ = conn.ExecContext(context.Background(), `ROLLBACK`)
		}
	}()
	s, err := readStatus(ctx, conn)
	if err != nil {
		return err
	}
	if !s.Set {
		return fmt.Errorf("%w: the owner must run SET BUDGET epsilon = E[, delta = D] first", ErrNoBudget)
	}
	rem := s.Remaining()
	if s.Spent.Epsilon+cost.Epsilon > s.Total.Epsilon+tolerance || s.Spent.Delta+cost.Delta > s.Total.Delta+tolerance*1e-6 {
		return fmt.Errorf("%w: the query needs ε=%g, δ=%g but only ε=%g, δ=%g remain of ε=%g, δ=%g",
			ErrBudgetExhausted, cost.Epsilon, cost.Delta, rem.Epsilon, rem.Delta, s.Total.Epsilon, s.Total.Delta)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO _dpsql_ledger (charged, statement, epsilon, delta) VALUES (?, ?, ?, ?)`,
		time.Now().UTC().Format(time.RFC3339Nano), statement, cost.Epsilon, cost.Delta); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return fmt.Errorf("budget: commit failed: %w", err)
	}
	return nil
}

// Entry is one ledger row.
type Entry struct {
	ID        int64
	Charged   string
	Statement string
	Cost      Cost
}

// Ledger returns every charge, oldest first.
func Ledger(ctx context.Context, db *sql.DB) ([]Entry, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, charged, statement, epsilon, delta FROM _dpsql_ledger ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		if err := rows.Scan(&e.ID, &e.Charged, &e.Statement, &e.Cost.Epsilon, &e.Cost.Delta); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
