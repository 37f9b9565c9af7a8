// Package workloads holds the engine's long accuracy tests, which do not
// depend on where the tables live: issue 12's zCDP workloads (100 counts
// and 100 histograms within one budget, against pure accounting) and
// MEDIAN's accuracy on adult.csv. They run beside the root package, so
// that the README's test command finishes sooner.
package workloads
