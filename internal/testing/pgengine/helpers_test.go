package pgengine_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testopts"
)

// hooks are the test knobs of every engine these tests open: a test sets
// one and resets it when done (such tests do not run in parallel).
var hooks = &knobs.Knobs{}

// parallel lets t run in parallel with the package's other parallel
// tests (those that set no knob).
func parallel(t *testing.T) { t.Parallel() }

// open opens an engine on path with zero noise and the package's knobs.
func open(t *testing.T, path string, opts dpsql.Options) *dpsql.Engine {
	t.Helper()
	opts.Testing = &testopts.Options{Noise: testopts.ZeroNoise(), Knobs: hooks}
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
