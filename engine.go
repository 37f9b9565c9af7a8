// Package dpsql is a differentially private SQL engine over embedded SQLite.
//
// An Engine is one database, shared: the file that holds the data, the
// privacy policy and the privacy budget's ledger (with Options.Postgres
// the data stays in PostgreSQL and the file holds the rest), the
// connection pools, the noise source and the answer cache. It is safe
// for concurrent use. A Session is one connection to it: who runs the
// statements (a local session or an analyst), the session's settings
// (SET epsilon, noise, ...), statements one at a time. Analysts run
// ordinary SQL; every query on a private table returns noisy aggregates
// whose privacy cost is committed to the ledger before the answer is
// returned:
//
//	eng, err := dpsql.Open("adult.db", dpsql.Options{})
//	sess, err := eng.NewSession(dpsql.SessionOptions{Epsilon: 0.5})
//	res, err := sess.Query(ctx, `SELECT COUNT(*) FROM adult`)
//
// Engine.Query and its siblings run on the engine's default session, as
// sql.DB.Query borrows a connection.
//
// The pipeline is parser → planner → rewrite → exec, with the budget charged
// between rewrite and exec; docs/architecture.md draws it.
package dpsql

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/cache"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/storesql"
	"github.com/dpsql/dpsql/internal/testopts"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/planner"

	_ "modernc.org/sqlite" // the embedded backend
)

// Options configure an Engine.
type Options struct {
	// Owner enables owner statements (policies, budget) and imports.
	Owner bool
	// Epsilon is the default session's ε per query (0: none; queries must
	// then give one in OPTIONS or after SET epsilon).
	Epsilon float64
	// NoCache answers every private query afresh, with new noise and a new
	// charge, instead of returning the answer an identical earlier query
	// got for free (the default; see SHOW CACHE).
	NoCache bool
	// Notify, when set, receives notices about a running statement that
	// the caller may want to show, such as a private query waiting for
	// another process's write lock before it can record its cost.
	Notify func(notice string)
	// Postgres, when set, is a PostgreSQL connection string (a
	// postgres:// URL or key=value pairs): the engine then reads its
	// tables from that database, and the file at path is its state file
	// (catalog, budget, ledger, cache). An owner-mode Open mirrors every
	// table of PostgreSQL's current schema the state file does not have
	// yet (docs/backends.md). A state file with mirrored tables can only
	// be opened with its connection string.
	Postgres string
	// DuckDB, when set, is a DuckDB file the engine reads its tables from
	// (a build with cgo); the file at path is then its state file
	// (catalog, budget, ledger, cache; "" picks DuckDBStateFile). Every
	// open mirrors the DuckDB tables the state file lacks, and a private
	// query whose plan compiles runs as one DuckDB statement
	// (docs/backends.md).
	DuckDB string

	// Testing is for this module's tests (an internal type: nil for
	// every other program): a seeded noise source and test knobs.
	Testing *testopts.Options

	noise    mechanism.Noiser // tests only; nil means crypto/rand
	dsnExtra string           // tests only: more SQLite URI parameters
	knobs    *knobs.Knobs     // tests only; nil in production
	duckMem  string           // tests only: DuckDB's memory limit for this file
	duckSeen func(string)     // tests only: sees every statement sent to DuckDB
}

// Engine is one open database, shared by its sessions. Its methods are
// safe for concurrent use.
type Engine struct {
	db      *sql.DB
	state   *sql.DB            // the file again, for reads prepared once (openSQLite)
	reads   *storesql.Prepared // the catalog's constant reads on state
	path    string
	owner   bool // owner mode: owner sessions may be made
	noise   mechanism.Noiser
	notify  func(string)
	noCache bool
	be      backend       // where the tables live, or nil (all in the file)
	ledger  *budget.Store // the budget: in the file, or in PostgreSQL's schema dpsql
	knobs   *knobs.Knobs  // test knobs; nil in production

	def *Session // the default session of Engine.Query and its siblings

	// schemaKept is the schema the catalog was last read with (schema).
	schemaMu   sync.Mutex
	schemaKept *catalog.Schema

	// flights are the private queries being answered now, by cache key:
	// a session asking the same query waits for the first one's answer to
	// reach the cache instead of being charged again (awaitFlight).
	flightMu sync.Mutex
	flights  map[string]chan struct{}

	// store keeps released answers until they reach the cache (keep).
	store *answerStore
}

