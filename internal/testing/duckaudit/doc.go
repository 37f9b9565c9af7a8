// Package duckaudit holds only tests: the sensitivity auditor's
// generated databases and statements on DuckDB — the differential test
// of the compiled measurement against the reference evaluator, the
// auditor's neighbour checks on compiled measurements, and how many of
// its scans compile. A package of its own, beside internal/testing/totality
// (the adversarial table), so that neither runs past three minutes in the
// README's test command.
package duckaudit
