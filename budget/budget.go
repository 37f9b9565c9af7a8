// Package budget is dpsql's privacy accountant and its durable ledger.
//
// Where it sits: after a query is planned and before any of its results is
// released, the engine calls Charge. The charge is committed to the
// _dpsql_ledger table of the same SQLite file in a write transaction opened
// with BEGIN IMMEDIATE, so two connections (or processes) cannot both read
// the old total and overspend. A crash after the commit loses the answer,
// never the charge. Accounting is basic sequential composition: the spent
// (ε, δ) is the sum of all charges.
//
// The arithmetic is exact: every charge and total is recorded as an
// integer number of units (EpsilonUnit, DeltaUnit) — a charge rounded up,
// a total rounded down, both from the decimal that the float64 prints as —
// and a charge is admitted only when the integer sum stays within the
// total. There is no tolerance, so no sequence of tiny charges can spend
// more than the total.
package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
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

// EpsilonUnit and DeltaUnit are the ledger's integer units: ε and δ are
// recorded as whole multiples of them.
const (
	EpsilonUnit = 1e-12
	DeltaUnit   = 1e-18
)

// MaxTotalEpsilon caps the total ε, so that every sum of charges fits the
// ledger's 64-bit integers.
const MaxTotalEpsilon = 1e6

// Init creates the budget tables when they are missing, and gives a
// ledger made by an earlier version its integer columns (charges rounded
// up, the total rounded down), in one transaction.
func Init(ctx context.Context, db *sql.DB) error {
	// An up-to-date database is only read: opening it must not wait for
	// another process's write lock (an owner's import).
	var current int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('_dpsql_budget', '_dpsql_budget_resets', '_dpsql_ledger'))
		+ (SELECT COUNT(*) FROM pragma_table_info('_dpsql_ledger') WHERE name = 'epsilon_units')
		+ (SELECT COUNT(*) FROM pragma_table_info('_dpsql_budget') WHERE name = 'epsilon_units')`).Scan(&current); err != nil {
		return err
	}
	if current == 5 {
		return nil
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, t := range []string{"_dpsql_ledger", "_dpsql_budget"} {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = 'epsilon_units'`, t).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		for _, c := range []string{"epsilon_units", "delta_units"} {
			if _, err := tx.ExecContext(ctx, "ALTER TABLE "+t+" ADD COLUMN "+c+" INTEGER"); err != nil {
				return err
			}
		}
		if err := migrateUnits(ctx, tx, t, t == "_dpsql_ledger"); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// migrateUnits fills the integer columns of rows recorded before they
// existed.
func migrateUnits(ctx context.Context, tx *sql.Tx, table string, up bool) error {
	rows, err := tx.QueryContext(ctx, "SELECT rowid, epsilon, delta FROM "+table)
	if err != nil {
		return err
	}
	type row struct {
		id     int64
		eu, du int64
	}
	var all []row
	for rows.Next() {
		var r row
		var e, d float64
		if err := rows.Scan(&r.id, &e, &d); err != nil {
			rows.Close()
			return err
		}
		r.eu, r.du = toUnits(e, EpsilonUnit, up), toUnits(d, DeltaUnit, up)
		all = append(all, r)
	}
	rows.Close()
	for _, r := range all {
		if _, err := tx.ExecContext(ctx, "UPDATE "+table+" SET epsilon_units = ?, delta_units = ? WHERE rowid = ?", r.eu, r.du, r.id); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Fits returns how many more charges of ε = each fit into remaining ε,
// counted as the ledger counts them (remaining rounded down, each charge
// rounded up, in whole units).
func Fits(remaining, each float64) int64 {
	r, c := toUnits(remaining, EpsilonUnit, false), toUnits(each, EpsilonUnit, true)
	if c <= 0 {
		return 0
	}
	return r / c
}

// toUnits converts v ≥ 0 to whole units, rounding up (charges) or down
// (totals). It reads v as the shortest decimal that prints as v — the
// number the user wrote — so 0.1 is exactly 1e11 ε-units.
func toUnits(v, unit float64, up bool) int64 {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(v, 'g', -1, 64))
	if !ok || r.Sign() <= 0 {
		return 0
	}
	u, _ := new(big.Rat).SetString(strconv.FormatFloat(unit, 'g', -1, 64))
	q := new(big.Rat).Quo(r, u)
	n := new(big.Int).Quo(q.Num(), q.Denom())
	if up && new(big.Int).Mul(n, q.Denom()).Cmp(q.Num()) != 0 {
		n.Add(n, big.NewInt(1))
	}
	if !n.IsInt64() {
		return math.MaxInt64
	}
	return n.Int64()
}

// Cost is a privacy cost (or total) in (ε, δ).
type Cost struct {
	Epsilon float64
	Delta   float64
}

func (c Cost) validate() error {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }
	if bad(c.Epsilon) || bad(c.Delta) || c.Delta >= 1 || c.Epsilon > MaxTotalEpsilon {
		return fmt.Errorf("%w: epsilon must be a number in [0, %g] and delta in [0, 1), got ε=%v δ=%v", ErrInvalidCost, MaxTotalEpsilon, c.Epsilon, c.Delta)
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

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// units is a cost in ledger units.
type units struct{ eps, delta int64 }

func (u units) cost() Cost {
	return Cost{Epsilon: fromUnits(u.eps, 12), Delta: fromUnits(u.delta, 18)}
}

// fromUnits is n·10^-digits as the float64 nearest the exact decimal.
func fromUnits(n int64, digits int) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatInt(n, 10)+"e-"+strconv.Itoa(digits), 64)
	return f
}

