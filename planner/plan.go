package planner

import (
	"math"
	"math/big"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/parser"
)

// Plan is the result of planning a SELECT: *PublicQuery or *PrivateQuery.
type Plan interface{ planNode() }

// PublicQuery is a SELECT over a public table or over no table: it runs as
// written, without noise and without spending budget.
type PublicQuery struct {
	Stmt *parser.SelectStmt
	// SQL is the statement the backend runs, printed from the resolved
	// plan (never the analyst's text).
	SQL string
	// Reads is what SQL may read: per table, the columns ("*": all).
	Reads map[string]map[string]bool
	// Names are the output columns' names.
	Names []string
}

// CellKind is what a noisy cell measures.
type CellKind int

// TreeBranch and TreeDepth shape the quantile tree: 16⁴ = 65,536 leaves
// over [lo, hi].
const (
	TreeBranch = 16
	TreeDepth  = 4
)

// Cell is one exact quantity that is computed by the backend per group and
// released only with noise: Laplace at Epsilon, or (after
// PrivateQuery.Gaussian) the discrete Gaussian at Rho.
type Cell struct {
	Kind      CellKind
	Arg       parser.Expr // nil for CountRows
	Lo, Hi    float64     // clipping bounds for sums (unset when Search ≥ 0)
	CountCell int         // CenteredSum: the cell counting the non-NULL values of Arg
	// Search is the index of the bound search (in PrivateQuery.Searches)
	// that chooses Lo and Hi at run time, or -1 for declared bounds. Such a
	// cell's L1Sensitivity is 0 here and follows from the chosen bounds.
	Search int
	// Scale multiplies the per-row sensitivity: how many rows one privacy
	// unit can change (l0·l∞ after contribution bounding; l0 for
	// CountUnits; 1 when each row is a unit).
	Scale         float64
	L1Sensitivity float64
	Epsilon       float64
	Label         string // e.g. `COUNT(*)`, `SUM(clip("Age", 0, 125))`
	// MaxGroups is l0, the groups one unit can change: the cell's L2
	// sensitivity is its L1 sensitivity divided by √l0 (L2Sensitivity).
	MaxGroups int64
	// Gaussian: the cell gets discrete Gaussian noise, ρ-zCDP with ρ = Rho,
	// instead of Laplace noise at Epsilon.
	Gaussian bool
	Rho      float64
	// P is a QuantileTree cell's quantile; Ps, when set, are the
	// quantiles of APPROX_QUANTILES, all read from the one noisy tree
	// (each node's count noised once, however many descents read it).
	P  float64
	Ps []float64
	// PerUnit (BigQuery's contribution_bounds_per_group): each privacy
	// unit's rows in a group are combined first — summed for ClippedSum,
	// averaged for CenteredSum, counted for CountRows and CountValues with
	// bounds — and that one value per unit is clipped to [Lo, Hi]; a
	// CountValues cell without bounds counts the units with a value.
	// Sums then run over units, so Scale is l0, not l0·l∞.
	PerUnit bool
}

// Midpoint is the centre m of bounds [lo, hi] that centred sums subtract,
// computed the same way everywhere.
func Midpoint(lo, hi float64) float64 { return lo/2 + hi/2 }

// SensitivityFor returns the L1 sensitivity of a cell of kind k with bounds
// [lo, hi] when scale rows are added or removed:
//   - a count moves by 1 per row;
//   - Σ clip(x) by the clipped value of the row, at most max(|lo|, |hi|);
//   - Σ (clip(x) − m) by at most h = max(m − lo, hi − m) (≈ (hi − lo)/2);
//   - Σ (clip(x) − m)² by at most h².
//
// It is computed exactly and rounded up: a sensitivity rounded to the
// nearest float can be smaller than what one row really moves (with
// bounds (0.001, 0.002) the float (hi − lo)/2, squared, is).
func SensitivityFor(k CellKind, lo, hi, scale float64) float64 {
	const prec = 256
	b := func(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }
	var per *big.Float
	switch k {
	case ClippedSum:
		per = b(math.Max(math.Abs(lo), math.Abs(hi)))
	case CenteredSum, CenteredSumSq:
		m := b(Midpoint(lo, hi))
		below := new(big.Float).SetPrec(prec).Sub(m, b(lo))
		above := new(big.Float).SetPrec(prec).Sub(b(hi), m)
		per = below
		if above.Cmp(below) > 0 {
			per = above
		}
		if k == CenteredSumSq {
			per = new(big.Float).SetPrec(prec).Mul(per, per)
		}
	default:
		per = b(1)
	}
	total := new(big.Float).SetPrec(prec).Mul(per, b(scale))
	up := new(big.Float).SetPrec(53).SetMode(big.ToPositiveInf).Set(total)
	f, _ := up.Float64()
	return f
}

