package dpsql

import (
	"context"
	"fmt"
	"sync"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

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

// Session is one connection to an Engine: its identity, its settings
// (SET epsilon, noise, ...) and its statements, which run one at a time.
// Its methods are safe for concurrent use. A server opens one per client
// connection, the database/sql driver one per pooled connection.
type Session struct {
	eng     *Engine
	owner   bool
	analyst string // "" for a local session on the file
	noCache bool

	mu       sync.Mutex // held while a statement runs
	settings Settings
	initial  Settings // what RESET gives back
}

// NewSession returns a new session on e: its own settings and identity,
// sharing e's database, pools and cache. Close it when done; closing e
// closes what every session shares.
func (e *Engine) NewSession(o SessionOptions) (*Session, error) {
	if o.Owner && (!e.owner || o.Analyst != "") {
		return nil, fmt.Errorf("%w: an owner session needs an owner-mode engine and no analyst", ErrOwnerOnly)
	}
	if o.Epsilon != 0 && !planner.ValidEpsilon(o.Epsilon) {
		return nil, fmt.Errorf("%s, got %v", planner.EpsilonRange, o.Epsilon)
	}
	initial := Settings{Epsilon: o.Epsilon}
	return &Session{eng: e, owner: o.Owner, analyst: o.Analyst, noCache: o.NoCache || e.noCache, settings: initial, initial: initial}, nil
}

// Close ends the session; the engine stays open.
func (s *Session) Close() error { return nil }

// Analyst is who the session runs as ("" for a local session).
func (s *Session) Analyst() string { return s.analyst }

// Owner reports whether the session may run owner statements.
func (s *Session) Owner() bool { return s.owner }

// Settings are the session's current settings.
func (s *Session) Settings() Settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settings
}

// Tables lists the user tables (see Engine.Tables).
func (s *Session) Tables(ctx context.Context) ([]TableInfo, error) { return s.eng.Tables(ctx) }

// status is the budget this session spends: its analyst's (capped by the
// database's) or the database's.
// BudgetStatus is the session's budget as a typed value (SHOW BUDGET's
// numbers): an analyst's own, with the database's that caps it in
// Database, or the database's in an owner session.
func (s *Session) BudgetStatus(ctx context.Context) (budget.Status, error) { return s.status(ctx) }

func (s *Session) status(ctx context.Context) (budget.Status, error) {
	if s.analyst != "" {
		return budget.GetAnalystStatus(ctx, s.eng.ledger, s.analyst)
	}
	return budget.GetStatus(ctx, s.eng.ledger)
}

// Query runs exactly one statement. Args bind its parameters (? or $N) as
// literals; see parser.Bind for the accepted types.
func (s *Session) Query(ctx context.Context, sqlText string, args ...any) (*Result, error) {
	stmt, err := parseBound(sqlText, args)
	if err != nil {
		return nil, err
	}
	return s.run(ctx, stmt)
}

// parseBound parses exactly one statement and binds its parameters.
func parseBound(sqlText string, args []any) (parser.Stmt, error) {
	stmt, err := parser.ParseStatement(sqlText)
	if err != nil {
		return nil, syntaxError(err)
	}
	if err := parser.Bind(stmt, args); err != nil {
		return nil, syntaxError(parser.ErrorList{err.(*parser.Error)})
	}
	return stmt, nil
}

// Explain explains one SELECT (as EXPLAIN SELECT ... would): the plan,
// its cost and its noise, without running it or spending anything.
func (s *Session) Explain(ctx context.Context, sqlText string, args ...any) (*Result, error) {
	stmt, err := parseBound(sqlText, args)
	if err != nil {
		return nil, err
	}
	if sel, ok := stmt.(*parser.SelectStmt); ok {
		stmt = &parser.ExplainStmt{ExplainPos: sel.Pos(), Query: sel}
	}
	if _, ok := stmt.(*parser.ExplainStmt); !ok {
		return nil, &Error{Pos: stmt.Pos(), Kind: ErrUnsupported, Msg: "only a SELECT can be explained"}
	}
	return s.run(ctx, stmt)
}

