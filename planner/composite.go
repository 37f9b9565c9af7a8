package planner

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/parser"
)

// A composite query is SQL over released results: an outer query, public
// in itself, whose FROM items, WITH queries, scalar subqueries or UNION
// arms include DP queries ("parts"). Each part is planned, charged and
// answered on its own, exactly as if it had been asked alone; the outer
// query then runs on the parts' noisy rows (and on public tables), so it
// is post-processing and costs nothing more. The outer query never sees a
// private table: the planner requires it to plan as a public query once
// every part is replaced by its released rows, which the engine prints
// as a VALUES list — never a table name that could resolve to something
// else.

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
type Composite struct {
	Stmt  *parser.SelectStmt
	Parts []*Part
	Outer *PublicQuery
}

// PlanComposite splits stmt into DP parts and a public outer query. It
// returns nil, nil when stmt has no part (the caller keeps the error
// planning stmt as a whole gave). A candidate is a statement in FROM, in
// WITH, in a scalar subquery or in a compound arm that plans on its own as
// a private query; the statement itself is never one.
func PlanComposite(stmt *parser.SelectStmt, cat *catalog.Catalog, sess Session) (*Composite, error) {
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
	outer, err := PlanSelect(stmt, cat, sess)
	if err != nil && !errors.Is(err, ErrNotPrivate) && stmt.From != nil && len(stmt.Compound) == 0 {
		if rel, ferr := buildFrom(stmt, cat, newRenderer(), sess.Released); ferr == nil && rel.private {
			return nil, errorf(stmt.From.Pos(), ErrNotPrivate, "a query over the answers of DP queries may read only those answers and public tables; its FROM reads %s", rel.name)
		}
	}
	if errors.Is(err, ErrNotPrivate) {
		var pe *Error
		if errors.As(err, &pe) {
			return nil, errorf(pe.Pos, ErrNotPrivate, "a query over the answers of DP queries may read only those answers and public tables: %s", pe.Msg)
		}
	}
	if err != nil {
		return nil, err
	}
	pub, ok := outer.(*PublicQuery)
	if !ok {
		return nil, errorf(stmt.SelectPos, ErrNotPrivate, "a query over the answers of DP queries may read only those answers and public tables; aggregate a private table in a DP query of its own (joining released answers into a DP query is not available yet)")
	}
	c.Outer = pub
	return c, nil
}

