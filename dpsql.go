// Package dpsql is a differentially private SQL engine over embedded SQLite.
//
// An Engine opens one database file, which holds the data, the privacy
// policy and the privacy budget's ledger (with Options.Postgres the data
// stays in PostgreSQL and the file holds the rest). Analysts run ordinary
// SQL; every query on a private table returns noisy aggregates whose
// privacy cost is committed to the ledger before the answer is returned:
//
//	eng, err := dpsql.Open("adult.db", dpsql.Options{})
//	res, err := eng.Query(ctx, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5) COUNT(*) FROM adult`)
//
// The pipeline is parser → planner → rewrite → exec, with the budget charged
// between rewrite and exec; docs/architecture.md draws it.
package dpsql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/dpsql/dpsql/auth"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/cache"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/internal/storesql"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/rewrite"

	sqlite "modernc.org/sqlite" // the embedded backend
	sqlite3 "modernc.org/sqlite/lib"
)

// Errors a caller can check with errors.Is.
var (
	ErrBudgetExhausted = budget.ErrBudgetExhausted
	ErrNoBudget        = budget.ErrNoBudget
	ErrNotPrivate      = planner.ErrNotPrivate
	ErrUnknownName     = planner.ErrUnknownName
	ErrUnsupported     = planner.ErrUnsupported
	ErrNoEpsilon       = planner.ErrNoEpsilon
	ErrInvalidOption   = planner.ErrInvalidOption
	// ErrOwnerOnly: the statement needs owner mode.
	ErrOwnerOnly = errors.New("owner mode required")
	// ErrNoDatabase: an analyst opened a database file that does not exist
	// or is not a dpsql database.
	ErrNoDatabase = errors.New("no such database")
	// ErrReadOnly: a private query on a database file this process cannot
	// write; its cost could not be recorded, so nothing was answered.
	ErrReadOnly = errors.New("the database is read-only")
	// ErrCancelled: the query's context was cancelled; the error says
	// whether its cost had been charged.
	ErrCancelled = errors.New("query cancelled")
)

// Options configure an Engine.
type Options struct {
	// Owner enables owner statements (policies, budget) and imports.
	Owner bool
	// Epsilon is the session's default ε per query (0: none; queries must
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

	noise    mechanism.Noiser // tests only; nil means crypto/rand
	dsnExtra string           // tests only: more SQLite URI parameters
}

// Engine is one session on one database file. Its methods are safe for
// concurrent use; statements of one Engine run one at a time.
type Engine struct {
	db      *sql.DB
	path    string
	owner   bool
	analyst string // "" for a local session on the file
	session bool   // made by Session: Close leaves the shared pool open
	noise   mechanism.Noiser
	notify  func(string)
	noCache bool
	pg      *pgSource     // where the tables live, or nil (all in the file)
	ledger  *budget.Store // the budget: in the file, or in PostgreSQL's schema dpsql

	mu         sync.Mutex
	sess       planner.Session
	showBounds bool
}

