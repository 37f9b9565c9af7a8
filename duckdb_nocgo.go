//go:build !cgo

package dpsql

func newDuckBackend(string, string, func(string)) (duckBackend, error) { return nil, ErrNoDuckDB }

// duckAvailable: this build has no DuckDB (it needs cgo).
const duckAvailable = false
