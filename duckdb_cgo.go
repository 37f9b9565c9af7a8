//go:build cgo

package dpsql

import (
	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
)

// duckAvailable: this build has DuckDB.
const duckAvailable = true

// A DuckDB file mirrors its tables, measures, and imports.
var (
	_ backend.Mirrored = (*duckdb.Source)(nil)
	_ backend.Measurer = (*duckdb.Source)(nil)
	_ backend.Importer = (*duckdb.Source)(nil)
)

// newDuckBackend is the engine's DuckDB file.
func newDuckBackend(path, memoryLimit string, observe func(string)) (backend.Mirrored, error) {
	return &duckdb.Source{Path: path, MemoryLimit: memoryLimit, Observe: observe}, nil
}
