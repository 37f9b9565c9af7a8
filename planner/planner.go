// Package planner decides whether a SELECT can be answered with
// differential privacy, and how.
//
// Where it sits: parser → planner → rewrite → exec. The planner resolves
// names against a catalog snapshot, checks that every value leaving the
// engine is either a noisy aggregate, a public group key, or deterministic
// post-processing of those, and fixes the noisy cells with their L1
// sensitivities and ε shares. It never reads data, so none of its errors can
// depend on private values.
package planner

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/dperr"

	"github.com/dpsql/dpsql/autobound"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/parser"
)

// Sentinel error kinds, checkable with errors.Is on a *Error.
var (
	// ErrNotPrivate: the query would release something that is not
	// differentially private (a raw row, a private column, a private key).
	ErrNotPrivate = dperr.NotPrivate
	// ErrUnknownName: a table or column does not exist.
	ErrUnknownName = dperr.UnknownName
	// ErrUnknownColumn: a column does not exist (also an ErrUnknownName).
	ErrUnknownColumn = dperr.UnknownColumn
	// ErrUnsupported: valid SQL that this version cannot answer privately.
	ErrUnsupported = dperr.Unsupported
	// ErrNoEpsilon: no ε in the query options nor in the session.
	ErrNoEpsilon = dperr.NoEpsilon
	// ErrInvalidOption: a bad OPTIONS value.
	ErrInvalidOption = dperr.InvalidOption
)

// Error is dpsql's positioned error (dperr.Error), as the planner reports it.
type Error = dperr.Error

func errorf(pos parser.Pos, kind *dperr.Kind, format string, args ...any) *Error {
	return dperr.New(pos, kind, format, args...)
}

// ErrNeedsDelta marks a refusal whose way out is OPTIONS (delta = D)
// (groups without a public domain): the engine, which knows the budget,
// says when that budget allows no δ.
var ErrNeedsDelta = errors.New("planner: the groups need a public domain, or OPTIONS (delta = D)")

// needsDelta marks e as ErrNeedsDelta (its message stays).
func needsDelta(e *Error) *Error {
	e.Err = ErrNeedsDelta
	return e
}

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

// Aggregate kinds.
const (
	AggCount AggKind = iota
	AggSum
	AggAvg
	AggVar      // VAR_POP, VARIANCE, VAR; VAR_SAMP with Sample
	AggStddev   // STDDEV_POP, STDDEV, STD; STDDEV_SAMP with Sample
	AggQuantile // PERCENTILE_CONT(x, p), MEDIAN(x): a noisy quantile tree
)

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

func (*PublicQuery) planNode()  {}
func (*PrivateQuery) planNode() {}

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
}

// session is what one planning sees: the settings and the inputs.
type session struct {
	Settings
	Inputs
}

// DefaultBoundsFraction is the default share of ε spent on bound searches,
// chosen by measurement (docs/accuracy.md): at 0.2 a thousand values at
// ε = 0.1 left the search too little to find them; 0.3 finds them and
// keeps every cell of the grid within 2× the error of declared bounds.
const DefaultBoundsFraction = 0.3

// maxGroups caps the cross product of public domains.
const maxGroups = 1_000_000

// PlanSelect plans a SELECT against the catalog under a session's
// settings.
func PlanSelect(stmt *parser.SelectStmt, cat *catalog.Catalog, set Settings, in Inputs) (Plan, error) {
	return planSelect(stmt, cat, session{set, in})
}

