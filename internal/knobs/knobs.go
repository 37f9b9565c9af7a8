// Package knobs holds the switches only this module's tests turn on, as
// a struct that a test hands to the engine it opens (and the engine to
// the plan and the backends). Production engines carry nil: no production
// path reads package-level test state.
//
// FixedRandomness couples runs on neighbouring databases (the sensitivity
// auditor compares their exact values). The fault switches re-introduce,
// one each, bugs that the privacy hardening fixed, so that a test can show
// that the auditor catches them (internal/testing/audit).
//
// Where it sits: at the bottom, imported by planner, exec and the
// PostgreSQL backend; it imports nothing.
package knobs

import (
	"sync"
	"sync/atomic"
	"time"
)

// Knobs are one engine's test switches. Set them before the queries they
// should affect; they are not for changing while a query runs.
type Knobs struct {
	// FixedRandomness makes contribution bounding's per-query key and the
	// seeds of its row sampling constant instead of drawn from crypto/rand.
	FixedRandomness bool

	// UnitByName takes a subquery's privacy unit from the output column
	// that bears the base unit column's name (the analyst's choice) instead
	// of by provenance.
	UnitByName bool
	// PerRowSensitivity computes a cell's sensitivity from one row's
	// bounds, ignoring how many rows a unit contributes (l0·l∞).
	PerRowSensitivity bool
	// FloatCentring centres sums in float64 (Σx − m·n rounded) instead of
	// exactly.
	FloatCentring bool
	// BareAbs prints ABS without the NULLIF that keeps it from raising
	// "integer overflow" on −2^63.
	BareAbs bool
	// ChoiceParallelValues measures the values of groups chosen by a
	// threshold or top-k query at the whole values' ε each, as if the
	// chosen groups were disjoint (they overlap: c of them compose).
	ChoiceParallelValues bool
	// ChoicePerRow takes a chosen query's per-group sensitivity from one
	// row, ignoring that a unit keeps up to l∞ rows in a group.
	ChoicePerRow bool
	// ClipCountHalfSensitivity noises a bound search's counts of clipped
	// values as if one unit moved them by half the rows it can.
	ClipCountHalfSensitivity bool
	// DroppedHalfSensitivity noises the counts of what bounding dropped
	// (exec's Dropped) at half their sensitivity.
	DroppedHalfSensitivity bool
	// ProfileHalfSensitivity noises the profile that chooses AUTO
	// contribution bounds at half its sensitivity.
	ProfileHalfSensitivity bool

	// PostgresGrouping overrides the PostgreSQL backend's choice of
	// grouping identical rows: 0 decides from statistics, GroupAlways and
	// GroupNever force it, so that tests cover both paths.
	PostgresGrouping int

	// CacheStoreWait, when positive, replaces how long one attempt to
	// store a released answer in the cache waits for the write lock (2 s),
	// so that a contention test can hold the lock past it quickly.
	CacheStoreWait time.Duration
	// BeforeCacheStore, when set, runs before a released answer's first
	// attempt to reach the cache (a test takes the write lock there).
	BeforeCacheStore func()

	// CompileSQLite measures the scans of an engine without a backend
	// (its tables in its own SQLite file) by the compiled SQLite
	// statement (backend/sqlite), for the file's STRICT tables. Production
	// engines do not: on SQLite the reference evaluator, fed in unit
	// order, is measured faster on every shape (docs/benchmarks.md), so
	// the SQLite dialect is the third printer the differential tests
	// prove, not the default path.
	CompileSQLite bool

	// ReferenceOnly keeps every scan in the reference evaluator (the
	// measurement aggregate in SQLite), never compiled for the engine
	// that holds the table nor pushed to it, so that tests can compare
	// the two.
	ReferenceOnly bool
	// Compiled counts the scans that ran compiled (exec.Measurer);
	// CompiledFailed those whose compiled statement failed in the engine
	// (the reference evaluator then measured them).
	Compiled, CompiledFailed atomic.Int64

	mu sync.Mutex
	// notCompiled counts, by EXPLAIN's reason, the scans a backend that
	// compiles measurements left to the reference evaluator.
	notCompiled map[string]int64
}

// NoteNotCompiled counts a scan that a backend which compiles
// measurements left to the reference evaluator, by the reason.
func (k *Knobs) NoteNotCompiled(why string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.notCompiled == nil {
		k.notCompiled = map[string]int64{}
	}
	k.notCompiled[why]++
}

// NotCompiled returns the counts NoteNotCompiled made, by reason.
func (k *Knobs) NotCompiled() map[string]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]int64, len(k.notCompiled))
	for why, n := range k.notCompiled {
		out[why] = n
	}
	return out
}

// Values of PostgresGrouping.
const (
	GroupAlways = 1
	GroupNever  = 2
)

// Reference reports whether k keeps scans in the reference evaluator
// (false for nil).
func (k *Knobs) Reference() bool { return k != nil && k.ReferenceOnly }

// NoteCompiled counts a compiled scan.
func (k *Knobs) NoteCompiled() {
	if k != nil {
		k.Compiled.Add(1)
	}
}

// NoteCompiledFailed counts a compiled statement the engine failed to run.
func (k *Knobs) NoteCompiledFailed() {
	if k != nil {
		k.CompiledFailed.Add(1)
	}
}

// Fixed reports whether k fixes the randomness (false for nil).
func (k *Knobs) Fixed() bool { return k != nil && k.FixedRandomness }

// Grouping is k's PostgresGrouping (0 for nil).
func (k *Knobs) Grouping() int {
	if k == nil {
		return 0
	}
	return k.PostgresGrouping
}
