package planner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/parser"
)

// A composite query is SQL over released results: an outer query whose
// FROM items, WITH queries, subqueries or compound arms include DP queries
// ("parts"). Each part is planned, charged and answered on its own,
// exactly as if it had been asked alone; the outer query then sees the
// parts' noisy rows as public data, printed by the engine as VALUES lists
// (or, in a DP query's expressions, as constants) — never as a table name
// that could resolve to something else. An outer query over answers and
// public tables is post-processing and costs nothing more; one that also
// reads a private table is a DP query of its own, charged after the parts
// (adaptive sequential composition).

// Released is a part's answer as the outer query sees it: its output
// columns and, once the part has run, its noisy rows (nil while only
// planning, for validation and EXPLAIN).
type Released struct {
	Columns []string
	Rows    [][]any
}

// Part is one DP query inside a composite query.
type Part struct {
	// Key is the statement the part stands for in the outer query (the
	// key of Session.Released). For the first arm of a compound query it
	// is the compound statement itself.
	Key *parser.SelectStmt
	// Stmt is the part as a query of its own: the statement with the
	// WITH queries of its enclosing statements that it can see.
	Stmt *parser.SelectStmt
	Plan *PrivateQuery
}

// Composite is a planned composite query: its parts in order of
// appearance, and the outer query (planned with no rows released yet).
// The outer query is public, or a DP query of its own whose inputs
// include the answers — adaptive sequential composition: the answers are
// fixed before it reads a private row.
type Composite struct {
	Stmt  *parser.SelectStmt
	Parts []*Part
	Outer *PublicQuery
	// OuterPrivate is set instead of Outer when the outer query is itself
	// a DP query (over a private table, using the parts' answers as
	// public data): it is charged too, after the parts.
	OuterPrivate *PrivateQuery
}

// PlanComposite splits stmt into DP parts and an outer query. It
// returns nil, nil when stmt has no part (the caller keeps the error
// planning stmt as a whole gave). A candidate is a statement in FROM, in
// WITH, in a scalar subquery or in a compound arm that plans on its own as
// a private query; the statement itself is never one.
func PlanComposite(stmt *parser.SelectStmt, cat *catalog.Catalog, set Settings, in Inputs) (*Composite, error) {
	return planComposite(stmt, cat, session{set, in})
}

func planComposite(stmt *parser.SelectStmt, cat *catalog.Catalog, sess session) (*Composite, error) {
	c := &Composite{Stmt: stmt}
	sess.Released = nil
	if err := c.find(stmt, nil, cat, sess, true); err != nil {
		return nil, err
	}
	if len(c.Parts) == 0 {
		return nil, nil
	}
	sess.Released = map[*parser.SelectStmt]*Released{}
	for _, p := range c.Parts {
		r := &Released{}
		for _, o := range p.Plan.Outputs {
			r.Columns = append(r.Columns, o.Name)
		}
		sess.Released[p.Key] = r
	}
	outer, err := planSelect(stmt, cat, sess)
	if err != nil {
		return nil, err
	}
	switch p := outer.(type) {
	case *PublicQuery:
		c.Outer = p
	case *PrivateQuery:
		// A DP query over a private table that uses the answers (joined
		// as public relations, or in subqueries as constants).
		c.OuterPrivate = p
	}
	return c, nil
}

// find visits the statements of s that can be parts. visible holds the
// WITH queries of enclosing statements.
func (c *Composite) find(s *parser.SelectStmt, visible []parser.CTE, cat *catalog.Catalog, sess session, top bool) error {
	if !top && len(s.Compound) == 0 {
		if c.tryPart(s, s, visible, cat, sess) {
			return nil
		}
	}
	scope := withScope(visible, s.With)
	for i := range s.With {
		if err := c.find(s.With[i].Query, visible, cat, sess, false); err != nil {
			return err
		}
	}
	if len(s.Compound) > 0 {
		head := *s
		head.With, head.Compound, head.OrderBy, head.Limit, head.Offset = nil, nil, nil, nil, nil
		if !c.tryPart(&head, s, scope, cat, sess) {
			if err := c.findIn(&head, scope, cat, sess); err != nil {
				return err
			}
		}
		for _, arm := range s.Compound {
			if err := c.find(arm.Select, scope, cat, sess, false); err != nil {
				return err
			}
		}
		return nil
	}
	return c.findIn(s, scope, cat, sess)
}

// findIn visits s's FROM subqueries and scalar subqueries.
func (c *Composite) findIn(s *parser.SelectStmt, scope []parser.CTE, cat *catalog.Catalog, sess session) error {
	var err error
	var from func(f parser.FromItem)
	from = func(f parser.FromItem) {
		switch f := f.(type) {
		case *parser.SubqueryRef:
			if err == nil {
				err = c.find(f.Query, scope, cat, sess, false)
			}
		case *parser.JoinExpr:
			from(f.Left)
			from(f.Right)
		}
	}
	if s.From != nil {
		from(s.From)
	}
	for _, sub := range scalarSubqueries(s, false) {
		if err == nil {
			err = c.find(sub.Query, scope, cat, sess, false)
		}
	}
	return err
}

