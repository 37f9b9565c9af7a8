package dpsql_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
)

// hospitalVisits generates the hospital shape of docs/accuracy.md: 5,000
// patients with 1 to 20 visits each (uniform), each visit in one of 16
// (ward, diagnosis) groups — a patient's home ward 80% of the time — as
// SQL that fills table visits (patient_id, ward, diagnosis).
func hospitalVisits(seed uint64) (setup string, visits [][3]any) {
	r := rand.New(rand.NewPCG(seed, 11))
	wards, diagnoses := []string{"A", "B", "C", "D"}, []string{"cardiac", "neuro", "ortho", "general"}
	var sb strings.Builder
	sb.WriteString("CREATE TABLE visits (patient_id INTEGER, ward TEXT, diagnosis TEXT); INSERT INTO visits VALUES ")
	for p := 0; p < 5000; p++ {
		home := wards[r.IntN(4)]
		for v := 1 + r.IntN(20); v > 0; v-- {
			w := home
			if r.Float64() >= 0.8 {
				w = wards[r.IntN(4)]
			}
			d := diagnoses[r.IntN(4)]
			if len(visits) > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "(%d, '%s', '%s')", p, w, d)
			visits = append(visits, [3]any{p, w, d})
		}
	}
	return sb.String() + ";", visits
}

// BenchmarkHospitalBounding measures, on the hospital shape, how far
// each (ward, diagnosis) group's COUNT(*) and COUNT(DISTINCT patient_id)
// (two queries at ε = 0.5 each) come from the truth under fixed
// contribution bounds and under AUTO (chosen privately per query), and how
// close the answer's private estimate of what bounding dropped comes to
// the exact shares, over DPSQL_RUNS runs (default 20) with crypto/rand's
// noise; docs/accuracy.md quotes it. Run with
//
//	go test -run XXX -bench HospitalBounding -benchtime 1x -v .
func BenchmarkHospitalBounding(b *testing.B) {
	h := newHarness(nil, false) // on SQLite
	runs := 20
	if v := os.Getenv("DPSQL_RUNS"); v != "" {
		fmt.Sscan(v, &runs)
	}
	setup, visits := hospitalVisits(1)
	type cell struct{ ward, diagnosis string }
	rows, patients := map[cell]float64{}, map[cell]map[int]bool{}
	perUnit := map[int]map[cell]int64{}
	for _, v := range visits {
		c, p := cell{v[1].(string), v[2].(string)}, v[0].(int)
		rows[c]++
		if patients[c] == nil {
			patients[c] = map[int]bool{}
		}
		patients[c][p] = true
		if perUnit[p] == nil {
			perUnit[p] = map[cell]int64{}
		}
		perUnit[p][c]++
	}
	path := h.hardDB(b, setup, `CREATE PRIVACY POLICY ON visits OPTIONS (privacy_unit_column = patient_id);
		ALTER PRIVACY POLICY ON visits SET DOMAIN ward ('A', 'B', 'C', 'D');
		ALTER PRIVACY POLICY ON visits SET DOMAIN diagnosis ('cardiac', 'neuro', 'ortho', 'general');
		SET BUDGET epsilon = 1e6`)
	eng, err := h.openEngine(path, dpsql.Options{NoCache: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	type setting struct {
		name   string
		l0, lI any // a number or "AUTO"
	}
	settings := []setting{{"2, 3", 2, 3}, {"4, 8", 4, 8}, {"16, 20", 16, 20}, {"16, 5", 16, 5}, {"16, 8", 16, 8}, {"8, 5", 8, 5}, {"AUTO", "AUTO", "AUTO"}}
	for _, set := range settings {
		if only := os.Getenv("DPSQL_BOUNDS"); only != "" && only != set.name {
			continue
		}
		var within, withinUnits, cells, warned int
		var errRows, errUnits, estAffected, estShare []float64
		chosen := map[string]int{}
		trueAffected, trueShare := -1.0, -1.0
		for i := 0; i < runs*b.N; i++ {
			for _, agg := range []string{"COUNT(*)", "COUNT(DISTINCT patient_id)"} {
				res, err := eng.Query(context.Background(), fmt.Sprintf(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, max_groups_contributed = %v, max_rows_contributed = %v)
					ward, diagnosis, %s FROM visits GROUP BY ward, diagnosis`, set.l0, set.lI, agg))
				if err != nil {
					b.Fatal(err)
				}
				for _, row := range res.Rows {
					c := cell{row[0].(string), row[1].(string)}
					if agg == "COUNT(*)" {
						er := math.Abs(num(row[2])-rows[c]) / rows[c]
						errRows = append(errRows, er)
						cells++
						if er <= 0.1 {
							within++
						}
						continue
					}
					eu := math.Abs(num(row[2])-float64(len(patients[c]))) / float64(len(patients[c]))
					errUnits = append(errUnits, eu)
					if eu <= 0.1 {
						withinUnits++
					}
				}
				notes := strings.Join(res.Notes, "\n")
				if d := res.Dropped; d != nil && agg == "COUNT(*)" {
					l0, lInf := d.MaxGroups, d.MaxRows
					chosen[fmt.Sprintf("(%d, %d)", l0, lInf)]++
					// The exact shares, as measure.UnitDropped defines them.
					affected, share := 0.0, 0.0
					for _, groups := range perUnit {
						var t, s, most int64
						for _, n := range groups {
							t, s, most = t+n, s+min(n, lInf), max(most, n)
						}
						g := int64(len(groups))
						if g > l0 || most > lInf {
							affected++
							share += 1 - float64(min(g, l0)*s)/float64(g*t)
						}
					}
					n := float64(len(perUnit))
					trueAffected, trueShare = affected/n, share/n
					estAffected, estShare = append(estAffected, math.Abs(d.UnitsShare()-trueAffected)), append(estShare, math.Abs(d.RowsShare()-trueShare))
					if strings.Contains(notes, "warning: contribution bounding") {
						warned++
					}
				}
			}
		}
		b.Logf("%-7s | COUNT(*) within 10%%: %3.0f%% of cells (median error %5.3g%%) | COUNT(DISTINCT) within 10%%: %3.0f%% (median %5.3g%%) | dropped: %4.1f%% of units, %4.1f%% of a unit's rows on average (the last run's bounds); estimates' median error %.2g, %.2g points; warned %d of %d; bounds %v",
			set.name, 100*float64(within)/float64(cells), 100*median(errRows), 100*float64(withinUnits)/float64(cells), 100*median(errUnits),
			100*trueAffected, 100*trueShare, 100*median(estAffected), 100*median(estShare), warned, runs*b.N, chosen)
	}
}