// Open opens (in owner mode: creates if missing) the database at path.
// With Options.Postgres, path is the state file (created if missing, for
// any role); "" picks DefaultStateFile.
func Open(path string, opts Options) (*Engine, error) {
	if path == "" && opts.Postgres != "" {
		var err error
		if path, err = DefaultStateFile(opts.Postgres); err != nil {
			return nil, err
		}
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("database path %q must not contain '?' or '#'", path)
	}
	if !opts.Owner && opts.Postgres == "" {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%w: %s (the owner creates it, e.g. with 'dpsql import')", ErrNoDatabase, path)
		}
	}
	if opts.Epsilon != 0 && !planner.ValidEpsilon(opts.Epsilon) {
		return nil, fmt.Errorf("%s, got %v", planner.EpsilonRange, opts.Epsilon)
	}
	// busy_timeout lets concurrent writers (budget charges from another
	// process) wait for each other instead of failing; _txlock=immediate
	// makes every transaction take the write lock up front.
	// The path is a file name, not a URI: '%' is escaped so that SQLite's
	// URI decoding gives it back as written.
	db, err := sql.Open("sqlite", "file:"+strings.ReplaceAll(path, "%", "%25")+"?_pragma=busy_timeout(30000)&_txlock=immediate"+opts.dsnExtra)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if !opts.Owner && opts.Postgres == "" {
		// An analyst never turns a file into a dpsql database: without the
		// catalog (and the budget it needs: in the file, or in PostgreSQL
		// for a state file) there is nothing to query.
		var n int
		if err := db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('_dpsql_tables', '_dpsql_budget'))
			+ 2 * (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_dpsql_postgres')`).Scan(&n); err != nil {
			db.Close()
			return nil, fmt.Errorf("opening %s: %w", path, err)
		}
		if n < 2 {
			db.Close()
			return nil, fmt.Errorf("%w: %s is not a dpsql database (the owner makes it one with 'dpsql import' or 'dpsql --owner')", ErrNoDatabase, path)
		}
	}
	// The PostgreSQL source is registered before anything reads the
	// catalog: reading a mirrored table's columns connects to it.
	pg, err := openPostgres(ctx, db, path, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	fail := func(err error) (*Engine, error) {
		db.Close()
		pg.close()
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	ledger := budget.SQLite(db)
	if pg == nil {
		if err := catalog.Init(ctx, db); err != nil {
			return fail(err)
		}
		if err := budget.Init(ctx, ledger); err != nil {
			return fail(err)
		}
	} else if ledger, err = pg.prepare(ctx, db, path, opts); err != nil {
		return fail(err)
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
	noise := opts.noise
	if noise == nil {
		noise = mechanism.NewSecureNoiser(nil)
	}
	return &Engine{db: db, path: path, owner: opts.Owner, noise: noise, notify: opts.Notify, noCache: opts.NoCache, pg: pg, ledger: ledger, sess: planner.Session{Epsilon: opts.Epsilon, PublicValues: publicValues(db)}}, nil
}

// Close closes the database (a Session's Close closes nothing shared).
func (e *Engine) Close() error {
	if e.session {
		return nil
	}
	err := e.db.Close()
	e.pg.close()
	return err
}

// SessionOptions configure a Session.
type SessionOptions struct {
	// Analyst is who the session runs as: their charges count against
	// their own budget and the database's, and are recorded under their
	// name. "" is a local session, charged to the database's total only.
	Analyst string
	// Owner enables owner statements; only an owner-mode Engine can give
	// it, and never together with Analyst.
	Owner bool
	// Epsilon is the session's default ε per query (0: none).
	Epsilon float64
	// NoCache: see Options.
	NoCache bool
}

// Session returns a new session on e's database: its own settings (SET
// epsilon, noise, ...) and identity, sharing e's connection pool. A server
// opens one per client connection. Close it when done; closing e closes
// the pool under every session.
func (e *Engine) Session(o SessionOptions) (*Engine, error) {
	if o.Owner && (!e.owner || o.Analyst != "") {
		return nil, fmt.Errorf("%w: an owner session needs an owner-mode engine and no analyst", ErrOwnerOnly)
	}
	if o.Epsilon != 0 && !planner.ValidEpsilon(o.Epsilon) {
		return nil, fmt.Errorf("%s, got %v", planner.EpsilonRange, o.Epsilon)
	}
	return &Engine{db: e.db, path: e.path, pg: e.pg, ledger: e.ledger, owner: o.Owner, analyst: o.Analyst, session: true, noise: e.noise,
		noCache: o.NoCache || e.noCache, sess: planner.Session{Epsilon: o.Epsilon, PublicValues: publicValues(e.db)}}, nil
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
	if e.pg != nil {
		return storesql.On{R: e.pg.ledger, Postgres: true}
	}
	return storesql.On{R: e.db}
}

// Analyst is who the session runs as ("" for a local session).
func (e *Engine) Analyst() string { return e.analyst }

// status is the budget this session spends: its analyst's (capped by the
// database's) or the database's.
func (e *Engine) status(ctx context.Context) (budget.Status, error) {
	if e.analyst != "" {
		return budget.GetAnalystStatus(ctx, e.ledger, e.analyst)
	}
	return budget.GetStatus(ctx, e.ledger)
}

// publicValues lets the planner read the values of public relations (the
// groups of the public-groups idiom); the planner prints the SQL, and the
// authorizer holds it to the public tables it names.
func publicValues(db *sql.DB) func(string, map[string]map[string]bool) ([]any, error) {
	return func(sqlText string, reads map[string]map[string]bool) ([]any, error) {
		return exec.PublicValues(context.Background(), db, sqlText, reads)
	}
}

// Path is the database file's path.
func (e *Engine) Path() string { return e.path }

// Result is the outcome of one statement: a table, or a message for
// statements that return none.
type Result struct {
	Columns []string
	Rows    [][]any // int64, float64, string or nil
	Message string  // for statements without rows, e.g. "budget set"
	// Cost is what the statement charged to the ledger (zero for
	// everything but private queries).
	Cost budget.Cost
	// Mechanism is the noise of a private query's cells (budget.Laplace or
	// budget.Gaussian) and Rho the zCDP cost the ledger recorded for it.
	Mechanism string
	Rho       float64
	// ErrorBounds gives, per noisy output column that is a plain
	// aggregate with declared bounds, the half-width of its 95% noise
	// interval; empty otherwise.
	ErrorBounds map[string]float64
	// Notes are remarks to show with the result, such as the privately
	// chosen bounds after SET show_bounds = on.
	Notes []string
}

// SyntaxError is a statement that is not in the dpsql grammar. Line and
// Column locate the first error; Errors lists them all.
type SyntaxError struct {
	Line, Column int
	Msg          string
	Errors       parser.ErrorList
}

func (e *SyntaxError) Error() string { return e.Errors.Error() }

// Position returns the line and column of the first error.
func (e *SyntaxError) Position() (line, col int) { return e.Line, e.Column }

// syntaxError wraps the parser's error list; other errors pass unchanged.
func syntaxError(err error) error {
	var list parser.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		return &SyntaxError{Line: list[0].Pos.Line, Column: list[0].Pos.Col, Msg: list[0].Msg, Errors: list}
	}
	return err
}

// CheckSyntax parses one statement without running it: the number of
// parameters ($N or ?) it takes, or a *SyntaxError. A server's Parse
// message needs this before any parameter is bound.
func CheckSyntax(sqlText string) (params int, err error) {
	stmt, err := parser.ParseStatement(sqlText)
	if err != nil {
		return 0, syntaxError(err)
	}
	return parser.NumParams(stmt), nil
}

// Query runs exactly one statement. Args bind its parameters (? or $N) as
// literals; see parser.Bind for the accepted types.
func (e *Engine) Query(ctx context.Context, sqlText string, args ...any) (*Result, error) {
	stmt, err := parser.ParseStatement(sqlText)
	if err != nil {
		return nil, syntaxError(err)
	}
	if err := parser.Bind(stmt, args); err != nil {
		return nil, syntaxError(parser.ErrorList{err.(*parser.Error)})
	}
	return e.run(ctx, stmt)
}

// RunEach parses a script and runs every statement in order, going on
// after errors: fn receives each statement's result or error (a syntax
// error stands in for a statement that did not parse) and returns false to
// stop.
func (e *Engine) RunEach(ctx context.Context, script string, fn func(*Result, error) bool) {
	e.runEach(ctx, script, false, fn)
}

// ExplainEach is RunEach with every SELECT explained instead of run (as if
// written EXPLAIN SELECT ...): it spends nothing on them. The choice is
// made on each parsed statement, whatever comments or WITH clauses come
// before the SELECT.
func (e *Engine) ExplainEach(ctx context.Context, script string, fn func(*Result, error) bool) {
	e.runEach(ctx, script, true, fn)
}

func (e *Engine) runEach(ctx context.Context, script string, explain bool, fn func(*Result, error) bool) {
	for _, it := range parser.ParseScriptItems(script) {
		var res *Result
		var err error
		if it.Err != nil {
			err = syntaxError(parser.ErrorList{it.Err})
		} else if berr := parser.Bind(it.Stmt, nil); berr != nil {
			err = syntaxError(parser.ErrorList{berr.(*parser.Error)})
		} else {
			stmt := it.Stmt
			if sel, ok := stmt.(*parser.SelectStmt); ok && explain {
				stmt = &parser.ExplainStmt{ExplainPos: sel.Pos(), Query: sel}
			}
			res, err = e.run(ctx, stmt)
		}
		if !fn(res, err) {
			return
		}
	}
}

// Run parses a script and runs its statements in order, calling fn with
// each result. It stops at the first error (a syntax error anywhere stops
// the script at that statement) and returns it; statements after it do not
// run. Scripts take no parameters.
func (e *Engine) Run(ctx context.Context, script string, fn func(*Result) error) error {
	stmts, perr := parser.ParseScript(script)
	for _, s := range stmts {
		if err := parser.Bind(s, nil); err != nil {
			return syntaxError(parser.ErrorList{err.(*parser.Error)})
		}
		res, err := e.run(ctx, s)
		if err != nil {
			return err
		}
		if err := fn(res); err != nil {
			return err
		}
	}
	return syntaxError(perr)
}

func (e *Engine) run(ctx context.Context, stmt parser.Stmt) (*Result, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if parser.IsOwnerStmt(stmt) && !e.owner {
		msg := "this statement needs owner mode (run dpsql with --owner)"
		if e.analyst != "" {
			msg = fmt.Sprintf("permission denied: this statement is the owner's, and analyst %s cannot run it", e.analyst)
		}
		return nil, &planner.Error{Pos: stmt.Pos(), Kind: ErrOwnerOnly, Msg: msg}
	}
	if e.analyst != "" {
		// An analyst the owner dropped is refused from their next statement.
		if _, ok, err := budget.Verifier(ctx, e.ledger, e.analyst); err != nil {
			return nil, cancelled(ctx, err, nil)
		} else if !ok {
			return nil, fmt.Errorf("%w: %q was dropped by the owner", budget.ErrUnknownAnalyst, e.analyst)
		}
	}
	cat, err := catalog.Load(ctx, e.db, e.policies())
	if err != nil {
		return nil, cancelled(ctx, err, nil)
	}
	switch s := stmt.(type) {
	case *parser.SelectStmt:
		return e.query(ctx, s, cat)
	case *parser.ExplainStmt:
		return e.explain(ctx, s, cat)
	case *parser.SetStmt:
		return e.set(s)
	case *parser.ShowStmt:
		return e.show(ctx, s, cat)
	default:
		return e.ownerStatement(ctx, stmt, cat)
	}
}

func (e *Engine) query(ctx context.Context, s *parser.SelectStmt, cat *catalog.Catalog) (*Result, error) {
	plan, err := planner.PlanSelect(s, cat, e.sess)
	if err != nil {
		comp, cerr := planner.PlanComposite(s, cat, e.sess)
		if cerr != nil {
			return nil, cerr
		}
		if comp == nil {
			return nil, err
		}
		return e.composite(ctx, comp, cat)
	}
	switch p := plan.(type) {
	case *planner.PublicQuery:
		r, err := exec.Public(ctx, e.db, p)
		if err != nil {
			return nil, err
		}
		return &Result{Columns: r.Columns, Rows: r.Rows}, nil
	case *planner.PrivateQuery:
		return e.private(ctx, s, p, "")
	}
	return nil, fmt.Errorf("dpsql: unknown plan %T", plan)
}

// private answers one DP query: from the cache, or charged and then run.
//
// salt joins the cache key: a DP query over other DP queries' answers
// passes those answers, so that it is answered afresh when they change.
func (e *Engine) private(ctx context.Context, s *parser.SelectStmt, p *planner.PrivateQuery, salt string) (*Result, error) {
	rw, err := rewrite.Private(p)
	if err != nil {
		return nil, err
	}
	// An identical query asked before gets the same released answer,
	// free (post-processing of that release).
	text := parser.FormatStmt(s) // the canonical statement: cache key, ledger and SHOW CACHE
	key := e.cacheKey(text+salt, p)
	if a, ok, err := cache.Get(ctx, e.db, key); err == nil && ok && !e.noCache {
		notes := append(append([]string(nil), a.Notes...), fmt.Sprintf("answered from the cache: the answer released on %s (ε=%g then), nothing charged", a.Created.Format("2006-01-02 15:04:05 UTC"), a.Epsilon))
		return &Result{Columns: a.Columns, Rows: a.Rows, ErrorBounds: a.ErrorBounds, Notes: notes}, nil
	}
	// The backend compiles both statements before anything is charged:
	// a statement it rejects costs nothing.
	cost := budget.Cost{Epsilon: p.Epsilon, Delta: p.Delta}
	prep, err := exec.Prepare(ctx, e.db, p, rw)
	if err != nil {
		return nil, cancelled(ctx, err, nil)
	}
	defer prep.Close()
	if e.pg != nil {
		prep.PushTo(pgPusher{e.pg, e.db}) // native measurements of a mirror run in PostgreSQL
	}
	st, err := e.status(ctx)
	if err != nil {
		return nil, err
	}
	opts, _, err := noiseOptions(p, st)
	if err != nil {
		return nil, err
	}
	// The charge is committed before the data is read: nothing is
	// released that has not been paid for.
	waiting := func() {
		if e.notify != nil {
			e.notify("waiting for the database's write lock (another connection or process is writing, such as an owner's import) to record this query's cost; Ctrl-C cancels and charges nothing")
		}
	}
	i, err := budget.ChargeFirst(ctx, e.ledger, e.analyst, charges(opts), text, waiting)
	if err != nil {
		if errors.Is(err, budget.ErrBudgetExhausted) || errors.Is(err, budget.ErrNoBudget) {
			return nil, &planner.Error{Pos: s.SelectPos, Kind: err, Msg: err.Error()}
		}
		if readOnly(err) {
			return nil, fmt.Errorf("%w: every private query records its cost in the ledger inside %s before it is answered, so it needs write access to that file and its directory (public queries, EXPLAIN and SHOW work without); nothing was charged", ErrReadOnly, e.path)
		}
		return nil, cancelled(ctx, err, nil)
	}
	p = opts[i].plan
	r, chosen, err := prep.Run(ctx, p, e.noise)
	if err != nil {
		return nil, cancelled(ctx, err, &cost)
	}
	res := &Result{Columns: r.Columns, Rows: r.Rows, Cost: cost, Mechanism: opts[i].charge.Mechanism, Rho: opts[i].charge.Rho, ErrorBounds: errorBounds(p)}
	if c := opts[i].charge; c.Mechanism == budget.Gaussian {
		res.Notes = append(res.Notes, fmt.Sprintf("discrete Gaussian noise, zCDP accounting: this query bought ρ=%.4g, the share ε/E of the total ρ=%.4g", c.Rho, st.RhoTotal))
	}
	if e.showBounds {
		for _, c := range chosen {
			res.Notes = append(res.Notes, fmt.Sprintf("bounds of %s chosen privately: [%g, %g]", c.Label, c.Lo, c.Hi))
		}
	}
	tables := make([]string, 0, len(p.Reads))
	for t := range p.Reads {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	if !e.noCache {
		_ = cache.Put(ctx, e.db, key, text, tables, &cache.Answer{Columns: res.Columns, Rows: res.Rows,
			ErrorBounds: res.ErrorBounds, Notes: res.Notes, Epsilon: cost.Epsilon, Delta: cost.Delta})
	}
	return res, nil
}

// cached reports whether a DP query would be answered from the cache.
func (e *Engine) cached(ctx context.Context, s *parser.SelectStmt, p *planner.PrivateQuery) bool {
	if e.noCache {
		return false
	}
	_, ok, err := cache.Get(ctx, e.db, e.cacheKey(parser.FormatStmt(s), p))
	return err == nil && ok
}

func dpQueries(n int) string {
	if n == 1 {
		return "1 DP query"
	}
	return fmt.Sprintf("%d DP queries", n)
}

// composite answers SQL over released results: each DP part in turn, as
// if asked alone (cache, charge, noise), then the outer query on their
// noisy rows. The parts' summed cost is checked against the budget before
// the first is charged.
func (e *Engine) composite(ctx context.Context, c *planner.Composite, cat *catalog.Catalog) (*Result, error) {
	// The outer query is compiled (with empty answers) before anything is
	// charged.
	if c.Outer != nil {
		if err := exec.CheckPublic(ctx, e.db, c.Outer); err != nil {
			return nil, cancelled(ctx, err, nil)
		}
	} else {
		rw, err := rewrite.Private(c.OuterPrivate)
		if err != nil {
			return nil, err
		}
		prep, err := exec.Prepare(ctx, e.db, c.OuterPrivate, rw)
		if err != nil {
			return nil, cancelled(ctx, err, nil)
		}
		prep.Close()
	}
	st, err := e.status(ctx)
	if err != nil {
		return nil, err
	}
	var need budget.Cost
	for _, p := range c.Parts {
		if !e.cached(ctx, p.Stmt, p.Plan) {
			need.Epsilon += p.Plan.Epsilon
			need.Delta += p.Plan.Delta
		}
	}
	if c.OuterPrivate != nil {
		need.Epsilon += c.OuterPrivate.Epsilon
		need.Delta += c.OuterPrivate.Delta
	}
	if left := st.Remaining(); st.Set && (need.Epsilon > left.Epsilon*(1+1e-9) || need.Delta > left.Delta*(1+1e-9)) {
		msg := fmt.Sprintf("%s: the DP queries of this statement cost ε=%g, δ=%g together, more than the remaining ε=%g, δ=%g; nothing was charged", budget.ErrBudgetExhausted, need.Epsilon, need.Delta, left.Epsilon, left.Delta)
		return nil, &planner.Error{Pos: c.Stmt.Pos(), Kind: budget.ErrBudgetExhausted, Msg: msg}
	}
	sess := e.sess
	sess.Released = map[*parser.SelectStmt]*planner.Released{}
	res := &Result{}
	for i, p := range c.Parts {
		r, err := e.private(ctx, p.Stmt, p.Plan, "")
		if err != nil {
			if i > 0 {
				return nil, fmt.Errorf("DP query %d of %d inside this query: %w (the %d before it were charged ε=%g, δ=%g and their answers withheld)", i+1, len(c.Parts), err, i, res.Cost.Epsilon, res.Cost.Delta)
			}
			return nil, err
		}
		res.addCharge(r, fmt.Sprintf("DP query %d: ", i+1))
		sess.Released[p.Key] = &planner.Released{Columns: r.Columns, Rows: r.Rows}
	}
	plan, err := planner.PlanSelect(c.Stmt, cat, sess)
	if err != nil {
		return nil, err
	}
	switch outer := plan.(type) {
	case *planner.PublicQuery:
		r, err := exec.Public(ctx, e.db, outer)
		if err != nil {
			return nil, err
		}
		res.Columns, res.Rows = r.Columns, r.Rows
		res.Notes = append(res.Notes, fmt.Sprintf("SQL over the answers of %s: ε=%g, δ=%g in all; the outer query is post-processing and costs nothing", dpQueries(len(c.Parts)), res.Cost.Epsilon, res.Cost.Delta))
	case *planner.PrivateQuery:
		r, err := e.private(ctx, c.Stmt, outer, releasedSalt(c, sess.Released))
		if err != nil {
			return nil, fmt.Errorf("the outer DP query: %w (the %s inside it were charged ε=%g, δ=%g and their answers withheld)", err, dpQueries(len(c.Parts)), res.Cost.Epsilon, res.Cost.Delta)
		}
		res.Columns, res.Rows, res.ErrorBounds = r.Columns, r.Rows, r.ErrorBounds
		res.addCharge(r, "outer DP query: ")
		res.Notes = append(res.Notes, fmt.Sprintf("a DP query over the answers of %s: ε=%g, δ=%g in all (each charged in turn)", dpQueries(len(c.Parts)), res.Cost.Epsilon, res.Cost.Delta))
	default:
		return nil, fmt.Errorf("dpsql: the outer query planned as %T", plan)
	}
	return res, nil
}

// addCharge adds one DP query's cost, mechanism and notes (each after
// prefix) to a statement's result.
func (res *Result) addCharge(r *Result, prefix string) {
	res.Cost.Epsilon += r.Cost.Epsilon
	res.Cost.Delta += r.Cost.Delta
	res.Rho += r.Rho
	if res.Mechanism == "" || res.Mechanism == r.Mechanism {
		res.Mechanism = r.Mechanism
	} else {
		res.Mechanism = "mixed"
	}
	for _, n := range r.Notes {
		res.Notes = append(res.Notes, prefix+n)
	}
}

// releasedSalt prints the answers a DP query over other DP queries'
// answers was planned with, for its cache key.
func releasedSalt(c *planner.Composite, released map[*parser.SelectStmt]*planner.Released) string {
	var sb strings.Builder
	for _, p := range c.Parts {
		r := released[p.Key]
		sb.WriteString("\x00")
		for _, row := range r.Rows {
			for _, v := range row {
				sb.WriteString(parser.SQLLiteral(v) + ",")
			}
			sb.WriteString(";")
		}
	}
	return sb.String()
}

// cancelled turns the error of a query whose context was cancelled into
// one that says what was charged: nothing before the charge, the query's
// cost after it. Other errors pass unchanged.
func cancelled(ctx context.Context, err error, charged *budget.Cost) error {
	if ctx.Err() == nil {
		return err
	}
	if charged == nil {
		return fmt.Errorf("%w; nothing was charged (%w)", ErrCancelled, ctx.Err())
	}
	return fmt.Errorf("%w; its ε=%g, δ=%g was charged (%w)", ErrCancelled, charged.Epsilon, charged.Delta, ctx.Err())
}

func (e *Engine) explain(ctx context.Context, s *parser.ExplainStmt, cat *catalog.Catalog) (*Result, error) {
	plan, err := planner.PlanSelect(s.Query, cat, e.sess)
	assumed := false
	if errors.Is(err, planner.ErrNoEpsilon) {
		// EXPLAIN spends nothing, so it needs no ε: it shows the plan at
		// ε = 1 and says so.
		sess := e.sess
		sess.Epsilon, assumed = 1, true
		plan, err = planner.PlanSelect(s.Query, cat, sess)
	}
	if err != nil {
		sess := e.sess
		comp, cerr := planner.PlanComposite(s.Query, cat, sess)
		if comp == nil && cerr == nil && sess.Epsilon == 0 {
			sess.Epsilon, assumed = 1, true
			comp, cerr = planner.PlanComposite(s.Query, cat, sess)
		}
		if cerr != nil {
			return nil, cerr
		}
		if comp == nil {
			return nil, err
		}
		return e.explainComposite(ctx, comp, assumed)
	}
	switch p := plan.(type) {
	case *planner.PublicQuery:
		return &Result{Columns: []string{"step", "detail"}, Rows: [][]any{
			{"table", "public: the query runs without noise and spends nothing"},
			{"backend SQL", p.SQL},
		}}, nil
	case *planner.PrivateQuery:
		return e.explainPrivate(ctx, s.Query, p, assumed)
	}
	return nil, fmt.Errorf("dpsql: unknown plan %T", plan)
}

// explainComposite explains each DP part of a query over released
// results, then the outer query and the total cost.
func (e *Engine) explainComposite(ctx context.Context, c *planner.Composite, assumed bool) (*Result, error) {
	res := &Result{Columns: []string{"step", "detail"}}
	var total budget.Cost
	for i, p := range c.Parts {
		r, err := e.explainPrivate(ctx, p.Stmt, p.Plan, assumed)
		if err != nil {
			return nil, err
		}
		prefix := fmt.Sprintf("DP query %d", i+1)
		res.Rows = append(res.Rows, []any{prefix, parser.FormatStmt(p.Stmt)})
		for _, row := range r.Rows {
			res.Rows = append(res.Rows, []any{prefix + ": " + fmt.Sprint(row[0]), row[1]})
		}
		if !e.cached(ctx, p.Stmt, p.Plan) {
			total.Epsilon += p.Plan.Epsilon
			total.Delta += p.Plan.Delta
		}
	}
	if c.Outer != nil {
		res.Rows = append(res.Rows, []any{"outer query", "post-processing of the released answers (and public tables): no noise, no cost; backend SQL, with each answer as a VALUES list: " + c.Outer.SQL})
	} else {
		r, err := e.explainPrivate(ctx, c.Stmt, c.OuterPrivate, assumed)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, []any{"outer query", "a DP query of its own over the answers above (as public data) and private tables, charged after them"})
		for _, row := range r.Rows {
			if row[0] != "cache" {
				res.Rows = append(res.Rows, []any{"outer query: " + fmt.Sprint(row[0]), row[1]})
			}
		}
		total.Epsilon += c.OuterPrivate.Epsilon
		total.Delta += c.OuterPrivate.Delta
	}
	res.Rows = append(res.Rows, []any{"total", fmt.Sprintf("ε=%g, δ=%g for the DP queries not answered from the cache", total.Epsilon, total.Delta)})
	return res, nil
}

// explainPrivate explains one DP query.
func (e *Engine) explainPrivate(ctx context.Context, s *parser.SelectStmt, p *planner.PrivateQuery, assumed bool) (*Result, error) {
	rw, err := rewrite.Private(p)
	if err != nil {
		return nil, err
	}
	r := exec.Explain(p, rw)
	if st, err := e.status(ctx); err != nil {
		return nil, err
	} else if opts, why, err := noiseOptions(p, st); err != nil {
		return nil, err
	} else {
		i, acct, err := st.Choose(charges(opts))
		if err != nil {
			// Unknown or exhausted budget: show the preferred option.
			i, acct = 0, "the budget would refuse it now: "+err.Error()
		}
		if i > 0 {
			why += "; it does not fit the budget now, so the next option runs"
		}
		if opts[i].plan != p {
			r = exec.Explain(opts[i].plan, rw)
		}
		r.Rows = append(r.Rows, []any{"noise choice", why}, []any{"accounting", costNote(opts[i].charge, st) + "; admitted by " + acct})
	}
	if assumed {
		r.Rows = append(r.Rows, []any{"epsilon", "no epsilon was set: the plan is shown at ε = 1 (SET epsilon = E, or OPTIONS (epsilon = E), to choose)"})
	} else if a, ok, err := cache.Get(ctx, e.db, e.cacheKey(parser.FormatStmt(s), p)); err == nil && ok && !e.noCache {
		r.Rows = append(r.Rows, []any{"cache", fmt.Sprintf("an identical query was answered on %s: it would get that answer again, free", a.Created.Format("2006-01-02 15:04:05 UTC"))})
	}
	return &Result{Columns: r.Columns, Rows: r.Rows}, nil
}

func (e *Engine) set(s *parser.SetStmt) (*Result, error) {
	bad := func(msg string) error {
		return &planner.Error{Pos: s.Value.Pos(), Kind: planner.ErrInvalidOption, Msg: msg}
	}
	switch s.Name {
	case "epsilon":
		v, err := parser.NumberValue(s.Value)
		if err != nil || !planner.ValidEpsilon(v) {
			return nil, bad(planner.EpsilonRange)
		}
		e.sess.Epsilon = v
		return &Result{Message: fmt.Sprintf("epsilon = %g per query for this session", v)}, nil
	case "delta":
		v, err := parser.NumberValue(s.Value)
		if err != nil || !planner.ValidDelta(v) {
			return nil, bad(planner.DeltaRange)
		}
		e.sess.Delta = v
		if v == 0 {
			return &Result{Message: "delta = 0: GROUP BY keys without a public domain need OPTIONS (delta = D) again"}, nil
		}
		return &Result{Message: fmt.Sprintf("delta = %g for this session's queries that group by keys without a public domain (partition selection); other queries spend no δ", v)}, nil
	case "bounds_epsilon_fraction":
		v, err := parser.NumberValue(s.Value)
		if err != nil || !planner.ValidBoundsFraction(v) {
			return nil, bad("bounds_epsilon_fraction must be a number strictly between 0 and 1")
		}
		e.sess.BoundsFraction = v
		return &Result{Message: fmt.Sprintf("bounds_epsilon_fraction = %g: that share of a query's ε chooses missing bounds", v)}, nil
	case "noise":
		v, err := parser.LiteralValue(s.Value)
		name, ok := v.(string)
		if err != nil || !ok || !planner.ValidNoise(name) {
			return nil, bad("noise takes 'laplace', 'gaussian' or 'auto'")
		}
		e.sess.Noise = strings.ToLower(name)
		return &Result{Message: fmt.Sprintf("noise = %s for this session's private queries", e.sess.Noise)}, nil
	case "show_bounds":
		v, err := parser.LiteralValue(s.Value)
		on, ok := v.(bool)
		if err != nil || !ok {
			return nil, bad("show_bounds takes on or off")
		}
		e.showBounds = on
		return &Result{Message: fmt.Sprintf("show_bounds = %v", map[bool]string{true: "on", false: "off"}[on])}, nil
	}
	return nil, &planner.Error{Pos: s.SetPos, Kind: planner.ErrInvalidOption, Msg: fmt.Sprintf("unknown parameter %q (known: epsilon, delta, bounds_epsilon_fraction, noise, show_bounds; the owner sets the total with SET BUDGET)", s.Name)}
}

func (e *Engine) show(ctx context.Context, s *parser.ShowStmt, cat *catalog.Catalog) (*Result, error) {
	switch s.What {
	case "BUDGET":
		st, err := e.status(ctx)
		if err != nil {
			return nil, err
		}
		if !st.Set && st.Database == nil {
			return &Result{Message: "no budget set: private queries are refused until the owner runs SET BUDGET epsilon = E[, delta = D]"}, nil
		}
		if !st.Set {
			return &Result{Message: fmt.Sprintf("analyst %s has no budget of their own: private queries are refused until the owner runs ALTER ANALYST %s BUDGET epsilon = E[, delta = D]", st.Analyst, parser.QuoteIdent(st.Analyst))}, nil
		}
		rem := st.OwnRemaining()
		// The shape stays (budget, epsilon, delta) for programs that scan
		// it; ρ is in the note.
		res := &Result{Columns: []string{"budget", "epsilon", "delta"}, Rows: [][]any{
			{"total", st.Total.Epsilon, st.Total.Delta},
			{"spent", st.Spent.Epsilon, st.Spent.Delta},
			{"remaining", rem.Epsilon, rem.Delta},
		}}
		res.Notes = append(res.Notes, budgetNote(st))
		if db := st.Database; db != nil {
			// An analyst's: the database's total caps what all spend.
			dr := db.Remaining()
			res.Rows = append(res.Rows, []any{"database remaining", dr.Epsilon, dr.Delta})
			res.Notes = append(res.Notes, fmt.Sprintf("this is analyst %s's own budget; the database's total (ε=%g, δ=%g, shared by every analyst) caps it: a query must fit both", st.Analyst, db.Total.Epsilon, db.Total.Delta))
		}
		if eps := e.sess.Epsilon; eps > 0 {
			// In the ledger's whole units, as the charges will be counted.
			res.Notes = append(res.Notes, fmt.Sprintf("at ε = %g per query (this session's), %d more queries fit (repeats of cached answers are free)", eps, st.QueriesLeft(eps)))
		}
		return res, nil
	case "TABLES":
		res := &Result{Columns: []string{"table", "privacy", "policy"}}
		for _, t := range cat.Tables() {
			kind, pol := "private", "default (each row is a privacy unit)"
			if t.Public {
				kind, pol = "public", "none"
			} else if t.HasPolicy {
				pol = "declared"
			}
			res.Rows = append(res.Rows, []any{t.Name, kind, pol})
		}
		return res, nil
	case "POLICY":
		t, ok := cat.Table(s.Table.Name)
		if !ok || catalog.IsInternalName(s.Table.Name) {
			return nil, &planner.Error{Pos: s.Table.NamePos, Kind: planner.ErrUnknownName, Msg: fmt.Sprintf("unknown table %q", s.Table.Name)}
		}
		return policyResult(t), nil
	case "CACHE":
		if !e.owner {
			return nil, &planner.Error{Pos: s.ShowPos, Kind: ErrOwnerOnly, Msg: "SHOW CACHE needs owner mode (dpsql --owner): it lists the statements analysts asked"}
		}
		entries, err := cache.List(ctx, e.db)
		if err != nil {
			return nil, err
		}
		res := &Result{Columns: []string{"statement", "tables", "epsilon", "delta", "created"}}
		for _, en := range entries {
			res.Rows = append(res.Rows, []any{en.Statement, en.Tables, en.Epsilon, en.Delta, en.Created})
		}
		return res, nil
	case "LEDGER":
		// The analysts' statements and their costs are the owner's to read.
		if !e.owner {
			return nil, &planner.Error{Pos: s.ShowPos, Kind: ErrOwnerOnly, Msg: "SHOW LEDGER needs owner mode (dpsql --owner); SHOW BUDGET shows what remains"}
		}
		entries, err := budget.Ledger(ctx, e.ledger)
		if err != nil {
			return nil, err
		}
		res := &Result{Columns: []string{"id", "charged", "analyst", "statement", "mechanism", "epsilon", "delta", "rho"}}
		for _, en := range entries {
			var who any // NULL: a local session on the file
			if en.Analyst != "" {
				who = en.Analyst
			}
			res.Rows = append(res.Rows, []any{en.ID, en.Charged, who, en.Statement, en.Mechanism, en.Cost.Epsilon, en.Cost.Delta, en.Rho})
		}
		return res, nil
	case "ANALYSTS":
		if !e.owner {
			return nil, &planner.Error{Pos: s.ShowPos, Kind: ErrOwnerOnly, Msg: "SHOW ANALYSTS needs owner mode; SHOW BUDGET shows your own budget"}
		}
		list, err := budget.Analysts(ctx, e.ledger)
		if err != nil {
			return nil, err
		}
		res := &Result{Columns: []string{"analyst", "epsilon", "delta", "spent epsilon", "spent delta", "remaining epsilon", "remaining delta", "created"}}
		for _, a := range list {
			row := []any{a.Name, nil, nil, a.Status.Spent.Epsilon, a.Status.Spent.Delta, nil, nil, a.Created}
			if a.Status.Set {
				rem := a.Status.OwnRemaining()
				row[1], row[2], row[5], row[6] = a.Status.Total.Epsilon, a.Status.Total.Delta, rem.Epsilon, rem.Delta
			}
			res.Rows = append(res.Rows, row)
		}
		res.Notes = append(res.Notes, "an analyst without epsilon has no budget: their private queries are refused; the database's total caps what all analysts spend together")
		return res, nil
	}
	return nil, fmt.Errorf("dpsql: unknown SHOW %s", s.What)
}

// cacheKey is the answer cache's key of a private query (its canonical
// statement) in this session.
// Each analyst has their own cache: an answer another analyst paid for is
// not given away free (their budgets would not say what each has seen).
//
// With the policies in PostgreSQL, which other processes change, the key
// also holds the policy the plan was made under, so that no answer is
// given again under a changed policy; in a file, the owner's policy
// statements drop the answers they change (cache.Invalidate), and keys
// stay what earlier versions wrote.
func (e *Engine) cacheKey(statement string, p *planner.PrivateQuery) string {
	parts := []string{semantics, "epsilon=" + cache.Float(p.Epsilon), "delta=" + cache.Float(p.Delta),
		"session=" + e.sess.Settings(), "show_bounds=" + strconv.FormatBool(e.showBounds), "analyst=" + e.analyst}
	if e.pg != nil {
		parts = append(parts, "policy="+p.Policy)
	}
	return cache.Key(statement, parts...)
}

// semantics names what accepted statements mean in this version of the
// engine, for the answer cache: an answer cached under another meaning
// (contribution_bounds_per_group clamped rows before version 2, and
// clamps each unit's sum since) is never served for the new one. Change
// it whenever an accepted statement's answer changes meaning.
const semantics = "dpsql-semantics-2"

// changedTable is the table an owner statement changes the policy of, or "".
func changedTable(stmt parser.Stmt) string {
	switch s := stmt.(type) {
	case *parser.CreatePolicyStmt:
		return s.Table.Name
	case *parser.DropPolicyStmt:
		return s.Table.Name
	case *parser.SetPublicStmt:
		return s.Table.Name
	case *parser.SetBoundsStmt:
		return s.Table.Name
	case *parser.SetDomainStmt:
		return s.Table.Name
	}
	return ""
}

// readOnly reports whether err is SQLite refusing to write (a file or
// directory without write permission, a read-only mount or connection).
func readOnly(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_READONLY
	}
	return false
}

