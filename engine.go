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
	"sync"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/budget"
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
	pgSeen   func(string)     // tests only: sees every statement sent to PostgreSQL
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
	be      backend.Mirrored // where the tables live, or nil (all in the file)
	ledger  *budget.Store    // the budget: in the file, or in PostgreSQL's schema dpsql
	knobs   *knobs.Knobs     // test knobs; nil in production

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

// Close closes the database and its pools, under every session.
func (e *Engine) Close() error {
	e.store.flush() // answers still waiting for the write lock
	e.reads.Close()
	e.state.Close()
	err := e.db.Close()
	if e.be != nil {
		_ = e.be.Close()
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
	if k, ok := e.policyKeeper(); ok {
		db, postgres := k.PolicyStore()
		return storesql.On{R: db, Postgres: postgres}
	}
	return storesql.On{R: e.db}
}

// catalog loads the catalog with its policies (on SQLite through
// statements prepared once: it is read for every statement).
func (e *Engine) catalog(ctx context.Context) (*catalog.Catalog, error) {
	if _, ok := e.policyKeeper(); ok {
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
