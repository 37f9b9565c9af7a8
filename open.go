package dpsql

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/cache"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/internal/storesql"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/planner"
)

// Open opens (in owner mode: creates if missing) the database at path.
// With Options.Postgres, path is the state file (created if missing, for
// any role); "" picks DefaultStateFile.
func Open(path string, opts Options) (*Engine, error) {
	if t := opts.Testing; t != nil {
		if t.Noise != nil {
			opts.noise, opts.NoCache = t.Noise, true
		}
		if t.Knobs != nil {
			opts.knobs = t.Knobs
		}
		opts.duckMem, opts.duckSeen, opts.pgSeen = t.DuckDBMemoryLimit, t.DuckDBStatements, t.PostgresStatements
	}
	e, err := open(path, opts)
	if err != nil {
		return nil, accessError(path, diskError(path, err))
	}
	return e, nil
}

func open(path string, opts Options) (*Engine, error) {
	path, err := checkOpen(path, opts)
	if err != nil {
		return nil, err
	}
	// busy_timeout lets concurrent writers (budget charges from another
	// process) wait for each other instead of failing; _txlock=immediate
	// makes every transaction take the write lock up front.
	// The path is a file name, not a URI: '%' is escaped so that SQLite's
	// URI decoding gives it back as written.
	// The engine's backend, if any: a PostgreSQL database or a DuckDB
	// file. Its mirrors' module is installed on the engine's SQLite
	// driver before anything reads the catalog.
	var be backend.Mirrored
	var src *postgres.Source
	switch {
	case opts.Postgres != "":
		src = &postgres.Source{Knobs: opts.knobs, Observe: opts.pgSeen}
		be = src
	case opts.DuckDB != "":
		if be, err = newDuckBackend(opts.DuckDB, opts.duckMem, opts.duckSeen); err != nil {
			return nil, err
		}
	}
	db, state, err := openSQLite("file:"+strings.ReplaceAll(path, "%", "%25")+"?_pragma=busy_timeout(30000)&_txlock=immediate"+opts.dsnExtra, be)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			state.Close()
		}
	}()
	ctx := context.Background()
	if !opts.Owner && opts.Postgres == "" {
		if err := checkAnalystFile(ctx, db, path); err != nil {
			db.Close()
			return nil, err
		}
	}
	// The PostgreSQL source is connected before anything reads the
	// catalog: reading a mirrored table's columns connects to it.
	onPostgres, err := openPostgres(ctx, db, path, opts, src)
	if err != nil {
		db.Close()
		return nil, err
	}
	if !onPostgres {
		src = nil
	}
	ledger, err := initState(ctx, db, state, src, path, opts)
	if err != nil {
		db.Close()
		if be != nil {
			be.Close()
		}
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if be != nil && src == nil {
		if err := mirror(ctx, db, be, opts.Notify); err != nil && opts.Owner {
			db.Close()
			be.Close()
			return nil, err
		}
	}
	noise := opts.noise
	if noise == nil {
		noise = mechanism.NewSecureNoiser(nil)
	}
	e := &Engine{db: db, state: state, reads: &storesql.Prepared{DB: state}, path: path, owner: opts.Owner, noise: noise, notify: opts.Notify, noCache: opts.NoCache, ledger: ledger, knobs: opts.knobs, store: newAnswerStore()}
	e.be = be
	e.def = &Session{eng: e, owner: opts.Owner, noCache: opts.NoCache, settings: Settings{Epsilon: opts.Epsilon}, initial: Settings{Epsilon: opts.Epsilon}}
	return e, nil
}

// checkOpen validates Open's arguments and returns the path to open.
func checkOpen(path string, opts Options) (string, error) {
	if err := checkDuckDB(opts); err != nil {
		return "", err
	}
	if path == "" && opts.DuckDB != "" {
		path = DuckDBStateFile(opts.DuckDB)
	}
	if path == "" && opts.Postgres != "" {
		var err error
		if path, err = DefaultStateFile(opts.Postgres); err != nil {
			return "", err
		}
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return "", fmt.Errorf("%s is a directory: --db takes a database file (such as %s)", path, filepath.Join(path, "data.db"))
	}
	if strings.ContainsAny(path, "?#") {
		return "", fmt.Errorf("database path %q must not contain '?' or '#'", path)
	}
	if !opts.Owner && opts.Postgres == "" {
		if _, err := os.Stat(path); err != nil {
			if opts.DuckDB != "" {
				return "", fmt.Errorf("%w: %s has no dpsql state yet (%s): the owner opens it once (dpsql --db %s --owner) to declare its policies and budget", ErrNoDatabase, opts.DuckDB, path, opts.DuckDB)
			}
			return "", fmt.Errorf("%w: %s (the owner creates it, e.g. with 'dpsql import')", ErrNoDatabase, path)
		}
	}
	if opts.Epsilon != 0 && !planner.ValidEpsilon(opts.Epsilon) {
		return "", fmt.Errorf("%s, got %v", planner.EpsilonRange, opts.Epsilon)
	}
	return path, nil
}

// checkAnalystFile refuses an analyst's open of a file that is not a
// dpsql database: an analyst never turns a file into one, and without
// the catalog (and the budget it needs: in the file, or in PostgreSQL
// for a state file) there is nothing to query.
func checkAnalystFile(ctx context.Context, db *sql.DB, path string) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('_dpsql_tables', '_dpsql_budget'))
			+ 2 * (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_dpsql_postgres')`).Scan(&n); err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	if n < 2 {
		return fmt.Errorf("%w: %s is not a dpsql database (the owner makes it one with 'dpsql import' or 'dpsql --owner')", ErrNoDatabase, path)
	}
	return nil
}

// initState makes the catalog, the budget and the cache (in the file,
// or with the budget and policies in PostgreSQL) and returns the
// budget's store.
func initState(ctx context.Context, db, state *sql.DB, pg *postgres.Source, path string, opts Options) (*budget.Store, error) {
	ledger := budget.SQLite(db, state)
	if pg == nil {
		if err := catalog.Init(ctx, db); err != nil {
			return nil, err
		}
		if err := budget.Init(ctx, ledger); err != nil {
			return nil, err
		}
	} else {
		var err error
		if ledger, err = preparePostgres(ctx, pg, db, path, opts); err != nil {
			return nil, err
		}
	}
	// The answer cache is an economy, not a guarantee: where its tables
	// cannot be made (a read-only file from an older version), queries are
	// simply charged every time.
	_ = cache.Init(ctx, db)
	if opts.Owner {
		// Write-ahead logging lets analysts read while the owner writes (an
		// import, a policy change); the mode is kept in the file. Where the
		// file system cannot do it, the database keeps its journal mode.
		_, _ = db.ExecContext(ctx, `PRAGMA journal_mode = WAL`)
	}
	return ledger, nil
}
