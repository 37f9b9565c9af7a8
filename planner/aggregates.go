package planner

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/parser"
)

// reportFormat reads report_format => 'JSON' off an aggregate's named
// arguments, returning the others.
func reportFormat(call *parser.CallExpr) (report bool, rest []parser.NamedArg, err error) {
	for _, na := range call.Named {
		if na.Name != "report_format" {
			rest = append(rest, na)
			continue
		}
		v, lerr := parser.LiteralValue(na.Value)
		if c, ok := na.Value.(*parser.ColumnRef); ok && c.Table == "" {
			// ZetaSQL's tests write "JSON": a string in its dialect, a
			// name in this one, where no column can be meant.
			v, lerr = c.Name, nil
		}
		if f, ok := v.(string); lerr != nil || !ok || !strings.EqualFold(f, "JSON") {
			return false, nil, errorf(na.Value.Pos(), ErrInvalidOption, "report_format takes 'JSON' (BigQuery's 'PROTO' is not available)")
		}
		if call.Name == "MEDIAN" || call.Name == "PERCENTILE_CONT" || call.Name == "APPROX_QUANTILES" || (call.Name == "COUNT" && call.Distinct) {
			return false, nil, errorf(na.NamePos, ErrInvalidOption, "report_format is available on COUNT, SUM, AVG, VAR and STDDEV")
		}
		report = true
	}
	return report, rest, nil
}

var aggKinds = map[string]AggKind{
	"COUNT": AggCount, "SUM": AggSum, "AVG": AggAvg,
	"VAR_POP": AggVar, "VARIANCE": AggVar, "STDDEV_POP": AggStddev, "STDDEV": AggStddev,
	"VAR": AggVar, "STD": AggStddev, // SmartNoise's spellings (population statistics)
	"VAR_SAMP": AggVar, "STDDEV_SAMP": AggStddev,
	"PERCENTILE_CONT": AggQuantile, "MEDIAN": AggQuantile, "APPROX_QUANTILES": AggQuantile,
}

// aggCall is one aggregate call as read: its family, its argument, its
// parameters and its bounds.
type aggCall struct {
	call                 *parser.CallExpr
	kind                 AggKind
	arg                  parser.Expr // nil for COUNT(*)
	countUnits           bool        // COUNT(DISTINCT unit)
	countDistinct        bool        // COUNT(DISTINCT other)
	quantile             float64     // PERCENTILE_CONT's p (0.5 otherwise)
	quantiles            int         // APPROX_QUANTILES' n (0 otherwise)
	bounds               *catalog.Bounds
	perUnit              bool // contribution_bounds_per_group
	report               bool // report_format => 'JSON'
	countBounds          bool // COUNT with per-unit bounds
	argText, searchLabel string
	boundsText           string
}

// aggregate plans one aggregate call: reads it, describes it, and makes
// its cells (one family's spec in aggFamilies), or reuses an identical
// aggregate's.
func (b *builder) aggregate(call *parser.CallExpr) error {
	a, err := b.readAggCall(call)
	if err != nil {
		return err
	}
	agg := b.describeAgg(a)
	if i, ok := b.aggIndex[agg.Text]; ok {
		b.q.AggOf[call] = i
		return nil
	}
	agg.Cells = aggFamilies[a.kind](b, a, agg)
	b.aggIndex[agg.Text] = len(b.q.Aggregates)
	b.q.AggOf[call] = len(b.q.Aggregates)
	b.q.Aggregates = append(b.q.Aggregates, agg)
	return nil
}

