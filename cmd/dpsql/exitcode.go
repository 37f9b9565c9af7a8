package main

import (
	"errors"
	"io/fs"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/dperr"
)

// Exit statuses, by what went wrong (documented in --help and
// docs/dialect.md). A run with several failures (--continue) exits with
// the first one's status.
const (
	exitOK        = 0
	exitError     = 1 // any other failing statement: an unknown name, an invalid option, owner mode needed, ...
	exitUsage     = 2 // bad command-line arguments
	exitSyntax    = 3 // the SQL does not parse
	exitRefused   = 4 // the query cannot be answered privately (or is not supported)
	exitBudget    = 5 // no budget set, budget exhausted, or no ε for the query
	exitIO        = 6 // a database or file cannot be opened, read or written
	exitCancelled = 7 // interrupted (Ctrl-C, a timeout)
)

// exitCode is the exit status for an error.
func exitCode(err error) int {
	var pathErr *fs.PathError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, dperr.Syntax):
		return exitSyntax
	case errors.Is(err, dpsql.ErrNotPrivate), errors.Is(err, dpsql.ErrUnsupported):
		return exitRefused
	case errors.Is(err, dpsql.ErrBudgetExhausted), errors.Is(err, dpsql.ErrNoBudget), errors.Is(err, dpsql.ErrNoEpsilon):
		return exitBudget
	case errors.Is(err, dpsql.ErrCancelled):
		return exitCancelled
	case errors.Is(err, dpsql.ErrNoDatabase), errors.Is(err, dpsql.ErrReadOnly), errors.Is(err, dpsql.ErrDiskFull), errors.As(err, &pathErr):
		return exitIO
	}
	return exitError
}