func planSelect(stmt *parser.SelectStmt, cat *catalog.Catalog, sess session) (Plan, error) {
	if r, ok := sess.Released[stmt]; ok && len(stmt.Compound) == 0 {
		return &PublicQuery{Stmt: stmt, SQL: releasedSelect(r), Reads: map[string]map[string]bool{}, Names: r.Columns}, nil
	}
	if len(stmt.Compound) > 0 {
		return planCompound(stmt, cat, sess)
	}
	rn := newRenderer(sess.Knobs)
	if stmt.From == nil {
		if stmt.DP {
			return nil, errorf(stmt.SelectPos, ErrUnsupported, "SELECT WITH DIFFERENTIAL_PRIVACY needs a FROM clause")
		}
		if err := noColumns(stmt); err != nil {
			return nil, err
		}
		rn.private = false
		if err := planSubqueries(stmt, cat, sess, rn, false); err != nil {
			return nil, err
		}
		if err := checkJSONPaths(stmt); err != nil {
			return nil, err
		}
		sqlText, names := publicSQL(stmt, nil, rn)
		if err := rn.err(); err != nil {
			return nil, err
		}
		return &PublicQuery{Stmt: stmt, SQL: sqlText, Reads: rn.reads, Names: names}, nil
	}
	rel, err := buildFrom(stmt, cat, rn, sess.Released)
	if err != nil {
		return nil, err
	}
	if rel.private {
		if err := refuseInPrivate(stmt); err != nil {
			return nil, err
		}
	}
	if len(scalarSubqueries(stmt, true)) > 0 {
		// Subqueries in expressions are planned (and, on a private
		// relation, run) before the FROM clause is printed again with
		// them: its derived tables may use them too.
		rn = newRenderer(sess.Knobs)
		if err := planSubqueries(stmt, cat, sess, rn, rel.private); err != nil {
			return nil, err
		}
		if rel, err = buildFrom(stmt, cat, rn, sess.Released); err != nil {
			return nil, err
		}
	}
	if rel.private {
		if err := checkStmtTotal(stmt); err != nil {
			return nil, err
		}
	} else {
		rn.private = false
		if err := checkJSONPaths(stmt); err != nil {
			return nil, err
		}
		if err := resolveAll(stmt, rel, func(name string) (string, bool) {
			for _, it := range stmt.Items {
				if it.Alias != "" && catalog.SameName(it.Alias, name) {
					return parser.QuoteIdent(it.Alias), true
				}
			}
			return "", false
		}); err != nil {
			return nil, err
		}
		sqlText, names := publicSQL(stmt, rel, rn)
		if err := rn.err(); err != nil {
			return nil, err
		}
		return &PublicQuery{Stmt: stmt, SQL: sqlText, Reads: rn.reads, Names: names}, nil
	}
	b := &builder{stmt: stmt, rel: rel, searchIndex: map[string]int{}, q: &PrivateQuery{
		Stmt: stmt, FromSQL: rel.sql, FromName: rel.name, UnitSQL: rel.unitSQL, UnitBase: rel.unitBase,
		Where: stmt.Where, Having: stmt.Having, OrderBy: stmt.OrderBy,
		Limit: stmt.Limit, Offset: stmt.Offset,
		AggOf: map[*parser.CallExpr]int{}, KeyOf: map[*parser.ColumnRef]int{}, AliasOf: map[*parser.ColumnRef]int{},
		KeyExprOf: map[parser.Expr]int{}, Reads: rn.reads, rn: rn,
	}, cellIndex: map[string]int{}, aggIndex: map[string]int{}}
	if err := b.build(sess); err != nil {
		return nil, err
	}
	if rel.weightSQL != "" && rel.unitSQL == "" && rel.base != nil {
		b.q.WeightSQL, b.q.WeightedTable = rel.weightSQL, rel.base.Name
		rn.read(rel.base.Name, catalog.WeightColumn)
	}
	read := make([]string, 0, len(rn.reads))
	for t := range rn.reads {
		read = append(read, t)
	}
	b.q.Policy = cat.Fingerprint(read)
	b.q.TableRefs = rn.tableRefs
	switch {
	case rel.joined == nil:
		b.q.NotJoined = rel.notJoined
	case len(rel.joined.Tables) == rn.tableRefs:
		b.q.Joined = rel.joined
	default:
		b.q.NotJoined = "the scan reads more tables than its FROM clause joins (a subquery in an expression)"
	}
	return b.q, nil
}

// publicSQL prints a query over public tables (or none) from resolved
// names. Every output gets an explicit name: the analyst's alias, the
// column name as written, or the canonical text of the expression.
func publicSQL(stmt *parser.SelectStmt, rel *relation, rn *renderer) (string, []string) {
	var sb strings.Builder
	var names []string
	sb.WriteString("SELECT ")
	if stmt.Distinct {
		sb.WriteString("DISTINCT ")
	}
	for i, it := range stmt.Items {
		if i > 0 {
			sb.WriteString(", ")
		}
		if it.Star {
			// Every column the relation shows, by the name the analyst
			// knows it by (a derived table's generated names stay inside).
			first := true
			for _, c := range rel.cols {
				if c.qualifiedOnly {
					continue
				}
				if !first {
					sb.WriteString(", ")
				}
				first = false
				sb.WriteString(c.sql + " AS " + parser.QuoteIdent(c.name))
				names = append(names, c.name)
			}
			continue
		}
		name := it.Alias
		if name == "" {
			if c, ok := it.Expr.(*parser.ColumnRef); ok {
				name = c.Name
			} else {
				name = parser.Format(it.Expr)
			}
		}
		sb.WriteString(rn.sql(it.Expr, nil) + " AS " + parser.QuoteIdent(name))
		names = append(names, name)
	}
	if rel != nil {
		sb.WriteString(" FROM " + rel.sql)
	}
	writeTail(&sb, stmt, rn, true)
	return sb.String(), names
}

