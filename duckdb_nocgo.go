//go:build !cgo

package dpsql

import "github.com/dpsql/dpsql/backend"

func newDuckBackend(string, string, func(string)) (backend.Mirrored, error) { return nil, ErrNoDuckDB }

// duckAvailable: this build has no DuckDB (it needs cgo).
const duckAvailable = false
