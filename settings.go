package dpsql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// Settings are a session's settings: plain values, comparable, the same
// in every build and process (the answer cache keys answers with them).
// SET changes them, one row of the settings table each.
type Settings struct {
	Epsilon        float64 // ε per query (0: none)
	Delta          float64 // δ for partition selection (0: none)
	BoundsFraction float64 // share of ε that chooses missing bounds (0: the default)
	Noise          string  // "", "auto", "laplace" or "gaussian"
	TargetError    float64 // the 95% error queries ask for instead of ε (0: none)
	ShowBounds     bool    // add privately chosen bounds to the answers' notes
	// NoCache answers every private query afresh, charged (SET cache = off).
	NoCache bool
	// IntervalColumns adds, after each noisy column of a private query's
	// answer, <col>_lo and <col>_hi: its 95% interval (for clients that
	// read only rows, such as database/sql and BI tools).
	IntervalColumns bool
}

// planner returns what the planner reads of the settings.
func (s Settings) planner() planner.Settings {
	return planner.Settings{Epsilon: s.Epsilon, Delta: s.Delta, BoundsFraction: s.BoundsFraction, Noise: s.Noise, TargetError: s.TargetError}
}

// setting is one session setting: its name, how a SET value is read and
// checked (parse returns false with the message wrong), how it is applied
// and what SET answers.
type setting struct {
	name    string
	parse   func(parser.Expr) (any, bool)
	wrong   string
	apply   func(*Settings, any)
	value   func(Settings) any // the value as parse gives it to apply
	message func(Settings) string
	show    func(Settings) string // the value as SHOW prints it
}

// settings is the table of session settings, in the order errors list them.
var settings = []setting{
	{
		name:    "epsilon",
		show:    func(s Settings) string { return numberOrUnset(s.Epsilon) },
		parse:   number(planner.ValidEpsilon),
		wrong:   planner.EpsilonRange,
		apply:   func(s *Settings, v any) { s.Epsilon = v.(float64) },
		value:   func(s Settings) any { return s.Epsilon },
		message: func(s Settings) string { return fmt.Sprintf("epsilon = %g per query for this session", s.Epsilon) },
	},
	{
		name:  "target_error",
		show:  func(s Settings) string { return numberOrUnset(s.TargetError) },
		parse: number(func(v float64) bool { return v == 0 || planner.ValidTargetError(v) }),
		wrong: planner.TargetErrorRange + " (0 turns it off)",
		apply: func(s *Settings, v any) { s.TargetError = v.(float64) },
		value: func(s Settings) any { return s.TargetError },
		message: func(s Settings) string {
			if s.TargetError == 0 {
				return "target_error off: queries spend the session's ε"
			}
			return fmt.Sprintf("target_error = %g: each query spends the smallest ε whose 95%% error is at most that for every value (counts and sums with declared bounds; others need epsilon)", s.TargetError)
		},
	},
	{
		name:  "delta",
		show:  func(s Settings) string { return strconv.FormatFloat(s.Delta, 'g', -1, 64) },
		parse: number(planner.ValidDelta),
		wrong: planner.DeltaRange,
		apply: func(s *Settings, v any) { s.Delta = v.(float64) },
		value: func(s Settings) any { return s.Delta },
		message: func(s Settings) string {
			if s.Delta == 0 {
				return "delta = 0: GROUP BY keys without a public domain need OPTIONS (delta = D) again"
			}
			return fmt.Sprintf("delta = %g for this session's queries that group by keys without a public domain (partition selection); other queries spend no δ", s.Delta)
		},
	},
	{
		name:  "bounds_epsilon_fraction",
		show:  func(s Settings) string { return strconv.FormatFloat(boundsFraction(s), 'g', -1, 64) },
		parse: number(planner.ValidBoundsFraction),
		wrong: "bounds_epsilon_fraction must be a number strictly between 0 and 1",
		apply: func(s *Settings, v any) { s.BoundsFraction = v.(float64) },
		value: func(s Settings) any { return s.BoundsFraction },
		message: func(s Settings) string {
			return fmt.Sprintf("bounds_epsilon_fraction = %g: that share of a query's ε chooses missing bounds", s.BoundsFraction)
		},
	},
	{
		name: "noise",
		show: func(s Settings) string { return noiseName(s) },
		parse: func(x parser.Expr) (any, bool) {
			v, err := parser.LiteralValue(x)
			name, ok := v.(string)
			return strings.ToLower(name), err == nil && ok && planner.ValidNoise(name)
		},
		wrong:   "noise takes 'laplace', 'gaussian' or 'auto'",
		apply:   func(s *Settings, v any) { s.Noise = v.(string) },
		value:   func(s Settings) any { return s.Noise },
		message: func(s Settings) string { return fmt.Sprintf("noise = %s for this session's private queries", s.Noise) },
	},
	{
		name:    "show_bounds",
		show:    func(s Settings) string { return onOff(s.ShowBounds) },
		parse:   boolean,
		wrong:   "show_bounds takes on or off",
		apply:   func(s *Settings, v any) { s.ShowBounds = v.(bool) },
		value:   func(s Settings) any { return s.ShowBounds },
		message: func(s Settings) string { return "show_bounds = " + onOff(s.ShowBounds) },
	},
	{
		name:  "cache",
		show:  func(s Settings) string { return onOff(!s.NoCache) },
		parse: boolean,
		wrong: "cache takes on or off",
		apply: func(s *Settings, v any) { s.NoCache = !v.(bool) },
		value: func(s Settings) any { return !s.NoCache },
		message: func(s Settings) string {
			if s.NoCache {
				return "cache = off: every private query is answered afresh, with new noise, and charged"
			}
			return "cache = on: a repeat of a query answered before gets that answer again, free"
		},
	},
	{
		name:  "interval_columns",
		show:  func(s Settings) string { return onOff(s.IntervalColumns) },
		parse: boolean,
		wrong: "interval_columns takes on or off",
		apply: func(s *Settings, v any) { s.IntervalColumns = v.(bool) },
		value: func(s Settings) any { return s.IntervalColumns },
		message: func(s Settings) string {
			if s.IntervalColumns {
				return "interval_columns = on: each noisy column of a private query is followed by <column>_lo and <column>_hi, its 95% interval"
			}
			return "interval_columns = off"
		},
	},
}

