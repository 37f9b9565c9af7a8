package audit

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
)

// Finding is a statement whose privacy claim failed on a database pair.
type Finding struct {
	DB        Database
	Statement Statement
	Problems  []string
}

// refusedValid prefixes the problem of a statement the generator expected
// to be answered and the planner refused: a disagreement between the two,
// not a privacy failure.
const refusedValid = "refused a statement the generator expects to be answered"

// Privacy reports whether a problem of f is a failed privacy check (and not
// only a refusal the generator did not expect).
func (f Finding) Privacy() bool {
	for _, p := range f.Problems {
		if !strings.HasPrefix(p, refusedValid) {
			return true
		}
	}
	return false
}

// String shows the statement, its arguments and what failed.
func (f Finding) String() string {
	return fmt.Sprintf("%s (args %v): %v", f.Statement.SQL, f.Statement.Args, f.Problems)
}

// Report summarises a run of the auditor.
type Report struct {
	Databases, Statements, NearMisses int
	// Coverage counts the statements that used each dialect construct.
	Coverage map[string]int
	Findings []Finding
}

// Errorer is what reports a test's errors (a *testing.T).
type Errorer interface {
	Errorf(format string, args ...any)
}

// ReportFindings reports the first most findings as errors of t, each
// after prefix, and how many there were in all when there were more.
func (r *Report) ReportFindings(t Errorer, most int, prefix string) {
	for i, f := range r.Findings {
		if i == most {
			t.Errorf("... %d findings in all", len(r.Findings))
			break
		}
		t.Errorf("%s%s", prefix, f)
	}
}

// Config sets the size of a run.
type Config struct {
	Seed        uint64
	Databases   int     // database pairs
	PerDatabase int     // statements per pair
	NearMiss    float64 // share of near-misses
	// StopAtFirst ends the run at the first finding of a failed privacy
	// check.
	StopAtFirst bool
	// UnstableRowIdentities: the backend's row identities differ between
	// its copies of D and D′ (PostgreSQL's ctid shifts after the removed
	// row), so the coupling of contribution bounding's choices across
	// the pair — keyed by each unit's identity — does not hold for a
	// table whose rows are its units: no statement joins such a table
	// (where bounding keys by the row's identity). Privacy does not rest
	// on the coupling (each unit samples independently whatever its
	// identity); the check does.
	UnstableRowIdentities bool
}

// Run generates cfg.Databases neighbouring pairs under dir and checks
// cfg.PerDatabase generated statements on each.
func Run(open Opener, dir string, cfg Config) (*Report, error) {
	rep := &Report{Coverage: map[string]int{}}
	for i := 0; i < cfg.Databases; i++ {
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
		db := NewDatabase(r)
		d, d2, err := db.Build(filepath.Join(dir))
		if err != nil {
			return rep, err
		}
		pair, err := OpenPair(open, d, d2)
		if err != nil {
			return rep, err
		}
		rep.Databases++
		for j := 0; j < cfg.PerDatabase; j++ {
			st := generate(r, cfg.NearMiss, cfg.UnstableRowIdentities)
			rep.Statements++
			if st.Refuse {
				rep.NearMisses++
			}
			for _, c := range st.Constructs {
				rep.Coverage[c]++
			}
			if problems := pair.Check(st); len(problems) > 0 {
				rep.Findings = append(rep.Findings, Finding{db, st, problems})
				if cfg.StopAtFirst && rep.Findings[len(rep.Findings)-1].Privacy() {
					pair.Close()
					return rep, nil
				}
			}
		}
		pair.Close()
	}
	return rep, nil
}