// tryPart plans s (with the WITH queries it can see) on its own; a
// private plan makes it a part standing for key.
func (c *Composite) tryPart(s, key *parser.SelectStmt, visible []parser.CTE, cat *catalog.Catalog, sess session) bool {
	q := s
	if extra := unshadowed(visible, s.With); len(extra) > 0 {
		cp := *s
		cp.With = append(extra, s.With...)
		cp.WithPos = s.Pos()
		q = &cp
	}
	plan, err := planSelect(q, cat, sess)
	if err != nil {
		return false
	}
	p, ok := plan.(*PrivateQuery)
	if !ok {
		return false
	}
	c.Parts = append(c.Parts, &Part{Key: key, Stmt: q, Plan: p})
	return true
}

// withScope is the WITH queries visible inside a statement with its own
// WITH list: its own, then the enclosing ones it does not shadow.
func withScope(visible, own []parser.CTE) []parser.CTE {
	return append(append([]parser.CTE(nil), own...), unshadowed(visible, own)...)
}

func unshadowed(visible, own []parser.CTE) []parser.CTE {
	var out []parser.CTE
	for _, v := range visible {
		shadowed := false
		for _, o := range own {
			shadowed = shadowed || catalog.SameName(o.Name, v.Name)
		}
		if !shadowed {
			out = append(out, v)
		}
	}
	return out
}

// eachSubquery calls fn for each subquery in s's expressions (a scalar
// subquery, or the SELECT of IN (SELECT ...), with in set), not those
// nested inside another subquery; deep also visits its WITH queries, FROM
// subqueries and compound arms.
func eachSubquery(s *parser.SelectStmt, deep bool, fn func(sq *parser.SubqueryExpr, in bool)) {
	visit := func(e parser.Expr) {
		parser.Walk(e, func(x parser.Expr) bool {
			switch x := x.(type) {
			case *parser.SubqueryExpr:
				fn(x, false)
			case *parser.InExpr:
				if x.Sub != nil {
					fn(x.Sub, true)
				}
			}
			return true
		})
	}
	for _, o := range s.DPOptions {
		visit(o.Value)
	}
	forEachStmtExpr(s, deep, visit)
}

// scalarSubqueries lists eachSubquery's subqueries.
func scalarSubqueries(s *parser.SelectStmt, deep bool) []*parser.SubqueryExpr {
	var out []*parser.SubqueryExpr
	eachSubquery(s, deep, func(sq *parser.SubqueryExpr, _ bool) { out = append(out, sq) })
	return out
}

// planSubqueries plans every scalar subquery of a public statement on its
// own; each must be public (or a released result), and its SQL and reads
// join the statement's.
//
// In a query on a private table (inline) each subquery is run first,
// through Session.PublicValues, and its values replace it as literals:
// the scan SQL then holds constants only, and whatever the subquery does
// — an error, say — happens before any private row is read, so it cannot
// depend on which private rows reach it.
func planSubqueries(stmt *parser.SelectStmt, cat *catalog.Catalog, sess session, rn *renderer, inline bool) error {
	var subs []*parser.SubqueryExpr
	in := map[*parser.SubqueryExpr]bool{}
	eachSubquery(stmt, true, func(sq *parser.SubqueryExpr, isIn bool) {
		subs = append(subs, sq)
		in[sq] = isIn
	})
	for _, sq := range subs {
		plan, err := planSelect(sq.Query, cat, sess)
		if err != nil {
			return err
		}
		pub, ok := plan.(*PublicQuery)
		if !ok {
			return errorf(sq.Lparen, ErrNotPrivate, "a subquery over a private table must be a DP query of its own (with aggregates), answered before the query that uses it")
		}
		if !inline {
			rn.subSQL[sq] = "(" + pub.SQL + ")"
			for t, cols := range pub.Reads {
				for col := range cols {
					rn.read(t, col)
				}
			}
			continue
		}
		if len(pub.Names) != 1 {
			return errorf(sq.Lparen, ErrUnsupported, "a subquery in a query on a private table must return one column (it returns %d)", len(pub.Names))
		}
		if sess.PublicValues == nil {
			return errorf(sq.Lparen, ErrUnsupported, "subqueries in a query on a private table need the engine's connection (Session.PublicValues)")
		}
		vals, err := sess.PublicValues(pub.SQL, pub.Reads)
		if err != nil {
			return err
		}
		switch {
		case !in[sq] && len(vals) == 0:
			rn.subSQL[sq] = "NULL"
		case !in[sq]:
			rn.subSQL[sq] = "(" + parser.SQLLiteral(vals[0]) + ")" // SQLite's scalar subquery: the first row
		case len(vals) > MaxInlineValues:
			return errorf(sq.Lparen, ErrUnsupported, "a subquery in a query on a private table may return at most %d values (it returns %d)", MaxInlineValues, len(vals))
		case len(vals) == 0:
			rn.subSQL[sq] = "(SELECT NULL WHERE 0)"
		default:
			lits := make([]string, len(vals))
			for i, v := range vals {
				lits[i] = parser.SQLLiteral(v)
			}
			rn.subSQL[sq] = "(" + strings.Join(lits, ", ") + ")"
		}
	}
	return nil
}

