// Package duckdb lets dpsql answer queries about tables in a DuckDB file.
//
// Where it sits: beside exec, below the engine, like backend/postgres.
// Each DuckDB table is mirrored in the engine's state file (a SQLite
// file beside the DuckDB file that holds the catalog, budget, ledger and
// answer cache) as a virtual table of the module "dpsql_duckdb", so every
// statement the engine runs can still run in SQLite — public queries, the
// post-processing, and the reference evaluator's scan for the queries
// that are not compiled. A private scan over one table whose plan
// package measuresql compiles runs instead as one DuckDB statement that
// returns only per-group measurements (Source.Measure); the rows never
// leave DuckDB.
//
// DuckDB needs cgo. Built without it (CGO_ENABLED=0), the package only
// says so (Available is false), and dpsql works with SQLite alone.
package duckdb
