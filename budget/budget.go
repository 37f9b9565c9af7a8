// Package budget is dpsql's privacy accountant and its durable ledger.
//
// Where it sits: after a query is planned and before any of its results is
// released, the engine calls Charge. The charge is committed to the
// _dpsql_ledger table of the same SQLite file in a write transaction opened
// with BEGIN IMMEDIATE, so two connections (or processes) cannot both read
// the old total and overspend. A crash after the commit loses the answer,
// never the charge.
//
// Every charge records its mechanism, the ε the analyst asked for, the δ
// of its partition selection and its zero-concentrated DP cost ρ. A charge
// is admitted when the whole ledger (since the last reset) stays within
// the owner's total by one of two accountants (accountant.go): basic
// composition of ε, while every charge is pure, or zCDP composition of ρ.
//
// The arithmetic is exact: ε, δ and ρ are recorded as integer numbers of
// units (EpsilonUnit, DeltaUnit, RhoUnit) — a charge rounded up, a total
// rounded down, both from the decimal that the float64 prints as — and a
// charge is admitted only when the integer sums stay within the totals.
// There is no tolerance, so no sequence of tiny charges can spend more
// than the total.
package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/dpsql/dpsql/dperr"
	"math"
	"math/big"
	"strconv"
	"sync"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Sentinel errors, checkable with errors.Is.