// noColumns rejects column references in a SELECT without FROM.
func noColumns(stmt *parser.SelectStmt) error {
	var err error
	forEachExpr(stmt, func(e parser.Expr) {
		parser.Walk(e, func(x parser.Expr) bool {
			if c, ok := x.(*parser.ColumnRef); ok && err == nil {
				err = errorf(c.NamePos, ErrUnknownColumn, "unknown column %q (the query has no FROM clause)", c.Name)
			}
			if c, ok := x.(*parser.CallExpr); ok && parser.IsAggregate(c) && err == nil {
				err = errorf(c.NamePos, ErrUnsupported, "aggregate %s needs a FROM clause", c.Name)
			}
			return err == nil
		})
	})
	return err
}

func forEachExpr(stmt *parser.SelectStmt, fn func(parser.Expr)) {
	for _, it := range stmt.Items {
		if it.Expr != nil {
			fn(it.Expr)
		}
	}
	for _, e := range []parser.Expr{stmt.Where, stmt.Having, stmt.Limit, stmt.Offset} {
		if e != nil {
			fn(e)
		}
	}
	for _, g := range stmt.GroupBy {
		fn(g)
	}
	for _, o := range stmt.OrderBy {
		fn(o.Expr)
	}
}

type builder struct {
	stmt        *parser.SelectStmt
	rel         *relation
	q           *PrivateQuery
	cellIndex   map[string]int
	aggIndex    map[string]int
	searchIndex map[string]int
	aliases     map[string]int // folded alias → output index
	rowScale    float64        // min(l0, groups)·l∞: rows one unit can change
	// groupsChanged is min(l0, groups): how many groups one unit changes.
	groupsChanged int64
	delta         float64
	// publicGroups: OPTIONS (group_selection_strategy = PUBLIC_GROUPS);
	// publicValues reads a public relation's values (Session).
	publicGroups bool
	publicValues func(sql string, reads map[string]map[string]bool) ([]any, error)
	// candidates: max_groups_above, whose groups are candidates from
	// public values (a public table's column joined in, or a domain).
	candidates bool
	// watch reads a threshold watch's bound (Inputs.Watch).
	watch func(name string) (WatchBound, error)
	knobs *knobs.Knobs
}

func (b *builder) build(sess session) error {
	s := b.stmt
	opts, err := queryOptions(s, sess, b.rel)
	if err != nil {
		return err
	}
	b.q.Unit = opts.unit
	if opts.noise != "auto" {
		b.q.Noise = opts.noise
	}
	b.delta = opts.delta
	b.publicGroups, b.publicValues = opts.publicGroups, sess.PublicValues
	b.candidates = opts.maxAbove > 0
	b.watch = sess.Watch
	b.knobs, b.q.Knobs = sess.Knobs, sess.Knobs
	if s.Where != nil {
		if err := b.rowExpr(s.Where, "WHERE"); err != nil {
			return err
		}
	}
	for _, g := range s.GroupBy {
		if err := b.groupKey(g); err != nil {
			return err
		}
	}
	for _, k := range b.q.Keys {
		if k.Domain == nil && b.q.Selection == nil {
			b.q.Selection = &Selection{Sensitivity: float64(opts.unit.MaxGroups)}
		}
	}
	if b.q.Selection == nil && b.q.Groups() > maxGroups {
		return errorf(s.GroupBy[0].Pos(), ErrUnsupported, "GROUP BY over %d groups exceeds the limit of %d", b.q.Groups(), maxGroups)
	}
	// After bounding a unit keeps rows in at most l0 groups, and there are
	// no more groups than the public domains enumerate (one without GROUP
	// BY): it changes min(l0, groups) groups by at most l∞ rows each.
	// Partition selection's groups are not enumerated: l0.
	b.groupsChanged = opts.unit.MaxGroups
	if b.q.Selection == nil {
		b.groupsChanged = max(1, min(opts.unit.MaxGroups, int64(b.q.Groups())))
	}
	b.rowScale = float64(b.groupsChanged * opts.unit.MaxRows)
	b.q.GroupsChanged = b.groupsChanged
	if err := b.outputs(); err != nil {
		return err
	}
	if err := b.ordering(); err != nil {
		return err
	}
	if opts.watch != "" {
		return b.watchQuery(opts.watch)
	}
	if err := b.choose(opts); err != nil {
		return err
	}
	if opts.target > 0 {
		if b.q.chosen() {
			return errorf(s.SelectPos, ErrUnsupported, "target_error sets the error of every group's value; a query whose groups are chosen by comparison (max_groups_above, or ORDER BY ... LIMIT by report noisy max) needs epsilon")
		}
		eps, err := b.epsilonForTarget(opts)
		if err != nil {
			return err
		}
		opts.eps = eps
	}
	if opts.eps <= 0 {
		return errorf(s.SelectPos, ErrNoEpsilon, "no epsilon for this query: run SET epsilon = E, or write SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = E) ...")
	}
	if err := b.shareEpsilon(opts); err != nil {
		return err
	}
	return b.checkNoise()
}

