// Command svt measures the tutorial's sparse vector technique examples on
// the Adult census (docs/tutorial.md, "Questions that overlap: the sparse
// vector technique"), each beside the per-query Laplace answer at the same
// total ε, and prints the tables pasted there: the long-run expectations,
// each mechanism simulated many times on the true counts with the engine's
// own samplers (simulate.go), then a few runs of the statements on the
// engine itself:
//
//	go run ./examples/svt --csv ../shared/data/adult.csv --simulate 20000 --runs 5
//
// It builds a database in a temporary directory: the adult table (each
// row a person, Age bounded to [0, 125]) and two public tables, the
// candidate clipping bounds b = 0, 5, ..., 150 and every age range
// [lo, hi) with 30 ≤ lo < hi ≤ 70 (820 ranges).
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
	"strings"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/internal/adultdata"
)

func main() {
	csvPath := flag.String("csv", filepath.Join("..", "shared", "data", "adult.csv"), "the Adult census CSV `FILE`")
	runs := flag.Int("runs", 5, "runs of each statement on the engine (0: none)")
	simulate := flag.Int("simulate", 20000, "simulated runs of each mechanism on the true counts (0: none)")
	seed := flag.Uint64("seed", 1, "the simulation's seed")
	flag.Parse()
	if err := run(*csvPath, *runs, *simulate, *seed); err != nil {
		log.Fatal(err)
	}
}

// lab is the database of the measurements, with the exact ages kept to
// score the answers.
type lab struct {
	owner, analyst *dpsql.Engine
	ages           []int
	ranges         [][2]int
}

func run(csvPath string, runs, simulate int, seed uint64) error {
	dir, err := os.MkdirTemp("", "dpsql-svt")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	l, err := newLab(dir, csvPath)
	if err != nil {
		return err
	}
	defer l.owner.Close()
	defer l.analyst.Close()
	if simulate > 0 {
		if err := l.simulate(simulate, seed); err != nil {
			return err
		}
	}
	if runs == 0 {
		return nil
	}
	fmt.Printf("\n| example | mechanism at ε = 1 | measured over %d runs |\n|---|---|---|\n", runs)
	if err := l.clipBound(runs); err != nil {
		return err
	}
	return l.ranges3And5(runs)
}

func newLab(dir, csvPath string) (*lab, error) {
	ctx := context.Background()
	db := filepath.Join(dir, "adult.db")
	owner, err := dpsql.Open(db, dpsql.Options{Owner: true})
	if err != nil {
		return nil, err
	}
	l := &lab{owner: owner}
	if _, _, err := owner.ImportCSV(ctx, "adult", csvPath, csvimport.Options{}); err != nil {
		return nil, err
	}
	l.ranges = adultdata.AgeRanges()
	if err := adultdata.ImportPublicTables(ctx, owner, dir); err != nil {
		return nil, err
	}
	if err := owner.Run(ctx, `CREATE PRIVACY POLICY ON adult;
		ALTER PRIVACY POLICY ON adult SET BOUNDS "Age" (0, 125);
		ALTER TABLE clip_bounds SET PUBLIC;
		ALTER TABLE age_ranges SET PUBLIC;
		SET BUDGET epsilon = 1000000`, func(*dpsql.Result) error { return nil }); err != nil {
		return nil, err
	}
	// The exact ages, to score the answers, from the file itself (the
	// engine answers the owner with noise too).
	if l.ages, err = adultdata.ReadAges(csvPath); err != nil {
		return nil, err
	}
	l.analyst, err = dpsql.Open(db, dpsql.Options{NoCache: true})
	return l, err
}

func (l *lab) count(pred func(int) bool) int {
	n := 0
	for _, a := range l.ages {
		if pred(a) {
			n++
		}
	}
	return n
}

func (l *lab) query(q string) (*dpsql.Result, error) {
	return l.analyst.Query(context.Background(), q)
}

// clipBound is AboveThreshold over "how many people are older than b?"
// for b = 0, 5, ..., 150, stopping at the first b with fewer than one:
// the bound to clip ages at. The per-query baseline asks the 31 counts at
// ε/31 each and takes the first below one.
func (l *lab) clipBound(runs int) error {
	truth := 0
	for b := 0; b <= 150; b += 5 {
		if l.count(func(a int) bool { return a > b }) == 0 {
			truth = b
			break
		}
	}
	var svt, base []float64
	start := time.Now()
	for range runs {
		res, err := l.query(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_groups_above = 1) b.b
			FROM clip_bounds AS b LEFT JOIN adult ON "Age" > b.b GROUP BY b.b HAVING COUNT(*) < 1`)
		if err != nil {
			return err
		}
		got := 150.0 + 5 // none found: past the last candidate
		if len(res.Rows) == 1 {
			got = adultdata.Num(res.Rows[0][0])
		}
		svt = append(svt, got)
	}
	svtTime := time.Since(start) / time.Duration(runs)
	start = time.Now()
	for range runs {
		got := 155.0
		for b := 0; b <= 150; b += 5 {
			res, err := l.query(fmt.Sprintf(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = %.17g) COUNT(*) FROM adult WHERE "Age" > %d`, 1.0/31, b))
			if err != nil {
				return err
			}
			if adultdata.Num(res.Rows[0][0]) < 1 {
				got = float64(b)
				break
			}
		}
		base = append(base, got)
	}
	baseTime := time.Since(start) / time.Duration(runs)
	fmt.Printf("| AboveThreshold: the clipping bound for ages (first b in 0, 5, …, 150 with nobody older; true %d) | sparse vector, c = 1, one statement (%.2g s) | bounds chosen %s; mean error %.1f years |\n",
		truth, svtTime.Seconds(), list(svt), meanAbs(svt, float64(truth)))
	fmt.Printf("| | per-query Laplace, 31 queries at ε/31 (%.2g s) | bounds chosen %s; mean error %.1f years |\n",
		baseTime.Seconds(), list(base), meanAbs(base, float64(truth)))
	return nil
}

