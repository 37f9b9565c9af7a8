// Command figures draws the docs' figures with dpsql itself (package
// chart, as --chart and the web console draw them) on the Adult census:
//
//	go run ./examples/figures --csv ../shared/data/adult.csv --out docs/images
//
// writes
//   - tutorial-education.svg: the tutorial's histogram over public
//     education levels, people and mean age with 95% error bars (ε = 0.1);
//   - tutorial-ages.svg: people by five-year age band, a line with its
//     95% band (ε = 0.1);
//   - error-vs-epsilon.svg (docs/benchmarks.md): the measured absolute
//     error of COUNT(*) and AVG("Age") against ε, the median of --runs
//     runs per ε with the band from the 5th to the 95th percentile.
//
// It builds its database in a temporary directory, as the tutorial's owner
// does (Age bounded to [0, 125], five education levels public).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/chart"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/internal/adultdata"
)

func main() {
	csvPath := flag.String("csv", filepath.Join("..", "shared", "data", "adult.csv"), "the Adult census CSV `FILE`")
	out := flag.String("out", filepath.Join("docs", "images"), "`DIR` to write the figures to")
	runs := flag.Int("runs", 200, "runs per ε for the error figure")
	flag.Parse()
	if err := run(*csvPath, *out, *runs); err != nil {
		log.Fatal(err)
	}
}

func run(csvPath, out string, runs int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dpsql-figures")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "adult.db")
	owner, err := dpsql.Open(db, dpsql.Options{Owner: true})
	if err != nil {
		return err
	}
	defer owner.Close()
	if _, _, err := owner.ImportCSV(ctx, "adult", csvPath, csvimport.Options{}); err != nil {
		return err
	}
	if err := owner.Run(ctx, `CREATE PRIVACY POLICY ON adult;
		ALTER PRIVACY POLICY ON adult SET BOUNDS "Age" (0, 125);
		ALTER PRIVACY POLICY ON adult SET DOMAIN "Education" ('Bachelors', 'HS-grad', 'Masters', 'Doctorate', 'Some-college');
		SET BUDGET epsilon = 1000000`, func(*dpsql.Result) error { return nil }); err != nil {
		return err
	}
	analyst, err := dpsql.Open(db, dpsql.Options{NoCache: true})
	if err != nil {
		return err
	}
	defer analyst.Close()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	draw := func(name, sql string) error {
		res, err := analyst.Query(ctx, sql)
		if err != nil {
			return err
		}
		return write(filepath.Join(out, name), chart.FromResult(res))
	}
	if err := draw("tutorial-education.svg", `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) "Education", COUNT(*) AS people, ROUND(AVG("Age"), 1) AS mean_age
		FROM adult GROUP BY "Education" ORDER BY people DESC`); err != nil {
		return err
	}
	if err := draw("tutorial-ages.svg", `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) FLOOR("Age" / 5) * 5 AS age, COUNT(*) AS people
		FROM adult WHERE "Age" < 90 GROUP BY FLOOR("Age" / 5) * 5`); err != nil {
		return err
	}
	ages, err := adultdata.ReadAges(csvPath)
	if err != nil {
		return err
	}
	return errorFigure(ctx, analyst, ages, runs, filepath.Join(out, "error-vs-epsilon.svg"))
}

// errorFigure measures COUNT(*) and AVG("Age")'s absolute errors against
// the exact answers at each ε and draws their medians with a band from the
// 5th to the 95th percentile.
func errorFigure(ctx context.Context, eng *dpsql.Engine, ages []int, runs int, path string) error {
	sum := 0
	for _, a := range ages {
		sum += min(max(a, 0), 125)
	}
	exact := map[string]float64{"count": float64(len(ages)), "avg": float64(sum) / float64(len(ages))}
	queries := []struct{ name, sql string }{
		{"count", `SELECT COUNT(*) FROM adult`},
		{"avg", `SELECT AVG("Age") FROM adult`},
	}
	res := &dpsql.Result{Columns: []string{"ε", `COUNT(*) |error|`, `AVG("Age") |error|`}}
	for _, eps := range []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1} {
		row := []any{eps}
		ivs := []*dpsql.Interval{nil}
		for _, q := range queries {
			errs := make([]float64, runs)
			sql := fmt.Sprintf("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = %g) %s", eps, q.sql[len("SELECT "):])
			for i := range errs {
				r, err := eng.Query(ctx, sql)
				if err != nil {
					return err
				}
				errs[i] = math.Abs(adultdata.Num(r.Rows[0][0]) - exact[q.name])
			}
			sort.Float64s(errs)
			at := func(p float64) float64 { return errs[int(p*float64(len(errs)-1))] }
			row = append(row, at(0.5))
			ivs = append(ivs, &dpsql.Interval{Lo: at(0.05), Hi: at(0.95)})
			fmt.Printf("ε=%g %s: median |error| %.4g, 95th percentile %.4g\n", eps, q.name, at(0.5), at(0.95))
		}
		res.Rows = append(res.Rows, row)
		res.Intervals = append(res.Intervals, ivs)
	}
	spec := chart.FromResult(res)
	spec.Caption = fmt.Sprintf("median of %d runs per ε; band: 5th to 95th percentile (Adult, 32,561 rows)", runs)
	return write(path, spec)
}

func write(path string, spec chart.Spec) error {
	img, err := chart.Render(spec, chart.SVG, 0)
	if err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return os.WriteFile(path, img, 0o644)
}
