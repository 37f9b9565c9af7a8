package dpsql

import (
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/interval"
)

// Dropped is the private estimate of what contribution bounding dropped
// from a query's rows: the shares of units and of their rows (UnitsShare,
// RowsShare, with 95% ranges).
type Dropped = exec.Dropped

// Result is the outcome of one statement: a table, or a message for
// statements that return none.
type Result struct {
	Columns []string
	// PostgresColumns, for a SELECT, names the columns as PostgreSQL
	// would (count for an unaliased COUNT(*), avg for AVG(x), ?column? for
	// other expressions, aliases as written); the wire server sends these.
	// nil keeps Columns.
	PostgresColumns []string
	Rows            [][]any // int64, float64, string or nil
	Message         string  // for statements without rows, e.g. "budget set"
	// Cost is what the statement charged to the ledger (zero for
	// everything but private queries).
	Cost budget.Cost
	// Mechanism is the noise of a private query's cells (budget.Laplace or
	// budget.Gaussian) and Rho the zCDP cost the ledger recorded for it.
	Mechanism string
	Rho       float64
	// ErrorBounds gives, per noisy output column that is a plain
	// aggregate with declared bounds, the half-width of its 95% noise
	// interval; empty otherwise. Intervals says more.
	ErrorBounds map[string]float64
	// Intervals gives each released value of a private query its 95%
	// interval, row by row and column by column as Rows: nil where the
	// output is not a plain aggregate (a key, an expression) or the
	// aggregate has none yet (percentiles). docs/privacy.md says how each
	// is computed.
	Intervals [][]*Interval
	// Notes are remarks to show with the result, such as the privately
	// chosen bounds after SET show_bounds = on.
	Notes []string
	// Dropped, for a private query whose rows are bounded per privacy
	// unit, is the private estimate of what that bounding dropped (its
	// note says it in words); nil otherwise.
	Dropped *Dropped
	// Cached: the answer released before to the same statement, repeated
	// from the cache (nothing charged).
	Cached bool
	// intervalCols marks the columns SET interval_columns added (<col>_lo,
	// <col>_hi), for the names the wire server sends.
	intervalCols []bool
	// charges are the ledger ids of what the statement charged (a
	// composite statement's parts, to mark withheld when a later part
	// fails).
	charges []int64
}

// Interval is a released value's 95% interval: the true value of the
// measured (clipped, contribution-bounded) data lies in [Lo, Hi] with
// probability about 0.95 over the noise (package interval documents each
// field).
type Interval = interval.Interval

// addCharge adds one DP query's cost, mechanism and notes (each after
// prefix) to a statement's result.
func (res *Result) addCharge(r *Result, prefix string) {
	res.Cost.Epsilon += r.Cost.Epsilon
	res.Cost.Delta += r.Cost.Delta
	res.Rho += r.Rho
	res.charges = append(res.charges, r.charges...)
	if res.Mechanism == "" || res.Mechanism == r.Mechanism {
		res.Mechanism = r.Mechanism
	} else {
		res.Mechanism = "mixed"
	}
	for _, n := range r.Notes {
		res.Notes = append(res.Notes, prefix+n)
	}
}