// policyChange says what CREATE PRIVACY POLICY does to t's policy: creates
// it, changes which settings (old → new), or changes nothing.
func policyChange(t *catalog.Table, u catalog.Unit) string {
	unit := func(c string) string {
		if c == "" {
			return "none (each row is a unit)"
		}
		return c
	}
	now := fmt.Sprintf("privacy_unit_column = %s, max_groups_contributed = %d, max_rows_contributed = %d", unit(u.Column), u.MaxGroups, u.MaxRows)
	switch {
	case t.Public:
		return "privacy policy created on " + t.Name + " (" + now + "); the table is private again"
	case !t.HasPolicy:
		return "privacy policy created on " + t.Name + " (" + now + ")"
	}
	var changes []string
	if t.Unit.Column != u.Column {
		changes = append(changes, fmt.Sprintf("privacy_unit_column %s → %s", unit(t.Unit.Column), unit(u.Column)))
	}
	if t.Unit.MaxGroups != u.MaxGroups {
		changes = append(changes, fmt.Sprintf("max_groups_contributed %d → %d", t.Unit.MaxGroups, u.MaxGroups))
	}
	if t.Unit.MaxRows != u.MaxRows {
		changes = append(changes, fmt.Sprintf("max_rows_contributed %d → %d", t.Unit.MaxRows, u.MaxRows))
	}
	if len(changes) == 0 {
		return "privacy policy on " + t.Name + " unchanged (" + now + ")"
	}
	return "privacy policy on " + t.Name + " changed: " + strings.Join(changes, ", ") + " (bounds and domains kept)"
}

