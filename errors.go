package dpsql

import (
	"context"
	"errors"
	"fmt"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/dperr"
	"github.com/dpsql/dpsql/parser"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Error is dpsql's one error type, used by every layer: a kind (with its
// SQLSTATE), a position in the statement, a message and a hint.
type Error = dperr.Error

// ErrorKind is a class of error; each kind is itself an error, checkable
// with errors.Is, and has a SQLSTATE.
type ErrorKind = dperr.Kind

// Errors a caller can check with errors.Is. Each is a kind.
var (
	ErrBudgetExhausted = dperr.BudgetExhausted
	ErrNoBudget        = dperr.NoBudget
	ErrNotPrivate      = dperr.NotPrivate
	ErrUnknownName     = dperr.UnknownName
	ErrUnsupported     = dperr.Unsupported
	ErrNoEpsilon       = dperr.NoEpsilon
	ErrInvalidOption   = dperr.InvalidOption
	// ErrUnknownAnalyst: no analyst of that name (or one the owner dropped).
	ErrUnknownAnalyst = dperr.UnknownAnalyst
	// ErrOwnerOnly: the statement needs owner mode.
	ErrOwnerOnly = dperr.OwnerOnly
	// ErrNoDatabase: an analyst opened a database file that does not exist
	// or is not a dpsql database.
	ErrNoDatabase = dperr.NoDatabase
	// ErrReadOnly: a private query on a database file this process cannot
	// write; its cost could not be recorded, so nothing was answered.
	ErrReadOnly = dperr.ReadOnly
	// ErrCancelled: the query's context was cancelled; the error says
	// whether its cost had been charged.
	ErrCancelled = dperr.Cancelled
)

// SQLState is the SQLSTATE of err's kind ("XX000" for an error of no
// kind): what a PostgreSQL client is told.
func SQLState(err error) string { return dperr.SQLState(err) }

// Hint is the hint err carries, or "".
func Hint(err error) string {
	var pe *parser.Error
	if errors.As(err, &pe) && pe.Hint != "" {
		return pe.Hint
	}
	return dperr.HintOf(err)
}

// SyntaxError is a statement that is not in the dpsql grammar. Line and
// Column locate the first error; Errors lists them all. Its kind is
// dperr.Syntax.
type SyntaxError struct {
	Line, Column int
	Msg          string
	Errors       parser.ErrorList
}

func (e *SyntaxError) Error() string { return e.Errors.Error() }

// Unwrap gives the first error, whose kind is dperr.Syntax unless it is
// more specific (an unknown function: dperr.UndefinedFunction).
func (e *SyntaxError) Unwrap() error {
	if len(e.Errors) > 0 {
		return e.Errors[0]
	}
	return dperr.Syntax
}

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

// cancelled turns the error of a query whose context was cancelled into
// one that says what was charged: nothing before the charge, the query's
// cost after it. Other errors pass unchanged.
func cancelled(ctx context.Context, err error, charged *budget.Cost) error {
	if ctx.Err() == nil {
		return err
	}
	if charged == nil {
		return &stopped{msg: ErrCancelled.Error() + stopReason(ctx) + "; nothing was charged", cause: ctx.Err()}
	}
	return &stopped{msg: fmt.Sprintf("%s%s; its ε=%g, δ=%g was charged", ErrCancelled.Error(), stopReason(ctx), charged.Epsilon, charged.Delta), cause: ctx.Err()}
}

// stopped is a statement stopped by its context: a message in words (not
// Go's "context canceled"), that is ErrCancelled and the context's error.
type stopped struct {
	msg   string
	cause error
}

func (e *stopped) Error() string   { return e.msg }
func (e *stopped) Unwrap() []error { return []error{ErrCancelled, e.cause} }

// stopReason says why ctx ended, for a message: a deadline, or a cancel.
func stopReason(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return " (its time ran out)"
	}
	return ""
}

// chargedError is the error of a query that failed after its cost was
// charged (its ε stays spent): the message says so.
type chargedError struct {
	err  error
	cost budget.Cost
	said bool // err's message says what was charged already
}

func (e *chargedError) Error() string {
	if e.said {
		return e.err.Error()
	}
	return fmt.Sprintf("%v (its ε=%g, δ=%g was charged)", e.err, e.cost.Epsilon, e.cost.Delta)
}

func (e *chargedError) Unwrap() error { return e.err }

// saysCharge makes err say whether the statement charged anything when it
// ended because ctx did: every error of a query that charged says so
// already (cancelled, chargedError), so any other is of a statement that
// charged nothing.
func saysCharge(ctx context.Context, err error) error {
	var ce *chargedError
	if err == nil || ctx.Err() == nil || errors.Is(err, ErrCancelled) || errors.As(err, &ce) {
		return err
	}
	return cancelled(ctx, err, nil)
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

// at reports err at pos, keeping its kind.
func at(pos parser.Pos, err error) error { return dperr.At(pos, err) }
