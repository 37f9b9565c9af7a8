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
	"math"
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

// session is what one planning sees: the settings and the inputs.
type session struct {
	Settings
	Inputs
}

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
	// contribution is the AUTO bounds chosen (Inputs.Contribution).
	contribution *ContributionChoice
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
	b.contribution = sess.Contribution
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
	// ε is split by sequential composition: with rows bounded per unit,
	// DroppedFraction to the estimate of what bounding dropped; a share
	// frac to the bound searches (equally); the rest equally across the
	// noisy cells and the partition selection. Within a cell, one unit
	// changes at most l0 groups by at most l∞ rows each, which the cells'
	// sensitivities account for (Scale), so one ε covers all groups.
	b.q.Epsilon, b.q.Delta = eps, 0
	reserved := 0.0 // the estimate of what bounding dropped, the choice of AUTO bounds
	if b.q.UnitSQL != "" && b.q.Watch == nil {
		b.q.Dropped = &DroppedEstimate{Epsilon: math.Nextafter(eps*DroppedFraction, 0)}
		reserved = b.q.Dropped.Epsilon
	}
	if opts.autoGroups || opts.autoRows {
		if err := b.autoContribution(opts); err != nil {
			return err
		}
		if b.q.Auto != nil {
			b.q.Auto.Epsilon = math.Nextafter(eps*AutoFraction, 0)
			reserved += b.q.Auto.Epsilon
		}
	}
	if b.q.chosen() {
		if opts.minUnits > 0 {
			return errorf(s.SelectPos, ErrInvalidOption, "min_privacy_units_per_group applies to groups chosen by partition selection; this query's groups are chosen by comparison")
		}
		b.shareChoice(eps - reserved)
		return nil
	}
	cellEps := eps - reserved
	if len(b.q.Searches) > 0 {
		b.q.BoundsFraction = opts.frac
		for _, sr := range b.q.Searches {
			sr.Epsilon = eps * opts.frac / float64(len(b.q.Searches))
		}
		cellEps = eps*(1-opts.frac) - reserved
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

// autoContribution marks a query whose contribution bounds are chosen
// privately (AUTO), or refuses one whose form the choice does not cover.
func (b *builder) autoContribution(opts options) error {
	q := b.q
	pos := b.stmt.SelectPos
	switch {
	case q.UnitSQL == "":
		return nil // each row its own unit: nothing to bound
	case q.Watch != nil:
		return errorf(pos, ErrUnsupported, "contribution bounds chosen privately (AUTO) are not supported for a query to a watch (it spends nothing to choose them with): give max_groups_contributed and max_rows_contributed in OPTIONS")
	case opts.target > 0:
		return errorf(pos, ErrUnsupported, "contribution bounds chosen privately (AUTO) need an epsilon, not a target_error (the ε that meets a target depends on the bounds)")
	}
	q.Auto = &AutoContribution{Groups: opts.autoGroups, Rows: opts.autoRows, Chosen: b.contribution != nil}
	return nil
}

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
