// Package backend names what a store of tables beside dpsql's SQLite
// file can do (PostgreSQL: backend/postgres; DuckDB: backend/duckdb), as
// capabilities that each store's Source implements itself and the engine
// asks for by type assertion — database/sql's way with a driver's
// optional interfaces — never by which store it is.
//
// Every backend is Mirrored: the engine reads its tables through SQLite
// virtual tables in the state file, so every query runs on every
// backend. The rest is optional, and each says what the engine does
// without it.
package backend

import (
	"context"
	"database/sql"

	"modernc.org/sqlite"

	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/measure"
	"github.com/dpsql/dpsql/measuresql"
)

// Mirrored is a store whose tables the engine reads through mirrors (SQLite
// virtual tables) in its state file.
type Mirrored interface {
	// Where names the store in messages ("PostgreSQL", "DuckDB").
	Where() string
	// Install registers the mirrors' module on drv, the SQLite driver
	// private to one engine, before drv opens a connection.
	Install(drv *sqlite.Driver) error
	// Mirror declares the store's tables that the state file lacks, and
	// says which it added and which it could not (Unmirrored says why).
	Mirror(ctx context.Context, state *sql.DB) (added, skipped []string, err error)
	// Unmirrored says what keeps a table from being mirrored.
	Unmirrored() string
	// Close closes the store, after the engine's SQLite connections,
	// which read through it.
	Close() error
}

// Measurer runs a scan's whole measurement (measure.Plan) as one
// statement where the tables are (measuresql), and says in EXPLAIN
// whether a scan does and why not. Without it — or for a plan it does
// not compile — the reference evaluator measures in SQLite, reading the
// rows through the mirrors.
type Measurer interface {
	// WhyNot says why the plan is not compiled ("" when it is), from the
	// plan and the schema alone.
	WhyNot(ctx context.Context, state *sql.DB, m *measure.Plan) (string, error)
	// Measure runs the plan with the query's bounding key; ok is false
	// when the plan is not compiled (nothing ran).
	Measure(ctx context.Context, state *sql.DB, m *measure.Plan, key uint64) (st *measuresql.Statement, groups []*measuresql.Group, ok bool, err error)
	// Explain says where a scan with this plan runs, and the statement
	// the store runs ("" when the reference evaluator measures; noPlan is
	// the rewriter's reason when there is no plan).
	Explain(ctx context.Context, state *sql.DB, m *measure.Plan, noPlan string) (where, statement string, err error)
}

// Importer loads a file into a new table of the store, all or nothing;
// the engine then mirrors it. Without it, an import goes into the state
// file itself, as on SQLite.
type Importer interface {
	Import(ctx context.Context, table, path string, opts csvimport.Options) (int64, []csvimport.Column, error)
}

// PolicyKeeper keeps the policies and the budget in the store itself
// (PostgreSQL's schema dpsql), shared by every process over it: the
// engine reads and writes them there, the owner drops tables there, and
// a cached answer's key names the policies it was given under. Without
// it, the state file keeps them.
type PolicyKeeper interface {
	// PolicyStore is the database that keeps them, and whether it
	// speaks PostgreSQL.
	PolicyStore() (db *sql.DB, postgres bool)
}
