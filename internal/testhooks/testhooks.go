// Package testhooks holds switches that only this module's tests turn on.
// Production code reads them at a handful of places and never sets them;
// the package is internal, so no program outside the module can either.
//
// FixedRandomness couples runs on neighbouring databases (the sensitivity
// auditor compares their exact values). The fault switches re-introduce,
// one each, bugs that the privacy hardening fixed, so that a test can show
// that the auditor catches them (internal/audit).
package testhooks

import "sync/atomic"

var (
	// FixedRandomness makes contribution bounding's per-query key and the
	// seeds of its row sampling constant instead of drawn from crypto/rand.
	FixedRandomness atomic.Bool

	// UnitByName takes a subquery's privacy unit from the output column
	// that bears the base unit column's name (the analyst's choice) instead
	// of by provenance.
	UnitByName atomic.Bool
	// PerRowSensitivity computes a cell's sensitivity from one row's
	// bounds, ignoring how many rows a unit contributes (l0·l∞).
	PerRowSensitivity atomic.Bool
	// FloatCentring centres sums in float64 (Σx − m·n rounded) instead of
	// exactly.
	FloatCentring atomic.Bool
	// BareAbs prints ABS without the NULLIF that keeps it from raising
	// "integer overflow" on −2^63.
	BareAbs atomic.Bool

	// PostgresGrouping overrides backend/postgres's choice of grouping
	// identical rows: 0 decides from statistics, GroupAlways and
	// GroupNever force it, so that tests cover both paths.
	PostgresGrouping atomic.Int32
)

// Values of PostgresGrouping.
const (
	GroupAlways = 1
	GroupNever  = 2
)
