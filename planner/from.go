package planner

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/parser"
)

// relCol is a column of the FROM clause's relation.
type relCol struct {
	qual    string // the table name or alias that qualifies it
	name    string
	sql     string // how the rewritten SQL names it
	bounds  *catalog.Bounds
	domain  []any
	private bool
}

// relation is what the FROM clause produces: its columns, its SQL, and
// the privacy unit of its rows.
type relation struct {
	name    string // for messages
	cols    []*relCol
	private bool
	// unit: the policy's unit and bounds; unitSQL names the unit of each
	// row in the relation ("" when each row is its own unit and needs no
	// bounding: a single private table without a unit column).
	unit    catalog.Unit
	unitSQL string
	// base is the private base table, when the relation is exactly one.
	base *catalog.Table
}

// resolve finds the column a reference names.
func (r *relation) resolve(c *parser.ColumnRef) (*relCol, error) {
	var found *relCol
	for _, col := range r.cols {
		if !strings.EqualFold(col.name, c.Name) || (c.Table != "" && !strings.EqualFold(col.qual, c.Table)) {
			continue
		}
		if found != nil {
			return nil, errorf(c.NamePos, ErrUnknownName, "column %q is ambiguous: qualify it with its table, as t.%s", c.Name, c.Name)
		}
		found = col
	}
	if found == nil {
		if c.Table != "" {
			return nil, errorf(c.NamePos, ErrUnknownName, "unknown column %s.%q", c.Table, c.Name)
		}
		return nil, errorf(c.NamePos, ErrUnknownName, "unknown column %q in %s", c.Name, r.name)
	}
	return found, nil
}

// fromBuilder turns a FROM clause into a relation, checking that every
// shape is one the engine can keep private.
type fromBuilder struct {
	cat  *catalog.Catalog
	ctes map[string]*parser.CTE
	// joined is set when the FROM has more than one item or a subquery,
	// so rows can repeat and each needs an explicit unit.
	joined bool
}

// buildFrom returns the FROM clause's relation and the builder that knows
// its WITH queries (for rendering the clause).
func buildFrom(stmt *parser.SelectStmt, cat *catalog.Catalog) (*relation, *fromBuilder, error) {
	fb := &fromBuilder{cat: cat, ctes: map[string]*parser.CTE{}}
	for i := range stmt.With {
		c := &stmt.With[i]
		if _, dup := fb.ctes[strings.ToLower(c.Name)]; dup {
			return nil, nil, errorf(c.NamePos, ErrInvalidOption, "WITH name %q is defined twice", c.Name)
		}
		fb.ctes[strings.ToLower(c.Name)] = c
	}
	_, isTable := stmt.From.(*parser.TableRef)
	fb.joined = !isTable
	if t, ok := stmt.From.(*parser.TableRef); ok && fb.ctes[strings.ToLower(t.Name)] != nil {
		fb.joined = true
	}
	rel, err := fb.item(stmt.From)
	return rel, fb, err
}

func (fb *fromBuilder) item(f parser.FromItem) (*relation, error) {
	switch f := f.(type) {
	case *parser.TableRef:
		if cte, alias := fb.cte(f); cte != nil {
			return fb.derived(cte.Query, alias, cte.NamePos)
		}
		return fb.table(f)
	case *parser.SubqueryRef:
		return fb.derived(f.Query, f.Alias, f.Lparen)
	case *parser.JoinExpr:
		return fb.join(f)
	}
	return nil, fmt.Errorf("planner: unknown FROM item %T", f)
}

// cte returns the WITH query a table reference names, if any, and the
// alias its rows go by.
func (fb *fromBuilder) cte(f *parser.TableRef) (*parser.CTE, string) {
	cte := fb.ctes[strings.ToLower(f.Name)]
	if cte == nil {
		return nil, ""
	}
	if f.Alias != "" {
		return cte, f.Alias
	}
	return cte, f.Name
}