func policyResult(t *catalog.Table) *Result {
	res := &Result{Columns: []string{"setting", "column", "value"}}
	add := func(a, b, c string) { res.Rows = append(res.Rows, []any{a, b, c}) }
	switch {
	case t.Public:
		add("privacy", "", "public: queried without noise")
		return res
	case t.HasPolicy:
		add("privacy", "", "private, declared policy")
	default:
		add("privacy", "", "private, default policy")
	}
	if t.Unit.Column == "" {
		add("privacy unit", "", "each row")
	} else {
		add("privacy unit", t.Unit.Column, "all rows with the same value")
		add("max_groups_contributed", "", fmt.Sprint(t.Unit.MaxGroups))
		add("max_rows_contributed", "", fmt.Sprint(t.Unit.MaxRows))
	}
	for _, c := range catalog.SortedColumns(t.Bounds) {
		b := t.Bounds[c]
		add("bounds", c, fmt.Sprintf("[%g, %g]", b.Lo, b.Hi))
	}
	for _, c := range catalog.SortedColumns(t.Domains) {
		var vals []string
		for _, v := range t.Domains[c] {
			vals = append(vals, parser.SQLLiteral(v))
		}
		add("domain", c, fmt.Sprintf("%d values: %s", len(vals), strings.Join(vals, ", ")))
	}
	return res
}

