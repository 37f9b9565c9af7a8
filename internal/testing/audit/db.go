package audit

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // the backend, to build the databases

	"github.com/dpsql/dpsql"
)

// Database is a pair of neighbouring databases: D, made by Tables and
// Policy, and D′ = D after Neighbour (which deletes every row of one
// privacy unit).
type Database struct {
	Tables    []Table
	Policy    string   // owner statements, run on D before D′ is derived
	Neighbour []string // DELETE statements that turn D into D′
}

// Table is a CREATE TABLE statement and the rows inserted into it.
type Table struct {
	Name   string
	Create string
	Rows   []string // each a parenthesised VALUES tuple
}

// The schema every generated database shares (the generator writes
// statements against it):
//
//	p   private, unit uid: v (no affinity: every storage class), w REAL
//	    (declared bounds), n INTEGER (declared bounds and domain 1, 2, 3),
//	    g TEXT (domain 'a', 'b', 'c'), h TEXT (no domain)
//	p2  private, unit uid: z (no affinity), tag TEXT (no domain)
//	q   private, each row a unit: k TEXT (domain 'x', 'y'), x (no
//	    affinity), y REAL (declared bounds)
//	pub public: g TEXT, label TEXT, weight REAL
const schema = `CREATE TABLE p (uid INTEGER, v, w REAL, n INTEGER, g TEXT, h TEXT);
CREATE TABLE p2 (uid INTEGER, z, tag TEXT);
CREATE TABLE q (k TEXT, x, y REAL);
CREATE TABLE pub (g TEXT, label TEXT, weight REAL);`

// Worst-case units: the neighbour removes one of these roles' units.
const (
	unitMany     = 1 // many distinct rows, across groups
	unitExtremes = 2 // ±2^63, ±1e308, values far from zero, text and blobs
	unitAlone    = 3 // the only unit of group 'c' and of h = 'solo'
	units        = 8
)

// adversarialValue returns a SQL literal of any storage class and
// magnitude.
func adversarialValue(r *rand.Rand) string {
	switch r.IntN(12) {
	case 0:
		return "NULL"
	case 1:
		return []string{"9223372036854775807", "(-9223372036854775807 - 1)", "0", "-1"}[r.IntN(4)]
	case 2:
		return fmt.Sprint(r.Int64N(2001) - 1000)
	case 3:
		return fmt.Sprintf("%g", (r.Float64()-0.5)*math.Pow(10, float64(r.IntN(600)-300)))
	case 4:
		return fmt.Sprintf("%.17g", 1e15+float64(r.IntN(5))*0.5)
	case 5:
		return []string{"'1e999'", "'-1e999'", "'abc'", "' 12.5e1x'", "''", "'0x10'", "'%'", "'" + strings.Repeat("y", 1500) + "'"}[r.IntN(8)]
	case 6:
		return []string{"x'31303030'", "x''", "x'ff'"}[r.IntN(3)]
	case 7:
		return []string{"1e308", "-1e308", "4.9e-324"}[r.IntN(3)]
	default:
		return fmt.Sprintf("%.6g", r.NormFloat64()*100)
	}
}

// extremeValues are the values the extremes unit holds (one per row).
var extremeValues = []string{"(-9223372036854775807 - 1)", "9223372036854775807", "1e308", "-1e308", "'1e999'", "x'ff'", "1000000000000000.5", "-1000000000000000.5"}

