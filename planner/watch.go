package planner

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/parser"
)

// Queries to a threshold watch: SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS
// (watch = name) agg FROM ... asks whether one aggregate is above the
// watch's threshold. The watch (budget/watches.go) was paid for when it
// opened; the query costs nothing more and releases only "above" or
// "below". The sparse vector technique's guarantee needs every query's
// sensitivity to be within the watch's bound Δ (and, for a watch opened
// as monotonic, every query to grow when a unit is added): the planner
// checks both, before the scan.

// WatchBound is what a query to a watch is checked against.
type WatchBound struct {
	Sensitivity float64
	Monotonic   bool
}

// WatchQuery is a query sent to a threshold watch: the aggregate compared
// and its cell.
type WatchQuery struct {
	Name            string
	Aggregate, Cell int
}

// watchQuery plans a query to watch name: one aggregate, one group, its
// sensitivity within the watch's.
func (b *builder) watchQuery(name string) error {
	s := b.stmt
	q := b.q
	refuse := func(format string, args ...any) error {
		return errorf(s.SelectPos, ErrInvalidOption, "a query to watch %q %s", name, fmt.Sprintf(format, args...))
	}
	for _, o := range s.DPOptions {
		switch o.Name {
		case "watch", "max_groups_contributed", "max_rows_contributed":
		default:
			return errorf(o.NamePos, ErrInvalidOption, "a query to a watch takes no %s: it costs nothing (the watch was paid for when it opened) and is compared with the watch's threshold", o.Name)
		}
	}
	if len(s.GroupBy) > 0 || s.Having != nil || len(s.OrderBy) > 0 || s.Limit != nil {
		return refuse("asks one question: no GROUP BY, HAVING, ORDER BY or LIMIT")
	}
	if len(q.Outputs) != 1 || len(q.Aggregates) != 1 {
		return refuse("selects one aggregate (the value compared with the threshold)")
	}
	agg, ok := b.orderedAggregate(q.Outputs[0].Expr)
	if !ok {
		return refuse("selects the aggregate itself, not an expression of it")
	}
	if err := b.choosable(agg, "a query to a watch"); err != nil {
		return err
	}
	if b.watch == nil {
		return errorf(s.SelectPos, ErrUnsupported, "watches need the engine's ledger (Inputs.Watch)")
	}
	bound, err := b.watch(name)
	if err != nil {
		return err
	}
	cell := q.Aggregates[agg].Cells[0]
	c := q.Cells[cell]
	if c.L1Sensitivity > bound.Sensitivity {
		return refuse("must have sensitivity at most the watch's %g; %s has %g (one unit changes it by that much: %s)", bound.Sensitivity, q.Aggregates[agg].Text, c.L1Sensitivity, sensitivityWhy(q, c))
	}
	if bound.Monotonic && !(monotonic(c) && c.Hi >= 0 && c.Lo >= 0) {
		return refuse("must grow when a unit is added (the watch was opened monotonic): %s can shrink; use a COUNT or a SUM with bounds from 0", q.Aggregates[agg].Text)
	}
	q.Watch = &WatchQuery{Name: name, Aggregate: agg, Cell: cell}
	q.Epsilon, q.Noise = 0, NoiseLaplace
	q.NoiseWhy = "a watch answers from its sparse vector run, with Laplace noise"
	for _, c := range q.Cells {
		c.Epsilon = 0
	}
	return nil
}

// sensitivityWhy says where a cell's sensitivity comes from.
func sensitivityWhy(q *PrivateQuery, c *Cell) string {
	var parts []string
	if q.Unit.Column != "" {
		parts = append(parts, fmt.Sprintf("up to %d row(s) of a unit", q.Unit.MaxRows))
	}
	if c.Kind == ClippedSum {
		parts = append(parts, fmt.Sprintf("each clipped to [%g, %g]", c.Lo, c.Hi))
	}
	if len(parts) == 0 {
		return "one row"
	}
	return strings.Join(parts, ", ")
}

// watchName reads OPTIONS (watch = name): an identifier or a string.
func watchName(v parser.Expr) (string, bool) {
	switch x := v.(type) {
	case *parser.ColumnRef:
		if x.Table == "" {
			return x.Name, true
		}
	case *parser.Literal:
		if x.Kind == parser.StringLit {
			s, err := parser.LiteralValue(x)
			if str, ok := s.(string); ok && err == nil && str != "" {
				return str, true
			}
		}
	}
	return "", false
}