// epsilonForTarget is the smallest ε at which every cell's 95% error
// (Laplace: sensitivity/ε_cell · ln 20) is at most the target: the ε is
// split equally among the cells and the partition selection, so ε =
// parts · max sensitivity · ln 20 / target. Only cells whose error does
// not depend on the data qualify; the query then runs with Laplace noise.
func (b *builder) epsilonForTarget(opts options) (float64, error) {
	s := b.stmt
	if len(b.q.Searches) > 0 {
		return 0, errorf(s.SelectPos, ErrUnsupported, "target_error needs declared bounds: with bounds chosen privately (%s) the error depends on the bounds the data leads to; declare them (ALTER PRIVACY POLICY ... SET BOUNDS) or give epsilon", b.q.Searches[0].Label)
	}
	if opts.noise == NoiseGaussian {
		return 0, errorf(s.SelectPos, ErrInvalidOption, "target_error chooses ε for Laplace noise; leave noise unset (or 'laplace')")
	}
	for _, a := range b.q.Aggregates {
		if a.Kind != AggCount && a.Kind != AggSum {
			return 0, errorf(s.SelectPos, ErrUnsupported, "target_error applies to counts and sums with declared bounds, whose error does not depend on the data; the error of %s does (AVG, VAR and STDDEV divide by a noisy count, percentiles search the data): give epsilon, and read the error EXPLAIN predicts", a.Text)
		}
	}
	maxSens := 0.0
	for _, c := range b.q.Cells {
		maxSens = max(maxSens, c.L1Sensitivity)
	}
	parts := len(b.q.Cells)
	if b.q.Selection != nil {
		parts++
	}
	// A share is rounded down by one ulp (shareEpsilon): the ε is raised
	// by a relative 1e-9 so that the error stays within the target.
	eps := float64(parts) * maxSens * math.Log(20) / opts.target * (1 + 1e-9)
	if !ValidEpsilon(eps) {
		if eps > MaxEpsilon {
			return 0, errorf(s.SelectPos, ErrInvalidOption, "target_error = %g is too small: it would need ε = %.6g, more than the largest ε a query may ask (%g); ask for an error of at least %.3g", opts.target, eps, MaxEpsilon, opts.target*eps/MaxEpsilon)
		}
		return 0, errorf(s.SelectPos, ErrInvalidOption, "target_error = %g is larger than needed: ε = %.6g would do, less than the smallest ε a query may ask (%g); ask for an error of at most %.3g", opts.target, eps, MinEpsilon, opts.target*eps/MinEpsilon)
	}
	b.q.TargetError, b.q.Noise = opts.target, NoiseLaplace
	b.q.NoiseWhy = "target_error is met with Laplace noise, whose error does not depend on the budget's accounting"
	return eps, nil
}

// outputs plans the select list and HAVING: every output is computed
// from noisy aggregates and group keys.
func (b *builder) outputs() error {
	s := b.stmt
	b.aliases = map[string]int{}
	hasAgg := false
	for _, it := range s.Items {
		if it.Star {
			return errorf(it.At, ErrNotPrivate, "SELECT * would release raw rows of private %s; select aggregates such as COUNT(*) instead", b.rel.name)
		}
		if err := b.outputExpr(it.Expr, "the select list"); err != nil {
			return err
		}
		hasAgg = hasAgg || containsAggregate(it.Expr)
		name := it.Alias
		if name == "" {
			if c, ok := it.Expr.(*parser.ColumnRef); ok {
				name = b.canonicalKey(c)
			} else {
				name = parser.Format(it.Expr)
			}
		} else if _, dup := b.aliases[catalog.FoldName(it.Alias)]; !dup {
			b.aliases[catalog.FoldName(it.Alias)] = len(b.q.Outputs)
		}
		b.q.Outputs = append(b.q.Outputs, Output{Name: name, Expr: it.Expr})
	}
	if !hasAgg && len(s.GroupBy) == 0 {
		return errorf(s.SelectPos, ErrNotPrivate, "a query on private %s must aggregate (COUNT, SUM, AVG) or group by public domains; it cannot return rows", b.rel.name)
	}
	if s.Having != nil {
		return b.outputExpr(s.Having, "HAVING")
	}
	return nil
}