// readAggCall checks an aggregate call and reads its argument,
// parameters and bounds.
func (b *builder) readAggCall(call *parser.CallExpr) (*aggCall, error) {
	kind, ok := aggKinds[call.Name]
	if !ok && (call.Name == "MIN" || call.Name == "MAX") {
		p := map[string]string{"MIN": "0.01", "MAX": "0.99"}[call.Name]
		return nil, errorf(call.NamePos, ErrUnsupported, "%s of private values is one row's value, which no differentially private answer can give; ask for a percentile near it instead, chosen privately within the column's bounds: PERCENTILE_CONT(x, %s) (or APPROX_QUANTILES(x, 100) for all of them)", call.Name, p)
	}
	if !ok {
		return nil, errorf(call.NamePos, ErrUnsupported, "aggregate %s is not supported yet (supported: COUNT, SUM, AVG, VAR_POP, VARIANCE, VAR, VAR_SAMP, STDDEV_POP, STDDEV, STD, STDDEV_SAMP, MEDIAN, PERCENTILE_CONT, APPROX_QUANTILES)", call.Name)
	}
	if !call.Star && len(call.Args) != 1 && call.Name != "PERCENTILE_CONT" && call.Name != "APPROX_QUANTILES" {
		return nil, errorf(call.NamePos, ErrUnsupported, "%s takes one argument", call.Name)
	}
	a := &aggCall{call: call, kind: kind, quantile: 0.5}
	if call.Distinct {
		if kind != AggCount {
			return nil, errorf(call.NamePos, ErrUnsupported, "%s(DISTINCT ...) is not supported", call.Name)
		}
		c, ok := call.Args[0].(*parser.ColumnRef)
		var col *relCol
		if ok {
			col, _ = b.rel.resolve(c)
		}
		if col != nil && b.q.Unit.Column != "" && col.unit != "" && col.unit == b.rel.unitSQL {
			a.countUnits = true
		} else {
			// Distinct values among the rows kept after bounding: a unit
			// removes at most l∞ kept rows from each of its ≤ l0 groups,
			// and each row at most one distinct value.
			a.countDistinct = true
		}
	}
	if err := readQuantileParams(a); err != nil {
		return nil, err
	}
	if !call.Star {
		a.arg = call.Args[0]
		if err := b.rowExpr(a.arg, "an aggregate argument"); err != nil {
			return nil, err
		}
	}
	if err := b.readAggBounds(a); err != nil {
		return nil, err
	}
	return a, nil
}

// readQuantileParams reads PERCENTILE_CONT's p and APPROX_QUANTILES' n.
func readQuantileParams(a *aggCall) error {
	call := a.call
	switch call.Name {
	case "PERCENTILE_CONT":
		if len(call.Args) != 2 {
			return errorf(call.NamePos, ErrUnsupported, "PERCENTILE_CONT takes a value and a constant percentile p in [0, 1]: PERCENTILE_CONT(x, 0.9)")
		}
		v, err := parser.NumberValue(call.Args[1])
		if err != nil || !(v >= 0 && v <= 1) {
			return errorf(call.Args[1].Pos(), ErrInvalidOption, "PERCENTILE_CONT's percentile must be a constant in [0, 1]")
		}
		a.quantile = v
	case "APPROX_QUANTILES":
		n, err := 0.0, errors.New("no n")
		if len(call.Args) == 2 {
			n, err = parser.NumberValue(call.Args[1])
		}
		if err != nil || n != math.Trunc(n) || n < 1 || n > MaxApproxQuantiles {
			return errorf(call.NamePos, ErrInvalidOption, "APPROX_QUANTILES takes a value and a constant integer n in [1, %d]: APPROX_QUANTILES(x, 4)", MaxApproxQuantiles)
		}
		a.quantiles = int(n)
	}
	return nil
}

// readAggBounds reads the call's named arguments (contribution bounds,
// report format), else the argument column's declared bounds.
func (b *builder) readAggBounds(a *aggCall) error {
	call, kind := a.call, a.kind
	report, named, err := reportFormat(call)
	if err != nil {
		return err
	}
	a.report = report
	for i, na := range named {
		if na.Name != "contribution_bounds_per_group" && na.Name != "contribution_bounds_per_row" {
			return errorf(na.NamePos, ErrInvalidOption, "unknown named argument %q (known: contribution_bounds_per_group, contribution_bounds_per_row, report_format)", na.Name)
		}
		if i > 0 {
			return errorf(na.NamePos, ErrInvalidOption, "%s takes one of contribution_bounds_per_group and contribution_bounds_per_row", call.Name)
		}
		a.perUnit = na.Name == "contribution_bounds_per_group"
		if err := checkBoundsFor(a, na); err != nil {
			return err
		}
		bd, err := boundsPair(na)
		if err != nil {
			return err
		}
		if kind == AggCount && bd.Lo < 0 {
			return errorf(na.Value.Pos(), ErrInvalidOption, "a count's contribution_bounds_per_group need 0 ≤ lo < hi")
		}
		a.bounds = bd
	}
	a.countBounds = kind == AggCount && a.bounds != nil
	if kind != AggCount && a.bounds == nil {
		if c, ok := a.arg.(*parser.ColumnRef); ok {
			if col, err := b.column(c); err == nil && col.bounds != nil {
				bd := *col.bounds
				a.bounds = &bd
			}
		}
	}
	if bd := a.bounds; bd != nil {
		if span := bd.Hi - bd.Lo; math.IsInf(span, 0) || span/2 <= 0 || math.IsInf(span*span, 0) {
			return errorf(call.NamePos, ErrInvalidOption, "bounds (%g, %g) of %s are out of range", bd.Lo, bd.Hi, call.Name)
		}
	}
	return nil
}