// find visits the statements of s that can be parts. visible holds the
// WITH queries of enclosing statements.
func (c *Composite) find(s *parser.SelectStmt, visible []parser.CTE, cat *catalog.Catalog, sess Session, top bool) error {
	if !top && len(s.Compound) == 0 {
		if ok, err := c.tryPart(s, s, visible, cat, sess); ok || err != nil {
			return err
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
		if ok, err := c.tryPart(&head, s, scope, cat, sess); err != nil {
			return err
		} else if !ok {
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
func (c *Composite) findIn(s *parser.SelectStmt, scope []parser.CTE, cat *catalog.Catalog, sess Session) error {
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
func (c *Composite) tryPart(s, key *parser.SelectStmt, visible []parser.CTE, cat *catalog.Catalog, sess Session) (bool, error) {
	q := s
	if extra := unshadowed(visible, s.With); len(extra) > 0 {
		cp := *s
		cp.With = append(extra, s.With...)
		cp.WithPos = s.Pos()
		q = &cp
	}
	plan, err := PlanSelect(q, cat, sess)
	if err != nil {
		return false, nil
	}
	p, ok := plan.(*PrivateQuery)
	if !ok {
		return false, nil
	}
	c.Parts = append(c.Parts, &Part{Key: key, Stmt: q, Plan: p})
	return true, nil
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

// scalarSubqueries lists the scalar subqueries of s's expressions (not
// those nested inside another subquery); deep also visits its WITH
// queries and FROM subqueries.
func scalarSubqueries(s *parser.SelectStmt, deep bool) []*parser.SubqueryExpr {
	var out []*parser.SubqueryExpr
	visit := func(e parser.Expr) {
		parser.Walk(e, func(x parser.Expr) bool {
			if sq, ok := x.(*parser.SubqueryExpr); ok {
				out = append(out, sq)
			}
			return true
		})
	}
	forEachExpr(s, visit)
	for _, o := range s.DPOptions {
		visit(o.Value)
	}
	var from func(f parser.FromItem)
	from = func(f parser.FromItem) {
		switch f := f.(type) {
		case *parser.SubqueryRef:
			if deep {
				out = append(out, scalarSubqueries(f.Query, true)...)
			}
		case *parser.JoinExpr:
			from(f.Left)
			from(f.Right)
			if f.On != nil {
				visit(f.On)
			}
		}
	}
	if s.From != nil {
		from(s.From)
	}
	if deep {
		for i := range s.With {
			out = append(out, scalarSubqueries(s.With[i].Query, true)...)
		}
		for _, arm := range s.Compound {
			out = append(out, scalarSubqueries(arm.Select, true)...)
		}
	}
	return out
}

// planSubqueries plans every scalar subquery of a public statement on its
// own; each must be public (or a released result), and its SQL and reads
// join the statement's.
func planSubqueries(stmt *parser.SelectStmt, cat *catalog.Catalog, sess Session, rn *renderer) error {
	for _, sq := range scalarSubqueries(stmt, true) {
		plan, err := PlanSelect(sq.Query, cat, sess)
		if err != nil {
			return err
		}
		pub, ok := plan.(*PublicQuery)
		if !ok {
			return errorf(sq.Lparen, ErrNotPrivate, "a subquery over a private table must be a DP query of its own (with aggregates), answered before the query that uses it")
		}
		rn.subSQL[sq] = "(" + pub.SQL + ")"
		for t, cols := range pub.Reads {
			for col := range cols {
				rn.read(t, col)
			}
		}
	}
	return nil
}

// refuseInPrivate refuses what only a public query (or one over released
// results) may use: DISTINCT, compound arms and scalar subqueries
// (derived refuses DISTINCT in a subquery on a private table).
func refuseInPrivate(stmt *parser.SelectStmt) error {
	if stmt.Distinct {
		return errorf(stmt.SelectPos, ErrUnsupported, "SELECT DISTINCT is not available in a query on a private table (a DP query's groups are already distinct); to post-process its answer, put the DP query in FROM: SELECT DISTINCT ... FROM (SELECT ...) AS r")
	}
	if w := windowCall(stmt); w != nil {
		return errorf(w.Over.OverPos, ErrUnsupported, "window functions (%s ... OVER) are not available in a query on a private table; apply them to a DP query's answer in an outer query (SELECT ..., RANK() OVER (ORDER BY n) FROM (SELECT ...) AS r)", w.Name)
	}
	if subs := scalarSubqueries(stmt, true); len(subs) > 0 {
		return errorf(subs[0].Lparen, ErrUnsupported, "a subquery in an expression is not available in a query on a private table; use the DP query's answer in an outer query instead (SELECT ... FROM (SELECT ...) AS r)")
	}
	var err error
	var walk func(q *parser.SelectStmt)
	walk = func(q *parser.SelectStmt) {
		for i := range q.With {
			walk(q.With[i].Query)
		}
		var from func(f parser.FromItem)
		from = func(f parser.FromItem) {
			switch f := f.(type) {
			case *parser.SubqueryRef:
				walk(f.Query)
			case *parser.JoinExpr:
				from(f.Left)
				from(f.Right)
			}
		}
		if q.From != nil {
			from(q.From)
		}
		if len(q.Compound) > 0 && err == nil {
			err = errorf(q.Compound[0].OpPos, ErrUnsupported, "%s inside a query on a private table is not available; each arm can be a DP query of its own", q.Compound[0].Op)
		}
	}
	walk(stmt)
	return err
}

// windowCall finds a window function anywhere in a statement's
// expressions, its WITH queries and FROM subqueries.
func windowCall(stmt *parser.SelectStmt) *parser.CallExpr {
	var found *parser.CallExpr
	visit := func(e parser.Expr) {
		parser.Walk(e, func(x parser.Expr) bool {
			if c, ok := x.(*parser.CallExpr); ok && c.Over != nil && found == nil {
				found = c
			}
			return found == nil
		})
	}
	var walk func(q *parser.SelectStmt)
	walk = func(q *parser.SelectStmt) {
		forEachExpr(q, visit)
		for i := range q.With {
			walk(q.With[i].Query)
		}
		var from func(f parser.FromItem)
		from = func(f parser.FromItem) {
			switch f := f.(type) {
			case *parser.SubqueryRef:
				walk(f.Query)
			case *parser.JoinExpr:
				from(f.Left)
				from(f.Right)
				if f.On != nil {
					visit(f.On)
				}
			}
		}
		if q.From != nil {
			from(q.From)
		}
	}
	walk(stmt)
	return found
}

// planCompound plans SELECT ... UNION ALL SELECT ... (and UNION,
// INTERSECT, EXCEPT): every arm must be public or a released result; ORDER
// BY and LIMIT apply to the whole.
func planCompound(s *parser.SelectStmt, cat *catalog.Catalog, sess Session) (Plan, error) {
	reads := map[string]map[string]bool{}
	armSQL := func(q, key *parser.SelectStmt, pos parser.Pos) (string, []string, error) {
		if r, ok := sess.Released[key]; ok {
			return releasedSelect(r), r.Columns, nil
		}
		plan, err := PlanSelect(q, cat, sess)
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
	rn := newRenderer()
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