// ordering checks ORDER BY, LIMIT and OFFSET (post-processing of the
// noisy outputs).
func (b *builder) ordering() error {
	s := b.stmt
	for _, o := range s.OrderBy {
		if lit, ok := o.Expr.(*parser.Literal); ok && lit.Kind == parser.IntLit {
			v, _ := parser.LiteralValue(lit)
			if n, ok := v.(int64); !ok || n < 1 || int(n) > len(s.Items) {
				return errorf(lit.ValuePos, ErrInvalidOption, "ORDER BY position %s is not in the select list (1 to %d)", lit.Raw, len(s.Items))
			}
			continue
		}
		if err := b.outputExpr(o.Expr, "ORDER BY"); err != nil {
			return err
		}
	}
	for _, e := range []parser.Expr{s.Limit, s.Offset} {
		if e == nil {
			continue
		}
		v, err := parser.LiteralValue(e)
		if n, ok := v.(int64); err != nil || !ok || n < 0 {
			return errorf(e.Pos(), ErrInvalidOption, "LIMIT and OFFSET take a non-negative integer constant")
		}
	}
	return nil
}

// shareEpsilon splits the query's ε (and δ) among the bound searches, the
// cells and the partition selection.
func (b *builder) shareEpsilon(opts options) error {
	s := b.stmt
	eps := opts.eps
	// ε is split by sequential composition: a share frac to the bound
	// searches (equally), the rest equally across the noisy cells and the
	// partition selection. Within a cell, one unit changes at most l0
	// groups by at most l∞ rows each, which the cells' sensitivities
	// account for (Scale), so one ε covers all groups.
	b.q.Epsilon, b.q.Delta = eps, 0
	if b.q.chosen() {
		if opts.minUnits > 0 {
			return errorf(s.SelectPos, ErrInvalidOption, "min_privacy_units_per_group applies to groups chosen by partition selection; this query's groups are chosen by comparison")
		}
		b.shareChoice(eps)
		return nil
	}
	cellEps := eps
	if len(b.q.Searches) > 0 {
		b.q.BoundsFraction = opts.frac
		for _, sr := range b.q.Searches {
			sr.Epsilon = eps * opts.frac / float64(len(b.q.Searches))
		}
		cellEps = eps * (1 - opts.frac)
	}
	parts := len(b.q.Cells)
	if sel := b.q.Selection; sel != nil {
		parts++
		sel.Delta = opts.delta
		b.q.Delta = opts.delta
	}
	// Each share is rounded down, so that the shares never add up to more
	// than the ε the ledger is charged.
	per := math.Nextafter(cellEps/float64(parts), 0)
	for _, c := range b.q.Cells {
		c.Epsilon = per
	}
	if sel := b.q.Selection; sel != nil {
		sel.Epsilon = per
		sel.MinUnits = opts.minUnits
		sel.setThreshold()
	} else if opts.minUnits > 0 {
		return errorf(s.SelectPos, ErrInvalidOption, "min_privacy_units_per_group applies to groups chosen by partition selection (GROUP BY keys without a public domain, with delta); this query releases every group of public domains")
	}
	for _, sr := range b.q.Searches {
		sr.Epsilon = math.Nextafter(sr.Epsilon, 0)
	}
	return nil
}

// MinEpsilon and MaxEpsilon bound the ε of one query; MinDelta is the
// smallest positive δ. Outside them the noise step could fail (a grid
// step or a discrete scale out of range) or the ledger could not record
// the cost; the planner refuses them before anything is charged.
const (
	MinEpsilon = 1e-6
	MaxEpsilon = 1000.0
	MinDelta   = 1e-18
)

// checkNoise verifies, before the charge, that every mechanism of the plan
// accepts its parameters for every database: each declared cell, each
// cell whose bounds a search will choose (at the narrowest and the widest
// candidate bounds), each search and the partition selection. So the
// noise step after the charge cannot fail on a parameter.
func (b *builder) checkNoise() error { return b.q.checkNoise() }