func (fb *fromBuilder) table(f *parser.TableRef) (*relation, error) {
	if catalog.IsInternalName(f.Name) {
		return nil, errorf(f.NamePos, ErrUnknownName, "unknown table %q", f.Name)
	}
	t, ok := fb.cat.Table(f.Name)
	if !ok {
		return nil, errorf(f.NamePos, ErrUnknownName, "unknown table %q (SHOW TABLES lists the tables)", f.Name)
	}
	qual := f.Alias
	if qual == "" {
		qual = t.Name
	}
	r := &relation{name: fmt.Sprintf("table %q", t.Name), private: !t.Public, unit: t.Unit}
	prefix := ""
	if fb.joined {
		prefix = parser.QuoteIdent(qual) + "."
	}
	for _, c := range t.Columns {
		col := &relCol{qual: qual, name: c.Name, sql: prefix + parser.QuoteIdent(c.Name), private: !t.Public}
		if b, ok := t.Bounds[c.Name]; ok && !t.Public {
			col.bounds = &b
		}
		if !t.Public {
			col.domain = t.Domains[c.Name]
		}
		r.cols = append(r.cols, col)
	}
	if !t.Public {
		r.base = t
		switch {
		case t.Unit.Column != "":
			r.unitSQL = prefix + parser.QuoteIdent(t.Unit.Column)
		case fb.joined:
			// Each row is a unit, but a join can repeat it: the row's
			// identity becomes the unit, so bounding keeps it once.
			r.unitSQL = parser.QuoteIdent(qual) + ".rowid"
			r.unit = catalog.Unit{MaxGroups: 1, MaxRows: 1}
		}
	}
	return r, nil
}

// derived checks a subquery in FROM (or a WITH query). It must read one
// private table with a privacy unit column and keep that column, either
// row by row (no GROUP BY, no aggregates) or per unit (GROUP BY includes
// the unit column). Then each of its rows belongs to exactly one unit and
// is computed from that unit's rows only, so adding or removing a unit
// changes only that unit's rows of the derived table — the bounding and
// sensitivities that follow apply to it unchanged. Its values are not
// released: only the outer query's noisy aggregates are.
func (fb *fromBuilder) derived(q *parser.SelectStmt, alias string, pos parser.Pos) (*relation, error) {
	refuse := func(p parser.Pos, format string, args ...any) error {
		return errorf(p, ErrUnsupported, "subquery %q: "+format, append([]any{alias}, args...)...)
	}
	if len(q.With) > 0 || q.DP {
		return nil, refuse(q.SelectPos, "WITH and DIFFERENTIAL_PRIVACY options belong to the outer query")
	}
	if q.From == nil {
		return nil, refuse(q.SelectPos, "needs a FROM clause")
	}
	tref, ok := q.From.(*parser.TableRef)
	if !ok || fb.ctes[strings.ToLower(tref.Name)] != nil {
		return nil, refuse(q.From.Pos(), "must read one table (joins go in the outer query)")
	}
	if q.Limit != nil || q.Offset != nil || len(q.OrderBy) > 0 {
		return nil, refuse(q.SelectPos, "LIMIT, OFFSET and ORDER BY would let other units decide which rows remain")
	}
	inner := &fromBuilder{cat: fb.cat, ctes: map[string]*parser.CTE{}}
	base, err := inner.table(tref)
	if err != nil {
		return nil, err
	}
	r := &relation{name: fmt.Sprintf("subquery %q", alias), private: base.private, unit: base.unit}
	if base.private && base.unit.Column == "" {
		return nil, refuse(pos, "reads private table %q, which has no privacy_unit_column; a subquery must keep the unit it aggregates over", base.base.Name)
	}
	// Names of the output columns; the unit column must be among them.
	unitOut := ""
	for _, it := range q.Items {
		if it.Star {
			return nil, refuse(it.At, "list its columns instead of *")
		}
		name := it.Alias
		if c, ok := it.Expr.(*parser.ColumnRef); ok {
			col, err := base.resolve(c)
			if err != nil {
				return nil, err
			}
			if name == "" {
				name = col.name
			}
			if base.private && strings.EqualFold(col.name, base.unit.Column) {
				unitOut = name
			}
		}
		if name == "" {
			return nil, refuse(it.At, "give %s a name with AS", parser.Format(it.Expr))
		}
		r.cols = append(r.cols, &relCol{qual: alias, name: name, sql: parser.QuoteIdent(alias) + "." + parser.QuoteIdent(name), private: base.private})
	}
	if err := checkRelationColumns(q, base); err != nil {
		return nil, err
	}
	if !base.private {
		return r, nil
	}
	if unitOut == "" {
		return nil, refuse(q.SelectPos, "must select the privacy unit column %q", base.unit.Column)
	}
	hasAgg := false
	forEachExpr(q, func(e parser.Expr) { hasAgg = hasAgg || containsAggregate(e) })
	if len(q.GroupBy) > 0 || hasAgg {
		grouped := false
		for _, g := range q.GroupBy {
			if c, ok := g.(*parser.ColumnRef); ok {
				if col, err := base.resolve(c); err == nil && strings.EqualFold(col.name, base.unit.Column) {
					grouped = true
				}
			}
		}
		if !grouped {
			return nil, refuse(q.SelectPos, "aggregates in a subquery must be per unit: add %q to its GROUP BY", base.unit.Column)
		}
	}
	r.unitSQL = parser.QuoteIdent(alias) + "." + parser.QuoteIdent(unitOut)
	return r, nil
}

