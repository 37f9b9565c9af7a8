package dpsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/measure"

	"modernc.org/sqlite"
)

// IsDuckDBPath reports whether a --db argument names a DuckDB file: a
// name ending in .duckdb, or duckdb:PATH.
func IsDuckDBPath(s string) bool {
	return strings.HasPrefix(s, "duckdb:") || strings.HasSuffix(strings.ToLower(s), ".duckdb")
}

// DuckDBFile is the DuckDB file a --db argument names (without duckdb:).
func DuckDBFile(s string) string { return strings.TrimPrefix(s, "duckdb:") }

// DuckDBStateFile is the state file of a DuckDB file: beside it, with
// .dpsql appended (data.duckdb.dpsql). It holds the catalog's policies,
// the budget, the ledger, the analysts and the answer cache.
func DuckDBStateFile(duckPath string) string { return duckPath + ".dpsql" }

// ErrNoDuckDB reports a build without DuckDB (it needs cgo).
var ErrNoDuckDB = errors.New("this dpsql was built without DuckDB (it needs cgo: build with CGO_ENABLED=1 and a C compiler)")

// duckBackend is an engine's DuckDB file (duckdb_cgo.go; a build
// without cgo has none).
type duckBackend interface {
	// install binds the mirrors' module to the engine's SQLite driver.
	install(drv *sqlite.Driver) error
	// mirror declares the DuckDB tables the state file lacks.
	mirror(ctx context.Context, db *sql.DB) (added, skipped []string, err error)
	// measurer runs compiled measurements in DuckDB.
	measurer(state *sql.DB) exec.Measurer
	// explain says where a scan with this plan runs (EXPLAIN).
	explain(ctx context.Context, state *sql.DB, m *measure.Plan, noPlan string) (where, statement string, err error)
	// importFile loads a CSV (checked by csvimport into scratch) or a
	// Parquet file into a new DuckDB table.
	importFile(ctx context.Context, table, path string, opts csvimport.Options) (int64, []csvimport.Column, error)
	close() error
}

// HasDuckDB reports whether this build can open DuckDB files (it needs
// cgo).
func HasDuckDB() bool { return duckAvailable }

// checkDuckDB validates a DuckDB open: the file must exist for an
// analyst (the owner's import creates it).
func checkDuckDB(opts Options) error {
	if opts.DuckDB == "" {
		return nil
	}
	if !duckAvailable {
		return ErrNoDuckDB
	}
	if st, err := os.Stat(opts.DuckDB); err == nil && st.IsDir() {
		return errors.New(opts.DuckDB + " is a directory: --db takes a DuckDB file (such as data.duckdb)")
	}
	if !opts.Owner {
		if _, err := os.Stat(opts.DuckDB); err != nil {
			return fmt.Errorf("%w: %s (the owner creates it, e.g. with 'dpsql import --db %s --table t file.csv')", ErrNoDatabase, opts.DuckDB, opts.DuckDB)
		}
	}
	return nil
}

// mirrorDuckDB declares the DuckDB tables the state file lacks and says
// which it added and which it could not.
func mirrorDuckDB(ctx context.Context, db *sql.DB, duck duckBackend, notify func(string)) error {
	added, skipped, err := duck.mirror(ctx, db)
	if err != nil {
		return err
	}
	if notify != nil {
		if len(added) > 0 {
			notify("mirrored from DuckDB (private, each row its own unit, until a policy says otherwise): " + strings.Join(added, ", "))
		}
		if len(skipped) > 0 {
			notify("not mirrored from DuckDB (the name is reserved or taken in the state file): " + strings.Join(skipped, ", "))
		}
	}
	return nil
}

// duckdbBackend is the engine's backend over a DuckDB file.
type duckdbBackend struct{ duck duckBackend }

func (d duckdbBackend) where() string { return "DuckDB" }

func (d duckdbBackend) shutdown() { _ = d.duck.close() }

func (d duckdbBackend) measurer(state *sql.DB) exec.Measurer { return d.duck.measurer(state) }

func (d duckdbBackend) explain(ctx context.Context, state *sql.DB, m *measure.Plan, noPlan string) (where, statement string, err error) {
	return d.duck.explain(ctx, state, m, noPlan)
}

// importInto is ImportCSV into the DuckDB file; the table is then
// mirrored.
func (d duckdbBackend) importInto(ctx context.Context, e *Engine, table, path string, opts csvimport.Options) (int64, []csvimport.Column, error) {
	var taken int
	if err := e.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = ? COLLATE NOCASE`, table).Scan(&taken); err != nil {
		return 0, nil, err
	}
	if taken > 0 {
		return 0, nil, fmt.Errorf("table %q already exists", table)
	}
	n, cols, err := d.duck.importFile(ctx, table, path, opts)
	if err != nil {
		return 0, nil, err
	}
	// The rows are stored: from here the import finishes, whatever a
	// cancel says (the mirror is the state file's record of the table).
	return n, cols, mirrorDuckDB(context.WithoutCancel(ctx), e.db, d.duck, nil)
}
