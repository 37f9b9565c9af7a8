package planner

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/contrib"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/parser"
)

// Settings are a session's defaults for its queries: plain values,
// comparable, the same in every build and process.
type Settings struct {
	Epsilon float64 // 0: unset
	// Delta is the session's δ for queries whose OPTIONS give none (SET
	// delta = D): it lets GROUP BY keys without a public domain go through
	// partition selection, and is spent only by those queries.
	Delta float64
	// BoundsFraction is the share of a query's ε spent on choosing bounds
	// privately when some aggregate has none (0: DefaultBoundsFraction).
	BoundsFraction float64
	// Noise is the session's choice of mechanism ("", "auto", NoiseLaplace
	// or NoiseGaussian); OPTIONS (noise = ...) overrides it.
	Noise string
	// TargetError, when positive, is the 95% error queries ask for
	// instead of an ε (SET target_error; OPTIONS (target_error = E)).
	TargetError float64
}

// Text prints the settings as plain text, for the answer cache's key.
func (s Settings) Text() string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	text := "epsilon=" + f(s.Epsilon) + ",delta=" + f(s.Delta) + ",bounds_fraction=" + f(s.BoundsFraction) + ",noise=" + strconv.Quote(s.Noise)
	if s.TargetError > 0 { // only then: keys without it stay what earlier versions wrote
		text += ",target_error=" + f(s.TargetError)
	}
	return text
}

// Inputs are what planning may read beyond the catalog; they are passed
// beside the settings, never kept in them.
type Inputs struct {
	// Released holds, while a composite query is planned, the released
	// result each of its DP parts stands for (see PlanComposite).
	Released map[*parser.SelectStmt]*Released
	// PublicValues runs a query the planner printed over public relations
	// only (reads: what it may read) and returns its one column's values:
	// the groups of a GROUP BY on the preserved public side of an outer
	// join, or under group_selection_strategy = PUBLIC_GROUPS.
	PublicValues func(sql string, reads map[string]map[string]bool) ([]any, error)
	// Knobs are test switches (nil in production); the plan carries them
	// on to exec.
	Knobs *knobs.Knobs
	// Watch reads the bound of one of the session's threshold watches,
	// for a query sent to it (OPTIONS (watch = name)).
	Watch func(name string) (WatchBound, error)
	// Contribution, for a query whose contribution bounds are AUTO, gives
	// the bounds chosen privately for it (the engine plans it again with
	// them after the choice); nil plans it with the largest candidates,
	// for the checks before the charge.
	Contribution *ContributionChoice
}

// ContributionChoice is a query's privately chosen contribution bounds.
type ContributionChoice struct {
	MaxGroups, MaxRows int64
}

// DefaultBoundsFraction is the default share of ε spent on bound searches,
// chosen by measurement (docs/accuracy.md): at 0.2 a thousand values at
// ε = 0.1 left the search too little to find them; 0.3 finds them and
// keeps every cell of the grid within 2× the error of declared bounds.
const DefaultBoundsFraction = 0.3

// MinEpsilon and MaxEpsilon bound the ε of one query; MinDelta is the
// smallest positive δ. Outside them the noise step could fail (a grid
// step or a discrete scale out of range) or the ledger could not record
// the cost; the planner refuses them before anything is charged.
const (
	MinEpsilon = 1e-6
	MaxEpsilon = 1000.0
	MinDelta   = 1e-18
)

// queryBudget reads epsilon and delta from the OPTIONS or the session.
// options are a query's privacy parameters after OPTIONS and session.
type options struct {
	eps, delta, frac float64
	// target is the 95% error asked for instead of ε (target_error); 0:
	// none. epsGiven marks an ε in the query's own OPTIONS.
	target       float64
	epsGiven     bool
	noise        string
	unit         catalog.Unit
	minUnits     int64  // min_privacy_units_per_group (0: not given)
	publicGroups bool   // group_selection_strategy = PUBLIC_GROUPS
	maxAbove     int64  // max_groups_above (0: not given)
	watch        string // watch (a query to a threshold watch; "": none)
	// autoGroups and autoRows mark the contribution bounds left to dpsql
	// (AUTO): unit holds the chosen ones, or the largest candidates.
	autoGroups, autoRows bool
}