// checkBoundsFor refuses contribution bounds the aggregate cannot take.
func checkBoundsFor(a *aggCall, na parser.NamedArg) error {
	switch kind := a.kind; {
	case kind == AggCount && (a.countUnits || a.countDistinct):
		return errorf(na.NamePos, ErrInvalidOption, "COUNT(DISTINCT ...) takes no bounds")
	case kind == AggCount && !a.perUnit:
		return errorf(na.NamePos, ErrInvalidOption, "COUNT takes no per-row bounds (each row counts 1); contribution_bounds_per_group bounds each unit's count in a group")
	case (kind == AggVar || kind == AggStddev || kind == AggQuantile) && a.perUnit:
		return errorf(na.NamePos, ErrInvalidOption, "%s takes contribution_bounds_per_row (each row clipped), not contribution_bounds_per_group", a.call.Name)
	}
	return nil
}

// boundsPair reads a named argument's (lo, hi).
func boundsPair(na parser.NamedArg) (*catalog.Bounds, error) {
	t, ok := na.Value.(*parser.TupleExpr)
	if !ok || len(t.Elems) != 2 {
		return nil, errorf(na.Value.Pos(), ErrInvalidOption, "%s takes a pair (lo, hi)", na.Name)
	}
	lo, err1 := parser.NumberValue(t.Elems[0])
	hi, err2 := parser.NumberValue(t.Elems[1])
	if err1 != nil || err2 != nil || math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(lo < hi) {
		return nil, errorf(na.Value.Pos(), ErrInvalidOption, "%s needs finite numbers lo < hi", na.Name)
	}
	return &catalog.Bounds{Lo: lo, Hi: hi}, nil
}

// describeAgg makes the aggregate's description (its text identifies it:
// identical aggregates share cells), with its bounds or its bound search.
func (b *builder) describeAgg(a *aggCall) *Aggregate {
	call, kind := a.call, a.kind
	argText := "*"
	if a.arg != nil {
		argText = parser.Format(a.arg)
	}
	agg := &Aggregate{Kind: kind, Search: -1, Text: call.Name + "(" + argText + ")", Sample: strings.HasSuffix(call.Name, "_SAMP"), P: a.quantile, Quantiles: a.quantiles}
	a.searchLabel = argText // one search per argument, whatever the aggregate
	switch {
	case a.quantiles > 0:
		argText = fmt.Sprintf("%s, %d", argText, a.quantiles)
	case kind == AggQuantile:
		argText = fmt.Sprintf("%s, %g", argText, a.quantile)
	}
	if a.countUnits || a.countDistinct {
		agg.Text = "COUNT(DISTINCT " + argText + ")"
	}
	switch bd := a.bounds; {
	case bd != nil:
		agg.Lo, agg.Hi = bd.Lo, bd.Hi
		agg.Text = fmt.Sprintf("%s(%s, bounds [%g, %g])", call.Name, argText, bd.Lo, bd.Hi)
		if a.perUnit {
			agg.Text = fmt.Sprintf("%s(%s, per-unit bounds [%g, %g])", call.Name, argText, bd.Lo, bd.Hi)
		}
	case kind != AggCount:
		// No declared bounds: choose them privately at run time, once per
		// argument expression for the whole query.
		agg.Search = b.search(a.arg, a.searchLabel)
		agg.Text = fmt.Sprintf("%s(%s, bounds chosen privately)", call.Name, argText)
	}
	if a.report {
		agg.Report = true
		agg.Text += " as a JSON report"
	}
	a.argText = argText
	a.boundsText = fmt.Sprintf("%g, %g", agg.Lo, agg.Hi)
	if agg.Search >= 0 {
		a.boundsText = "chosen bounds"
	}
	return agg
}