// boolean reads an on/off SET value.
func boolean(x parser.Expr) (any, bool) {
	v, err := parser.LiteralValue(x)
	on, ok := v.(bool)
	return on, err == nil && ok
}

// numberOrUnset prints a setting that 0 leaves unset.
func numberOrUnset(x float64) string {
	if x == 0 {
		return "unset"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// boundsFraction is the share of ε a query spends on choosing bounds.
func boundsFraction(s Settings) float64 {
	if s.BoundsFraction == 0 {
		return planner.DefaultBoundsFraction
	}
	return s.BoundsFraction
}

// noiseName is the session's choice of noise ("auto" by default).
func noiseName(s Settings) string {
	if s.Noise == "" {
		return "auto"
	}
	return s.Noise
}

// number reads a numeric SET value that valid accepts.
func number(valid func(float64) bool) func(parser.Expr) (any, bool) {
	return func(x parser.Expr) (any, bool) {
		v, err := parser.NumberValue(x)
		return v, err == nil && valid(v)
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// SettingNames are the names SET takes for a session's settings, in the
// order the settings table lists them.
func SettingNames() []string {
	names := make([]string, len(settings))
	for i, d := range settings {
		names[i] = d.name
	}
	return names
}

// Setting is the value of the session setting name as SHOW prints it
// (ok false for a name that is not one).
func (s *Session) Setting(name string) (value string, ok bool) {
	def, ok := lookupSetting(strings.ToLower(name))
	if !ok {
		return "", false
	}
	return def.show(s.Settings()), true
}

// lookupSetting finds a setting by name.
func lookupSetting(name string) (setting, bool) {
	for _, st := range settings {
		if st.name == name {
			return st, true
		}
	}
	return setting{}, false
}

// set runs SET name = value on the session's settings.
func (s *Session) set(st *parser.SetStmt) (*Result, error) {
	def, ok := lookupSetting(st.Name)
	if !ok {
		return nil, &Error{Pos: st.SetPos, Kind: ErrInvalidOption, Msg: fmt.Sprintf("unknown parameter %q (known: %s; the owner sets the total with SET BUDGET)", st.Name, strings.Join(SettingNames(), ", "))}
	}
	v, ok := def.parse(st.Value)
	if !ok {
		return nil, &Error{Pos: st.Value.Pos(), Kind: ErrInvalidOption, Msg: def.wrong}
	}
	def.apply(&s.settings, v)
	return &Result{Message: def.message(s.settings)}, nil
}

// ResetSetting gives the setting name the value the session started with
// (PostgreSQL's RESET name; dpsql serve sends it here).
func (s *Session) ResetSetting(name string) (*Result, error) {
	def, ok := lookupSetting(strings.ToLower(name))
	if !ok {
		return nil, &Error{Kind: ErrInvalidOption, Msg: fmt.Sprintf("unknown parameter %q (known: %s)", name, strings.Join(SettingNames(), ", "))}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	def.apply(&s.settings, def.value(s.initial))
	return &Result{Message: def.message(s.settings)}, nil
}

// cacheText prints the settings that change an answer, for the answer
// cache's key: exactly the text earlier versions wrote, so that their
// entries are still found.
func (s Settings) cacheText() []string {
	return []string{"session=" + s.planner().Text(), "show_bounds=" + strconv.FormatBool(s.ShowBounds)}
}