func readUnits(ctx context.Context, q querier) (set bool, total, spent units, err error) {
	err = q.QueryRowContext(ctx, `SELECT epsilon_units, delta_units FROM _dpsql_budget WHERE id = 1`).Scan(&total.eps, &total.delta)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		err = nil
	case err != nil:
		return
	default:
		set = true
	}
	err = q.QueryRowContext(ctx, `SELECT COALESCE(SUM(epsilon_units), 0), COALESCE(SUM(delta_units), 0) FROM _dpsql_ledger
		WHERE id > (SELECT COALESCE(MAX(after_entry), 0) FROM _dpsql_budget_resets)`).Scan(&spent.eps, &spent.delta)
	return
}

func readStatus(ctx context.Context, q querier) (Status, error) {
	set, total, spent, err := readUnits(ctx, q)
	return Status{Set: set, Total: total.cost(), Spent: spent.cost()}, err
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
	_, err := db.ExecContext(ctx, `INSERT INTO _dpsql_budget (id, epsilon, delta, epsilon_units, delta_units) VALUES (1, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET epsilon = excluded.epsilon, delta = excluded.delta,
		epsilon_units = excluded.epsilon_units, delta_units = excluded.delta_units`,
		total.Epsilon, total.Delta, toUnits(total.Epsilon, EpsilonUnit, false), toUnits(total.Delta, DeltaUnit, false))
	return err
}

// Charge durably records cost for statement, or refuses it without
// recording anything when it would exceed the total. It returns only after
// the ledger row is committed.
func Charge(ctx context.Context, db *sql.DB, cost Cost, statement string) (err error) {
	return ChargeWaiting(ctx, db, cost, statement, nil)
}

// lockPoll is how long one attempt to lock the ledger waits before
// ChargeWaiting reports that it is waiting and tries again.
var lockPoll = 2 * time.Second

// ChargeWaiting is Charge that, while another connection or process holds
// the database's write lock (an owner's import, another charge), calls
// waiting once and keeps waiting until it gets the lock or ctx ends —
// instead of failing with SQLITE_BUSY after the connection's busy timeout.
func ChargeWaiting(ctx context.Context, db *sql.DB, cost Cost, statement string, waiting func()) (err error) {
	if err := cost.validate(); err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := lockLedger(ctx, conn, waiting); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// Use a fresh context: the caller's may be the reason we fail.
			_, _ = conn.ExecContext(context.Background(), `ROLLBACK`)
		}
	}()
	set, total, spent, err := readUnits(ctx, conn)
	if err != nil {
		return err
	}
	if !set {
		return fmt.Errorf("%w: the owner must run SET BUDGET epsilon = E[, delta = D] first", ErrNoBudget)
	}
	need := units{eps: toUnits(cost.Epsilon, EpsilonUnit, true), delta: toUnits(cost.Delta, DeltaUnit, true)}
	if need.eps > total.eps-spent.eps || need.delta > total.delta-spent.delta {
		rem := Status{Set: true, Total: total.cost(), Spent: spent.cost()}.Remaining()
		t := total.cost()
		return fmt.Errorf("%w: the query needs ε=%g, δ=%g but only ε=%g, δ=%g remain of ε=%g, δ=%g",
			ErrBudgetExhausted, cost.Epsilon, cost.Delta, rem.Epsilon, rem.Delta, t.Epsilon, t.Delta)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO _dpsql_ledger (charged, statement, epsilon, delta, epsilon_units, delta_units) VALUES (?, ?, ?, ?, ?, ?)`,
		time.Now().UTC().Format(time.RFC3339Nano), statement, cost.Epsilon, cost.Delta, need.eps, need.delta); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return fmt.Errorf("budget: commit failed: %w", err)
	}
	return nil
}

// lockLedger begins an immediate transaction on conn, polling while the
// database is busy.
func lockLedger(ctx context.Context, conn *sql.Conn, waiting func()) error {
	var timeout int64
	if err := conn.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&timeout); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, lockPoll.Milliseconds())); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), fmt.Sprintf(`PRAGMA busy_timeout = %d`, timeout))
	told := false
	for {
		_, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *sqlite.Error
		if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY {
			return fmt.Errorf("budget: cannot lock the ledger: %w", err)
		}
		if !told && waiting != nil {
			waiting()
			told = true
		}
	}
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