// Search is one private choice of clipping bounds for an aggregate
// argument without declared bounds; all aggregates of the query over the
// same expression share it.
type Search struct {
	Arg     parser.Expr
	Label   string // canonical SQL of Arg
	Epsilon float64
	// Sensitivity of its counting queries: how many rows one unit can add
	// (l0·l∞).
	Sensitivity float64
}

// DroppedEstimate is the private estimate of what contribution bounding
// dropped, made for every query whose rows are bounded per unit: three
// Laplace counts over the whole scan (measure.Dropped) — the units, the
// units that lost a row, and the sum of each unit's dropped share — each
// at Epsilon/3 with sensitivity 1 (one unit moves each by at most 1),
// so Epsilon in all, by sequential composition. The answer reports the
// shares of units and of their rows that bounding dropped.
type DroppedEstimate struct {
	Epsilon float64
}

// AutoContribution is set when the policy or the query leaves a
// contribution bound to dpsql (max_groups_contributed or
// max_rows_contributed = AUTO): before the query is measured, a scan
// profiles the units (measure.Profile: how many groups each has, and how
// many rows its groups have), the profile's two histograms get Laplace
// noise at Epsilon/2 each (sensitivity 1 in L1 each), and package contrib
// chooses the bounds from them; the query is then planned again with the
// chosen bounds (Inputs.Contribution, Chosen) and measured with the rest
// of its ε.
type AutoContribution struct {
	Epsilon      float64
	Groups, Rows bool // which bounds are chosen
	// Chosen marks the plan made with the chosen bounds; before the
	// choice the plan holds the largest candidates (contrib.Largest), so
	// that its checks hold for every choice.
	Chosen bool
}

// AutoFraction is the share of a query's ε that chooses its AUTO
// contribution bounds (AutoContribution).
const AutoFraction = 0.1

// DroppedFraction is the share of a bounded query's ε that estimates what
// bounding dropped (DroppedEstimate).
const DroppedFraction = 0.05

// Selection is DP partition selection for GROUP BY keys without a public
// domain: a group is released only when its noisy count of distinct units
// (after contribution bounding) exceeds Threshold.
type Selection struct {
	Epsilon, Delta float64
	// Sensitivity is l0: one unit counts once in at most l0 groups.
	Sensitivity float64
	// Threshold τ = 1 + (l0/ε)·ln(l0/(2δ)): a group that only one unit
	// supports is released with probability at most δ/l0, so by the union
	// bound over its ≤ l0 groups that unit's presence shows with
	// probability at most δ.
	Threshold float64
	// MinUnits (BigQuery's min_privacy_units_per_group, k ≥ 1) raises the
	// threshold by k − 1: a group needs about k units to be released. A
	// higher threshold only lowers every release probability, so δ still
	// bounds the lone unit's.
	MinUnits int64
}

// AggKind is an aggregate function the engine answers.
type AggKind int

// Aggregate is one distinct aggregate of the query and the cells it is
// computed from (indexes into PrivateQuery.Cells).
type Aggregate struct {
	Kind   AggKind
	Text   string  // canonical SQL of the call, for EXPLAIN
	Lo, Hi float64 // declared bounds (unset when Search ≥ 0)
	Search int     // bound search index, or -1
	Cells  []int   // COUNT: [count]; SUM: [sum]; AVG: [centred sum, count]; VAR, STDDEV: [centred sum, count, centred sum of squares]
	// Sample: VAR_SAMP or STDDEV_SAMP, the population statistic times
	// n/(n − 1) with the noisy n (post-processing of the same cells).
	Sample bool
	// P is the quantile of an AggQuantile (0.5 for MEDIAN).
	P float64
	// Quantiles is n of APPROX_QUANTILES(x, n): the value is a JSON array
	// of the n + 1 quantiles 0, 1/n, ..., 1, as BigQuery's array.
	Quantiles int
	// Report: report_format => 'JSON', as BigQuery: the aggregate's value
	// is a JSON text {"result": {"value": v, "noise_confidence_interval":
	// {...}}} (the interval when ErrorBound95 knows one).
	Report bool
}

