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
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/measure"

	"modernc.org/sqlite"
)

// IsPostgresDSN reports whether a --db argument names a PostgreSQL
// database rather than a file.
func IsPostgresDSN(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// pgSource is an engine's PostgreSQL database; the pool is the engine's.
type pgSource struct {
	pool   *pgxpool.Pool
	ledger *sql.DB // the pool as a database/sql handle, for the budget
	id     string  // the state file's source id (postgres.SourceID)
	src    *postgres.Source
}

// close closes the pool; the engine's SQLite connections, which read
// through it, are closed first.
func (p *pgSource) close() {
	if p != nil {
		p.ledger.Close()
		p.pool.Close()
	}
}

func (p *pgSource) where() string { return "PostgreSQL" }

func (p *pgSource) shutdown() { p.close() }

// policyStore is PostgreSQL's schema dpsql, through the pool.
func (p *pgSource) policyStore() (*sql.DB, bool) { return p.ledger, true }

// measurer runs compiled measurements in PostgreSQL.
func (p *pgSource) measurer(state *sql.DB) exec.Measurer { return stateMeasurer{p.src, state} }

func (p *pgSource) explain(ctx context.Context, state *sql.DB, m *measure.Plan, noPlan string) (where, statement string, err error) {
	return p.src.Explain(ctx, state, m, noPlan)
}

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
func openSQLite(dsn string, src *postgres.Source, duck duckBackend) (db, state *sql.DB, err error) {
	drv, err := sqliteDriver(src, duck)
	if err != nil {
		return nil, nil, err
	}
	c := sqliteConnector{drv: drv, dsn: dsn}
	return sql.OpenDB(c), sql.OpenDB(c), nil
}

// sqliteDriver is the SQLite driver an engine opens its file with: the
// process's own (the measurement aggregate registered on it by exec),
// or one of the engine's own with src's or duck's module.
func sqliteDriver(src *postgres.Source, duck duckBackend) (*sqlite.Driver, error) {
	if src == nil && duck == nil {
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
	if src != nil {
		if err := postgres.Install(drv, src); err != nil {
			return nil, err
		}
	}
	if duck != nil {
		if err := duck.install(drv); err != nil {
			return nil, err
		}
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
// has one or opts gives one (nil: neither).
func openPostgres(ctx context.Context, db *sql.DB, path string, opts Options, src *postgres.Source) (*pgSource, error) {
	id, err := postgres.SourceID(ctx, db, opts.Postgres != "")
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if opts.Postgres == "" {
		if id != "" {
			return nil, fmt.Errorf("%s is the state file of a PostgreSQL database: open it with that database's connection string (dpsql --db postgres://... --state %s)", path, path)
		}
		return nil, nil
	}
	if id == "" {
		return nil, fmt.Errorf("%w: %s has no PostgreSQL tables yet (the owner mirrors them: dpsql --owner --db postgres://... --state %s)", ErrNoDatabase, path, path)
	}
	pool, err := postgres.Connect(ctx, opts.Postgres)
	if err != nil {
		return nil, err
	}
	src.ID, src.Pool = id, pool
	return &pgSource{pool: pool, ledger: stdlib.OpenDBFromPool(pool), id: id, src: src}, nil
}

// prepare readies a state file and its PostgreSQL database for an open:
// it mirrors the tables the file lacks (every open does; a new table is
// private, each row its own unit, until a policy says otherwise; an
// analyst who cannot write a shared state file sees what it has), makes
// the schema dpsql where the policies and the budget live, shared by
// every process over the database, and has an owner's open adopt what a
// state file of an earlier version kept (an analyst's is refused until
// then). It returns the budget's store.
func (p *pgSource) prepare(ctx context.Context, db *sql.DB, path string, opts Options) (*budget.Store, error) {
	if err := p.mirror(ctx, db, opts.Notify); err != nil && opts.Owner {
		return nil, err
	}
	ledger := budget.Postgres(p.ledger)
	if err := budget.Init(ctx, ledger); err != nil {
		return nil, err
	}
	if err := catalog.InitPostgres(ctx, p.ledger); err != nil {
		return nil, err
	}
	if opts.Owner {
		return ledger, p.adopt(ctx, db, ledger, opts.Notify)
	}
	return ledger, p.refusePending(ctx, db, ledger, path)
}

// adopt hands what a state file of an earlier version kept — its budget
// and its policies — to PostgreSQL, once, and says so. Only an owner's
// open adopts: what it adopts can set a total or make a table public.
func (p *pgSource) adopt(ctx context.Context, db *sql.DB, ledger *budget.Store, notify func(string)) error {
	n, err := budget.Adopt(ctx, budget.SQLite(db, db), ledger, p.id)
	if err != nil {
		return fmt.Errorf("moving the state file's budget into PostgreSQL: %w", err)
	}
	if n > 0 && notify != nil {
		notify(fmt.Sprintf("moved the state file's budget into PostgreSQL (schema dpsql), with its %d charges since its last reset", n))
	}
	tables, err := catalog.Adopt(ctx, db, p.ledger)
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
func (p *pgSource) refusePending(ctx context.Context, db *sql.DB, ledger *budget.Store, path string) error {
	policies, err := catalog.HasFilePolicies(ctx, db)
	if err != nil {
		return err
	}
	charges, err := budget.Pending(ctx, budget.SQLite(db, db), ledger, p.id)
	if err != nil {
		return err
	}
	if policies || charges {
		return fmt.Errorf("%w: %s keeps a budget or policies of an earlier dpsql version; the owner opens it once (dpsql --owner --db postgres://... --state %s) to move them into PostgreSQL", ErrNoDatabase, path, path)
	}
	return nil
}

// mirror declares the PostgreSQL tables the state file does not have
// yet, and says which it added and which it could not.
func (p *pgSource) mirror(ctx context.Context, db *sql.DB, notify func(string)) error {
	added, skipped, err := postgres.Mirror(ctx, db, p.src)
	if err != nil {
		return err
	}
	if notify != nil {
		if len(added) > 0 {
			notify("mirrored from PostgreSQL (private, each row its own unit, until a policy says otherwise): " + strings.Join(added, ", "))
		}
		if len(skipped) > 0 {
			notify("not mirrored (the name is reserved or taken in the state file, the table is under row-level security, or it is in the schema dpsql, which holds the budget): " + strings.Join(skipped, ", "))
		}
	}
	return nil
}

// importInto loads a CSV file into a new PostgreSQL table: csvimport
// reads, checks and types it into a scratch SQLite file (so a malformed
// file fails exactly as it does on SQLite, before PostgreSQL is
// touched), then COPY moves the rows in one PostgreSQL transaction, and
// the table is mirrored.
func (p *pgSource) importInto(ctx context.Context, e *Engine, table, path string, opts csvimport.Options) (int64, []csvimport.Column, error) {
	var taken int
	if err := e.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = ? COLLATE NOCASE`, table).Scan(&taken); err != nil {
		return 0, nil, err
	}
	if taken > 0 {
		return 0, nil, fmt.Errorf("table %q already exists", table)
	}
	scratch, n, cols, err := importScratch(ctx, table, path, opts)
	if err != nil {
		return 0, nil, err
	}
	defer scratch.close()
	names, types := columnsOf(cols)
	if _, err := postgres.CopyTable(ctx, p.src, scratch.db, table, names, types); err != nil {
		return 0, nil, err
	}
	if err := p.mirror(ctx, e.db, nil); err != nil {
		return 0, nil, err
	}
	return n, cols, nil
}

// scratchImport is a CSV file csvimport read, checked and typed into a
// scratch SQLite file, for a backend to copy from (a malformed file fails
// there, with its line number, before the backend is touched).
type scratchImport struct {
	db  *sql.DB
	dir string
}

// importScratch imports the CSV file into a new scratch file.
func importScratch(ctx context.Context, table, path string, opts csvimport.Options) (*scratchImport, int64, []csvimport.Column, error) {
	dir, err := os.MkdirTemp("", "dpsql-import-")
	if err != nil {
		return nil, 0, nil, err
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "scratch.db"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, 0, nil, err
	}
	s := &scratchImport{db: db, dir: dir}
	n, cols, err := csvimport.Import(ctx, db, table, path, opts)
	if err != nil {
		s.close()
		return nil, 0, nil, err
	}
	return s, n, cols, nil
}

// columnsOf is the imported columns' names and SQLite types.
func columnsOf(cols []csvimport.Column) (names, types []string) {
	for _, c := range cols {
		names, types = append(names, c.Name), append(types, c.Type)
	}
	return names, types
}

func (s *scratchImport) close() {
	s.db.Close()
	os.RemoveAll(s.dir)
}
