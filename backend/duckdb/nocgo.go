//go:build !cgo

package duckdb

// Available reports whether this build has DuckDB (it needs cgo).
const Available = false
