// Package testopts is how this module's tests in other packages open a
// dpsql engine with what only tests may give it: a seeded noise source,
// and the test knobs (internal/knobs). dpsql.Options.Testing holds one;
// being internal, no program outside the module can name the type, so
// production engines always have crypto/rand's noise and no knobs.
package testopts

import (
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/mechanism"
)

// Options are an engine's test-only settings.
type Options struct {
	// Noise replaces crypto/rand's noise (the production samplers on a
	// seeded source, or none at all); nil keeps it. Such an engine
	// answers every query afresh (no answer cache), so that a test of the
	// noise sees each query's noise.
	Noise mechanism.Noiser
	// Knobs are the engine's test switches.
	Knobs *knobs.Knobs
	// DuckDBMemoryLimit caps DuckDB's memory for the engine's file (as
	// DPSQL_DUCKDB_MEMORY_LIMIT does for the process), so that a test can
	// force a compiled statement to fail while other tests run beside it.
	DuckDBMemoryLimit string
	// DuckDBStatements, when set, sees every statement the engine sends
	// to its DuckDB file.
	DuckDBStatements func(sql string)
	// PostgresStatements, when set, sees every statement the engine
	// sends to PostgreSQL (enginetest.RecordPostgres).
	PostgresStatements func(sql string)
}