// queryOptions reads epsilon, delta, the bounds share and contribution
// overrides from the OPTIONS clause, the session and the table's policy.
// A missing ε is reported by the caller, after the query's other checks.
func queryOptions(s *parser.SelectStmt, sess session, rel *relation) (options, error) {
	o := options{eps: sess.Epsilon, delta: sess.Delta, frac: sess.BoundsFraction, unit: rel.unit, noise: sess.Noise, target: sess.TargetError}
	if o.frac == 0 {
		o.frac = DefaultBoundsFraction
	}
	if (o.unit.MaxGroups < 1 && o.unit.MaxGroups != catalog.AutoBound) || (o.unit.MaxRows < 1 && o.unit.MaxRows != catalog.AutoBound) {
		o.unit.MaxGroups, o.unit.MaxRows = 1, 1
	}
	for _, opt := range s.DPOptions {
		v, verr := parser.NumberValue(opt.Value)
		bad := func(msg string) (options, error) {
			return options{}, errorf(opt.Value.Pos(), ErrInvalidOption, "%s", msg)
		}
		switch opt.Name {
		case "epsilon":
			if verr != nil || !ValidEpsilon(v) {
				return bad(EpsilonRange)
			}
			o.eps, o.epsGiven = v, true
		case "target_error":
			if verr != nil || !ValidTargetError(v) {
				return bad(TargetErrorRange)
			}
			o.target = v
		case "delta":
			if verr != nil || !ValidDelta(v) {
				return bad(DeltaRange)
			}
			o.delta = v
		case "bounds_epsilon_fraction":
			if verr != nil || !ValidBoundsFraction(v) {
				return bad("bounds_epsilon_fraction must be a number strictly between 0 and 1")
			}
			o.frac = v
		case "min_privacy_units_per_group":
			if verr != nil || v < 1 || v != math.Trunc(v) || v > 1e9 {
				return bad("min_privacy_units_per_group takes a positive integer")
			}
			o.minUnits = int64(v)
		case "max_groups_contributed", "max_rows_contributed":
			if rel.unit.Column == "" {
				return options{}, errorf(opt.NamePos, ErrInvalidOption, "%s needs a privacy unit: %s has one row per unit (the owner sets privacy_unit_column)", opt.Name, rel.name)
			}
			if lv, err := parser.LiteralValue(opt.Value); err == nil && lv == nil {
				return bad(opt.Name + " = NULL (no bound) is refused: the guarantee holds per privacy unit only when each unit's contribution is bounded; give a positive integer, or AUTO")
			}
			if IsAuto(opt.Value) {
				v = float64(catalog.AutoBound)
			} else if verr != nil || v < 1 || v != math.Trunc(v) || v > 1e6 {
				return bad(opt.Name + " takes a positive integer, or AUTO (chosen privately for the query)")
			}
			if opt.Name == "max_groups_contributed" {
				o.unit.MaxGroups = int64(v)
			} else {
				o.unit.MaxRows = int64(v)
			}
		case "noise":
			n, err := parser.LiteralValue(opt.Value)
			name, ok := n.(string)
			if err != nil || !ok || !ValidNoise(name) {
				return bad("noise takes 'laplace' or 'gaussian' (or 'auto': the engine chooses)")
			}
			o.noise = strings.ToLower(name)
		case "group_selection_strategy":
			// BigQuery's: PUBLIC_GROUPS takes GROUP BY values from the
			// public relations joined in; LAPLACE_THRESHOLD is the default.
			name := ""
			switch x := opt.Value.(type) {
			case *parser.ColumnRef:
				name = x.Name
			case *parser.Literal:
				if x.Kind == parser.StringLit {
					name = x.Raw
				}
			}
			switch strings.ToUpper(name) {
			case "PUBLIC_GROUPS":
				o.publicGroups = true
			case "LAPLACE_THRESHOLD":
			default:
				return bad("group_selection_strategy takes PUBLIC_GROUPS or LAPLACE_THRESHOLD")
			}
		case "max_groups_above":
			if verr != nil || v < 1 || v != math.Trunc(v) || v > MaxGroupsAbove {
				return bad(fmt.Sprintf("max_groups_above takes a positive integer (at most %d): how many groups above the HAVING threshold may be released", MaxGroupsAbove))
			}
			o.maxAbove = int64(v)
		case "watch":
			name, ok := watchName(opt.Value)
			if !ok {
				return bad("watch takes the name of one of your watches (CREATE WATCH; SHOW WATCHES lists them)")
			}
			o.watch = name
		case "privacy_unit_column":
			return options{}, errorf(opt.NamePos, ErrInvalidOption, "the privacy unit is the owner's choice (CREATE PRIVACY POLICY ... OPTIONS (privacy_unit_column = ...))")
		default:
			return options{}, errorf(opt.NamePos, ErrInvalidOption, "unknown option %q (known: epsilon, target_error, delta, bounds_epsilon_fraction, max_groups_contributed, max_rows_contributed, min_privacy_units_per_group, noise, group_selection_strategy, max_groups_above, watch)", opt.Name)
		}
	}
	if o.epsGiven && hasOption(s, "target_error") {
		return options{}, errorf(s.SelectPos, ErrInvalidOption, "give epsilon or target_error, not both: target_error chooses the ε")
	}
	if o.epsGiven {
		o.target = 0 // the query's own ε over the session's target
	}
	if rel.unit.Column == "" {
		o.unit = catalog.Unit{MaxGroups: 1, MaxRows: 1, BoundsWarnings: rel.unit.BoundsWarnings} // a row is in one group, once
	}
	o.resolveAuto(sess.Contribution)
	return o, nil
}

