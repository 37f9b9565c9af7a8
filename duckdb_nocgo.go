//go:build !cgo

package dpsql

func newDuckBackend(string) (duckBackend, error) { return nil, ErrNoDuckDB }
