package planner

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/parser"
)

// Choosing groups by comparing them: the sparse vector technique for a
// threshold over overlapping groups, and report noisy max for the top k.
//
// A GROUP BY over public domains releases every group, and when each row
// falls in one group one ε covers them all. When one unit can fall in many
// groups — the rows of a public table of ranges joined by inequalities, a
// fact table joined with its dimensions — the histogram's noise grows with
// how many groups a unit can change (l0), or bounding drops that unit from
// all but l0 of them. Two mechanisms answer instead with noise that does
// not grow with the number of groups a unit falls in, because each group is
// one query whose sensitivity is one unit's contribution to that group:
//
//   - OPTIONS (max_groups_above = c) with HAVING agg > T: the sparse vector
//     technique (mechanism.Sparse, Lyu–Su–Li's Algorithm 1) compares every
//     candidate group, in the public order of its keys, with T and
//     releases at most c groups found above, for the selection's ε
//     whatever the number of candidates;
//   - ORDER BY agg DESC LIMIT k when one unit can change many groups:
//     report noisy max, peeled k times (mechanism.NoisyTopK).
//
// In both, the values of the released groups (if the select list asks for
// any) are measured again with fresh noise — never the noisy value the
// comparison used — at ε_values/(c or k) per group: the released groups
// overlap, so they compose sequentially. Contribution bounding keeps every
// group of a unit (l0 is the number of candidates) and bounds its rows per
// group (l∞): the comparisons' and the values' sensitivities are those of
// one group.

// ChoiceFraction is the share of a query's ε that a threshold or top-k
// choice spends choosing when the select list also releases values (the
// rest measures them): half, as in the material's example.
const ChoiceFraction = 0.5

// MaxGroupsAbove caps max_groups_above.
const MaxGroupsAbove = 10_000

// ThresholdChoice is a threshold query's sparse vector run: which groups
// are released is decided by comparing each candidate group's aggregate
// with a threshold.
type ThresholdChoice struct {
	// Aggregate is the index (in Aggregates) of the aggregate compared,
	// Cell its cell, Text the comparison as written.
	Aggregate, Cell int
	Text            string
	Threshold       float64
	// Below: the groups sought are those below Threshold (HAVING agg <
	// T); the run then compares −agg with −T.
	Below  bool
	Cutoff int // c: at most this many groups are released
	// Sparse holds ε (threshold and queries together), the per-group
	// sensitivity and monotonicity of the run.
	Sparse mechanism.SparseOptions
	// Candidates is how many groups are compared (every group of the
	// public domains, in their order).
	Candidates int
	// ValueEpsilon is the ε that measures the released groups' values
	// (0: the select list asks for none; then nothing is measured).
	ValueEpsilon float64
}

// TopKChoice is report noisy max choosing the k groups with the largest
// aggregate.
type TopKChoice struct {
	Aggregate, Cell int
	Text            string
	TopK            mechanism.TopKOptions
	Candidates      int
	ValueEpsilon    float64
	// HistogramScale is the Laplace scale the plain noisy histogram would
	// have given the ranked aggregate (for EXPLAIN's comparison).
	HistogramScale float64
}

