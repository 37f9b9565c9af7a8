package planner

import (
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/parser"
)

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
