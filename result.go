package dpsql

import (
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/cache"
	"github.com/dpsql/dpsql/exec"
)

// fromExec converts exec's intervals.
func fromExec(in [][]*exec.Interval) [][]*Interval {
	if in == nil {
		return nil
	}
	out := make([][]*Interval, len(in))
	for r, row := range in {
		out[r] = make([]*Interval, len(row))
		for j, iv := range row {
			if iv != nil {
				x := &Interval{Lo: iv.Lo, Hi: iv.Hi, Wide: iv.Wide, Clipped: iv.Clipped, ClipLo: iv.ClipLo, ClipHi: iv.ClipHi, Bounded: iv.Bounded}
				for _, e := range iv.Each {
					x.Each = append(x.Each, Interval{Lo: e.Lo, Hi: e.Hi, Wide: e.Wide})
				}
				out[r][j] = x
			}
		}
	}
	return out
}

// toCache and fromCache convert intervals for the answer cache.
func toCache(in [][]*Interval) [][]*cache.Interval {
	var out [][]*cache.Interval
	for _, row := range in {
		r := make([]*cache.Interval, len(row))
		for j, iv := range row {
			if iv != nil {
				x := &cache.Interval{Lo: iv.Lo, Hi: iv.Hi, Wide: iv.Wide, Clipped: iv.Clipped, ClipLo: iv.ClipLo, ClipHi: iv.ClipHi, Bounded: iv.Bounded}
				for _, e := range iv.Each {
					x.Each = append(x.Each, cache.Interval{Lo: e.Lo, Hi: e.Hi, Wide: e.Wide})
				}
				r[j] = x
			}
		}
		out = append(out, r)
	}
	return out
}

func fromCached(in [][]*cache.Interval) [][]*Interval {
	var out [][]*Interval
	for _, row := range in {
		r := make([]*Interval, len(row))
		for j, iv := range row {
			if iv != nil {
				x := &Interval{Lo: iv.Lo, Hi: iv.Hi, Wide: iv.Wide, Clipped: iv.Clipped, ClipLo: iv.ClipLo, ClipHi: iv.ClipHi, Bounded: iv.Bounded}
				for _, e := range iv.Each {
					x.Each = append(x.Each, Interval{Lo: e.Lo, Hi: e.Hi, Wide: e.Wide})
				}
				r[j] = x
			}
		}
		out = append(out, r)
	}
	return out
}

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
// probability about 0.95 over the noise. Wide marks an interval that is
// the whole range the bounds allow, because the group's noisy count is too
// small to say more.
type Interval struct {
	Lo, Hi float64
	Wide   bool
	// Each holds, for APPROX_QUANTILES' array of values, one interval per
	// value (Lo and Hi then span them).
	Each []Interval
	// Clipped says the value is computed from values clipped to [ClipLo,
	// ClipHi] (declared or privately chosen bounds): where the table has
	// values beyond them, its raw value may lie outside [Lo, Hi], pulled
	// toward the bounds. Set for every aggregate but COUNT; a public fact
	// of the query, not a measurement (no ε is spent to say how many
	// values were clipped).
	Clipped        bool
	ClipLo, ClipHi float64
	// Bounded says contribution bounding may have dropped rows: the
	// policy has a privacy unit, and a unit's rows beyond its l0 groups
	// and l∞ rows per group are not measured.
	Bounded bool
}

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