// choose plans a threshold query (max_groups_above) or a top-k by report
// noisy max, or notes why ORDER BY ... LIMIT k reads the noisy histogram.
// It runs after the outputs and ordering are planned and before ε is
// shared.
func (b *builder) choose(opts options) error {
	s := b.stmt
	q := b.q
	if opts.maxAbove > 0 {
		if q.Selection != nil {
			return errorf(s.SelectPos, ErrInvalidOption, "max_groups_above compares groups from public values: every GROUP BY key needs a public domain or a public table's column (the sparse vector technique needs its candidates before it sees the data)")
		}
		if len(s.GroupBy) == 0 {
			return errorf(s.SelectPos, ErrInvalidOption, "max_groups_above chooses among groups: add GROUP BY")
		}
		if s.Having == nil {
			return errorf(s.SelectPos, ErrInvalidOption, "max_groups_above needs HAVING aggregate > threshold (the comparison the sparse vector technique makes)")
		}
		agg, t, below, text, err := b.comparison(s.Having)
		if err != nil {
			return err
		}
		if err := b.choosable(agg, "max_groups_above"); err != nil {
			return err
		}
		if opts.noise == NoiseGaussian {
			return errorf(s.SelectPos, ErrInvalidOption, "max_groups_above runs the sparse vector technique with Laplace noise; leave noise unset (or 'laplace')")
		}
		cell := q.Aggregates[agg].Cells[0]
		b.perGroup()
		c := q.Cells[cell]
		// A group below T is one whose negated aggregate is above −T:
		// the run compares −agg with −T (a monotonic query stays so).
		st := t
		if below {
			st = -t
		}
		q.Threshold = &ThresholdChoice{Aggregate: agg, Cell: cell, Text: text, Threshold: t, Below: below, Cutoff: int(opts.maxAbove),
			Sparse:     mechanism.SparseOptions{Sensitivity: c.L1Sensitivity, Threshold: st, Cutoff: int(opts.maxAbove), Monotonic: monotonic(c)},
			Candidates: q.Groups()}
		q.Having = nil // decided by the sparse vector run, not after the noise
		q.Noise, q.NoiseWhy = NoiseLaplace, "the sparse vector technique (max_groups_above) compares with Laplace noise, and the released values are measured with it too"
		return nil
	}
	// ORDER BY agg DESC LIMIT k over public groups.
	if len(s.OrderBy) == 0 || !s.OrderBy[0].Desc || s.Limit == nil || s.Offset != nil || s.Having != nil || q.Selection != nil || len(q.Keys) == 0 {
		return nil
	}
	kv, _ := parser.LiteralValue(s.Limit)
	k, _ := kv.(int64)
	agg, ok := b.orderedAggregate(s.OrderBy[0].Expr)
	if !ok || k < 1 || int(k) >= q.Groups() {
		return nil
	}
	a := q.Aggregates[agg]
	if (a.Kind != AggCount && a.Kind != AggSum) || a.Search >= 0 || len(q.Searches) > 0 || opts.noise == NoiseGaussian {
		return nil
	}
	c := q.Cells[a.Cells[0]]
	perGroup := divideUp(c.L1Sensitivity, float64(b.groupsChanged))
	// The two noise scales at ε = 1: the histogram shares it among its
	// cells; report noisy max gets ChoiceFraction of it for k rounds.
	rnm := mechanism.TopKOptions{Sensitivity: perGroup, K: int(k), Monotonic: monotonic(c), Epsilon: ChoiceFraction}
	hist := mechanism.LaplaceScale(c.L1Sensitivity, 1/float64(len(q.Cells)))
	rnmScale := mechanism.TopKScale(rnm)
	if rnmScale >= hist {
		q.TopKNote = fmt.Sprintf("%s DESC LIMIT %d read off the noisy histogram: one unit changes at most %d group(s), so the histogram's noise (scale %.4g·1/ε) is no larger than report noisy max's would be (%.4g·1/ε, k rounds at %g of ε)",
			a.Text, k, b.groupsChanged, hist, rnmScale, ChoiceFraction)
		return nil
	}
	cell := a.Cells[0]
	b.perGroup()
	q.TopK = &TopKChoice{Aggregate: agg, Cell: cell, Text: fmt.Sprintf("ORDER BY %s DESC LIMIT %d", a.Text, k),
		TopK: mechanism.TopKOptions{Sensitivity: q.Cells[cell].L1Sensitivity, K: int(k), Monotonic: rnm.Monotonic}, Candidates: q.Groups(), HistogramScale: hist}
	q.Noise, q.NoiseWhy = NoiseLaplace, "report noisy max (ORDER BY ... DESC LIMIT k) chooses with Laplace noise, and the released values are measured with it too"
	return nil
}

// comparison reads HAVING agg > T or agg < T (>= and <= alike, and either
// side first): the aggregate's index, T, whether the groups sought are
// below T, and the comparison's text.
func (b *builder) comparison(e parser.Expr) (int, float64, bool, string, error) {
	bad := func() (int, float64, bool, string, error) {
		return 0, 0, false, "", errorf(e.Pos(), ErrInvalidOption, "with max_groups_above, HAVING must be one comparison of an aggregate with a constant (agg > T, agg >= T, agg < T or agg <= T): the threshold the sparse vector technique compares each group with; found %s", parser.Format(e))
	}
	x, ok := parser.Unparen(e).(*parser.BinaryExpr)
	if !ok {
		return bad()
	}
	switch x.Op {
	case ">", ">=", "<", "<=":
	default:
		return bad()
	}
	for _, side := range [][2]parser.Expr{{x.X, x.Y}, {x.Y, x.X}} {
		agg, ok := b.orderedAggregate(side[0])
		t, isConst := numericConstant(side[1])
		if !ok || !isConst {
			continue
		}
		below := x.Op == "<" || x.Op == "<="
		if side[0] == x.Y {
			below = !below // T < agg is agg > T
		}
		return agg, t, below, parser.Format(e), nil
	}
	return bad()
}

// orderedAggregate finds the aggregate an ORDER BY or HAVING term names:
// an aggregate call, a select-list alias or a position of one.
func (b *builder) orderedAggregate(e parser.Expr) (int, bool) {
	e = parser.Unparen(e)
	switch x := e.(type) {
	case *parser.CallExpr:
		i, ok := b.q.AggOf[x]
		return i, ok
	case *parser.ColumnRef:
		if i, ok := b.q.AliasOf[x]; ok {
			return b.orderedAggregate(b.q.Outputs[i].Expr)
		}
	case *parser.Literal:
		v, _ := parser.LiteralValue(x)
		if n, ok := v.(int64); ok && n >= 1 && int(n) <= len(b.q.Outputs) {
			return b.orderedAggregate(b.q.Outputs[n-1].Expr)
		}
	}
	return 0, false
}

