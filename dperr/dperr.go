// Package dperr is dpsql's one error type: a kind, a position in the
// statement, a message and a hint. Each kind carries the SQLSTATE a
// PostgreSQL client expects for it, so that every layer (parser,
// planner, budget, catalog, the engine) reports errors the same way and
// the wire server maps them by kind alone.
//
// Where it sits: at the bottom, imported by every layer; it imports
// nothing of the module.
package dperr

import (
	"errors"
	"fmt"
)

// Pos is a position in a statement's text: a byte offset and a 1-based
// line and column. The zero Pos is "no position".
type Pos struct {
	Offset int
	Line   int
	Col    int
}

// String renders the position as "line:col".
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// IsValid reports whether p is a position (the zero Pos is not).
func (p Pos) IsValid() bool { return p.Line > 0 }

// Kind is a class of error with its SQLSTATE. Kinds are errors, so a
// caller checks one with errors.Is; a kind with a parent also matches
// the parent (an unknown column is an unknown name).
type Kind struct {
	name     string
	sqlstate string
	parent   *Kind
}

// Error returns the kind's name, e.g. "privacy budget exhausted".
func (k *Kind) Error() string { return k.name }

// SQLState is the five-character SQLSTATE of the kind.
func (k *Kind) SQLState() string { return k.sqlstate }

// Is reports whether target is one of k's ancestors (errors.Is checks k
// itself).
func (k *Kind) Is(target error) bool {
	for p := k.parent; p != nil; p = p.parent {
		if p == target {
			return true
		}
	}
	return false
}

// kinds lists every kind, most specific first, for KindOf.
var kinds []*Kind

func newKind(name, sqlstate string, parent *Kind) *Kind {
	k := &Kind{name: name, sqlstate: sqlstate, parent: parent}
	kinds = append([]*Kind{k}, kinds...)
	return k
}

// The kinds. dpsql's own conditions are in class ZD (implementation-defined
// classes begin with a letter from I to Z).
var (
	Internal = newKind("internal error", "XX000", nil)
	Syntax   = newKind("syntax error", "42601", nil)
	// UndefinedFunction is a call of a function dpsql does not have.
	UndefinedFunction = newKind("undefined function", "42883", nil)
	OwnerOnly         = newKind("owner mode required", "42501", nil)
	BudgetExhausted   = newKind("privacy budget exhausted", "ZD001", nil)
	NoBudget          = newKind("no privacy budget set", "ZD002", nil)
	NotPrivate        = newKind("query cannot be answered privately", "ZD003", nil)
	NoEpsilon         = newKind("no epsilon", "ZD004", nil)
	UnknownName       = newKind("unknown name", "42P01", nil)
	UnknownColumn     = newKind("unknown column", "42703", UnknownName)
	UnknownTable      = newKind("unknown table", "42P01", UnknownName)
	Unsupported       = newKind("not supported", "0A000", nil)
	InvalidOption     = newKind("invalid option", "22023", nil)
	InvalidCost       = newKind("invalid privacy cost", "22023", nil)
	InvalidPolicy     = newKind("invalid policy", "22023", nil)
	NoPolicy          = newKind("no privacy policy", "42704", nil)
	Cancelled         = newKind("query cancelled", "57014", nil)
	UnknownAnalyst    = newKind("unknown analyst", "28000", nil)
	AnalystExists     = newKind("analyst already exists", "42710", nil)
	UnknownWatch      = newKind("unknown watch", "42704", nil)
	WatchExists       = newKind("watch already exists", "42710", nil)
	WatchClosed       = newKind("watch closed", "55000", nil)
	ReadOnly          = newKind("the database is read-only", "25006", nil)
	NoDatabase        = newKind("no such database", "3D000", nil)
)

// Error is an error of some kind, at a position of the statement (or
// none), with a message and, where there is something to suggest, a hint.
type Error struct {
	Kind *Kind
	Pos  Pos
	Msg  string
	Hint string
	// Err is the error this one reports, if any (errors.Is and errors.As
	// see it).
	Err error
}

// New returns an error of kind at pos with a formatted message.
func New(pos Pos, kind *Kind, format string, args ...any) *Error {
	return &Error{Pos: pos, Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// At reports err at pos: its kind is KindOf(err), its message err's.
func At(pos Pos, err error) *Error {
	return &Error{Pos: pos, Kind: KindOf(err), Msg: err.Error(), Err: err}
}

// Error is "line:col: message" (or the message alone without a position).
func (e *Error) Error() string {
	if e.Pos.IsValid() {
		return e.Pos.String() + ": " + e.Msg
	}
	return e.Msg
}

// Unwrap returns the kind and the reported error.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// Position returns the line and column of the error (0, 0 for none).
func (e *Error) Position() (line, col int) { return e.Pos.Line, e.Pos.Col }

// KindOf is the kind of err: an *Error's own, else the most specific
// kind err wraps, else Internal.
func KindOf(err error) *Kind {
	var e *Error
	if errors.As(err, &e) && e.Kind != nil {
		return e.Kind
	}
	for _, k := range kinds {
		if errors.Is(err, k) {
			return k
		}
	}
	return Internal
}

// SQLState is the SQLSTATE of err's kind.
func SQLState(err error) string { return KindOf(err).SQLState() }

// HintOf is the hint of the first *Error in err's chain that has one.
func HintOf(err error) string {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return ""
		}
		if e.Hint != "" {
			return e.Hint
		}
		err = e.Err
	}
	return ""
}