// MaxApproxQuantiles caps n of APPROX_QUANTILES(x, n).
const MaxApproxQuantiles = 1000

// ErrorBound95 is the half-width of the 95% interval of an aggregate's
// noise, when it is one noisy cell with declared bounds (COUNT, SUM);
// false otherwise.
func (q *PrivateQuery) ErrorBound95(a *Aggregate) (float64, bool) {
	if (a.Kind != AggCount && a.Kind != AggSum) || a.Search >= 0 {
		return 0, false
	}
	c := q.Cells[a.Cells[0]]
	return c.ErrorBound95(c.L1Sensitivity), true
}

// GroupKey is a GROUP BY column with its public domain, or without one
// (Domain nil): then its groups are chosen by partition selection.
type GroupKey struct {
	Column string // its name, for output
	SQL    string // how the backend names it
	Domain []any
	// Expr is the GROUP BY expression when the key is not a column (nil
	// for a column); outputs that repeat it are key references (KeyExprOf).
	Expr parser.Expr
	// Base is the base table column the key is ("" for an expression or
	// a computed column of a subquery), of table reference Ref (as
	// Joined numbers them; 0 for a computed column).
	Base string
	Ref  int
	// Derived is the expression a subquery computes the key column by,
	// when the key is an output of a subquery that keeps its table's
	// rows (DerivedExpr); Output the key's position, from 1, among the
	// outputs of a subquery that aggregates per unit (0: none).
	Derived parser.Expr
	Output  int
}

// Output is one released column: an expression over aggregates and keys.
type Output struct {
	Name string
	Expr parser.Expr
}

