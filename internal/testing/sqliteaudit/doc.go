// Package sqliteaudit holds only tests: the sensitivity auditor's
// generated databases and statements on SQLite's compiled measurement
// (backend/sqlite, the tables copied STRICT) — the differential test of
// the SQLite printer against the reference evaluator, and the auditor's
// neighbour checks on compiled measurements, whose bounding samples by
// SQLite's own window functions. A package of its own, beside duckaudit,
// so that each stays under three minutes in the README's test command.
package sqliteaudit
