package dpsql

import (
	"database/sql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testopts"

	"github.com/dpsql/dpsql/mechanism"
)

// RawDB is the engine's SQLite handle, to compare with what SQLite
// itself answers (tests only).
func RawDB(e *Engine) *sql.DB { return e.db }

// WithKnobs returns opts with test knobs (tests only).
func WithKnobs(opts Options, k *knobs.Knobs) Options {
	opts.knobs = k
	return opts
}

// OpenWithNoise opens an engine with an injected noise source (tests only).
func OpenWithNoise(path string, opts Options, n mechanism.Noiser) (*Engine, error) {
	opts.noise = n
	opts.NoCache = true // tests of the noise see every query's noise calls
	return Open(path, opts)
}

// ZeroNoise returns the test-only noiser that adds nothing.
func ZeroNoise() mechanism.Noiser { return testopts.ZeroNoise() }

// OpenReadOnly opens an engine whose SQLite connection may not write, as
// for a file without write permission (tests run as root, where chmod does
// not take writes away).
func OpenReadOnly(path string, opts Options) (*Engine, error) {
	opts.dsnExtra = "&mode=ro"
	return Open(path, opts)
}
