package dpsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	sqlitemeasure "github.com/dpsql/dpsql/backend/sqlite"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/measure"
)

// An engine's backend is where its tables live when they are not in its
// SQLite file: a PostgreSQL database (backend/postgres.Source) or a
// DuckDB file (backend/duckdb.Source); an engine without one keeps them
// in the file. Each Source implements package backend's capabilities
// itself, and the engine asks for them by type assertion, as
// database/sql asks a driver for its optional interfaces — never by
// which backend it is: backend.Measurer (else the reference evaluator
// measures, reading through the mirrors), backend.Importer (else an
// import goes into the file), backend.PolicyKeeper (else the file keeps
// the policies and the budget).

// stateMeasurer is a backend's Measurer bound to the engine's state
// file: an exec.Measurer.
type stateMeasurer struct {
	src   backend.Measurer
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

// measurer is the engine's compiled measurer, bound to its file (nil:
// the reference evaluator measures every scan).
func (e *Engine) measurer() exec.Measurer {
	if m := e.compiler(); m != nil {
		return stateMeasurer{m, e.db}
	}
	return nil
}

// compiler is what compiles the engine's scans: the backend's Measurer;
// without a backend, nil (the reference evaluator measures the file's
// tables: on SQLite it is faster than the compiled statement, measured in
// docs/benchmarks.md), or SQLite's own compiled measurer (backend/sqlite)
// when a test asks for it (knobs.CompileSQLite).
func (e *Engine) compiler() backend.Measurer {
	if e.be == nil {
		if e.knobs != nil && e.knobs.CompileSQLite {
			return sqlitemeasure.Measurer{}
		}
		return nil
	}
	m, _ := e.be.(backend.Measurer)
	return m
}

// policyKeeper is the backend that keeps the policies and the budget, if
// it does.
func (e *Engine) policyKeeper() (backend.PolicyKeeper, bool) {
	k, ok := e.be.(backend.PolicyKeeper)
	return k, ok
}

// mirror declares the backend's tables the state file lacks, and says
// which it added and which it could not.
func mirror(ctx context.Context, db *sql.DB, be backend.Mirrored, notify func(string)) error {
	added, skipped, err := be.Mirror(ctx, db)
	if err != nil {
		return err
	}
	if notify != nil {
		if len(added) > 0 {
			notify("mirrored from " + be.Where() + " (private, each row its own unit, until a policy says otherwise): " + strings.Join(added, ", "))
		}
		if len(skipped) > 0 {
			notify("not mirrored (" + be.Unmirrored() + "): " + strings.Join(skipped, ", "))
		}
	}
	return nil
}

// importInto loads a file into a new table of the backend (im), all or
// nothing, and mirrors it.
func (e *Engine) importInto(ctx context.Context, im backend.Importer, table, path string, opts csvimport.Options) (int64, []csvimport.Column, error) {
	var taken int
	if err := e.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = ? COLLATE NOCASE`, table).Scan(&taken); err != nil {
		return 0, nil, err
	}
	if taken > 0 {
		return 0, nil, fmt.Errorf("table %q already exists", table)
	}
	n, cols, err := im.Import(ctx, table, path, opts)
	if err != nil {
		return 0, nil, err
	}
	// The rows are stored: from here the import finishes, whatever a
	// cancel says (the mirror is the state file's record of the table).
	return n, cols, mirror(context.WithoutCancel(ctx), e.db, e.be, nil)
}