// newCell makes a cell over the call's argument with the aggregate's
// bounds, and returns its index.
func (b *builder) newCell(a *aggCall, agg *Aggregate, k CellKind, label string) int {
	c := &Cell{Kind: k, Arg: a.arg, Search: -1, Label: label, Scale: b.rowScale, MaxGroups: b.groupsChanged, PerUnit: a.perUnit}
	if k == CountUnits || a.perUnit {
		// One value per unit and group: a unit changes min(l0, groups) groups.
		c.Scale = float64(b.groupsChanged)
	}
	if k == QuantileTree {
		c.P = a.quantile
		for i := 0; i <= a.quantiles && a.quantiles > 0; i++ {
			c.Ps = append(c.Ps, float64(i)/float64(a.quantiles))
		}
		c.Scale = b.rowScale * TreeDepth // every row counts once per level
	}
	if (k != CountRows && k != CountValues && k != CountUnits && k != CountDistinct) || a.countBounds {
		c.Lo, c.Hi, c.Search = agg.Lo, agg.Hi, agg.Search
	}
	if b.knobs != nil && b.knobs.PerRowSensitivity {
		c.Scale = 1 // a re-introduced bug, for the auditor's tests
	}
	if c.Search < 0 {
		sk := k
		if a.countBounds {
			sk = ClippedSum // a unit's clipped count moves by max(|lo|, |hi|)
		}
		c.L1Sensitivity = SensitivityFor(sk, c.Lo, c.Hi, c.Scale)
	}
	if a.perUnit {
		c.Label = "per-unit " + label
		if a.countBounds {
			c.Label = fmt.Sprintf("per-unit clip(%s, %g, %g)", label, c.Lo, c.Hi)
		}
	}
	return b.cell(c)
}

// aggFamilies are the cells each family of aggregates measures.
var aggFamilies = map[AggKind]func(b *builder, a *aggCall, agg *Aggregate) []int{
	AggCount: func(b *builder, a *aggCall, agg *Aggregate) []int {
		switch {
		case a.countUnits:
			return []int{b.newCell(a, agg, CountUnits, agg.Text)}
		case a.countDistinct:
			return []int{b.newCell(a, agg, CountDistinct, agg.Text)}
		case a.arg == nil:
			return []int{b.newCell(a, agg, CountRows, "COUNT(*)")}
		}
		return []int{b.newCell(a, agg, CountValues, "COUNT("+a.argText+")")}
	},
	AggSum: func(b *builder, a *aggCall, agg *Aggregate) []int {
		return []int{b.newCell(a, agg, ClippedSum, fmt.Sprintf("SUM(clip(%s, %s))", a.argText, a.boundsText))}
	},
	AggQuantile: func(b *builder, a *aggCall, agg *Aggregate) []int {
		what := fmt.Sprintf("PERCENTILE_CONT(clip(%s, %s), %g)", parser.Format(a.arg), a.boundsText, a.quantile)
		if a.quantiles > 0 {
			what = fmt.Sprintf("APPROX_QUANTILES(clip(%s, %s), %d)", parser.Format(a.arg), a.boundsText, a.quantiles)
		}
		return []int{b.newCell(a, agg, QuantileTree, fmt.Sprintf("%s by a noisy %d-ary tree of depth %d", what, TreeBranch, TreeDepth))}
	},
	AggAvg:    momentCells,
	AggVar:    momentCells,
	AggStddev: momentCells,
}

// momentCells are AVG's, VAR's and STDDEV's cells: a count, a centred sum
// and (but for AVG) a centred sum of squares.
func momentCells(b *builder, a *aggCall, agg *Aggregate) []int {
	count := b.newCell(a, agg, CountValues, "COUNT("+a.argText+")")
	sum := b.newCell(a, agg, CenteredSum, fmt.Sprintf("SUM(clip(%s, %s) - midpoint)", a.argText, a.boundsText))
	b.q.Cells[sum].CountCell = count
	cells := []int{sum, count}
	if a.kind != AggAvg {
		cells = append(cells, b.newCell(a, agg, CenteredSumSq, fmt.Sprintf("SUM((clip(%s, %s) - midpoint)^2)", a.argText, a.boundsText)))
	}
	return cells
}

// search returns the bound search for an argument, adding it if new.
func (b *builder) search(arg parser.Expr, label string) int {
	if i, ok := b.searchIndex[label]; ok {
		return i
	}
	b.searchIndex[label] = len(b.q.Searches)
	b.q.Searches = append(b.q.Searches, &Search{Arg: arg, Label: label, Sensitivity: b.rowScale})
	return len(b.q.Searches) - 1
}

// cell adds a cell, or returns the index of an identical one: COUNT("x")
// and the count inside AVG("x") are measured once.
func (b *builder) cell(c *Cell) int {
	if i, ok := b.cellIndex[c.Label]; ok {
		return i
	}
	b.cellIndex[c.Label] = len(b.q.Cells)
	b.q.Cells = append(b.q.Cells, c)
	return len(b.q.Cells) - 1
}