// choosable checks that an aggregate can be compared: a count or a sum
// with declared bounds, in a query without bound searches.
func (b *builder) choosable(agg int, what string) error {
	a := b.q.Aggregates[agg]
	if a.Kind != AggCount && a.Kind != AggSum {
		return errorf(b.stmt.SelectPos, ErrUnsupported, "%s compares a COUNT or a SUM (their sensitivity is known before the data is read); %s is not one", what, a.Text)
	}
	if len(b.q.Searches) > 0 {
		return errorf(b.stmt.SelectPos, ErrUnsupported, "%s needs declared bounds for every aggregate: the comparison's sensitivity must be known before the data is read, and %s would choose its bounds privately from the data; give contribution_bounds_per_row => (lo, hi) or declare the column's bounds", what, b.q.Searches[0].Label)
	}
	return nil
}

// monotonic reports whether a cell moves in one direction on neighbouring
// databases (adding a unit never lowers it): counts, and sums of values
// that cannot be negative (or cannot be positive).
func monotonic(c *Cell) bool {
	switch c.Kind {
	case CountRows, CountValues, CountUnits, CountDistinct:
		return c.Lo >= 0 // a per-unit clipped count with lo < 0 is not
	case ClippedSum:
		return c.Lo >= 0 || c.Hi <= 0
	}
	return false
}

// perGroup turns the plan's cells into per-group queries: contribution
// bounding keeps every group of a unit (l0 = the number of candidates),
// and each cell's sensitivity is one unit's change to one group.
func (b *builder) perGroup() {
	q := b.q
	g := float64(b.groupsChanged)
	if b.knobs != nil && b.knobs.ChoicePerRow { // a re-introduced bug, for the auditor's tests
		g *= float64(q.Unit.MaxRows)
	}
	for _, c := range q.Cells {
		c.Scale /= g
		c.L1Sensitivity = divideUp(c.L1Sensitivity, g)
		c.MaxGroups = 1
	}
	q.Unit.MaxGroups = int64(q.Groups())
	q.GroupsChanged = int64(q.Groups())
	b.groupsChanged = q.GroupsChanged
}

// divideUp is x/g rounded up: exact when the quotient is a float, else
// the next float above the rounded one.
func divideUp(x, g float64) float64 {
	q := x / g
	if new(big.Float).Mul(big.NewFloat(q), big.NewFloat(g)).Cmp(big.NewFloat(x)) == 0 {
		return q
	}
	return math.Nextafter(q, math.Inf(1))
}

// valuesReleased reports whether the select list or ORDER BY reads an
// aggregate: then the chosen groups' values are measured.
func (b *builder) valuesReleased() bool {
	for _, o := range b.q.Outputs {
		if containsAggregate(o.Expr) {
			return true
		}
	}
	for _, o := range b.stmt.OrderBy {
		if containsAggregate(o.Expr) {
			return true
		}
		if _, ok := b.orderedAggregate(o.Expr); ok {
			return true
		}
	}
	return false
}

// shareChoice splits ε between the choice and the released values, and
// the values' share among the chosen groups and their cells.
func (b *builder) shareChoice(eps float64) {
	q := b.q
	choice, values := eps, 0.0
	if b.valuesReleased() {
		choice, values = eps*ChoiceFraction, eps*(1-ChoiceFraction)
	}
	choice = math.Nextafter(choice, 0)
	m := 0
	switch {
	case q.Threshold != nil:
		q.Threshold.Sparse.Epsilon, q.Threshold.ValueEpsilon, m = choice, values, q.Threshold.Cutoff
	case q.TopK != nil:
		q.TopK.TopK.Epsilon, q.TopK.ValueEpsilon, m = choice, values, q.TopK.TopK.K
	}
	per := 0.0
	if b.knobs != nil && b.knobs.ChoiceParallelValues { // a re-introduced bug, for the auditor's tests
		m = 1
	}
	if values > 0 {
		per = math.Nextafter(values/float64(m*len(q.Cells)), 0)
	}
	for _, c := range q.Cells {
		c.Epsilon = per
	}
}

// chosen reports whether a threshold or top-k choice decides the groups.
func (q *PrivateQuery) chosen() bool { return q.Threshold != nil || q.TopK != nil }

// ValuesMeasured reports whether the chosen groups' cells get noise (a
// choice whose select list releases only keys measures nothing).
func (q *PrivateQuery) ValuesMeasured() bool {
	switch {
	case q.Watch != nil:
		return false // only the comparison with the watch's threshold
	case q.Threshold != nil:
		return q.Threshold.ValueEpsilon > 0
	case q.TopK != nil:
		return q.TopK.ValueEpsilon > 0
	}
	return true
}
