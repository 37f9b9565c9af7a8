package dpsql

import (
	"context"
	"database/sql"

	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/measure"
	"github.com/dpsql/dpsql/measuresql"
)

// A backend is where an engine's tables live when they are not in its
// SQLite file (PostgreSQL, DuckDB); an engine without one keeps them in
// the file. The engine reads every table of a backend through its mirror
// in the file (a SQLite virtual table), so every query runs on every
// backend; what else a backend can do it says by the optional
// capabilities below, which the engine asks for by type assertion, as
// database/sql asks a driver for its optional interfaces — never by
// which backend it is.
type backend interface {
	// where names the backend in messages ("PostgreSQL", "DuckDB").
	where() string
	// shutdown closes the backend, after the engine's SQLite
	// connections, which read through it.
	shutdown()
}

// measuringBackend runs a scan's whole measurement (measure.Plan) as
// one statement where the tables live (exec.Measurer), and says in
// EXPLAIN whether a scan does, and why not.
type measuringBackend interface {
	backend
	measurer(state *sql.DB) exec.Measurer
	explain(ctx context.Context, state *sql.DB, m *measure.Plan, noPlan string) (where, statement string, err error)
}

// importingBackend loads a file into a new table where the tables live,
// all or nothing, and mirrors it into the engine's file.
type importingBackend interface {
	backend
	importInto(ctx context.Context, e *Engine, table, path string, opts csvimport.Options) (int64, []csvimport.Column, error)
}

// policyKeepingBackend keeps the policies and the budget itself (in
// PostgreSQL's schema dpsql), not the engine's file: the policies are
// read and written there, the owner drops tables there, and a cached
// answer's key names the policies it was given under.
type policyKeepingBackend interface {
	backend
	// policyStore is the database that keeps them, and whether it
	// speaks PostgreSQL (storesql.On).
	policyStore() (db *sql.DB, postgres bool)
}

// planSource compiles and runs measurement plans over the tables a state
// file mirrors (backend/duckdb's and backend/postgres's Source).
type planSource interface {
	WhyNot(ctx context.Context, state *sql.DB, m *measure.Plan) (string, error)
	Measure(ctx context.Context, state *sql.DB, m *measure.Plan, key uint64) (*measuresql.Statement, []*measuresql.Group, bool, error)
}

// stateMeasurer is a planSource bound to the engine's state file: an
// exec.Measurer.
type stateMeasurer struct {
	src   planSource
	state *sql.DB
}

func (m stateMeasurer) WhyNot(ctx context.Context, plan *measure.Plan) (string, error) {
	return m.src.WhyNot(ctx, m.state, plan)
}

func (m stateMeasurer) Measure(ctx context.Context, plan *measure.Plan, key uint64) (*measure.Measured, bool, error) {
	st, groups, ok, err := m.src.Measure(ctx, m.state, plan, key)
	if err != nil || !ok {
		return nil, ok, err
	}
	return st.Measured(groups), true, nil
}

// The backends and their capabilities.
var (
	_ measuringBackend     = (*pgSource)(nil)
	_ importingBackend     = (*pgSource)(nil)
	_ policyKeepingBackend = (*pgSource)(nil)
	_ measuringBackend     = duckdbBackend{}
	_ importingBackend     = duckdbBackend{}
)
