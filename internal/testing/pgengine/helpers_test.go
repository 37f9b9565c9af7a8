package pgengine_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testopts"
)

// harness is one test's test knobs and its record of the statements sent
// to PostgreSQL: every engine the test opens shares them, and no other
// test's engine does (no package globals), so a test may set a knob or
// read the record while others run beside it.
type harness struct {
	t       *testing.T
	knobs   *knobs.Knobs
	log     *statementLog
	observe func(string)
}

// newHarness is a harness for t, with no knob set.
func newHarness(t *testing.T) *harness {
	observe, take := enginetest.RecordPostgres()
	return &harness{t: t, knobs: &knobs.Knobs{}, log: &statementLog{take: take}, observe: observe}
}

// statementLog is what the harness's engines sent to PostgreSQL; take
// returns the statements recorded since its last call.
type statementLog struct{ take func() []string }

// parallel lets t run in parallel with the package's other parallel
// tests.
func parallel(t *testing.T) { t.Parallel() }

// open opens an engine on path with zero noise, the harness's knobs and
// its record of statements.
func (h *harness) open(path string, opts dpsql.Options) *dpsql.Engine {
	t := h.t
	t.Helper()
	opts.Testing = &testopts.Options{Noise: testopts.ZeroNoise(), Knobs: h.knobs, PostgresStatements: h.observe}
	e, err := dpsql.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func mustRun(t *testing.T, e *dpsql.Engine, script string) []*dpsql.Result {
	t.Helper()
	var out []*dpsql.Result
	if err := e.Run(context.Background(), script, func(r *dpsql.Result) error { out = append(out, r); return nil }); err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return out
}

func query(t *testing.T, e *dpsql.Engine, q string) *dpsql.Result {
	t.Helper()
	r, err := e.Query(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return r
}

type visit struct {
	uid  int
	ward string
	day  int
	cost float64
}

// generateVisits makes units with 1–50 rows each; a unit stays in one ward
// (A or B) and costs the same on every visit (the engine's tests' own).
func generateVisits(units int, seed uint64) []visit {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []visit
	for u := 1; u <= units; u++ {
		ward := []string{"A", "B"}[r.IntN(2)]
		cost := float64(r.IntN(100))
		for i := 0; i < 1+r.IntN(50); i++ {
			out = append(out, visit{uid: u, ward: ward, day: 1 + r.IntN(3), cost: cost})
		}
	}
	return out
}

// spent is the ε spent so far, as SHOW BUDGET says.
func spent(t *testing.T, e *dpsql.Engine) float64 {
	t.Helper()
	r := query(t, e, "SHOW BUDGET")
	return r.Rows[1][1].(float64)
}
