package dpsql

import "github.com/dpsql/dpsql/mechanism"

// zeroNoise adds no noise: it lets tests check exact answers. It exists only
// in test builds.
type zeroNoise struct{}

func (zeroNoise) AddLaplace(v, _, _ float64) (float64, error) { return v, nil }

// OpenWithNoise opens an engine with an injected noise source (tests only).
func OpenWithNoise(path string, opts Options, n mechanism.Noiser) (*Engine, error) {
	opts.noise = n
	return Open(path, opts)
}

// ZeroNoise returns the test-only noiser that adds nothing.
func ZeroNoise() mechanism.Noiser { return zeroNoise{} }
