package audit

import "github.com/dpsql/dpsql/internal/knobs"

// Fault is a bug the privacy hardening fixed, re-introduced behind a
// test-only switch among an engine's knobs.
type Fault struct {
	Name   string
	Switch func(*knobs.Knobs) *bool // the switch among an engine's knobs
}

// Faults are the bugs the auditor must catch, one per class.
var Faults = []Fault{
	{"unit taken by name", func(k *knobs.Knobs) *bool { return &k.UnitByName }},
	{"per-row sensitivity for a unit's rows", func(k *knobs.Knobs) *bool { return &k.PerRowSensitivity }},
	{"centring in doubles far from zero", func(k *knobs.Knobs) *bool { return &k.FloatCentring }},
	{"ABS left unwrapped (raises on -2^63)", func(k *knobs.Knobs) *bool { return &k.BareAbs }},
	{"chosen groups' values composed in parallel", func(k *knobs.Knobs) *bool { return &k.ChoiceParallelValues }},
	{"chosen groups compared at one row's sensitivity", func(k *knobs.Knobs) *bool { return &k.ChoicePerRow }},
	{"clipped-value counts at half their sensitivity", func(k *knobs.Knobs) *bool { return &k.ClipCountHalfSensitivity }},
	{"counts of what bounding dropped at half their sensitivity", func(k *knobs.Knobs) *bool { return &k.DroppedHalfSensitivity }},
	{"the AUTO bounds' profile at half its sensitivity", func(k *knobs.Knobs) *bool { return &k.ProfileHalfSensitivity }},
}