// awaitFlight waits while another session of the engine answers the
// private query of cache key key, then makes the caller the one that
// answers it; done ends its turn (after the answer is cached).
func (e *Engine) awaitFlight(ctx context.Context, key string) (done func(), err error) {
	for {
		e.flightMu.Lock()
		ch, busy := e.flights[key]
		if !busy {
			if e.flights == nil {
				e.flights = map[string]chan struct{}{}
			}
			ch = make(chan struct{})
			e.flights[key] = ch
			e.flightMu.Unlock()
			return func() {
				e.flightMu.Lock()
				delete(e.flights, key)
				e.flightMu.Unlock()
				close(ch)
			}, nil
		}
		e.flightMu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

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
		opts.duckMem, opts.duckSeen = t.DuckDBMemoryLimit, t.DuckDBStatements
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
	var src *postgres.Source
	if opts.Postgres != "" {
		src = &postgres.Source{Knobs: opts.knobs}
	}
	var duck duckBackend
	if opts.DuckDB != "" {
		if duck, err = newDuckBackend(opts.DuckDB, opts.duckMem, opts.duckSeen); err != nil {
			return nil, err
		}
	}
	db, state, err := openSQLite("file:"+strings.ReplaceAll(path, "%", "%25")+"?_pragma=busy_timeout(30000)&_txlock=immediate"+opts.dsnExtra, src, duck)
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
	// The PostgreSQL source is registered before anything reads the
	// catalog: reading a mirrored table's columns connects to it.
	pg, err := openPostgres(ctx, db, path, opts, src)
	if err != nil {
		db.Close()
		return nil, err
	}
	ledger, err := initState(ctx, db, state, pg, path, opts)
	if err != nil {
		db.Close()
		pg.close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if duck != nil {
		if err := mirrorDuckDB(ctx, db, duck, opts.Notify); err != nil && opts.Owner {
			db.Close()
			duck.close()
			return nil, err
		}
	}
	noise := opts.noise
	if noise == nil {
		noise = mechanism.NewSecureNoiser(nil)
	}
	e := &Engine{db: db, state: state, reads: &storesql.Prepared{DB: state}, path: path, owner: opts.Owner, noise: noise, notify: opts.Notify, noCache: opts.NoCache, ledger: ledger, knobs: opts.knobs, store: newAnswerStore()}
	switch {
	case pg != nil:
		e.be = pg
	case duck != nil:
		e.be = duckdbBackend{duck}
	}
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
func initState(ctx context.Context, db, state *sql.DB, pg *pgSource, path string, opts Options) (*budget.Store, error) {
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
		if ledger, err = pg.prepare(ctx, db, path, opts); err != nil {
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

// Close closes the database and its pools, under every session.
func (e *Engine) Close() error {
	e.store.flush() // answers still waiting for the write lock
	e.reads.Close()
	e.state.Close()
	err := e.db.Close()
	if e.be != nil {
		e.be.shutdown()
	}
	return err
}

// AnalystVerifier returns the stored SCRAM verifier of an analyst (ok
// false for an unknown name), for a server authenticating them.
func (e *Engine) AnalystVerifier(ctx context.Context, name string) (verifier string, ok bool, err error) {
	return budget.Verifier(ctx, e.ledger, name)
}

// AuthSecret returns the database's persistent secret for a server's
// authentication decoys (auth.Decoy), creating it on first use (an
// owner-mode engine writes it).
func (e *Engine) AuthSecret(ctx context.Context) ([]byte, error) {
	return budget.AuthSecret(ctx, e.ledger)
}

// policies is where the catalog's policies are kept: the file, or
// PostgreSQL's schema dpsql.
func (e *Engine) policies() storesql.On {
	if k, ok := e.be.(policyKeepingBackend); ok {
		db, postgres := k.policyStore()
		return storesql.On{R: db, Postgres: postgres}
	}
	return storesql.On{R: e.db}
}

// catalog loads the catalog with its policies (on SQLite through
// statements prepared once: it is read for every statement).
func (e *Engine) catalog(ctx context.Context) (*catalog.Catalog, error) {
	if _, ok := e.be.(policyKeepingBackend); ok {
		// Tables in PostgreSQL: read each time (a table the role may no
		// longer read is found unreadable before the query is charged).
		return catalog.Load(ctx, e.reads, e.policies())
	}
	s, err := e.schema(ctx)
	if err != nil {
		return nil, err
	}
	return catalog.LoadOn(ctx, s, storesql.On{R: e.reads})
}

// schema is the file's tables and columns, read again only when SQLite's
// schema version says they changed (reading every table's columns was a
// sixth of a small query's time); the policies are read on every
// statement.
func (e *Engine) schema(ctx context.Context) (*catalog.Schema, error) {
	v, err := catalog.SchemaVersion(ctx, e.reads)
	if err != nil {
		return nil, err
	}
	e.schemaMu.Lock()
	s := e.schemaKept
	e.schemaMu.Unlock()
	if s != nil && s.Version == v {
		return s, nil
	}
	s, keep, err := catalog.LoadSchema(ctx, e.reads)
	if err != nil {
		return nil, err
	}
	if keep {
		e.schemaMu.Lock()
		e.schemaKept = s
		e.schemaMu.Unlock()
	}
	return s, nil
}

// planInputs are what the planner may read beyond the catalog: public
// relations' values (the groups of the public-groups idiom); the planner
// prints the SQL, and the authorizer holds it to the public tables it
// names.
func (e *Engine) planInputs() planner.Inputs {
	return planner.Inputs{Knobs: e.knobs, PublicValues: func(sqlText string, reads map[string]map[string]bool) ([]any, error) {
		return exec.PublicValues(context.Background(), e.db, sqlText, reads)
	}}
}

// Path is the database file's path.
func (e *Engine) Path() string { return e.path }

// Owner reports whether the engine is in owner mode.
func (e *Engine) Owner() bool { return e.owner }

// TableInfo describes a user table: names, declared types and policy,
// which are not private data.
type TableInfo struct {
	Name    string
	Public  bool
	Columns []catalog.Column
	// Policy sums up the table's privacy policy in a line, and
	// ColumnPolicies says, column by column, what it says of each (as
	// DESCRIBE does): public facts an analyst may read.
	Policy         string
	ColumnPolicies []string
}

// Tables lists the user tables (dpsql's own are hidden).
func (e *Engine) Tables(ctx context.Context) ([]TableInfo, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return nil, err
	}
	var out []TableInfo
	for _, t := range cat.Tables() {
		info := TableInfo{Name: t.Name, Public: t.Public, Columns: t.Columns, Policy: tablePolicy(t)}
		for _, c := range t.Columns {
			info.ColumnPolicies = append(info.ColumnPolicies, columnPolicy(t, c.Name))
		}
		out = append(out, info)
	}
	return out, nil
}

// Budget returns the database's budget status.
func (e *Engine) Budget(ctx context.Context) (budget.Status, error) {
	return budget.GetStatus(ctx, e.ledger)
}

// Query runs one statement on the engine's default session (see
// Session.Query).
func (e *Engine) Query(ctx context.Context, sqlText string, args ...any) (*Result, error) {
	return e.def.Query(ctx, sqlText, args...)
}

// Run runs a script on the engine's default session (see Session.Run).
func (e *Engine) Run(ctx context.Context, script string, fn func(*Result) error) error {
	return e.def.Run(ctx, script, fn)
}

// RunEach runs a script on the engine's default session (see
// Session.RunEach).
func (e *Engine) RunEach(ctx context.Context, script string, fn func(*Result, error) bool) {
	e.def.RunEach(ctx, script, fn)
}

// ExplainEach explains a script on the engine's default session (see
// Session.ExplainEach).
func (e *Engine) ExplainEach(ctx context.Context, script string, fn func(*Result, error) bool) {
	e.def.ExplainEach(ctx, script, fn)
}

// Explain explains a SELECT on the engine's default session (see
// Session.Explain).
func (e *Engine) Explain(ctx context.Context, sqlText string, args ...any) (*Result, error) {
	return e.def.Explain(ctx, sqlText, args...)
}

// Describe describes a statement on the engine's default session (see
// Session.Describe).
func (e *Engine) Describe(ctx context.Context, sqlText string) (*Description, error) {
	return e.def.Describe(ctx, sqlText)
}

// Analyst is who the default session runs as: "" (a local session).
func (e *Engine) Analyst() string { return e.def.analyst }

// Settings are the default session's settings.
func (e *Engine) Settings() Settings { return e.def.Settings() }