// ranges3And5 is the range-query application: which ranges [lo, hi) hold
// more than 10,000 people — Sparse with c = 3 for the ranges alone, and
// with c = 5 and their counts (half of ε each). The baseline answers
// each of the 820 ranges at ε/820 and takes the first ones above.
func (l *lab) ranges3And5(runs int) error {
	const threshold = 10000
	truth := map[[2]int]int{}
	for _, r := range l.ranges {
		truth[r] = l.count(func(a int) bool { return a >= r[0] && a < r[1] })
	}
	from := ` FROM adult JOIN age_ranges AS r ON "Age" >= r.lo AND "Age" < r.hi GROUP BY r.lo, r.hi HAVING COUNT(*) > 10000`
	for _, c := range []int{3, 5} {
		items := "r.lo, r.hi"
		if c == 5 {
			items += ", COUNT(*) AS n"
		}
		var below, released int
		var shortfall, valueErr []float64
		start := time.Now()
		for range runs {
			res, err := l.query(fmt.Sprintf(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_groups_above = %d) %s%s`, c, items, from))
			if err != nil {
				return err
			}
			for _, row := range res.Rows {
				n := truth[[2]int{int(adultdata.Num(row[0])), int(adultdata.Num(row[1]))}]
				released++
				if n <= threshold {
					below++
					shortfall = append(shortfall, float64(threshold-n))
				}
				if c == 5 {
					valueErr = append(valueErr, math.Abs(adultdata.Num(row[2])-float64(n)))
				}
			}
		}
		svtTime := time.Since(start) / time.Duration(runs)
		// The baseline: every range at ε/820, the first c above.
		var bBelow, bReleased int
		var bShort, bErr []float64
		start = time.Now()
		for range runs {
			found := 0
			for _, r := range l.ranges {
				if found == c {
					break
				}
				res, err := l.query(fmt.Sprintf(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = %.17g) COUNT(*) FROM adult WHERE "Age" >= %d AND "Age" < %d`, 1.0/float64(len(l.ranges)), r[0], r[1]))
				if err != nil {
					return err
				}
				v := adultdata.Num(res.Rows[0][0])
				if v <= threshold {
					continue
				}
				found++
				bReleased++
				if truth[r] <= threshold {
					bBelow++
					bShort = append(bShort, float64(threshold-truth[r]))
				}
				bErr = append(bErr, math.Abs(v-float64(truth[r])))
			}
		}
		baseTime := time.Since(start) / time.Duration(runs)
		what := fmt.Sprintf("Sparse, c = %d: the first %d ranges [lo, hi), 30 ≤ lo < hi ≤ 70, with more than 10,000 people (820 ranges; 1,600 candidate (lo, hi) pairs)", c, c)
		if c == 5 {
			what = "The range-query application: the same with c = 5 and each range's count (half of ε chooses, half counts)"
		}
		valueText := ""
		if c == 5 {
			valueText = fmt.Sprintf("; counts' mean error %.1f", mean(valueErr))
		}
		fmt.Printf("| %s | sparse vector, one statement (%.2g s) | %d ranges released, %d at or below 10,000 (worst by %s)%s |\n",
			what, svtTime.Seconds(), released, below, worst(shortfall), valueText)
		baseValue := ""
		if c == 5 {
			baseValue = fmt.Sprintf("; counts' mean error %.1f", mean(bErr))
		}
		fmt.Printf("| | per-query Laplace, each range at ε/820 (%.2g s) | %d ranges released, %d at or below 10,000 (worst by %s)%s |\n",
			baseTime.Seconds(), bReleased, bBelow, worst(bShort), baseValue)
	}
	return nil
}

func list(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func meanAbs(xs []float64, truth float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += math.Abs(x - truth)
	}
	return t / float64(len(xs))
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}

func worst(xs []float64) string {
	if len(xs) == 0 {
		return "—"
	}
	sort.Float64s(xs)
	return fmt.Sprint(xs[len(xs)-1])
}

// readAges reads the Age column of the CSV file.