var (
	// ErrBudgetExhausted: the charge would exceed the total budget.
	ErrBudgetExhausted = dperr.BudgetExhausted
	// ErrNoBudget: the owner has not set a budget yet.
	ErrNoBudget = dperr.NoBudget
	// ErrInvalidCost: a cost or total that is negative, NaN or infinite.
	ErrInvalidCost = dperr.InvalidCost
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
CREATE TABLE IF NOT EXISTS _dpsql_spent (
	scope         TEXT PRIMARY KEY, -- '' for the database, else an analyst's name
	after_reset   INTEGER NOT NULL, -- the reset these sums start after (its after_entry)
	through_id    INTEGER NOT NULL, -- the last ledger id they include
	epsilon_units INTEGER NOT NULL,
	delta_units   INTEGER NOT NULL,
	rho_units     REAL NOT NULL,
	impure        INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS _dpsql_analysts (
	name          TEXT PRIMARY KEY,
	verifier      TEXT NOT NULL, -- a SCRAM-SHA-256 verifier, never the password
	epsilon       REAL,          -- the analyst's own budget; NULL: none yet
	delta         REAL,
	epsilon_units INTEGER,
	delta_units   INTEGER,
	created       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS _dpsql_watches (
	analyst         TEXT NOT NULL, -- '' for a local session
	name            TEXT NOT NULL,
	threshold       REAL NOT NULL,
	sensitivity     REAL NOT NULL,
	cutoff          INTEGER NOT NULL,
	epsilon         REAL NOT NULL,
	monotonic       INTEGER NOT NULL,
	noisy_threshold REAL NOT NULL, -- drawn once, with the charge; never shown
	asked           INTEGER NOT NULL,
	above           INTEGER NOT NULL,
	ledger_id       INTEGER NOT NULL, -- the charge that opened it
	created         TEXT NOT NULL,
	PRIMARY KEY (analyst, name)
);
`

// columns are the columns later versions added, per table, in order.
var columns = []struct{ table, column, decl string }{
	{"_dpsql_ledger", "epsilon_units", "INTEGER"},
	{"_dpsql_ledger", "delta_units", "INTEGER"},
	{"_dpsql_budget", "epsilon_units", "INTEGER"},
	{"_dpsql_budget", "delta_units", "INTEGER"},
	{"_dpsql_ledger", "mechanism", "TEXT NOT NULL DEFAULT 'laplace'"},
	{"_dpsql_ledger", "rho_units", "INTEGER"},
	{"_dpsql_budget", "pure", "INTEGER NOT NULL DEFAULT 0"},
	{"_dpsql_ledger", "analyst", "TEXT"}, // NULL: a local session on the file
	{"_dpsql_ledger", "outcome", "TEXT"}, // NULL: answered; else why the charge went unanswered
}

// EpsilonUnit, DeltaUnit and RhoUnit are the ledger's integer units: ε, δ
// and ρ are recorded as whole multiples of them.
const (
	EpsilonUnit = 1e-12
	DeltaUnit   = 1e-18
	RhoUnit     = 1e-13
)

// MaxTotalEpsilon caps the total ε, so that every sum of charges fits the
// ledger's 64-bit integers.
const MaxTotalEpsilon = 1e6

// Init creates the budget tables when they are missing, and gives a
// ledger made by an earlier version the columns it lacks (integer units:
// charges rounded up, the total rounded down; ρ = ε²/2 and mechanism
// 'laplace' for the charges of versions that only had Laplace noise), in
// one transaction. On PostgreSQL it makes the schema dpsql when it is
// missing.
func Init(ctx context.Context, s *Store) error {
	if s.postgres {
		return s.initPostgres(ctx)
	}
	db := s.db
	// An up-to-date database is only read: opening it must not wait for
	// another process's write lock (an owner's import).
	var current int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('_dpsql_budget', '_dpsql_budget_resets', '_dpsql_ledger', '_dpsql_analysts', '_dpsql_spent', '_dpsql_watches'))
		+ (SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name IN ('_dpsql_ledger_by_analyst', '_dpsql_ledger_unanswered'))
		+ (SELECT COUNT(*) FROM pragma_table_info('_dpsql_ledger') WHERE name IN ('epsilon_units', 'delta_units', 'mechanism', 'rho_units', 'analyst', 'outcome'))
		+ (SELECT COUNT(*) FROM pragma_table_info('_dpsql_budget') WHERE name IN ('epsilon_units', 'delta_units', 'pure'))`).Scan(&current); err != nil {
		return err
	}
	// Six tables, two indexes and the added columns: update this count
	// with the schema.
	if current == 8+len(columns) {
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
	added := map[string]bool{}
	for _, c := range columns {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?`, c.table, c.column).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, "ALTER TABLE "+c.table+" ADD COLUMN "+c.column+" "+c.decl); err != nil {
			return err
		}
		added[c.table+"."+c.column] = true
	}
	for _, t := range []string{"_dpsql_ledger", "_dpsql_budget"} {
		if added[t+".epsilon_units"] {
			if err := migrateUnits(ctx, tx, t, t == "_dpsql_ledger"); err != nil {
				return err
			}
		}
	}
	if added["_dpsql_ledger.rho_units"] {
		if err := migrateRho(ctx, tx); err != nil {
			return err
		}
	}
	// An analyst's charges since their running sum was last brought up to
	// date are found through this index, not by scanning the ledger.
	if _, err := tx.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS _dpsql_ledger_by_analyst ON _dpsql_ledger (analyst, id)`); err != nil {
		return err
	}
	// The few unanswered charges a re-run may take over (ChargeOrReuse),
	// found without scanning the ledger.
	if _, err := tx.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS _dpsql_ledger_unanswered ON _dpsql_ledger (statement) WHERE outcome IS NOT NULL`); err != nil {
		return err
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

// migrateRho gives the charges of versions without zCDP accounting their
// ρ: each such query was ε-DP (apart from its partition selection's δ), so
// it is ε²/2-zCDP (Bun & Steinke 2016, Proposition 1.4), computed exactly
// from its ε in units and rounded up.
func migrateRho(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT id, epsilon_units FROM _dpsql_ledger")
	if err != nil {
		return err
	}
	var ids, rhos []int64
	for rows.Next() {
		var id, eu int64
		if err := rows.Scan(&id, &eu); err != nil {
			rows.Close()
			return err
		}
		ids, rhos = append(ids, id), append(rhos, rhoUnitsOfPure(eu))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i, id := range ids {
		if _, err := tx.ExecContext(ctx, "UPDATE _dpsql_ledger SET rho_units = ? WHERE id = ?", rhos[i], id); err != nil {
			return err
		}
	}
	return nil
}

// rhoUnitsOfPure is ε²/2 in ρ-units for ε given in ε-units, rounded up:
// (eu·10⁻¹²)²/2 / 10⁻¹³ = eu²/(2·10¹¹).
func rhoUnitsOfPure(eu int64) int64 {
	e := big.NewInt(eu)
	num := new(big.Int).Mul(e, e)
	den := big.NewInt(200_000_000_000)
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return math.MaxInt64
	}
	return q.Int64()
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
	if math.IsInf(v, 1) {
		return math.MaxInt64
	}
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

// Mechanisms a charge can record: the noise of the query's cells.
const (
	Laplace  = "laplace"  // pure ε-DP cells (and SVT, partition selection)
	Gaussian = "gaussian" // discrete Gaussian cells: ρ-zCDP, not pure
)

// Charge is one query's privacy cost as the ledger records it.
type Charge struct {
	// Mechanism is Laplace or Gaussian. A Laplace charge is ε-DP apart
	// from its partition selection's δ, so basic composition can count it;
	// a Gaussian one only zCDP composition can.
	Mechanism string
	// Epsilon is the ε the analyst asked for. Basic composition adds it
	// up; for a Gaussian charge it only says which share of the total the
	// query bought (ρ = RhoTotal·ε/E).
	Epsilon float64
	// Delta is the δ of the query's partition selection (0 without).
	Delta float64
	// Rho is the zCDP of the query's mechanisms, apart from Delta's event:
	// the sum of ε_k²/2 over its pure parts and Δ₂²/(2σ²) over its Gaussian
	// cells.
	Rho float64
}

// LaplaceCharge is the charge of a query that is ε-DP apart from δ, made of
// pure parts with the given ε each (its bound searches, partition
// selection and cells): ρ = Σ ε_k²/2 (Bun & Steinke 2016, Proposition 1.4
// and Lemma 2.3).
func LaplaceCharge(epsilon, delta float64, parts []float64) Charge {
	rho := 0.0
	for _, e := range parts {
		rho += RhoOfPure(e)
	}
	if len(parts) == 0 {
		rho = RhoOfPure(epsilon)
	}
	return Charge{Mechanism: Laplace, Epsilon: epsilon, Delta: delta, Rho: rho}
}

func (c Charge) validate() error {
	cost := Cost{Epsilon: c.Epsilon, Delta: c.Delta}
	if cost.Delta == 1 {
		// A query may ask for δ = 1 (as BigQuery allows); it is a valid
		// request that no total admits, refused as over budget.
		cost.Delta = 0
	}
	if err := cost.validate(); err != nil {
		return err
	}
	if math.IsNaN(c.Rho) || c.Rho < 0 {
		return fmt.Errorf("%w: rho must be a non-negative number, got %v", ErrInvalidCost, c.Rho)
	}
	if c.Mechanism != Laplace && c.Mechanism != Gaussian {
		return fmt.Errorf("%w: unknown mechanism %q", ErrInvalidCost, c.Mechanism)
	}
	return nil
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

// readLedger reads the database's total and what the charges since the
// last reset add up to. With an analyst, it reads that analyst's own budget
// and charges, with the database's ledger as their cap.
func readLedger(ctx context.Context, q querier, analyst string) (ledger, error) {
	var l ledger
	var pure int64
	err := q.QueryRowContext(ctx, `SELECT epsilon_units, delta_units, pure FROM _dpsql_budget WHERE id = 1`).Scan(&l.total.eps, &l.total.delta, &pure)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return l, err
	default:
		l.set, l.pure = true, pure != 0
	}
	if err := l.readSpent(ctx, q, ""); err != nil || analyst == "" {
		return l, err
	}
	db := l
	l = ledger{analyst: analyst, cap: &db, pure: db.pure}
	var eu, du sql.NullInt64
	err = q.QueryRowContext(ctx, `SELECT epsilon_units, delta_units FROM _dpsql_analysts WHERE name = ?`, analyst).Scan(&eu, &du)
	if errors.Is(err, sql.ErrNoRows) {
		return l, fmt.Errorf("%w: %q (the owner dropped it)", ErrUnknownAnalyst, analyst)
	}
	if err != nil {
		return l, err
	}
	l.set, l.total = eu.Valid, units{eu.Int64, du.Int64}
	return l, l.readSpent(ctx, q, analyst)
}

// readSpent adds up the charges since the last reset: all of them, or one
// analyst's.
//
// The sums are kept running in _dpsql_spent (one row per scope, written
// by ChargeFirst in the charge's transaction), so that a charge does not
// scan the whole ledger. The ledger stays the truth: a running sum counts
// only if it starts after the current reset, and it is brought up to date
// by adding the ledger's charges after the last id it includes — the ones
// a program that does not keep the sums may have recorded — or computed
// afresh when it is missing or names an id beyond the ledger's last.
func (l *ledger) readSpent(ctx context.Context, q querier, analyst string) error {
	if err := q.QueryRowContext(ctx, `SELECT COALESCE((SELECT after_entry FROM _dpsql_budget_resets ORDER BY id DESC LIMIT 1), 0),
		COALESCE((SELECT MAX(id) FROM _dpsql_ledger), 0)`).Scan(&l.reset, &l.lastID); err != nil {
		return err
	}
	var r running
	err := q.QueryRowContext(ctx, `SELECT after_reset, through_id, epsilon_units, delta_units, rho_units, impure FROM _dpsql_spent WHERE scope = ?`, analyst).
		Scan(&r.afterReset, &r.throughID, &r.spent.eps, &r.spent.delta, &r.rho, &r.impure)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		r = running{}
	case err != nil:
		return err
	}
	from := l.reset
	if r.afterReset == l.reset && r.throughID >= l.reset && r.throughID <= l.lastID {
		from = r.throughID
	} else {
		r = running{}
	}
	// ρ is summed as a float of integers: exact while the sum stays below
	// 2^53 units, and any larger sum is over every zCDP total (maxRhoUnits).
	query := `SELECT CAST(COALESCE(SUM(epsilon_units), 0) AS BIGINT), CAST(COALESCE(SUM(delta_units), 0) AS BIGINT),
		COALESCE(SUM(CAST(rho_units AS DOUBLE PRECISION)), 0), COUNT(*) FILTER (WHERE mechanism <> 'laplace')
		FROM _dpsql_ledger WHERE id > ?`
	args := []any{from}
	if analyst != "" {
		query += ` AND analyst = ?`
		args = append(args, analyst)
	}
	if err := q.QueryRowContext(ctx, query, args...).Scan(&l.spent.eps, &l.spent.delta, &l.rho, &l.impure); err != nil {
		return err
	}
	l.spent.eps += r.spent.eps
	l.spent.delta += r.spent.delta
	l.rho += r.rho
	l.impure += r.impure
	return nil
}

// running is a row of _dpsql_spent.
type running struct {
	afterReset, throughID int64
	spent                 units
	rho                   float64
	impure                int64
}

// execer runs statements (a connection inside a transaction).
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// keepRunning records l's sums, with charge c (ledger id id) added, as
// the running sums of its scope. It runs in the charge's transaction,
// which read l, so l counts every charge of its scope through id - 1.
func (l ledger) keepRunning(ctx context.Context, x execer, c Charge, id int64) error {
	impure := l.impure
	if c.Mechanism != Laplace {
		impure++
	}
	_, err := x.ExecContext(ctx, `INSERT INTO _dpsql_spent (scope, after_reset, through_id, epsilon_units, delta_units, rho_units, impure) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (scope) DO UPDATE SET after_reset = excluded.after_reset, through_id = excluded.through_id, epsilon_units = excluded.epsilon_units,
		delta_units = excluded.delta_units, rho_units = excluded.rho_units, impure = excluded.impure`,
		l.analyst, l.reset, id, l.spent.eps+toUnits(c.Epsilon, EpsilonUnit, true), l.spent.delta+toUnits(c.Delta, DeltaUnit, true),
		l.rho+float64(toUnits(c.Rho, RhoUnit, true)), impure)
	return err
}

// Reset starts the budget afresh (owner): charges so far stay in the
// ledger for audit but no longer count as spent.
func Reset(ctx context.Context, s *Store) error {
	return s.locked(ctx, func(x spoken) error {
		_, err := x.ExecContext(ctx, `INSERT INTO _dpsql_budget_resets (reset, after_entry)
			SELECT CAST(? AS TEXT), COALESCE(MAX(id), 0) FROM _dpsql_ledger`, time.Now().UTC().Format(time.RFC3339Nano))
		return err
	})
}

// GetStatus reads the database's budget: its total and what has been
// spent.
func GetStatus(ctx context.Context, s *Store) (Status, error) {
	l, err := readLedger(ctx, s.on(s.reads), "")
	return l.status(), err
}

// GetAnalystStatus reads an analyst's own budget and spending; its
// Database field holds the database's.
func GetAnalystStatus(ctx context.Context, s *Store, analyst string) (Status, error) {
	l, err := readLedger(ctx, s.on(s.reads), analyst)
	return l.status(), err
}

// SetTotal sets the total budget of the database (owner). What was spent
// stays spent: the remaining budget is the new total minus the ledger.
// With pure, the owner requires pure ε-DP: the total δ must be 0 and only
// pure mechanisms run.
func SetTotal(ctx context.Context, s *Store, total Cost, pure bool) error {
	if err := total.validate(); err != nil {
		return err
	}
	if total.Epsilon == 0 {
		return fmt.Errorf("%w: the total epsilon must be positive", ErrInvalidCost)
	}
	if pure && total.Delta != 0 {
		return fmt.Errorf("%w: a PURE budget has delta = 0 (pure ε-DP spends no δ)", ErrInvalidCost)
	}
	pureFlag := 0
	if pure {
		pureFlag = 1
	}
	return s.locked(ctx, func(x spoken) error {
		_, err := x.ExecContext(ctx, `INSERT INTO _dpsql_budget (id, epsilon, delta, epsilon_units, delta_units, pure) VALUES (1, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET epsilon = excluded.epsilon, delta = excluded.delta,
			epsilon_units = excluded.epsilon_units, delta_units = excluded.delta_units, pure = excluded.pure`,
			total.Epsilon, total.Delta, toUnits(total.Epsilon, EpsilonUnit, false), toUnits(total.Delta, DeltaUnit, false), pureFlag)
		return err
	})
}

// lockPoll is how long one attempt to lock the ledger waits before
// ChargeFirst reports that it is waiting and tries again.
var lockPoll = 2 * time.Second

// ChargeFirst records the first of the candidate charges (the same query
// answered by different mechanisms, best first) that the ledger admits,
// and returns its index; when none fits it records nothing and returns
// ErrBudgetExhausted (or ErrNoBudget). The choice depends only on the
// ledger and the candidates, never on data.
//
// While another connection or process holds the database's write lock (an
// owner's import, another charge), it calls waiting once and keeps waiting
// until it gets the lock or ctx ends — instead of failing with SQLITE_BUSY
// after the connection's busy timeout.
//
// With an analyst (not ""), a charge must fit both that analyst's own
// budget and the database's, and the ledger records who spent it.
func ChargeFirst(ctx context.Context, s *Store, analyst string, candidates []Charge, statement string, waiting func()) (chosen int, err error) {
	chosen, _, err = ChargeFirstID(ctx, s, analyst, candidates, statement, waiting)
	return chosen, err
}

// MarkUnanswered records in the ledger why a charge was not answered (a
// cancelled or failed query: its ε stays spent, the query's noisy values
// having possibly been computed); SHOW LEDGER shows it.
func MarkUnanswered(ctx context.Context, s *Store, id int64, why string) error {
	_, err := s.on(s.db).ExecContext(ctx, `UPDATE _dpsql_ledger SET outcome = ? WHERE id = ?`, why, id)
	return err
}

// Check returns the error ChargeFirst would give now if none of
// candidates fits the budget (ErrBudgetExhausted, ErrNoBudget), and nil
// if one does. It charges nothing and takes no lock, so a charge made
// meanwhile can still make ChargeFirst refuse: callers check first so
// that a query the budget refuses is refused before any work whose
// duration depends on the data.
func Check(ctx context.Context, s *Store, analyst string, candidates []Charge) error {
	if len(candidates) == 0 {
		return fmt.Errorf("%w: no candidate charge", ErrInvalidCost)
	}
	for _, c := range candidates {
		if err := c.validate(); err != nil {
			return err
		}
	}
	l, err := readLedger(ctx, s.on(s.db), analyst)
	if err != nil {
		return err
	}
	_, err = l.choose(candidates)
	return err
}

// Admits is Check on the ledger as st read it: nil when one of the
// candidates fits the budget st describes, else the error a charge would
// give. It reads nothing (a query's budget check right after its status).
func (st Status) Admits(candidates []Charge) error {
	if len(candidates) == 0 {
		return fmt.Errorf("%w: no candidate charge", ErrInvalidCost)
	}
	for _, c := range candidates {
		if err := c.validate(); err != nil {
			return err
		}
	}
	_, err := st.l.choose(candidates)
	return err
}

// ChargeFirstID is ChargeFirst that also returns the charge's ledger id,
// for MarkUnanswered.
func ChargeFirstID(ctx context.Context, s *Store, analyst string, candidates []Charge, statement string, waiting func()) (chosen int, id int64, err error) {
	return chargeFirst(ctx, s, analyst, candidates, statement, waiting, nil, nil)
}

// ChargeOrReuse is ChargeFirstID, but when the same statement of the
// same analyst was charged since the last reset and went unanswered
// because it was cancelled or timed out (MarkUnanswered), with the cost
// of one of the candidates, that charge pays for this run instead: it is
// marked answered, nothing new is charged, and reused is true. Nothing
// was released for it, so the one release it paid for is this one.
func ChargeOrReuse(ctx context.Context, s *Store, analyst string, candidates []Charge, statement string, waiting func()) (chosen int, id int64, reused bool, err error) {
	chosen, id, err = chargeFirst(ctx, s, analyst, candidates, statement, waiting, &reused, nil)
	return chosen, id, reused, err
}

// HasReusable reports whether a charge ChargeOrReuse would take over is
// there, in the ledger st was read from (read without the lock: a query
// the budget would refuse may still be answered on its earlier charge).
func HasReusable(ctx context.Context, s *Store, st Status, candidates []Charge, statement string) (bool, error) {
	_, _, ok, err := findUnanswered(ctx, s.on(s.reads), st.l.reset, st.Analyst, statement, candidates)
	return ok, err
}

// Reusable are the outcomes (MarkUnanswered's why) whose charge a re-run
// of the same statement may take over: nothing was released.
var Reusable = []string{"unanswered: cancelled", "unanswered: timed out"}

// claimUnanswered marks answered the oldest reusable charge of statement
// by analyst since the reset whose cost is one of the candidates', and
// says which candidate; ok is false when there is none.
func claimUnanswered(ctx context.Context, x spoken, reset int64, analyst, statement string, candidates []Charge) (chosen int, id int64, ok bool, err error) {
	chosen, id, ok, err = findUnanswered(ctx, x, reset, analyst, statement, candidates)
	if err != nil || !ok {
		return chosen, id, ok, err
	}
	if _, err := x.ExecContext(ctx, `UPDATE _dpsql_ledger SET outcome = NULL WHERE id = ?`, id); err != nil {
		return -1, 0, false, err
	}
	return chosen, id, true, nil
}

// findUnanswered is the oldest reusable charge claimUnanswered would take.
func findUnanswered(ctx context.Context, x spoken, reset int64, analyst, statement string, candidates []Charge) (chosen int, id int64, ok bool, err error) {
	rows, err := x.QueryContext(ctx, `SELECT id, epsilon_units, delta_units, mechanism, COALESCE(rho_units, 0) FROM _dpsql_ledger
		WHERE outcome IS NOT NULL AND statement = ? AND id > ? AND COALESCE(analyst, '') = ? AND outcome IN (?, ?) ORDER BY id`, statement, reset, analyst, Reusable[0], Reusable[1])
	if err != nil {
		return -1, 0, false, err
	}
	type paid struct {
		id         int64
		eps, delta int64
		mechanism  string
		rho        float64
	}
	var found []paid
	for rows.Next() {
		var p paid
		if err := rows.Scan(&p.id, &p.eps, &p.delta, &p.mechanism, &p.rho); err != nil {
			rows.Close()
			return -1, 0, false, err
		}
		found = append(found, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return -1, 0, false, err
	}
	for _, p := range found {
		for i, c := range candidates {
			if c.Mechanism == p.mechanism && toUnits(c.Epsilon, EpsilonUnit, true) == p.eps && toUnits(c.Delta, DeltaUnit, true) == p.delta && float64(toUnits(c.Rho, RhoUnit, true)) == p.rho {
				return i, p.id, true, nil
			}
		}
	}
	return -1, 0, false, nil
}

// also, when not nil, runs in the charge's transaction after the ledger
// entry id is written and before the commit (a watch is recorded with its
// charge); its error rolls the charge back.
func chargeFirst(ctx context.Context, s *Store, analyst string, candidates []Charge, statement string, waiting func(), reuse *bool, also func(ctx context.Context, x spoken, id int64) error) (chosen int, id int64, err error) {
	if len(candidates) == 0 {
		return -1, 0, fmt.Errorf("%w: no candidate charge", ErrInvalidCost)
	}
	for _, c := range candidates {
		if err := c.validate(); err != nil {
			return -1, 0, err
		}
	}
	release, err := queueForLedger(ctx, s.db)
	if err != nil {
		return -1, 0, err
	}
	defer release()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return -1, 0, err
	}
	defer conn.Close()
	if s.postgres {
		err = s.lockPostgres(ctx, conn, waiting)
	} else {
		err = lockLedger(ctx, conn, waiting)
	}
	if err != nil {
		return -1, 0, err
	}
	x := s.on(conn)
	defer func() {
		if err != nil {
			// Use a fresh context: the caller's may be the reason we fail.
			_, _ = conn.ExecContext(context.Background(), `ROLLBACK`)
		}
	}()
	// With the lock held, the charge (a few milliseconds) runs to its
	// end whatever ctx does: a cancel landing on the COMMIT could
	// otherwise be reported for a charge that was made ("nothing was
	// charged", yet the ledger has it), or leave the lock held. The
	// caller sees the cancel at its next step, after the charge.
	ctx = context.WithoutCancel(ctx)
	l, err := readLedger(ctx, x, analyst)
	if err != nil {
		return -1, 0, err
	}
	if reuse != nil {
		i, rid, ok, err := claimUnanswered(ctx, x, l.reset, analyst, statement, candidates)
		if err != nil {
			return -1, 0, err
		}
		if ok {
			if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
				return -1, 0, fmt.Errorf("budget: commit failed: %w", err)
			}
			*reuse = true
			return i, rid, nil
		}
	}
	i, err := l.choose(candidates)
	if err != nil {
		return -1, 0, err
	}
	c := candidates[i]
	var who any // NULL for a local session
	if analyst != "" {
		who = analyst
	}
	if err := x.QueryRowContext(ctx, `INSERT INTO _dpsql_ledger (charged, statement, epsilon, delta, epsilon_units, delta_units, mechanism, rho_units, analyst) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		time.Now().UTC().Format(time.RFC3339Nano), statement, c.Epsilon, c.Delta,
		toUnits(c.Epsilon, EpsilonUnit, true), toUnits(c.Delta, DeltaUnit, true), c.Mechanism, toUnits(c.Rho, RhoUnit, true), who).Scan(&id); err != nil {
		return -1, 0, err
	}
	// The running sums of the scopes this charge counts in: the
	// database's, and the analyst's.
	for s := &l; s != nil; s = s.cap {
		if err := s.keepRunning(ctx, x, c, id); err != nil {
			return -1, 0, err
		}
	}
	if also != nil {
		if err := also(ctx, x, id); err != nil {
			return -1, 0, err
		}
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return -1, 0, fmt.Errorf("budget: commit failed: %w", err)
	}
	return i, id, nil
}

// ledgerQueues holds one queue per database handle (*sql.DB → chan
// struct{} of capacity 1) for this process's charges. SQLite's busy
// handler retries a locked database with sleeps that grow to 100 ms, so
// sessions of one process (a server's connections) that met each other
// there waited unfairly: tens of milliseconds to seconds at the 99th
// percentile under 32 concurrent clients. Waiting here instead, they take
// turns as soon as the ledger is free; other processes still meet
// SQLite's lock in lockLedger.
var ledgerQueues sync.Map

// queueForLedger waits for this process's turn to charge db's ledger
// (or for ctx to end); release ends the turn.
func queueForLedger(ctx context.Context, db *sql.DB) (release func(), err error) {
	q, _ := ledgerQueues.LoadOrStore(db, make(chan struct{}, 1))
	turn := q.(chan struct{})
	select {
	case turn <- struct{}{}:
		return func() { <-turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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
		// BEGIN runs to its end whatever ctx does (it waits at most
		// lockPoll): a cancel that interrupted it could leave the pooled
		// connection inside a transaction that holds the write lock,
		// wedging every later charge, or report as failed a BEGIN that
		// took the lock. ctx is checked between attempts, and after a
		// successful one (then the lock is let go: nothing was charged).
		_, err := conn.ExecContext(context.WithoutCancel(ctx), `BEGIN IMMEDIATE`)
		if err == nil {
			if ctx.Err() != nil {
				_, _ = conn.ExecContext(context.Background(), `ROLLBACK`)
				return ctx.Err()
			}
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
	Mechanism string
	Cost      Cost
	Rho       float64
	Analyst   string // "" for a local session on the file
	// Outcome is "" for an answered query, else why it went unanswered
	// (MarkUnanswered).
	Outcome string
}

// Ledger returns every charge, oldest first.
func Ledger(ctx context.Context, s *Store) ([]Entry, error) {
	rows, err := s.on(s.db).QueryContext(ctx, `SELECT id, charged, statement, mechanism, epsilon, delta, COALESCE(rho_units, 0), COALESCE(analyst, ''), COALESCE(outcome, '') FROM _dpsql_ledger ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var rho int64
		if err := rows.Scan(&e.ID, &e.Charged, &e.Statement, &e.Mechanism, &e.Cost.Epsilon, &e.Cost.Delta, &rho, &e.Analyst, &e.Outcome); err != nil {
			return nil, err
		}
		e.Rho = fromUnits(rho, 13)
		out = append(out, e)
	}
	return out, rows.Err()
}