// RunEach parses a script and runs every statement in order, going on
// after errors: fn receives each statement's result or error (a syntax
// error stands in for a statement that did not parse) and returns false to
// stop.
func (s *Session) RunEach(ctx context.Context, script string, fn func(*Result, error) bool) {
	s.runEach(ctx, script, false, fn)
}

// ExplainEach is RunEach with every SELECT explained instead of run (as if
// written EXPLAIN SELECT ...): it spends nothing on them. The choice is
// made on each parsed statement, whatever comments or WITH clauses come
// before the SELECT.
func (s *Session) ExplainEach(ctx context.Context, script string, fn func(*Result, error) bool) {
	s.runEach(ctx, script, true, fn)
}

func (s *Session) runEach(ctx context.Context, script string, explain bool, fn func(*Result, error) bool) {
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
			res, err = s.run(ctx, stmt)
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
func (s *Session) Run(ctx context.Context, script string, fn func(*Result) error) error {
	stmts, perr := parser.ParseScript(script)
	for _, st := range stmts {
		if err := parser.Bind(st, nil); err != nil {
			return syntaxError(parser.ErrorList{err.(*parser.Error)})
		}
		res, err := s.run(ctx, st)
		if err != nil {
			return err
		}
		if err := fn(res); err != nil {
			return err
		}
	}
	return syntaxError(perr)
}

// run checks who may run stmt and dispatches it to its handler, one
// statement of the session at a time.
func (s *Session) run(ctx context.Context, stmt parser.Stmt) (res *Result, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { err = accessError(s.eng.path, diskError(s.eng.path, saysCharge(ctx, err))) }()
	if err := s.admit(ctx, stmt); err != nil {
		return nil, err
	}
	cat, err := s.eng.catalog(ctx)
	if err != nil {
		return nil, cancelled(ctx, err, nil)
	}
	switch st := stmt.(type) {
	case *parser.SelectStmt:
		res, err := s.query(ctx, st, cat)
		if err == nil {
			res.PostgresColumns = postgresNames(st, res.Columns, res.intervalCols)
		}
		return res, err
	case *parser.ExplainStmt:
		return s.explain(ctx, st, cat)
	case *parser.SetStmt:
		return s.set(st)
	case *parser.ShowStmt:
		return s.show(ctx, st, cat)
	case *parser.WatchStmt:
		return s.watchStatement(ctx, st)
	default:
		return s.ownerStatement(ctx, stmt, cat)
	}
}

// admit refuses an owner statement outside owner mode, and every
// statement of an analyst the owner dropped.
func (s *Session) admit(ctx context.Context, stmt parser.Stmt) error {
	if parser.IsOwnerStmt(stmt) && !s.owner {
		msg := "this statement needs owner mode (run dpsql with --owner)"
		if s.analyst != "" {
			msg = fmt.Sprintf("permission denied: this statement is the owner's, and analyst %s cannot run it", s.analyst)
		}
		return &Error{Pos: stmt.Pos(), Kind: ErrOwnerOnly, Msg: msg}
	}
	if s.analyst != "" {
		// An analyst the owner dropped is refused from their next statement.
		if _, ok, err := budget.Verifier(ctx, s.eng.ledger, s.analyst); err != nil {
			return cancelled(ctx, err, nil)
		} else if !ok {
			return fmt.Errorf("%w: %q was dropped by the owner", budget.ErrUnknownAnalyst, s.analyst)
		}
	}
	return nil
}

// cacheOff reports whether the session answers every query afresh: its
// options (NoCache) or SET cache = off.
func (s *Session) cacheOff() bool { return s.noCache || s.settings.NoCache }

// Budget returns the database's budget status (see Engine.Budget).
func (s *Session) Budget(ctx context.Context) (budget.Status, error) { return s.eng.Budget(ctx) }