// MaxInlineValues caps the values of an IN (SELECT ...) in a query on a
// private table, which the scan holds as a list of constants.
const MaxInlineValues = 100_000

// forEachSelect calls fn for s and, recursively, its WITH queries, FROM
// subqueries and compound arms (not subqueries in expressions).
func forEachSelect(s *parser.SelectStmt, fn func(*parser.SelectStmt)) {
	fn(s)
	for i := range s.With {
		forEachSelect(s.With[i].Query, fn)
	}
	var from func(f parser.FromItem)
	from = func(f parser.FromItem) {
		switch f := f.(type) {
		case *parser.SubqueryRef:
			forEachSelect(f.Query, fn)
		case *parser.JoinExpr:
			from(f.Left)
			from(f.Right)
		}
	}
	if s.From != nil {
		from(s.From)
	}
	for _, arm := range s.Compound {
		forEachSelect(arm.Select, fn)
	}
}

// forEachStmtExpr calls fn for every expression of a statement and its
// join conditions; deep, of the statements forEachSelect visits too.
func forEachStmtExpr(s *parser.SelectStmt, deep bool, fn func(parser.Expr)) {
	one := func(q *parser.SelectStmt) {
		forEachExpr(q, fn)
		var on func(f parser.FromItem)
		on = func(f parser.FromItem) {
			if j, ok := f.(*parser.JoinExpr); ok {
				on(j.Left)
				on(j.Right)
				if j.On != nil {
					fn(j.On)
				}
			}
		}
		if q.From != nil {
			on(q.From)
		}
	}
	if deep {
		forEachSelect(s, one)
	} else {
		one(s)
	}
}

// refuseInPrivate refuses what only a public query (or one over released
// results) may use: DISTINCT, window functions and compound arms (derived
// refuses DISTINCT in a subquery on a private table).
func refuseInPrivate(stmt *parser.SelectStmt) error {
	if stmt.Distinct {
		return errorf(stmt.SelectPos, ErrUnsupported, "SELECT DISTINCT is not available in a query on a private table (a DP query's groups are already distinct); to post-process its answer, put the DP query in FROM: SELECT DISTINCT ... FROM (SELECT ...) AS r")
	}
	if w := windowCall(stmt); w != nil {
		return errorf(w.Over.OverPos, ErrUnsupported, "window functions (%s ... OVER) are not available in a query on a private table; apply them to a DP query's answer in an outer query (SELECT ..., RANK() OVER (ORDER BY n) FROM (SELECT ...) AS r)", w.Name)
	}
	var err error
	forEachSelect(stmt, func(q *parser.SelectStmt) {
		if len(q.Compound) > 0 && err == nil {
			err = errorf(q.Compound[0].OpPos, ErrUnsupported, "%s inside a query on a private table is not available; each arm can be a DP query of its own", q.Compound[0].Op)
		}
	})
	return err
}

// windowCall finds a window function anywhere in a statement's
// expressions, its WITH queries and FROM subqueries.
func windowCall(stmt *parser.SelectStmt) *parser.CallExpr {
	var found *parser.CallExpr
	forEachStmtExpr(stmt, true, func(e parser.Expr) {
		parser.Walk(e, func(x parser.Expr) bool {
			if c, ok := x.(*parser.CallExpr); ok && c.Over != nil && found == nil {
				found = c
			}
			return found == nil
		})
	})
	return found
}

