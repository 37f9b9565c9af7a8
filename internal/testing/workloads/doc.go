// Package workloads holds the engine's long accuracy tests, which do not
// depend on where the tables live: issue 12's zCDP workloads (100 counts
// and 100 histograms within one budget, against pure accounting),
// MEDIAN's accuracy on adult.csv, and (on DuckDB, with cgo) the analyst
// workload that measures how much of what analysts write runs compiled.
// They run beside the root package, so that the README's test command
// finishes sooner.
package workloads