// PrivateQuery is an aggregate query over a private table.
type PrivateQuery struct {
	Stmt *parser.SelectStmt
	// Knobs are the test switches the query was planned under (nil in
	// production); exec reads them.
	Knobs *knobs.Knobs
	// FromSQL is the FROM clause as the backend runs it (WITH queries
	// inlined, every name resolved); FromName names it in messages.
	FromSQL, FromName string
	// UnitSQL names each row's privacy unit in FromSQL; "" when every row
	// is its own unit and appears once (no bounding needed). It is always
	// engine-generated: the base unit column, or a reserved column that
	// a subquery projects from it.
	UnitSQL string
	// UnitBase is the base table column the unit comes from (for EXPLAIN).
	UnitBase string
	// WeightSQL, when set, reads each row's multiplicity: the FROM
	// clause is exactly one Weighted table and each row is its own unit
	// (no bounding), so a row that stands for w identical rows can be
	// measured w times at once.
	WeightSQL string
	// WeightedTable is that table's name (with WeightSQL).
	WeightedTable string
	// Reads is what the backend statement may read: per table, the
	// columns the plan resolved ("*": every column of a public table).
	Reads map[string]map[string]bool
	// Joined is the FROM clause as stored tables joined on column
	// equalities, when it is that (one table included); nil for a
	// subquery or an outer join of public tables.
	Joined *Joined
	// NotJoined says why Joined is nil ("" when it is not, or for a
	// query over one table reference).
	NotJoined string
	// TableRefs is how many references to stored tables FromSQL makes
	// (a join of a table with itself makes two). With more than one, the
	// scan reads some table once per row of another, lazily: exec then
	// copies tables that live elsewhere before the scan (exec.Prepare).
	TableRefs int
	// Policy is the policy the plan was made under: the catalog's
	// fingerprint of the tables it reads (the answer cache keys with it,
	// so an answer is never given again under a changed policy).
	Policy     string
	Where      parser.Expr
	Keys       []GroupKey
	Aggregates []*Aggregate
	Cells      []*Cell
	Outputs    []Output
	Having     parser.Expr
	OrderBy    []parser.OrderItem
	Limit      parser.Expr
	Offset     parser.Expr
	Searches   []*Search
	// Dropped is set when the query's rows are bounded per unit: the
	// answer estimates what bounding dropped.
	Dropped *DroppedEstimate
	// Auto is set when contribution bounds are chosen privately (AUTO).
	Auto *AutoContribution
	// Unit is the privacy unit and the contribution bounds in force for
	// this query (the policy's, or the query's OPTIONS overrides). With a
	// unit column the rewrite bounds contributions before aggregating.
	Unit catalog.Unit
	// TargetError is the 95% error the query asked for instead of an ε
	// (target_error; 0: none): Epsilon is the smallest that meets it.
	TargetError float64
	// GroupsChanged is how many groups one unit can change after
	// bounding: min(l0, groups) with public domains (one group without
	// GROUP BY), l0 under partition selection.
	GroupsChanged int64
	// Selection is set when some GROUP BY key has no public domain.
	Selection *Selection
	// Threshold is set for OPTIONS (max_groups_above = c): the sparse
	// vector technique decides which groups are released (choose.go).
	Threshold *ThresholdChoice
	// TopK is set when report noisy max chooses the groups of ORDER BY
	// agg DESC LIMIT k; TopKNote says why such a query reads the noisy
	// histogram instead ("" when it is not one).
	TopK     *TopKChoice
	TopKNote string
	// Watch is set for a query to a threshold watch (OPTIONS (watch =
	// name)): it costs nothing and releases only whether its aggregate
	// is above the watch's threshold (watch.go).
	Watch   *WatchQuery
	Epsilon float64 // the query's total ε, split across Searches, Selection and Cells
	Delta   float64 // δ spent (0: every mechanism here is pure ε-DP)
	// BoundsFraction is the share of Epsilon spent on bound searches (0
	// when there are none).
	BoundsFraction float64
	// Noise is the mechanism the query asks for (OPTIONS (noise = ...) or
	// the session): "" lets the engine choose, or NoiseLaplace,
	// NoiseGaussian.
	Noise string
	// NoiseWhy says why Noise is NoiseLaplace when the query's form, not
	// its options, requires it ("" when the query or session asked).
	NoiseWhy string
	// AggOf maps every aggregate call of the statement to its Aggregate.
	AggOf map[*parser.CallExpr]int
	// KeyOf maps every reference to a GROUP BY column outside aggregates
	// to its key index.
	KeyOf map[*parser.ColumnRef]int
	// AliasOf maps every reference to a select-list alias (in HAVING and
	// ORDER BY) to the output it names.
	AliasOf map[*parser.ColumnRef]int
	// KeyExprOf maps every output subexpression that repeats an
	// expression GROUP BY key (as written) to its key index.
	KeyExprOf map[parser.Expr]int

	// Fold, when set (the engine sets it before the rewrite), computes a
	// column-free expression as the reference evaluator does, reading no
	// data: its value (int64, float64 or string; ok is false for NULL,
	// blobs, infinities and errors) or, with truth, its truth value in a
	// WHERE clause (int64 1 or 0, nil for NULL).
	Fold func(e parser.Expr, truth bool) (any, bool)

	rn *renderer
}

// SQL renders a per-row expression of the query (WHERE, an aggregate
// argument) for the backend, from resolved names and in total form.
func (q *PrivateQuery) SQL(e parser.Expr) string { return q.rn.sql(e, nil) }

// PostSQL renders an output expression, with override replacing
// aggregates and keys; alias references are replaced by the expression
// they name.
func (q *PrivateQuery) PostSQL(e parser.Expr, override func(parser.Expr) (string, bool)) string {
	var ov func(parser.Expr) (string, bool)
	ov = func(x parser.Expr) (string, bool) {
		if s, ok := override(x); ok {
			return s, true
		}
		if c, ok := x.(*parser.ColumnRef); ok {
			if i, ok := q.AliasOf[c]; ok {
				return "(" + q.rn.sql(q.Outputs[i].Expr, ov) + ")", true
			}
		}
		return "", false
	}
	return q.rn.sql(e, ov)
}