// planCompound plans SELECT ... UNION ALL SELECT ... (and UNION,
// INTERSECT, EXCEPT): every arm must be public or a released result; ORDER
// BY and LIMIT apply to the whole.
func planCompound(s *parser.SelectStmt, cat *catalog.Catalog, sess session) (Plan, error) {
	reads := map[string]map[string]bool{}
	armSQL := func(q, key *parser.SelectStmt, pos parser.Pos) (string, []string, error) {
		if r, ok := sess.Released[key]; ok {
			return releasedSelect(r), r.Columns, nil
		}
		plan, err := planSelect(q, cat, sess)
		if err != nil {
			return "", nil, err
		}
		pub, ok := plan.(*PublicQuery)
		if !ok {
			return "", nil, errorf(pos, ErrUnsupported, "each arm of a compound query must be public or a DP query of its own; this one reads a private table without being one")
		}
		for t, cols := range pub.Reads {
			for c := range cols {
				if reads[t] == nil {
					reads[t] = map[string]bool{}
				}
				reads[t][c] = true
			}
		}
		return pub.SQL, pub.Names, nil
	}
	head := *s
	head.Compound, head.OrderBy, head.Limit, head.Offset = nil, nil, nil, nil
	var sb strings.Builder
	first, names, err := armSQL(&head, s, s.SelectPos)
	if err != nil {
		return nil, err
	}
	sb.WriteString(first)
	for _, arm := range s.Compound {
		a := *arm.Select
		a.With, a.WithPos = s.With, s.WithPos
		text, _, err := armSQL(&a, arm.Select, arm.Select.SelectPos)
		if err != nil {
			return nil, err
		}
		sb.WriteString(" " + arm.Op + " " + text)
	}
	for i, o := range s.OrderBy {
		if i == 0 {
			sb.WriteString(" ORDER BY ")
		} else {
			sb.WriteString(", ")
		}
		term := ""
		switch x := o.Expr.(type) {
		case *parser.Literal:
			if n, err := strconv.Atoi(x.Raw); err == nil && x.Kind == parser.IntLit && n >= 1 && n <= len(names) {
				term = x.Raw
			}
		case *parser.ColumnRef:
			for _, n := range names {
				if x.Table == "" && catalog.SameName(n, x.Name) {
					term = parser.QuoteIdent(n)
				}
			}
		}
		if term == "" {
			return nil, errorf(o.Expr.Pos(), ErrUnsupported, "ORDER BY of a compound query takes output column names or positions (1 to %d)", len(names))
		}
		sb.WriteString(term)
		if o.Desc {
			sb.WriteString(" DESC")
		}
	}
	rn := newRenderer(sess.Knobs)
	rn.private = false
	for _, e := range []parser.Expr{s.Limit, s.Offset} {
		if e != nil {
			if _, err := parser.LiteralValue(e); err != nil {
				return nil, errorf(e.Pos(), ErrUnsupported, "LIMIT and OFFSET of a compound query take constants")
			}
		}
	}
	if s.Limit != nil {
		sb.WriteString(" LIMIT " + rn.sql(s.Limit, nil))
		if s.Offset != nil {
			sb.WriteString(" OFFSET " + rn.sql(s.Offset, nil))
		}
	}
	return &PublicQuery{Stmt: s, SQL: sb.String(), Reads: reads, Names: names}, nil
}

// releasedRelation is a part's released rows as a FROM item.
func (fb *fromBuilder) releasedRelation(r *Released, alias string, pos parser.Pos) (*relation, error) {
	if catalog.IsInternalName(alias) {
		return nil, errorf(pos, ErrInvalidOption, "alias %q is reserved", alias)
	}
	outAlias := fb.rn.alias()
	rel := &relation{name: fmt.Sprintf("released answer %q", alias), rn: fb.rn, sql: valuesSQL(r, outAlias)}
	for i, c := range r.Columns {
		rel.cols = append(rel.cols, &relCol{qual: alias, name: c, sql: parser.QuoteIdent(outAlias) + "." + parser.QuoteIdent(outputColumn(i))})
	}
	return rel, nil
}

// releasedSelect is a part's released rows as a SELECT with its own
// output names.
func releasedSelect(r *Released) string {
	var sb strings.Builder
	sb.WriteString("SELECT ")
	for i, c := range r.Columns {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(parser.QuoteIdent(outputColumn(i)) + " AS " + parser.QuoteIdent(c))
	}
	sb.WriteString(" FROM " + valuesSQL(r, catalog.InternalPrefix+"r"))
	return sb.String()
}

// valuesSQL prints released rows as a derived table: the engine's own
// literals in a VALUES list, with generated column names.
func valuesSQL(r *Released, alias string) string {
	var sb strings.Builder
	sb.WriteString("(SELECT ")
	for i := range r.Columns {
		if i > 0 {
			sb.WriteString(", ")
		}
		src := "NULL"
		if len(r.Rows) > 0 {
			src = "column" + strconv.Itoa(i+1)
		}
		sb.WriteString(src + " AS " + parser.QuoteIdent(outputColumn(i)))
	}
	if len(r.Rows) == 0 {
		sb.WriteString(" WHERE 0")
	} else {
		sb.WriteString(" FROM (VALUES ")
		for i, row := range r.Rows {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(")
			for j, v := range row {
				if j > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(parser.SQLLiteral(v))
			}
			sb.WriteString(")")
		}
		sb.WriteString(")")
	}
	sb.WriteString(") AS " + parser.QuoteIdent(alias))
	return sb.String()
}
