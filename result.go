package dpsql

import "github.com/dpsql/dpsql/budget"

// Result is the outcome of one statement: a table, or a message for
// statements that return none.
type Result struct {
	Columns []string
	Rows    [][]any // int64, float64, string or nil
	Message string  // for statements without rows, e.g. "budget set"
	// Cost is what the statement charged to the ledger (zero for
	// everything but private queries).
	Cost budget.Cost
	// Mechanism is the noise of a private query's cells (budget.Laplace or
	// budget.Gaussian) and Rho the zCDP cost the ledger recorded for it.
	Mechanism string
	Rho       float64
	// ErrorBounds gives, per noisy output column that is a plain
	// aggregate with declared bounds, the half-width of its 95% noise
	// interval; empty otherwise.
	ErrorBounds map[string]float64
	// Notes are remarks to show with the result, such as the privately
	// chosen bounds after SET show_bounds = on.
	Notes []string
}

// addCharge adds one DP query's cost, mechanism and notes (each after
// prefix) to a statement's result.
func (res *Result) addCharge(r *Result, prefix string) {
	res.Cost.Epsilon += r.Cost.Epsilon
	res.Cost.Delta += r.Cost.Delta
	res.Rho += r.Rho
	if res.Mechanism == "" || res.Mechanism == r.Mechanism {
		res.Mechanism = r.Mechanism
	} else {
		res.Mechanism = "mixed"
	}
	for _, n := range r.Notes {
		res.Notes = append(res.Notes, prefix+n)
	}
}