func (q *PrivateQuery) checkNoise() error {
	fail := func(what string, err error) error {
		return errorf(q.Stmt.SelectPos, ErrInvalidOption, "%s cannot be noised with these parameters (%v): use a larger epsilon or narrower bounds", what, err)
	}
	check := func(c *Cell, l1 float64) error {
		if c.Gaussian {
			return mechanism.CheckGaussian(c.L2Sensitivity(l1), c.Rho)
		}
		return mechanism.CheckLaplace(l1, c.Epsilon)
	}
	if t := q.Threshold; t != nil {
		if err := mechanism.CheckSparse(t.Sparse); err != nil {
			return fail("the sparse vector run of "+t.Text, err)
		}
	}
	if t := q.TopK; t != nil {
		if err := mechanism.CheckTopK(t.TopK); err != nil {
			return fail("report noisy max of "+t.Text, err)
		}
	}
	for _, c := range q.Cells {
		if !q.ValuesMeasured() {
			break // nothing is measured
		}
		if c.Search < 0 {
			if err := check(c, c.L1Sensitivity); err != nil {
				return fail(c.Label, err)
			}
			continue
		}
		for _, hi := range []float64{autobound.Candidate(1), autobound.Candidate(autobound.NumBuckets - 1)} {
			for _, lo := range []float64{0, -hi} {
				if err := check(c, SensitivityFor(c.Kind, lo, hi, c.Scale)); err != nil {
					return fail(c.Label, err)
				}
			}
		}
	}
	for _, sr := range q.Searches {
		if err := autobound.Check(sr.Epsilon, sr.Sensitivity); err != nil {
			return fail("the bound search of "+sr.Label, err)
		}
	}
	if sel := q.Selection; sel != nil {
		if err := mechanism.CheckLaplace(sel.Sensitivity, sel.Epsilon); err != nil || math.IsNaN(sel.Threshold) || math.IsInf(sel.Threshold, 0) {
			return fail("the partition selection", err)
		}
	}
	return nil
}

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
}

