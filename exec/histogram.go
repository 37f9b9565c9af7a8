package exec

import (
	"database/sql/driver"
	"math"

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

// The hash function orders rows and groups for contribution bounding:
// dpsql_hash(key, v1, v2, ...) mixes a per-query random key with the
// values (FNV-1a over a type-tagged encoding, then a SplitMix64 finish).
// Privacy does not rest on it (any per-unit rule keeps sensitivities
// bounded); the random key makes the kept rows a fair sample.
func init() {
	sqlite.MustRegisterFunction(rewrite.HashFunction, &sqlite.FunctionImpl{
		NArgs:         -1,
		Deterministic: true,
		Scalar: func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			h := uint64(14695981039346656037)
			mix := func(b byte) { h = (h ^ uint64(b)) * 1099511628211 }
			mix64 := func(x uint64) {
				for i := 0; i < 8; i++ {
					mix(byte(x >> (8 * i)))
				}
			}
			for _, a := range args {
				switch v := a.(type) {
				case nil:
					mix(0)
				case int64:
					mix(1)
					mix64(uint64(v))
				case float64:
					mix(2)
					mix64(math.Float64bits(v))
				case string:
					mix(3)
					for i := 0; i < len(v); i++ {
						mix(v[i])
					}
					mix64(uint64(len(v)))
				case []byte:
					mix(4)
					for _, c := range v {
						mix(c)
					}
					mix64(uint64(len(v)))
				}
			}
			h += 0x9e3779b97f4a7c15
			h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9
			h = (h ^ (h >> 27)) * 0x94d049bb133111eb
			return int64(h ^ (h >> 31)), nil
		},
	})
}
