package dpsql

import (
	"database/sql"
	"github.com/dpsql/dpsql/internal/knobs"
	"math/big"

	"github.com/dpsql/dpsql/mechanism"
)

// zeroNoise adds no noise: it lets tests check exact answers. It exists only
// in test builds.
type zeroNoise struct{}

func (zeroNoise) AddLaplace(v, _, _ float64) (float64, error) { return v, nil }

// AddLaplaceExact returns the exact value, rounded to float64 only at the end.
func (zeroNoise) AddLaplaceExact(v *big.Float, _, _ float64) (float64, error) {
	f, _ := v.Float64()
	return f, nil
}

// AddGaussianExact returns the exact value, rounded to float64 only at the end.
func (z zeroNoise) AddGaussianExact(v *big.Float, _, _ float64) (float64, error) {
	return z.AddLaplaceExact(v, 0, 0)
}

// NewSparse compares without noise: above when q ≥ the threshold.
func (zeroNoise) NewSparse(opts mechanism.SparseOptions) (mechanism.Thresholder, error) {
	return &exactThreshold{t: opts.Threshold, left: opts.Cutoff}, nil
}

type exactThreshold struct {
	t    float64
	left int
}

func (e *exactThreshold) Next(q float64) (bool, error) {
	if e.left == 0 {
		return false, mechanism.ErrSparseDone
	}
	if q >= e.t {
		e.left--
		return true, nil
	}
	return false, nil
}

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
func ZeroNoise() mechanism.Noiser { return zeroNoise{} }

// OpenReadOnly opens an engine whose SQLite connection may not write, as
// for a file without write permission (tests run as root, where chmod does
// not take writes away).
func OpenReadOnly(path string, opts Options) (*Engine, error) {
	opts.dsnExtra = "&mode=ro"
	return Open(path, opts)
}