// IntegerColumn reports whether e is a plain reference to a base column of
// INTEGER affinity (a schema fact, not a fact about the data: such a
// column can still hold reals, text or blobs).
func (q *PrivateQuery) IntegerColumn(e parser.Expr) bool {
	c := plainRef(e)
	return c != nil && q.rn.intCols[c]
}

// NumericColumn reports whether e is a plain reference to a base column
// of INTEGER, REAL or NUMERIC affinity: compared with a number, SQLite
// converts nothing, as it converts nothing for an expression.
func (q *PrivateQuery) NumericColumn(e parser.Expr) bool {
	c := plainRef(e)
	return c != nil && q.rn.numCols[c]
}

// BaseColumn returns the base table column that e reads when e is a
// plain (possibly parenthesised) reference to one.
func (q *PrivateQuery) BaseColumn(e parser.Expr) (string, bool) {
	c := plainRef(e)
	if c == nil {
		return "", false
	}
	tc, ok := q.rn.baseCols[c]
	return tc.Column, ok
}

// DerivedExpr returns, when e is a plain reference to an output of a
// subquery that keeps its table's rows (Joined), the expression the
// subquery computes it by, over the table's columns.
func (q *PrivateQuery) DerivedExpr(e parser.Expr) (parser.Expr, bool) {
	c := plainRef(e)
	if c == nil {
		return nil, false
	}
	x, ok := q.rn.derivedRefs[c]
	return x, ok
}

// DerivedOutput returns, when e is a plain reference to an output of a
// subquery that aggregates per unit (Joined.PerUnit), its position.
func (q *PrivateQuery) DerivedOutput(e parser.Expr) (int, bool) {
	c := plainRef(e)
	if c == nil {
		return 0, false
	}
	i, ok := q.rn.derivedOutRefs[c]
	return i, ok
}

// TableColumnOf returns the stored table column that e reads when e is a
// plain (possibly parenthesised) reference to one, with the table
// reference it belongs to (as Joined numbers them).
func (q *PrivateQuery) TableColumnOf(e parser.Expr) (TableColumn, bool) {
	c := plainRef(e)
	if c == nil {
		return TableColumn{}, false
	}
	tc, ok := q.rn.baseCols[c]
	return tc, ok
}

// plainRef is the column reference e is, parentheses aside, or nil.
func plainRef(e parser.Expr) *parser.ColumnRef {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			break
		}
		e = p.X
	}
	c, _ := e.(*parser.ColumnRef)
	return c
}

// RenderErr reports an internal failure to resolve a rendered name.
func (q *PrivateQuery) RenderErr() error { return q.rn.err() }

// Groups is the number of output groups: the product of the domain sizes
// (meaningful only without Selection).
func (q *PrivateQuery) Groups() int {
	n := 1
	for _, k := range q.Keys {
		n *= len(k.Domain)
	}
	return n
}

func (*PublicQuery) planNode() {}

func (*PrivateQuery) planNode() {}

// Cell kinds.
const (
	CountRows     CellKind = iota // COUNT(*)
	CountValues                   // COUNT(x): rows where x is not NULL
	ClippedSum                    // Σ clip(x, lo, hi)
	CenteredSum                   // Σ (clip(x, lo, hi) − m), m = (lo+hi)/2, from Σ clip(x) and cell CountCell
	CenteredSumSq                 // Σ (clip(x, lo, hi) − m)²
	CountUnits                    // COUNT(DISTINCT <privacy unit column>)
	CountDistinct                 // COUNT(DISTINCT x): distinct non-NULL values of x among the kept rows
	// QuantileTree: the P-quantile of clip(x, Lo, Hi) over the kept rows,
	// found by descending a TreeBranch-ary tree of TreeDepth levels over
	// [Lo, Hi] whose node counts get Laplace noise (exec). Every row counts
	// once per level, so the counts of all levels move by TreeDepth per
	// row: its sensitivity is TreeDepth·l0·l∞.
	QuantileTree
)

// Aggregate kinds.
const (
	AggCount AggKind = iota
	AggSum
	AggAvg
	AggVar      // VAR_POP, VARIANCE, VAR; VAR_SAMP with Sample
	AggStddev   // STDDEV_POP, STDDEV, STD; STDDEV_SAMP with Sample
	AggQuantile // PERCENTILE_CONT(x, p), MEDIAN(x): a noisy quantile tree
)
