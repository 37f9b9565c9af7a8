// Package pgengine holds only tests: the engine over tables kept in
// PostgreSQL (answers like SQLite's, pushdown, mirrors, concurrency,
// cancellation, the budget and policies in PostgreSQL). A package of its
// own so that its servers' round trips run beside the engine's other
// tests (go test runs packages in parallel).
package pgengine