// ownerStatement runs a policy or budget statement in one transaction.
func (e *Engine) ownerStatement(ctx context.Context, stmt parser.Stmt, cat *catalog.Catalog) (res *Result, err error) {
	fail := func(pos parser.Pos, err error) error {
		return &planner.Error{Pos: pos, Kind: err, Msg: err.Error()}
	}
	if s, ok := stmt.(*parser.AnalystStmt); ok {
		return e.analystStatement(ctx, s)
	}
	if _, ok := stmt.(*parser.ResetCacheStmt); ok {
		n, err := cache.Reset(ctx, e.db)
		if err != nil {
			return nil, err
		}
		return &Result{Message: fmt.Sprintf("cache reset: %d cached answers dropped; identical queries are charged again", n)}, nil
	}
	if _, ok := stmt.(*parser.ResetBudgetStmt); ok {
		if err := budget.Reset(ctx, e.ledger); err != nil {
			return nil, err
		}
		return &Result{Message: "budget reset: nothing counts as spent; the ledger keeps every charge"}, nil
	}
	if s, ok := stmt.(*parser.SetBudgetStmt); ok {
		total, err := budgetOptions(s.SetPos, "SET BUDGET", s.Options)
		if err != nil {
			return nil, err
		}
		if err := budget.SetTotal(ctx, e.ledger, total, s.Pure); err != nil {
			return nil, fail(s.SetPos, err)
		}
		msg := fmt.Sprintf("budget set: epsilon = %g, delta = %g", total.Epsilon, total.Delta)
		switch {
		case s.Pure:
			msg += "; pure ε-DP: only pure mechanisms run (Laplace, sparse vector), composed by basic composition"
		case total.Delta > 0:
			st, err := budget.GetStatus(ctx, e.ledger)
			if err != nil {
				return nil, err
			}
			if st.RhoTotal > 0 {
				msg += fmt.Sprintf("; partition selection may spend δ = %g in all, and zCDP accounting allows ρ = %.6g in all (the other δ/2 converts it)", st.DeltaCap, st.RhoTotal)
			}
		}
		return &Result{Message: msg}, nil
	}
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	// The policy is written in the file's transaction, or in one of
	// PostgreSQL's, committed after the file's (which drops the table's
	// cached answers: were PostgreSQL's commit to fail, they would only
	// be asked afresh).
	policies := storesql.On{R: tx}
	if e.pg != nil {
		var ptx *sql.Tx
		if ptx, err = e.pg.ledger.BeginTx(ctx, nil); err != nil {
			return nil, err
		}
		defer ptx.Rollback()
		policies = storesql.On{R: ptx, Postgres: true}
		defer func() {
			if err == nil {
				if err = ptx.Commit(); err != nil {
					res = nil
				}
			}
		}()
	}
	var msg string
	switch s := stmt.(type) {
	case *parser.CreatePolicyStmt:
		u := catalog.Unit{MaxGroups: 1, MaxRows: 1}
		for _, o := range s.Options {
			bad := &planner.Error{Pos: o.Value.Pos(), Kind: planner.ErrInvalidOption}
			switch o.Name {
			case "privacy_unit_column":
				c, ok := o.Value.(*parser.ColumnRef)
				if !ok || c.Table != "" {
					if v, err := parser.LiteralValue(o.Value); err == nil {
						if name, ok := v.(string); ok {
							u.Column = name
							continue
						}
					}
					bad.Msg = "privacy_unit_column takes a column name"
					return nil, bad
				}
				u.Column = c.Name
			case "max_groups_contributed", "max_rows_contributed":
				v, err := parser.LiteralValue(o.Value)
				n, ok := v.(int64)
				if err != nil || !ok || n < 1 {
					bad.Msg = o.Name + " takes a positive integer"
					return nil, bad
				}
				if o.Name == "max_groups_contributed" {
					u.MaxGroups = n
				} else {
					u.MaxRows = n
				}
			default:
				return nil, &planner.Error{Pos: o.NamePos, Kind: planner.ErrInvalidOption, Msg: fmt.Sprintf("unknown policy option %q (known: privacy_unit_column, max_groups_contributed, max_rows_contributed)", o.Name)}
			}
		}
		if t, ok := cat.Table(s.Table.Name); ok {
			if col, ok := t.Column(u.Column); ok {
				u.Column = col.Name // as the catalog will store it
			}
			msg = policyChange(t, u)
		}
		err = cat.CreatePolicy(ctx, policies, s.Table.Name, u)
	case *parser.DropPolicyStmt:
		err, msg = cat.DropPolicy(ctx, policies, s.Table.Name), "privacy policy dropped on "+s.Table.Name+" (the table stays private)"
	case *parser.SetPublicStmt:
		err, msg = cat.SetPublic(ctx, policies, s.Table.Name), s.Table.Name+" is public: it is queried without noise"
	case *parser.SetBoundsStmt:
		lo, lerr := parser.NumberValue(s.Lo)
		if lerr != nil {
			return nil, lerr
		}
		hi, herr := parser.NumberValue(s.Hi)
		if herr != nil {
			return nil, herr
		}
		err, msg = cat.SetBounds(ctx, policies, s.Table.Name, s.Column.Name, catalog.Bounds{Lo: lo, Hi: hi}), fmt.Sprintf("bounds of %s set to [%g, %g]", s.Column.Name, lo, hi)
	case *parser.SetDomainStmt:
		vals := make([]any, len(s.Values))
		for i, v := range s.Values {
			x, verr := parser.LiteralValue(v)
			if verr != nil {
				return nil, verr
			}
			if x == nil {
				return nil, &planner.Error{Pos: v.Pos(), Kind: planner.ErrInvalidOption, Msg: "a domain cannot contain NULL"}
			}
			if b, ok := x.(bool); ok {
				x = map[bool]int64{false: 0, true: 1}[b]
			}
			vals[i] = x
		}
		err, msg = cat.SetDomain(ctx, policies, s.Table.Name, s.Column.Name, vals), fmt.Sprintf("domain of %s set (%d values)", s.Column.Name, len(vals))
	default:
		return nil, fmt.Errorf("dpsql: unknown statement %T", stmt)
	}
	if err != nil {
		return nil, fail(stmt.Pos(), err)
	}
	// A table whose policy changed answers differently: its cached answers go.
	if t := changedTable(stmt); t != "" {
		if err := cache.Invalidate(ctx, tx, t); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return &Result{Message: msg}, nil
}

// budgetOptions reads epsilon = E[, delta = D].
func budgetOptions(pos parser.Pos, what string, options []parser.Option) (budget.Cost, error) {
	total := budget.Cost{}
	seenEps := false
	for _, o := range options {
		v, err := parser.NumberValue(o.Value)
		if err != nil {
			return total, err
		}
		switch o.Name {
		case "epsilon":
			total.Epsilon, seenEps = v, true
		case "delta":
			total.Delta = v
		default:
			return total, &planner.Error{Pos: o.NamePos, Kind: planner.ErrInvalidOption, Msg: fmt.Sprintf("unknown budget option %q (known: epsilon, delta)", o.Name)}
		}
	}
	if !seenEps {
		return total, &planner.Error{Pos: pos, Kind: planner.ErrInvalidOption, Msg: what + " needs epsilon = E"}
	}
	return total, nil
}

// analystStatement runs CREATE, ALTER or DROP ANALYST (owner).
func (e *Engine) analystStatement(ctx context.Context, s *parser.AnalystStmt) (*Result, error) {
	fail := func(pos parser.Pos, err error) error {
		return &planner.Error{Pos: pos, Kind: err, Msg: err.Error()}
	}
	if s.Op == "DROP" {
		if err := budget.DropAnalyst(ctx, e.ledger, s.Name); err != nil {
			return nil, fail(s.NamePos, err)
		}
		return &Result{Message: fmt.Sprintf("analyst %s dropped: they can no longer connect (sessions already open end at their next statement); their charges stay in the ledger", s.Name)}, nil
	}
	var verifier *string
	if s.Password != nil {
		v, err := parser.LiteralValue(s.Password)
		pw, ok := v.(string)
		if err != nil || !ok || pw == "" {
			return nil, &planner.Error{Pos: s.Password.Pos(), Kind: planner.ErrInvalidOption, Msg: "PASSWORD takes a non-empty string"}
		}
		ver, err := auth.NewVerifier(pw)
		if err != nil {
			return nil, err
		}
		verifier = &ver
	}
	var total *budget.Cost
	if s.Budget != nil {
		t, err := budgetOptions(s.StmtPos, s.Op+" ANALYST ... BUDGET", s.Budget)
		if err != nil {
			return nil, err
		}
		total = &t
	}
	var err error
	if s.Op == "CREATE" {
		err = budget.CreateAnalyst(ctx, e.ledger, s.Name, *verifier, total)
	} else {
		err = budget.AlterAnalyst(ctx, e.ledger, s.Name, verifier, total)
	}
	if err != nil {
		return nil, fail(s.NamePos, err)
	}
	what := map[string]string{"CREATE": "created", "ALTER": "changed"}[s.Op]
	msg := fmt.Sprintf("analyst %s %s", s.Name, what)
	switch {
	case total != nil:
		msg += fmt.Sprintf(", with a budget of epsilon = %g, delta = %g (the database's total caps what all analysts spend)", total.Epsilon, total.Delta)
	case s.Op == "CREATE":
		msg += ", without a budget: their private queries are refused until ALTER ANALYST " + parser.QuoteIdent(s.Name) + " BUDGET epsilon = E"
	}
	return &Result{Message: msg}, nil
}

// ImportCSV creates table from a CSV file (owner only) and returns the
// number of rows imported and the columns with their inferred types. On
// error nothing is created. See csvimport.Options for the settings.
func (e *Engine) ImportCSV(ctx context.Context, table, path string, opts csvimport.Options) (int64, []csvimport.Column, error) {
	if !e.owner {
		return 0, nil, fmt.Errorf("%w: importing data needs owner mode (run dpsql with --owner)", ErrOwnerOnly)
	}
	if table == "" || catalog.IsInternalName(table) {
		return 0, nil, fmt.Errorf("invalid table name %q", table)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	var cols []csvimport.Column
	var err error
	if e.pg != nil {
		n, cols, err = e.importPostgres(ctx, table, path, opts) // one PostgreSQL transaction
	} else {
		n, cols, err = e.importSQLite(ctx, table, path, opts)
	}
	if err != nil && ctx.Err() != nil {
		return 0, nil, fmt.Errorf("%w: import cancelled, nothing was imported (%v)", ErrCancelled, ctx.Err())
	}
	return n, cols, err
}

// importSQLite is ImportCSV into the database file.
func (e *Engine) importSQLite(ctx context.Context, table, path string, opts csvimport.Options) (int64, []csvimport.Column, error) {
	// A database without user tables has no readers to keep reading: it is
	// filled in rollback-journal mode, which writes each page once (WAL
	// writes it twice, to the log and then to the file), and returns to WAL
	// after. If another connection has the file open, the mode stays WAL.
	var users int
	if err := e.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\_dpsql\_%' ESCAPE '\' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`).Scan(&users); err != nil {
		return 0, nil, err
	}
	if users == 0 {
		var mode string
		if err := e.db.QueryRowContext(ctx, `PRAGMA journal_mode = DELETE`).Scan(&mode); err == nil && mode == "delete" {
			defer e.db.ExecContext(context.Background(), `PRAGMA journal_mode = WAL`)
		}
	}
	return csvimport.Import(ctx, e.db, table, path, opts)
}

// TableInfo describes a user table: names and declared types only, which
// are not private data.
type TableInfo struct {
	Name    string
	Public  bool
	Columns []catalog.Column
}

// Tables lists the user tables (dpsql's own are hidden).
func (e *Engine) Tables(ctx context.Context) ([]TableInfo, error) {
	cat, err := catalog.Load(ctx, e.db, e.policies())
	if err != nil {
		return nil, err
	}
	var out []TableInfo
	for _, t := range cat.Tables() {
		out = append(out, TableInfo{Name: t.Name, Public: t.Public, Columns: t.Columns})
	}
	return out, nil
}

// Budget returns the database's budget status.
func (e *Engine) Budget(ctx context.Context) (budget.Status, error) {
	return budget.GetStatus(ctx, e.ledger)
}

// Owner reports whether the engine is in owner mode.
func (e *Engine) Owner() bool { return e.owner }