// checkRelationColumns resolves every column of a query against a relation.
func checkRelationColumns(q *parser.SelectStmt, r *relation) error {
	aliases := map[string]bool{}
	for _, it := range q.Items {
		if it.Alias != "" {
			aliases[strings.ToLower(it.Alias)] = true
		}
	}
	var err error
	forEachExpr(q, func(e parser.Expr) {
		parser.Walk(e, func(x parser.Expr) bool {
			if c, ok := x.(*parser.ColumnRef); ok && err == nil {
				if _, rerr := r.resolve(c); rerr != nil && !(c.Table == "" && aliases[strings.ToLower(c.Name)]) {
					err = rerr
				}
			}
			return err == nil
		})
	})
	return err
}

// join combines two relations. Allowed: public ⋈ public; private ⋈ public
// on equalities (each private row keeps its unit; repeated rows are bounded
// by the unit's l∞); private ⋈ private only when ON equates their units,
// so every joined row still belongs to one unit.
func (fb *fromBuilder) join(j *parser.JoinExpr) (*relation, error) {
	l, err := fb.item(j.Left)
	if err != nil {
		return nil, err
	}
	r, err := fb.item(j.Right)
	if err != nil {
		return nil, err
	}
	out := &relation{name: l.name + " joined with " + r.name, cols: append(append([]*relCol{}, l.cols...), r.cols...),
		private: l.private || r.private}
	// ON must be a conjunction of equalities between columns.
	var eqs [][2]*relCol
	var walk func(e parser.Expr) error
	walk = func(e parser.Expr) error {
		switch e := e.(type) {
		case *parser.ParenExpr:
			return walk(e.X)
		case *parser.BinaryExpr:
			if e.Op == "AND" {
				if err := walk(e.X); err != nil {
					return err
				}
				return walk(e.Y)
			}
			if e.Op == "=" {
				a, aok := e.X.(*parser.ColumnRef)
				b, bok := e.Y.(*parser.ColumnRef)
				if aok && bok {
					ca, err := out.resolve(a)
					if err != nil {
						return err
					}
					cb, err := out.resolve(b)
					if err != nil {
						return err
					}
					eqs = append(eqs, [2]*relCol{ca, cb})
					return nil
				}
			}
		}
		return errorf(e.Pos(), ErrUnsupported, "a JOIN condition must be column = column, joined with AND; found %s", parser.Format(e))
	}
	if err := walk(j.On); err != nil {
		return nil, err
	}
	switch {
	case !l.private && !r.private:
		return out, nil
	case l.private && r.private:
		if l.unitSQL == "" || r.unitSQL == "" || l.unit.Column == "" || r.unit.Column == "" {
			return nil, errorf(j.JoinPos, ErrNotPrivate, "joining two private relations needs a privacy_unit_column on both, equated in ON (%s, %s)", l.name, r.name)
		}
		matched := false
		for _, e := range eqs {
			if (e[0].sql == l.unitSQL && e[1].sql == r.unitSQL) || (e[1].sql == l.unitSQL && e[0].sql == r.unitSQL) {
				matched = true
			}
		}
		if !matched {
			return nil, errorf(j.JoinPos, ErrNotPrivate, "two private relations may only be joined on their privacy unit columns: add %s = %s to ON", l.unitSQL, r.unitSQL)
		}
		out.unit, out.unitSQL = l.unit, l.unitSQL
	default:
		p := l
		if r.private {
			p = r
		}
		out.unit, out.unitSQL = p.unit, p.unitSQL
	}
	return out, nil
}

// fromSQL renders the FROM clause for the rewritten query, with WITH
// queries inlined as subqueries.
func (fb *fromBuilder) fromSQL(f parser.FromItem) string {
	switch f := f.(type) {
	case *parser.TableRef:
		if cte, alias := fb.cte(f); cte != nil {
			return "(" + parser.FormatStmt(cte.Query) + ") AS " + parser.QuoteIdent(alias)
		}
		return parser.FormatFrom(f)
	case *parser.SubqueryRef:
		return parser.FormatFrom(f)
	case *parser.JoinExpr:
		return fb.fromSQL(f.Left) + " JOIN " + fb.fromSQL(f.Right) + " ON " + parser.Format(f.On)
	}
	return ""
}
