package exec

import (
	"database/sql/driver"

	sqlite "modernc.org/sqlite"

	"github.com/dpsql/dpsql/autobound"
	"github.com/dpsql/dpsql/rewrite"
)

// The histogram aggregate runs inside SQLite's scan: one Go call per row,
// O(1) work per row whatever the number of candidate bounds.
func init() {
	sqlite.MustRegisterFunction(rewrite.HistogramFunction, &sqlite.FunctionImpl{
		NArgs:         1,
		Deterministic: true,
		MakeAggregate: func(sqlite.FunctionContext) (sqlite.AggregateFunction, error) {
			return &histogramAgg{}, nil
		},
	})
}

type histogramAgg struct {
	h autobound.Histogram
}

func (a *histogramAgg) Step(_ *sqlite.FunctionContext, args []driver.Value) error {
	switch v := args[0].(type) {
	case nil:
	case int64:
		a.h.Add(float64(v))
	case float64:
		a.h.Add(v)
	default: // text and blobs sort above every number in SQLite
		a.h.AddAbove()
	}
	return nil
}

func (a *histogramAgg) WindowInverse(*sqlite.FunctionContext, []driver.Value) error {
	return nil // never used as a window function
}

func (a *histogramAgg) WindowValue(*sqlite.FunctionContext) (driver.Value, error) {
	return a.h.MarshalBinary()
}

func (a *histogramAgg) Final(*sqlite.FunctionContext) {}