// queryOptions reads epsilon, delta, the bounds share and contribution
// overrides from the OPTIONS clause, the session and the table's policy.
// A missing ε is reported by the caller, after the query's other checks.
func queryOptions(s *parser.SelectStmt, sess session, rel *relation) (options, error) {
	o := options{eps: sess.Epsilon, delta: sess.Delta, frac: sess.BoundsFraction, unit: rel.unit, noise: sess.Noise, target: sess.TargetError}
	if o.frac == 0 {
		o.frac = DefaultBoundsFraction
	}
	if o.unit.MaxGroups < 1 || o.unit.MaxRows < 1 {
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
				return bad(opt.Name + " = NULL (no bound) is refused: the guarantee holds per privacy unit only when each unit's contribution is bounded; give a positive integer")
			}
			if verr != nil || v < 1 || v != math.Trunc(v) || v > 1e6 {
				return bad(opt.Name + " takes a positive integer")
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
	return o, nil
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

func containsAggregate(e parser.Expr) bool {
	found := false
	parser.Walk(e, func(x parser.Expr) bool {
		if c, ok := x.(*parser.CallExpr); ok && parser.IsAggregate(c) {
			found = true
		}
		return !found
	})
	return found
}

// rowExpr checks a per-row expression (WHERE, aggregate arguments): columns
// must exist and no aggregate may appear.
func (b *builder) rowExpr(e parser.Expr, where string) error {
	var err error
	parser.Walk(e, func(x parser.Expr) bool {
		switch x := x.(type) {
		case *parser.ColumnRef:
			if _, cerr := b.column(x); cerr != nil {
				err = cerr
			}
		case *parser.CallExpr:
			if parser.IsAggregate(x) {
				err = errorf(x.NamePos, ErrUnsupported, "aggregate %s is not allowed in %s", x.Name, where)
			}
		case *parser.TupleExpr:
			err = errorf(x.Lparen, ErrUnsupported, "a parenthesised list is not allowed here")
		}
		return err == nil
	})
	return err
}

func (b *builder) column(c *parser.ColumnRef) (*relCol, error) { return b.rel.resolve(c) }

func (b *builder) groupKey(g parser.Expr) error {
	g = b.groupByTarget(g)
	c, ok := g.(*parser.ColumnRef)
	if !ok {
		return b.expressionKey(g)
	}
	col, err := b.column(c)
	if err != nil {
		return err
	}
	for _, k := range b.q.Keys {
		if k.SQL == col.sql {
			return errorf(c.NamePos, ErrInvalidOption, "column %q appears twice in GROUP BY", col.name)
		}
	}
	if col.unit != "" || col.fromUnit {
		// Each group would be one unit: its key a unit's id, its
		// aggregates one unit's values. Refused whatever the data.
		return errorf(c.NamePos, ErrNotPrivate,
			"GROUP BY %q groups by the privacy unit: every group would hold one unit, so no group could be released but with probability δ; group by a coarser column, or count units with COUNT(DISTINCT %s)",
			col.name, parser.QuoteIdent(col.name))
	}
	dom := col.domain
	if col.groupsSQL != "" && (col.publicGroups || b.publicGroups || b.candidates) {
		// Public groups: every value of the public relation's column is a
		// group, found by a query on public data only.
		if b.publicValues == nil {
			return errorf(c.NamePos, ErrUnsupported, "public groups need the engine's connection (Session.PublicValues)")
		}
		vals, err := b.publicValues(col.groupsSQL, b.rel.rn.reads)
		if err != nil {
			return err
		}
		if len(vals) > maxGroups {
			return errorf(c.NamePos, ErrUnsupported, "GROUP BY %q: the public relation has more than %d values", col.name, maxGroups)
		}
		dom = append([]any{}, vals...) // no public value: no group, no row
	} else if b.publicGroups && !col.private {
		return errorf(c.NamePos, ErrInvalidOption, "group_selection_strategy = PUBLIC_GROUPS: GROUP BY %q is not a column of a public table joined with the private one", col.name)
	} else if b.publicGroups {
		return errorf(c.NamePos, ErrInvalidOption, "group_selection_strategy = PUBLIC_GROUPS takes its groups from a public table joined in (FROM public_groups LEFT JOIN private_table ...): GROUP BY %q is a private column", col.name)
	}
	if dom == nil && b.delta <= 0 {
		table := "<table>"
		if b.rel.base != nil {
			table = parser.QuoteIdent(b.rel.base.Name)
		}
		return needsDelta(errorf(c.NamePos, ErrNotPrivate,
			"GROUP BY %q would release values that depend on private data: either the owner declares its public domain with ALTER PRIVACY POLICY ON %s SET DOMAIN %s (...), or the query sets OPTIONS (delta = D) so that groups are chosen by private partition selection",
			col.name, table, parser.QuoteIdent(col.name)))
	}
	b.q.Keys = append(b.q.Keys, GroupKey{Column: col.name, SQL: col.sql, Domain: dom, Base: col.column, Ref: col.ref, Derived: b.rel.rn.derived[col], Output: outputOf(b.rel.rn, col)})
	return nil
}

// outputOf is col's position, from 1, among the outputs of a subquery
// that aggregates per unit, or 0.
func outputOf(rn *renderer, col *relCol) int {
	if i, ok := rn.derivedOut[col]; ok {
		return i + 1
	}
	return 0
}

// groupByTarget resolves a GROUP BY position (GROUP BY 1) or a select-list
// alias that is not a column name (GROUP BY decade) to the select item's
// expression; anything else is returned as it is.
func (b *builder) groupByTarget(g parser.Expr) parser.Expr {
	items := b.stmt.Items
	if lit, ok := g.(*parser.Literal); ok && lit.Kind == parser.IntLit {
		if v, err := parser.LiteralValue(lit); err == nil {
			if n, ok := v.(int64); ok && n >= 1 && int(n) <= len(items) && !items[n-1].Star && !containsAggregate(items[n-1].Expr) {
				return items[n-1].Expr
			}
		}
		return g
	}
	c, ok := g.(*parser.ColumnRef)
	if !ok || c.Table != "" {
		return g
	}
	if _, err := b.rel.resolve(c); err == nil {
		return g // a column name wins over an alias, as in PostgreSQL
	}
	for _, it := range items {
		if it.Alias != "" && catalog.FoldName(it.Alias) == catalog.FoldName(c.Name) && !containsAggregate(it.Expr) {
			return it.Expr
		}
	}
	return g
}

// expressionKey plans GROUP BY over an expression of the row: with the
// values keyDomain enumerates from the policy, or by partition selection
// when the query has δ (keydomain.go says why each is private).
func (b *builder) expressionKey(g parser.Expr) error {
	if lit, ok := g.(*parser.Literal); ok {
		return errorf(lit.ValuePos, ErrInvalidOption, "GROUP BY %s is not a position in the select list (1 to %d, not an aggregate)", lit.Raw, len(b.stmt.Items))
	}
	if err := b.rowExpr(g, "GROUP BY"); err != nil {
		return err
	}
	text := parser.Format(g)
	for _, k := range b.q.Keys {
		if k.Expr != nil && parser.Format(k.Expr) == text {
			return errorf(g.Pos(), ErrInvalidOption, "%s appears twice in GROUP BY", text)
		}
	}
	dom, ok, err := b.keyDomain(g)
	if err != nil {
		return err
	}
	if !ok && b.delta <= 0 {
		return needsDelta(errorf(g.Pos(), ErrNotPrivate,
			"GROUP BY %s would release values that depend on private data: dpsql enumerates the groups of FLOOR(c / w) [* m], CEIL and ROUND(c) over a column with declared bounds, and of a CASE whose results are constants; for anything else set OPTIONS (delta = D) so that groups are chosen by private partition selection", text))
	}
	// Enumerated bins are public whatever they are computed from; values
	// chosen by partition selection from the unit would be units' ids.
	var unitErr error
	parser.Walk(g, func(x parser.Expr) bool {
		if ok {
			return false
		}
		if c, ok := x.(*parser.ColumnRef); ok && unitErr == nil {
			if col, err := b.column(c); err == nil && (col.unit != "" || col.fromUnit) {
				unitErr = errorf(c.NamePos, ErrNotPrivate,
					"GROUP BY %s is computed from the privacy unit %q and its values are not enumerated from the policy: partition selection would release units' ids with probability δ at most; group by bins of declared bounds, other columns, or count units with COUNT(DISTINCT %s)",
					parser.Format(g), col.name, parser.QuoteIdent(col.name))
			}
		}
		return unitErr == nil
	})
	if unitErr != nil {
		return unitErr
	}
	name := text
	for _, it := range b.stmt.Items {
		if it.Alias != "" && !it.Star && parser.Format(it.Expr) == text {
			name = it.Alias
			break
		}
	}
	b.q.Keys = append(b.q.Keys, GroupKey{Column: name, SQL: "(" + b.q.SQL(g) + ")", Domain: dom, Expr: g})
	return nil
}

// keyExprIndex returns the expression GROUP BY key that x repeats (as
// written), or -1.
func (b *builder) keyExprIndex(x parser.Expr) int {
	if _, isRef := x.(*parser.ColumnRef); isRef {
		return -1
	}
	text := ""
	for i, k := range b.q.Keys {
		if k.Expr == nil {
			continue
		}
		if text == "" {
			text = parser.Format(x)
		}
		if parser.Format(k.Expr) == text {
			return i
		}
	}
	return -1
}

// keyIndex returns the GROUP BY key a column reference names, or -1.
func (b *builder) keyIndex(c *parser.ColumnRef) int {
	col, err := b.rel.resolve(c)
	if err != nil {
		return -1
	}
	for i, k := range b.q.Keys {
		if k.SQL == col.sql {
			return i
		}
	}
	return -1
}

func (b *builder) canonicalKey(c *parser.ColumnRef) string {
	if i := b.keyIndex(c); i >= 0 {
		return b.q.Keys[i].Column
	}
	return c.Name
}

// outputExpr checks an expression that is computed after noise: it may use
// aggregates, group keys, constants, and (in HAVING/ORDER BY) aliases.
func (b *builder) outputExpr(e parser.Expr, where string) error {
	var err error
	parser.Walk(e, func(x parser.Expr) bool {
		if i := b.keyExprIndex(x); i >= 0 {
			b.q.KeyExprOf[x] = i
			return false // computed before noise: the key's public value
		}
		switch x := x.(type) {
		case *parser.CallExpr:
			if parser.IsAggregate(x) {
				for _, na := range x.Named {
					if na.Name == "report_format" && (x != e || where != "the select list") {
						err = errorf(na.NamePos, ErrUnsupported, "an aggregate with report_format is a JSON text: it must be a select item of its own (read its fields in an outer query, with JSON_EXTRACT)")
						return false
					}
				}
				err = b.aggregate(x)
				return false // its arguments are per-row and checked there
			}
		case *parser.ColumnRef:
			if i := b.keyIndex(x); i >= 0 {
				b.q.KeyOf[x] = i
				return true
			}
			if i, ok := b.aliases[catalog.FoldName(x.Name)]; ok && x.Table == "" && where != "the select list" {
				b.q.AliasOf[x] = i
				return true
			}
			if _, cerr := b.column(x); cerr != nil {
				err = cerr
				return false
			}
			err = errorf(x.NamePos, ErrNotPrivate,
				"column %q of private %s can only appear inside an aggregate or in GROUP BY (with a public domain)", x.Name, b.rel.name)
		case *parser.TupleExpr:
			err = errorf(x.Lparen, ErrUnsupported, "a parenthesised list is not allowed here")
		}
		return err == nil
	})
	return err
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