// resolveAuto puts in the AUTO contribution bounds' place the chosen
// ones (c), or the largest candidates until they are chosen.
func (o *options) resolveAuto(c *ContributionChoice) {
	o.autoGroups, o.autoRows = o.unit.MaxGroups == catalog.AutoBound, o.unit.MaxRows == catalog.AutoBound
	l0, lInf := contrib.Largest(), contrib.Largest()
	if c != nil {
		l0, lInf = c.MaxGroups, c.MaxRows
	}
	if o.autoGroups {
		o.unit.MaxGroups = l0
	}
	if o.autoRows {
		o.unit.MaxRows = lInf
	}
}

// IsAuto reports whether an option's value is AUTO: the bare name, or the
// text 'auto', in any case.
func IsAuto(e parser.Expr) bool {
	switch v := e.(type) {
	case *parser.ColumnRef:
		return v.Table == "" && strings.EqualFold(v.Name, "auto")
	case *parser.Literal:
		s, err := parser.LiteralValue(v)
		str, ok := s.(string)
		return err == nil && ok && strings.EqualFold(str, "auto")
	}
	return false
}

// hasOption reports whether the query's OPTIONS name an option.
func hasOption(s *parser.SelectStmt, name string) bool {
	for _, o := range s.DPOptions {
		if o.Name == name {
			return true
		}
	}
	return false
}

// TargetErrorRange says which target errors are accepted.
const TargetErrorRange = "target_error must be a positive finite number: the 95% error the query's values may have"

// ValidTargetError reports whether v is a usable target_error.
func ValidTargetError(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

// ValidEpsilon reports whether v is a usable ε for one query.
func ValidEpsilon(v float64) bool { return v >= MinEpsilon && v <= MaxEpsilon }

// ValidDelta reports whether v is a usable δ for one query: 0, or in
// [MinDelta, 1].
// δ = 1, which BigQuery accepts, is accepted too: a query spends δ only
// with partition selection, and no owner's total reaches 1, so such a
// query is refused by the ledger, while one without partition selection
// spends none of it.
func ValidDelta(v float64) bool { return v == 0 || (v >= MinDelta && v <= 1) }

// DeltaRange is the message for a δ that ValidDelta refuses.
var DeltaRange = fmt.Sprintf("delta must be 0 or a number in [%g, 1]", MinDelta)

// EpsilonRange is the message for an ε outside [MinEpsilon, MaxEpsilon].
var EpsilonRange = fmt.Sprintf("epsilon must be a number in [%g, %g]", MinEpsilon, MaxEpsilon)

// ValidBoundsFraction reports whether f is a usable share of ε for bound
// searches: strictly between 0 and 1.
func ValidBoundsFraction(f float64) bool { return f > 0 && f < 1 }
