package pgengine_test

import (
	"context"
	"database/sql"
	"flag"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/storesql"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
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

// auditSeed is the seed of the auditor's runs here.
var auditSeed = flag.Uint64("audit.seed", 1, "seed of the sensitivity auditor's runs on PostgreSQL")

// moveToPostgres copies the user tables of the SQLite database at path
// into a new PostgreSQL database called name (pgtest.CopyFromSQLiteTo:
// values converted by a fixed per-row rule, so that the copies of
// neighbouring databases are neighbours too), writes the rest of the file
// (policies, budget, ledger) to state without those tables, and opens it
// once as the owner, which adopts the policies and budget into
// PostgreSQL. It returns the database's DSN.
func moveToPostgres(srv *pgtest.Server, path, state, name string) (string, error) {
	ctx := context.Background()
	dsn, err := srv.CreateDatabase(ctx, name)
	if err != nil {
		return "", err
	}
	src, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	tables, err := storesql.Collect(ctx, src, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\_dpsql\_%' ESCAPE '\' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`, nil,
		func(rows *sql.Rows) (name string, err error) { return name, rows.Scan(&name) })
	if err != nil {
		return "", err
	}
	if err := srv.CopyFromSQLiteTo(ctx, dsn, src, tables...); err != nil {
		return "", err
	}
	os.Remove(state)
	if _, err := src.Exec(`VACUUM INTO ?`, state); err != nil {
		return "", err
	}
	st, err := sql.Open("sqlite", "file:"+state)
	if err != nil {
		return "", err
	}
	defer st.Close()
	for _, name := range tables {
		if _, err := st.Exec(`DROP TABLE "` + name + `"`); err != nil {
			return "", err
		}
	}
	owner, err := dpsql.Open(state, dpsql.Options{Owner: true, Postgres: dsn})
	if err != nil {
		return "", err
	}
	return dsn, owner.Close()
}
