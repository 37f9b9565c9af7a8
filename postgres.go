package dpsql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/exec"

	"modernc.org/sqlite"
)

// IsPostgresDSN reports whether a --db argument names a PostgreSQL
// database rather than a file.
func IsPostgresDSN(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// A PostgreSQL database mirrors its tables, measures, imports, and
// keeps the policies and the budget.
var (
	_ backend.Mirrored     = (*postgres.Source)(nil)
	_ backend.Measurer     = (*postgres.Source)(nil)
	_ backend.Importer     = (*postgres.Source)(nil)
	_ backend.PolicyKeeper = (*postgres.Source)(nil)
)

// sqliteConnector opens connections of one engine's private SQLite
// driver (database/sql's Connector).
type sqliteConnector struct {
	drv *sqlite.Driver
	dsn string
}

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c sqliteConnector) Driver() driver.Driver                        { return c.drv }

// openSQLite opens the engine's file, as two pools of connections to it:
// db, on which queries run (their statements compiled under an
// authorizer), and state, on which the catalog and the budget's status
// are read by statements prepared once. Setting or clearing a
// connection's authorizer expires every statement prepared on it, so
// the two are kept apart: the state pool never has an authorizer, and
// its statements are parsed once per connection, not once per query. An
// engine over PostgreSQL or DuckDB gets a SQLite driver of its own, with
// the measurement aggregate and the module through which its mirrors
// read their tables: nothing about them is kept process-wide.
func openSQLite(dsn string, be backend.Mirrored) (db, state *sql.DB, err error) {
	drv, err := sqliteDriver(be)
	if err != nil {
		return nil, nil, err
	}
	c := sqliteConnector{drv: drv, dsn: dsn}
	return sql.OpenDB(c), sql.OpenDB(c), nil
}

// sqliteDriver is the SQLite driver an engine opens its file with: the
// process's own (the measurement aggregate registered on it by exec),
// or one of the engine's own with its backend's module.
func sqliteDriver(be backend.Mirrored) (*sqlite.Driver, error) {
	if be == nil {
		db, err := sql.Open("sqlite", "")
		if err != nil {
			return nil, err
		}
		defer db.Close()
		drv, ok := db.Driver().(*sqlite.Driver)
		if !ok {
			return nil, fmt.Errorf("the driver %q is %T", "sqlite", db.Driver())
		}
		return drv, nil
	}
	drv := &sqlite.Driver{}
	if err := exec.RegisterFunctions(drv); err != nil {
		return nil, err
	}
	if err := be.Install(drv); err != nil {
		return nil, err
	}
	return drv, nil
}

// DefaultStateFile is the state file dpsql keeps for a PostgreSQL
// database when none is named: one per user, host, port and database (a
// password does not change it), in the user's cache directory
// ($XDG_CACHE_HOME/dpsql or ~/.cache/dpsql on Linux), which it creates.
func DefaultStateFile(dsn string) (string, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("PostgreSQL connection string: %w", err)
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no directory for the state file (name one with --state): %w", err)
	}
	dir = filepath.Join(dir, "dpsql")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d\x00%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)))
	name := strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-') {
			return r
		}
		return '_'
	}, cfg.Database)
	return filepath.Join(dir, fmt.Sprintf("%s-%x.dpsql", name, sum[:6])), nil
}

// openPostgres connects the state file to its PostgreSQL source, if it
// has one or opts gives one (false: neither).
func openPostgres(ctx context.Context, db *sql.DB, path string, opts Options, src *postgres.Source) (bool, error) {
	id, err := postgres.SourceID(ctx, db, opts.Postgres != "")
	if err != nil {
		return false, fmt.Errorf("opening %s: %w", path, err)
	}
	if opts.Postgres == "" {
		if id != "" {
			return false, fmt.Errorf("%s is the state file of a PostgreSQL database: open it with that database's connection string (dpsql --db postgres://... --state %s)", path, path)
		}
		return false, nil
	}
	if id == "" {
		return false, fmt.Errorf("%w: %s has no PostgreSQL tables yet (the owner mirrors them: dpsql --owner --db postgres://... --state %s)", ErrNoDatabase, path, path)
	}
	pool, err := postgres.Connect(ctx, opts.Postgres)
	if err != nil {
		return false, err
	}
	src.ID, src.Pool = id, pool
	return true, nil
}

// preparePostgres readies a state file and its PostgreSQL database for an open:
// it mirrors the tables the file lacks (every open does; a new table is
// private, each row its own unit, until a policy says otherwise; an
// analyst who cannot write a shared state file sees what it has), makes
// the schema dpsql where the policies and the budget live, shared by
// every process over the database, and has an owner's open adopt what a
// state file of an earlier version kept (an analyst's is refused until
// then). It returns the budget's store.
func preparePostgres(ctx context.Context, src *postgres.Source, db *sql.DB, path string, opts Options) (*budget.Store, error) {
	if err := mirror(ctx, db, src, opts.Notify); err != nil && opts.Owner {
		return nil, err
	}
	policies, _ := src.PolicyStore()
	ledger := budget.Postgres(policies)
	if err := budget.Init(ctx, ledger); err != nil {
		return nil, err
	}
	if err := catalog.InitPostgres(ctx, policies); err != nil {
		return nil, err
	}
	if opts.Owner {
		return ledger, adoptIntoPostgres(ctx, src, db, ledger, opts.Notify)
	}
	return ledger, refusePending(ctx, src, db, ledger, path)
}

// adoptIntoPostgres hands what a state file of an earlier version kept — its budget
// and its policies — to PostgreSQL, once, and says so. Only an owner's
// open adopts: what it adopts can set a total or make a table public.
func adoptIntoPostgres(ctx context.Context, src *postgres.Source, db *sql.DB, ledger *budget.Store, notify func(string)) error {
	n, err := budget.Adopt(ctx, budget.SQLite(db, db), ledger, src.ID)
	if err != nil {
		return fmt.Errorf("moving the state file's budget into PostgreSQL: %w", err)
	}
	if n > 0 && notify != nil {
		notify(fmt.Sprintf("moved the state file's budget into PostgreSQL (schema dpsql), with its %d charges since its last reset", n))
	}
	policies, _ := src.PolicyStore()
	tables, err := catalog.Adopt(ctx, db, policies)
	if err != nil {
		return fmt.Errorf("moving the state file's policies into PostgreSQL: %w", err)
	}
	if len(tables) > 0 && notify != nil {
		notify("moved the state file's policies into PostgreSQL (schema dpsql): " + strings.Join(tables, ", "))
	}
	return nil
}

// refusePending refuses an analyst's open of a state file whose budget or
// policies an owner has not moved into PostgreSQL yet: read without its
// policies, a table with a privacy unit would count each row as a unit,
// and its earlier charges would not count.
func refusePending(ctx context.Context, src *postgres.Source, db *sql.DB, ledger *budget.Store, path string) error {
	policies, err := catalog.HasFilePolicies(ctx, db)
	if err != nil {
		return err
	}
	charges, err := budget.Pending(ctx, budget.SQLite(db, db), ledger, src.ID)
	if err != nil {
		return err
	}
	if policies || charges {
		return fmt.Errorf("%w: %s keeps a budget or policies of an earlier dpsql version; the owner opens it once (dpsql --owner --db postgres://... --state %s) to move them into PostgreSQL", ErrNoDatabase, path, path)
	}
	return nil
}