// NewDatabase generates a database with adversarial contents and picks the
// unit its neighbour removes (cycling through the worst-case roles by
// seed).
func NewDatabase(r *rand.Rand) Database {
	var p, p2, q, pub []string
	prow := func(uid string, v, w, n, g, h string) {
		p = append(p, fmt.Sprintf("(%s, %s, %s, %s, %s, %s)", uid, v, w, n, g, h))
	}
	w := func() string {
		switch r.IntN(5) {
		case 0:
			return fmt.Sprintf("%.17g", 1e15+float64(r.IntN(5))*0.5)
		case 1:
			return []string{"1e300", "-1e300", "NULL", "'12abc'"}[r.IntN(4)]
		default:
			return fmt.Sprintf("%.4g", r.NormFloat64()*40)
		}
	}
	n := func() string {
		if r.IntN(10) == 0 {
			return []string{"(-9223372036854775807 - 1)", "9223372036854775807", "NULL", "'2'"}[r.IntN(4)]
		}
		return fmt.Sprint(1 + r.IntN(3))
	}
	g := func() string { return []string{"'a'", "'b'"}[r.IntN(2)] }
	h := func() string {
		return []string{"'h1'", "'h2'", "'h3'", "''", "NULL", "'" + strings.Repeat("z", 1200) + "'"}[r.IntN(6)]
	}
	for i := 0; i < 10+r.IntN(10); i++ { // many distinct rows
		prow(fmt.Sprint(unitMany), adversarialValue(r), w(), n(), g(), h())
	}
	for _, v := range extremeValues {
		prow(fmt.Sprint(unitExtremes), v, []string{"1e300", "-1e300", "1000000000000000.5"}[r.IntN(3)], []string{"(-9223372036854775807 - 1)", "9223372036854775807", "3"}[r.IntN(3)], g(), h())
	}
	prow(fmt.Sprint(unitAlone), adversarialValue(r), w(), n(), "'c'", "'solo'")
	for u := unitAlone + 1; u <= units; u++ {
		for i := 0; i < 1+r.IntN(4); i++ {
			prow(fmt.Sprint(u), adversarialValue(r), w(), n(), g(), h())
		}
	}
	prow("NULL", adversarialValue(r), w(), n(), g(), h()) // a row without a unit
	for u := 1; u <= units; u++ {
		for i := 0; i < r.IntN(4); i++ {
			tag := []string{"'t1'", "'t2'"}[r.IntN(2)]
			if u == unitAlone {
				tag = "'solo'"
			}
			p2 = append(p2, fmt.Sprintf("(%d, %s, %s)", u, adversarialValue(r), tag))
		}
	}
	for i := 0; i < 20+r.IntN(10); i++ {
		x := adversarialValue(r)
		if i == 0 {
			x = extremeValues[r.IntN(len(extremeValues))]
		}
		q = append(q, fmt.Sprintf("(%s, %s, %s)", []string{"'x'", "'y'"}[r.IntN(2)], x, w()))
	}
	for _, gv := range []string{"'a'", "'b'", "'c'", "'d'"} {
		for i := 0; i < r.IntN(3); i++ {
			pub = append(pub, fmt.Sprintf("(%s, %s, %s)", gv, []string{"'l1'", "'l2'", "'l3'"}[r.IntN(3)], w()))
		}
	}
	creates := strings.Split(schema, "\n")
	db := Database{Tables: []Table{
		{"p", creates[0], p}, {"p2", creates[1], p2}, {"q", creates[2], q}, {"pub", creates[3], pub},
	}}
	l0, lInf := 1+r.IntN(3), []int{1, 3, 5}[r.IntN(3)]
	db.Policy = fmt.Sprintf(`CREATE PRIVACY POLICY ON p OPTIONS (privacy_unit_column = uid, max_groups_contributed = %d, max_rows_contributed = %d);
ALTER PRIVACY POLICY ON p SET BOUNDS w (-50, 50);
ALTER PRIVACY POLICY ON p SET BOUNDS n (0, 100);
ALTER PRIVACY POLICY ON p SET DOMAIN g ('a', 'b', 'c');
ALTER PRIVACY POLICY ON p SET DOMAIN n (1, 2, 3);
CREATE PRIVACY POLICY ON p2 OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 2);
CREATE PRIVACY POLICY ON q;
ALTER PRIVACY POLICY ON q SET DOMAIN k ('x', 'y');
ALTER PRIVACY POLICY ON q SET BOUNDS y (0, 10);
ALTER TABLE pub SET PUBLIC`, l0, lInf)
	unit := "NULL"
	switch role := r.IntN(7); role {
	case 0, 1, 2, 3, 4:
		unit = fmt.Sprint([]int{unitMany, unitMany, unitExtremes, unitExtremes, unitAlone}[role])
	case 5:
		unit = fmt.Sprint(unitAlone + 1 + r.IntN(units-unitAlone))
	}
	if unit == "NULL" {
		db.Neighbour = []string{"DELETE FROM p WHERE uid IS NULL", "DELETE FROM p2 WHERE uid IS NULL"}
	} else {
		db.Neighbour = []string{"DELETE FROM p WHERE uid = " + unit, "DELETE FROM p2 WHERE uid = " + unit}
	}
	// q's rows are units: remove its first row (an extreme value) or another.
	row := 1
	if r.IntN(2) == 0 {
		row = 1 + r.IntN(len(q))
	}
	db.Neighbour = append(db.Neighbour, fmt.Sprintf("DELETE FROM q WHERE rowid = %d", row))
	return db
}

// Build writes D and D′ into dir and returns their paths. The owner's
// total budget is large enough for any number of audit runs.
func (db Database) Build(dir string) (d, d2 string, err error) {
	if strings.ContainsAny(dir, "?#") {
		return "", "", fmt.Errorf("directory %q: a dpsql database path must not contain '?' or '#'", dir)
	}
	d, d2 = filepath.Join(dir, "d.db"), filepath.Join(dir, "d2.db")
	for _, f := range []string{d, d2} {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			os.Remove(f + suffix)
		}
	}
	if err := execAll(d, db.script()); err != nil {
		return "", "", err
	}
	owner, err := dpsql.Open(d, dpsql.Options{Owner: true})
	if err != nil {
		return "", "", err
	}
	err = owner.Run(context.Background(), db.Policy+"; SET BUDGET epsilon = 1e6, delta = 0.99", func(*dpsql.Result) error { return nil })
	owner.Close()
	if err != nil {
		return "", "", fmt.Errorf("policy: %w", err)
	}
	if err := copyFile(d, d2); err != nil {
		return "", "", err
	}
	return d, d2, execAll(d2, db.Neighbour)
}

func (db Database) script() []string {
	var out []string
	for _, t := range db.Tables {
		out = append(out, t.Create)
		for i := 0; i < len(t.Rows); i += 200 {
			end := min(i+200, len(t.Rows))
			out = append(out, "INSERT INTO "+t.Name+" VALUES "+strings.Join(t.Rows[i:end], ", "))
		}
	}
	return out
}

func execAll(path string, stmts []string) error {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			return fmt.Errorf("%.60s: %w", s, err)
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
