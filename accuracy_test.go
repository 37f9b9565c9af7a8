package dpsql_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/csvimport"
)

// adultDB imports ../shared/data/adult.csv into a fresh database with a
// policy (no bounds) and a budget large enough for many runs.
func adultDB(tb testing.TB) string {
	tb.Helper()
	csvPath := filepath.Join("..", "shared", "data", "adult.csv")
	if _, err := os.Stat(csvPath); err != nil {
		tb.Skip("../shared/data/adult.csv not present")
	}
	path := filepath.Join(tb.TempDir(), "adult.db")
	owner, err := openEngine(path, dpsql.Options{Owner: true}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer owner.Close()
	if _, _, err := owner.ImportCSV(context.Background(), "adult", csvPath, csvimport.Options{}); err != nil {
		tb.Fatal(err)
	}
	if err := owner.Run(context.Background(), `CREATE PRIVACY POLICY ON adult; SET BUDGET epsilon = 1e6`, func(*dpsql.Result) error { return nil }); err != nil {
		tb.Fatal(err)
	}
	return path
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkAutoBoundsAccuracyAdult measures the accuracy of automatic
// bounds on adult.csv at ε = 1 for the whole query, with real noise from
// crypto/rand, over DPSQL_RUNS runs (default 200) per query. It reports the
// median errors as metrics; docs/benchmarks.md quotes them. Run with
//
//	go test -run XXX -bench AutoBoundsAccuracyAdult -benchtime 1x .
//
// DPSQL_FRACTION sets bounds_epsilon_fraction (default: the engine's).
func BenchmarkAutoBoundsAccuracyAdult(b *testing.B) {
	path := adultDB(b)
	runs := 200
	if v := os.Getenv("DPSQL_RUNS"); v != "" {
		fmt.Sscan(v, &runs)
	}
	frac := ""
	if v := os.Getenv("DPSQL_FRACTION"); v != "" {
		frac = ", bounds_epsilon_fraction = " + v
	}
	eng, err := openEngine(path, dpsql.Options{NoCache: true}, nil) // repeated runs measure fresh noise
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.Query(context.Background(), "SET show_bounds = on"); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	type target struct {
		name, agg string
		truth     float64
		relative  bool
	}
	for _, tg := range []target{
		{"avg_age_abs", `AVG("Age")`, 38.58164675532078, false},
		{"avg_capital_gain_rel", `AVG("Capital Gain")`, 1077.6488437087312, true},
		{"stddev_age_rel", `STDDEV_POP("Age")`, math.Sqrt(186.05568600783084), true},
	} {
		var errs []float64
		inRange := 0
		for i := 0; i < b.N*runs; i++ {
			r, err := eng.Query(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1`+frac+`) `+tg.agg+` FROM adult`)
			if err != nil {
				b.Fatal(err)
			}
			v := r.Rows[0][0].(float64)
			e := math.Abs(v - tg.truth)
			if tg.relative {
				e /= tg.truth
			}
			errs = append(errs, e)
			var lo, hi float64
			if len(r.Notes) == 1 {
				n, _ := fmt.Sscanf(r.Notes[0][strings.Index(r.Notes[0], "[")+1:], "%g, %g]", &lo, &hi)
				if n == 2 && hi >= 64 && hi <= 256 {
					inRange++
				}
			}
		}
		b.ReportMetric(median(errs), tg.name+"-median")
		if tg.name == "avg_age_abs" {
			b.ReportMetric(float64(inRange)/float64(len(errs)), "age_hi_in_64_256")
		}
	}
}
