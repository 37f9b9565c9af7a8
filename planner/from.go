package planner

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/parser"
)

// relCol is a column of the FROM clause's relation.
type relCol struct {
	qual    string // the table name or alias that qualifies it (analyst's spelling)
	name    string
	sql     string // how the rewritten SQL names it: "generated alias"."column"
	bounds  *catalog.Bounds
	domain  []any
	private bool
	// table and column name the base table column it is, for the
	// authorizer ("" for computed columns of a subquery).
	table, column string
	// unit is the relation's unit SQL when the column's value is the
	// privacy unit by provenance (the base unit column itself, or a
	// subquery output that is exactly that column); "" otherwise.
	unit string
	// fromUnit: a subquery output computed from the unit (uid + 0, say)
	// other than by counting: grouping by it would group by units as
	// surely as grouping by the unit, and is refused alike.
	fromUnit bool
	// qualifiedOnly: the right side's column of a JOIN ... USING, which
	// an unqualified name does not reach (it names the left side's).
	qualifiedOnly bool
	// intAffinity: a base column whose declared type gives it SQLite's
	// INTEGER affinity (the type contains "INT"); numAffinity: INTEGER,
	// REAL or NUMERIC affinity (neither TEXT nor BLOB).
	intAffinity, numAffinity bool
	// groupsSQL lists the distinct non-NULL values of a public column
	// joined with a private relation (its public groups); publicGroups:
	// the column is on the preserved public side of an outer join, so a
	// GROUP BY on it takes those values whatever the options.
	groupsSQL    string
	publicGroups bool
	// ref is the stored table reference the column belongs to, counted
	// from 1 in the order the FROM clause names them (0: a computed
	// column of a subquery).
	ref int
}

// relation is what the FROM clause produces: its columns, its SQL, and
// the privacy unit of its rows.
type relation struct {
	name    string // for messages
	cols    []*relCol
	private bool
	// unit: the policy's unit and bounds; unitSQL names the unit of each
	// row in the relation ("" when each row is its own unit and needs no
	// bounding: a single private table without a unit column). The unit
	// is always carried by the engine from the base table's column, under
	// a name the analyst cannot write.
	unit    catalog.Unit
	unitSQL string
	// unitBase names the base column the unit comes from, for EXPLAIN.
	unitBase string
	// base is the private base table, when the relation is exactly one.
	base *catalog.Table
	// weightSQL reads the weight of a Weighted base table (only a
	// relation that is exactly that table has it).
	weightSQL string
	// sql is the relation as a FROM item, printed from resolved names.
	sql string
	rn  *renderer
	// joined is the relation as stored tables joined by column
	// equalities, when it is that (nil for a subquery, or an outer join
	// that keeps SQL's meaning); notJoined says why it is not.
	joined    *Joined
	notJoined string
}

// Joined is a FROM clause that reads only stored tables, joined (inner,
// or outer with a private side, which runs as inner) on equalities of
// columns: the tables in the order the clause names them, and the
// equalities every row satisfies.
type Joined struct {
	Tables []string
	On     [][2]TableColumn
	// Compare are the comparisons of columns a private ⋈ public join is
	// on besides its equalities (BETWEEN as two), all of which must hold.
	Compare []JoinComparison
	// Where is the filter of a subquery (or WITH query) that keeps the
	// rows of one table as they are (nil: none); its columns resolve to
	// the table's (PrivateQuery.TableColumnOf).
	Where parser.Expr
	// Unit is the column that carries the privacy unit: Column "" for
	// the identity of table Ref's rows (a source's hidden identity
	// column, catalog.IdentityColumn); Ref 0 for a unit the plan cannot
	// name (SQLite's rowid, or none).
	Unit TableColumn
	// PerUnit is set for a subquery (or WITH query) that aggregates its
	// table per unit: its GROUP BY (the unit among it), its outputs (as
	// written, resolved against the table) and its WHERE. Columns of the
	// relation are then its outputs (PrivateQuery.DerivedOutput).
	PerUnit *PerUnit
	// derived: a subquery's relation (its table references are counted
	// inside it, so it joins with nothing in this form).
	derived bool
}

// JoinComparison is one comparison X Op Y (<, <=, >, >=) of a join's
// columns (Joined.Compare).
type JoinComparison struct {
	X, Y TableColumn
	Op   string
}

// PerUnit is a subquery's first aggregation per unit (Joined.PerUnit).
type PerUnit struct {
	By, Outputs []parser.Expr
	Where       parser.Expr
}

// TableColumn is a column of a Joined FROM clause: the table reference
// (from 1, as Joined.Tables lists them) and the column's name.
type TableColumn struct {
	Ref    int
	Column string
}

// resolve finds the column a reference names, comparing names as SQLite
// does, and records how the backend names it.
func (r *relation) resolve(c *parser.ColumnRef) (*relCol, error) {
	var found *relCol
	for _, col := range r.cols {
		if !catalog.SameName(col.name, c.Name) || (c.Table != "" && !catalog.SameName(col.qual, c.Table)) || (c.Table == "" && col.qualifiedOnly) {
			continue
		}
		if found != nil {
			return nil, errorf(c.NamePos, ErrUnknownName, "column %q is ambiguous: qualify it with its table, as t.%s", c.Name, c.Name)
		}
		found = col
	}
	if found == nil {
		var names []string
		for _, col := range r.cols {
			if (c.Table == "" || catalog.SameName(col.qual, c.Table)) && !catalog.IsInternalName(col.name) {
				names = append(names, col.name)
			}
		}
		if c.Table != "" {
			return nil, errorf(c.NamePos, ErrUnknownColumn, "unknown column %s.%q%s", c.Table, c.Name, didYouMean(c.Name, names))
		}
		return nil, errorf(c.NamePos, ErrUnknownColumn, "unknown column %q in %s%s", c.Name, r.name, didYouMean(c.Name, names))
	}
	r.rn.cols[c] = found.sql
	if x, ok := r.rn.derived[found]; ok {
		r.rn.derivedRefs[c] = x
	}
	if i, ok := r.rn.derivedOut[found]; ok {
		r.rn.derivedOutRefs[c] = i
	}
	if found.intAffinity {
		r.rn.intCols[c] = true
	}
	if found.numAffinity {
		r.rn.numCols[c] = true
	}
	if found.table != "" {
		r.rn.read(found.table, found.column)
		r.rn.baseCols[c] = TableColumn{Ref: found.ref, Column: found.column}
	}
	return found, nil
}

// fromBuilder turns a FROM clause into a relation, checking that every
// shape is one the engine can keep private.
type fromBuilder struct {
	cat  *catalog.Catalog
	ctes map[string]*parser.CTE // by folded name
	// joined is set when the FROM has more than one item or a subquery,
	// so rows can repeat and each needs an explicit unit.
	joined bool
	rn     *renderer
	// released: the composite query's parts, by the statement each stands
	// for (see PlanComposite).
	released map[*parser.SelectStmt]*Released
	// refs counts the stored tables this builder has read (relCol.ref).
	refs int
}

// buildFrom returns the FROM clause's relation.
func buildFrom(stmt *parser.SelectStmt, cat *catalog.Catalog, rn *renderer, released map[*parser.SelectStmt]*Released) (*relation, error) {
	fb := &fromBuilder{cat: cat, ctes: map[string]*parser.CTE{}, rn: rn, released: released}
	for i := range stmt.With {
		c := &stmt.With[i]
		if catalog.IsInternalName(c.Name) {
			return nil, errorf(c.NamePos, ErrInvalidOption, "WITH name %q is reserved", c.Name)
		}
		if _, dup := fb.ctes[catalog.FoldName(c.Name)]; dup {
			return nil, errorf(c.NamePos, ErrInvalidOption, "WITH name %q is defined twice", c.Name)
		}
		fb.ctes[catalog.FoldName(c.Name)] = c
	}
	_, isTable := stmt.From.(*parser.TableRef)
	fb.joined = !isTable
	if t, ok := stmt.From.(*parser.TableRef); ok && fb.ctes[catalog.FoldName(t.Name)] != nil {
		fb.joined = true
	}
	return fb.item(stmt.From)
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
	cte := fb.ctes[catalog.FoldName(f.Name)]
	if cte == nil {
		return nil, ""
	}
	if f.Alias != "" {
		return cte, f.Alias
	}
	return cte, f.Name
}

// rowidNames are SQLite's names for a rowid; a real column can shadow each.
var rowidNames = []string{"rowid", "_rowid_", "oid"}

func (fb *fromBuilder) table(f *parser.TableRef) (*relation, error) {
	if catalog.IsInternalName(f.Name) {
		return nil, errorf(f.NamePos, ErrUnknownName, "unknown table %q", f.Name)
	}
	t, ok := fb.cat.Table(f.Name)
	if !ok {
		var names []string
		for _, t := range fb.cat.Tables() {
			if !catalog.IsInternalName(t.Name) {
				names = append(names, t.Name)
			}
		}
		if hint := didYouMean(f.Name, names); hint != "" {
			return nil, errorf(f.NamePos, ErrUnknownName, "unknown table %q%s", f.Name, hint)
		}
		return nil, errorf(f.NamePos, ErrUnknownName, "unknown table %q (SHOW TABLES lists the tables)", f.Name)
	}
	if t.Unreadable != nil {
		return nil, errorf(f.NamePos, ErrUnknownName, "table %q cannot be read: %v", t.Name, t.Unreadable)
	}
	qual := f.Alias
	if qual == "" {
		qual = t.Name
	}
	if catalog.IsInternalName(qual) {
		return nil, errorf(f.NamePos, ErrInvalidOption, "alias %q is reserved", qual)
	}
	alias := fb.rn.alias()
	fb.rn.tableRefs++
	fb.refs++
	prefix := parser.QuoteIdent(alias) + "."
	r := &relation{name: fmt.Sprintf("table %q", t.Name), private: !t.Public, unit: t.Unit, rn: fb.rn,
		sql: parser.QuoteIdent(t.Name) + " AS " + parser.QuoteIdent(alias), joined: &Joined{Tables: []string{t.Name}}}
	if t.Public {
		fb.rn.read(t.Name, "*")
	} else if fb.rn.reads[t.Name] == nil {
		fb.rn.reads[t.Name] = map[string]bool{} // the table itself (its size, for COUNT(*))
	}
	for _, c := range t.Columns {
		col := &relCol{qual: qual, name: c.Name, sql: prefix + parser.QuoteIdent(c.Name), private: !t.Public, table: t.Name, column: c.Name,
			intAffinity: strings.Contains(catalog.FoldName(c.Type), "int"), numAffinity: numericAffinity(c.Type), ref: fb.refs}
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
		if t.Weighted {
			r.weightSQL = prefix + parser.QuoteIdent(catalog.WeightColumn)
		}
		switch {
		case t.Unit.Column != "":
			r.unitSQL = prefix + parser.QuoteIdent(t.Unit.Column)
			r.unitBase = parser.QuoteIdent(t.Name) + "." + parser.QuoteIdent(t.Unit.Column)
			r.joined.Unit = TableColumn{Ref: fb.refs, Column: t.Unit.Column}
			fb.rn.read(t.Name, t.Unit.Column)
			for _, col := range r.cols {
				if col.column == t.Unit.Column {
					col.unit = r.unitSQL
				}
			}
		case fb.joined && t.Identified:
			// Each row is a unit, but a join can repeat it: the row's
			// identity becomes the unit, so bounding keeps it once. A
			// source that names its rows says so in a hidden column.
			r.unitSQL = prefix + parser.QuoteIdent(catalog.IdentityColumn)
			r.unitBase = parser.QuoteIdent(t.Name) + "." + parser.QuoteIdent(catalog.IdentityColumn)
			r.unit = catalog.Unit{MaxGroups: 1, MaxRows: 1, BoundsWarnings: t.Unit.BoundsWarnings}
			r.joined.Unit = TableColumn{Ref: fb.refs} // the row's identity
			fb.rn.read(t.Name, catalog.IdentityColumn)
		case fb.joined:
			// Each row is a unit, but a join can repeat it: the row's
			// identity becomes the unit, so bounding keeps it once.
			name := ""
			for _, n := range rowidNames {
				if _, shadowed := t.Column(n); !shadowed {
					name = n
					break
				}
			}
			if name == "" {
				return nil, errorf(f.NamePos, ErrUnsupported, "table %q has columns named rowid, _rowid_ and oid, so its rows cannot be told apart in a join; the owner can set a privacy_unit_column", t.Name)
			}
			r.unitSQL = prefix + name
			r.unitBase = parser.QuoteIdent(t.Name) + "." + name
			r.unit = catalog.Unit{MaxGroups: 1, MaxRows: 1, BoundsWarnings: t.Unit.BoundsWarnings}
			fb.rn.read(t.Name, "ROWID")
			// SQLite reports a rowid read under the name of an INTEGER
			// PRIMARY KEY column, if the table has one.
			for _, c := range t.Columns {
				if catalog.SameName(c.Type, "INTEGER") {
					fb.rn.read(t.Name, c.Name)
				}
			}
		}
	}
	return r, nil
}

// subqueryAggregates are the aggregates a subquery in FROM may use: those
// SQLite has and the renderer makes total.
var subqueryAggregates = map[string]bool{"COUNT": true, "SUM": true, "AVG": true, "MIN": true, "MAX": true}

// unitColumn is the reserved output column that carries a subquery's
// privacy unit; outputColumn names its other outputs. Analysts cannot
// write names with the reserved prefix, so neither can be impersonated.
const unitColumn = catalog.InternalPrefix + "unit"

func outputColumn(i int) string { return fmt.Sprintf("%sc%d", catalog.InternalPrefix, i) }

// derived checks a subquery in FROM (or a WITH query). It must read one
// table; if that table is private it must have a privacy unit column, and
// the subquery either keeps rows as they are (no GROUP BY, no aggregates)
// or aggregates per unit (GROUP BY includes the unit column). Then each of
// its rows belongs to exactly one unit and is computed from that unit's
// rows only, so adding or removing a unit changes only that unit's rows of
// the derived table — the bounding and sensitivities that follow apply to
// it unchanged. The unit travels in a reserved column projected from the
// base unit column (UnitProvenance), whatever the analyst names the
// outputs; the outputs get generated names too. Its values are not
// released: only the outer query's noisy aggregates are.
func (fb *fromBuilder) derived(q *parser.SelectStmt, alias string, pos parser.Pos) (*relation, error) {
	if r, ok := fb.released[q]; ok {
		return fb.releasedRelation(r, alias, pos)
	}
	refuse := func(p parser.Pos, format string, args ...any) error {
		return errorf(p, ErrUnsupported, "subquery %q: "+format, append([]any{alias}, args...)...)
	}
	tref, err := fb.derivedTable(q, alias, pos, refuse)
	if err != nil {
		return nil, err
	}
	inner := &fromBuilder{cat: fb.cat, ctes: map[string]*parser.CTE{}, rn: fb.rn, joined: true}
	base, err := inner.table(tref)
	if err != nil {
		return nil, err
	}
	outAlias := fb.rn.alias()
	r := &relation{name: fmt.Sprintf("subquery %q", alias), private: base.private, unit: base.unit, rn: fb.rn}
	if base.private && base.unit.Column == "" {
		return nil, refuse(pos, "reads private table %q, which has no privacy_unit_column; a subquery must keep the unit it aggregates over", base.base.Name)
	}
	if base.private {
		r.unitSQL = parser.QuoteIdent(outAlias) + "." + parser.QuoteIdent(unitColumn)
		r.unitBase = base.unitBase
	}
	q = expandStar(q, base)
	names, err := derivedColumns(q, alias, outAlias, base, r, refuse)
	if err != nil {
		return nil, err
	}
	if err := resolveAll(q, base, func(name string) (string, bool) {
		for i, n := range names {
			if q.Items[i].Alias != "" && catalog.SameName(n, name) {
				return parser.QuoteIdent(outputColumn(i)), true
			}
		}
		return "", false
	}); err != nil {
		return nil, err
	}
	if err := checkDerivedAggregates(q, base, refuse); err != nil {
		return nil, err
	}
	if r.sql, err = fb.derivedSQL(q, base, outAlias, refuse); err != nil {
		return nil, err
	}
	r.notJoined = "the scan reads a subquery or WITH query that aggregates with HAVING"
	if base.joined != nil && base.private && !rowPreserving(q) && q.Having == nil {
		// One row per group of units: the plan aggregates twice.
		r.joined = &Joined{Tables: base.joined.Tables, Unit: base.joined.Unit, derived: true,
			PerUnit: &PerUnit{By: q.GroupBy, Where: q.Where}}
		for i, it := range q.Items {
			r.joined.PerUnit.Outputs = append(r.joined.PerUnit.Outputs, it.Expr)
			fb.rn.derivedOut[r.cols[i]] = i
		}
	}
	if rowPreserving(q) && base.joined != nil && base.private {
		// Its rows are the table's rows that pass its filter, each output
		// an expression of one row: the plan reads the table itself.
		r.joined = &Joined{Tables: base.joined.Tables, Unit: base.joined.Unit, Where: q.Where, derived: true}
		for i, it := range q.Items {
			fb.rn.derived[r.cols[i]] = it.Expr
		}
	}
	if (fb.rn.knobs != nil && fb.rn.knobs.UnitByName) && base.private { // a re-introduced bug, for the auditor's tests
		for i, n := range names {
			if catalog.SameName(n, base.unit.Column) {
				r.unitSQL = parser.QuoteIdent(outAlias) + "." + parser.QuoteIdent(outputColumn(i))
			}
		}
	}
	return r, nil
}

// rowPreserving reports whether a subquery keeps its table's rows as
// they are: no GROUP BY, HAVING or aggregate.
func rowPreserving(q *parser.SelectStmt) bool {
	if len(q.GroupBy) > 0 || q.Having != nil || q.Distinct {
		return false
	}
	agg := false
	forEachExpr(q, func(e parser.Expr) { agg = agg || containsAggregate(e) })
	return !agg
}

// refuser reports what a subquery in FROM cannot do, at a position.
type refuser func(p parser.Pos, format string, args ...any) error

// derivedTable checks a subquery's shape and returns the one table it reads.
func (fb *fromBuilder) derivedTable(q *parser.SelectStmt, alias string, pos parser.Pos, refuse refuser) (*parser.TableRef, error) {
	if len(q.With) > 0 || q.DP {
		return nil, refuse(q.SelectPos, "WITH and DIFFERENTIAL_PRIVACY options belong to the outer query")
	}
	if catalog.IsInternalName(alias) {
		return nil, errorf(pos, ErrInvalidOption, "alias %q is reserved", alias)
	}
	if q.From == nil {
		return nil, refuse(q.SelectPos, "needs a FROM clause")
	}
	tref, ok := q.From.(*parser.TableRef)
	if !ok || fb.ctes[catalog.FoldName(tref.Name)] != nil {
		return nil, refuse(q.From.Pos(), "must read one table (joins go in the outer query)")
	}
	if q.Limit != nil || q.Offset != nil || len(q.OrderBy) > 0 {
		return nil, refuse(q.SelectPos, "LIMIT, OFFSET and ORDER BY would let other units decide which rows remain")
	}
	if len(q.Compound) > 0 {
		return nil, refuse(q.Compound[0].OpPos, "%s in FROM is not available; put it in a WITH query of the outer statement, or make each arm a DP query", q.Compound[0].Op)
	}
	return tref, nil
}

// derivedColumns makes the subquery's output columns (in r) and returns
// their names.
func derivedColumns(q *parser.SelectStmt, alias, outAlias string, base, r *relation, refuse refuser) ([]string, error) {
	var names []string
	for i, it := range q.Items {
		if it.Star {
			return nil, refuse(it.At, "list its columns instead of *")
		}
		name := it.Alias
		col := &relCol{qual: alias, sql: parser.QuoteIdent(outAlias) + "." + parser.QuoteIdent(outputColumn(i)), private: base.private}
		if c, ok := it.Expr.(*parser.ColumnRef); ok {
			bc, err := base.resolve(c)
			if err != nil {
				return nil, err
			}
			if name == "" {
				name = bc.name
			}
			if bc.unit != "" {
				col.unit = r.unitSQL
			}
			col.fromUnit = bc.fromUnit
			// The output is the table's column itself, value for value: its
			// declared public domain and bounds hold for it as they do
			// for the column (docs/privacy.md).
			col.domain, col.bounds = bc.domain, bc.bounds
		} else {
			col.fromUnit = computedFromUnit(it.Expr, base)
		}
		if name == "" {
			return nil, refuse(it.At, "give %s a name with AS", parser.Format(it.Expr))
		}
		col.name = name
		names = append(names, name)
		r.cols = append(r.cols, col)
	}
	return names, nil
}

// checkDerivedAggregates refuses a constant GROUP BY, an aggregate a
// subquery cannot compute, and aggregates over a private table that are
// not per unit.
func checkDerivedAggregates(q *parser.SelectStmt, base *relation, refuse refuser) error {
	for _, g := range q.GroupBy {
		if _, err := parser.LiteralValue(g); err == nil {
			return refuse(g.Pos(), "GROUP BY takes columns or expressions; a constant would be read as a column position")
		}
	}
	var aggErr error
	forEachExpr(q, func(e parser.Expr) {
		parser.Walk(e, func(x parser.Expr) bool {
			if c, ok := x.(*parser.CallExpr); ok && parser.IsAggregate(c) && !subqueryAggregates[c.Name] && aggErr == nil {
				aggErr = refuse(c.NamePos, "aggregate %s is not available in a subquery (available: COUNT, SUM, AVG, MIN, MAX)", c.Name)
			}
			return aggErr == nil
		})
	})
	if aggErr != nil || !base.private {
		return aggErr
	}
	hasAgg := false
	forEachExpr(q, func(e parser.Expr) { hasAgg = hasAgg || containsAggregate(e) })
	if len(q.GroupBy) == 0 && !hasAgg {
		return nil
	}
	for _, g := range q.GroupBy {
		if c, ok := g.(*parser.ColumnRef); ok {
			if col, err := base.resolve(c); err == nil && col.unit != "" {
				return nil
			}
		}
	}
	return refuse(q.SelectPos, "aggregates in a subquery must be per unit: add %q to its GROUP BY", base.unit.Column)
}

// derivedSQL prints the subquery with generated output names and, over a
// private table, the unit column.
func (fb *fromBuilder) derivedSQL(q *parser.SelectStmt, base *relation, outAlias string, refuse refuser) (string, error) {
	defer func(was bool) { fb.rn.private = was }(fb.rn.private)
	fb.rn.private = base.private
	var sb strings.Builder
	sb.WriteString("(SELECT ")
	if q.Distinct {
		if base.private {
			return "", refuse(q.SelectPos, "SELECT DISTINCT is not available in a subquery on a private table")
		}
		sb.WriteString("DISTINCT ")
	}
	for i, it := range q.Items {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(fb.rn.sql(it.Expr, nil) + " AS " + parser.QuoteIdent(outputColumn(i)))
	}
	if base.private {
		sb.WriteString(", " + base.unitSQL + " AS " + parser.QuoteIdent(unitColumn))
	}
	sb.WriteString(" FROM " + base.sql)
	writeTail(&sb, q, fb.rn, false)
	sb.WriteString(") AS " + parser.QuoteIdent(outAlias))
	return sb.String(), nil
}

// writeTail prints WHERE, GROUP BY and HAVING (and, for a top-level public
// query, ORDER BY, LIMIT and OFFSET) from resolved names.
func writeTail(sb *strings.Builder, q *parser.SelectStmt, rn *renderer, orderAndLimit bool) {
	if q.Where != nil {
		sb.WriteString(" WHERE " + rn.sql(q.Where, nil))
	}
	if len(q.GroupBy) > 0 {
		sb.WriteString(" GROUP BY ")
		for i, g := range q.GroupBy {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(rn.sql(g, nil))
		}
	}
	if q.Having != nil {
		sb.WriteString(" HAVING " + rn.sql(q.Having, nil))
	}
	if !orderAndLimit {
		return
	}
	if len(q.OrderBy) > 0 {
		sb.WriteString(" ORDER BY ")
		for i, o := range q.OrderBy {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(rn.sql(o.Expr, nil))
			if o.Desc {
				sb.WriteString(" DESC")
			}
		}
	}
	if q.Limit != nil {
		sb.WriteString(" LIMIT " + rn.sql(q.Limit, nil))
		if q.Offset != nil {
			sb.WriteString(" OFFSET " + rn.sql(q.Offset, nil))
		}
	}
}

// resolveAll resolves every column of a query against a relation; a name
// that is not a column may be one of the query's own aliases, which alias
// renders.
func resolveAll(q *parser.SelectStmt, r *relation, alias func(name string) (string, bool)) error {
	var err error
	forEachExpr(q, func(e parser.Expr) {
		parser.Walk(e, func(x parser.Expr) bool {
			if c, ok := x.(*parser.ColumnRef); ok && err == nil {
				if _, rerr := r.resolve(c); rerr != nil {
					if s, ok := alias(c.Name); ok && c.Table == "" {
						r.rn.cols[c] = s
					} else {
						err = rerr
					}
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
// computedFromUnit reports an expression that reads the unit (or a column
// computed from it) outside a COUNT.
func computedFromUnit(e parser.Expr, base *relation) bool {
	found := false
	parser.Walk(e, func(x parser.Expr) bool {
		switch x := x.(type) {
		case *parser.CallExpr:
			if x.Name == "COUNT" {
				return false
			}
		case *parser.ColumnRef:
			if col, err := base.resolve(x); err == nil && (col.unit != "" || col.fromUnit) {
				found = true
			}
		}
		return !found
	})
	return found
}

// fromItemPos is where a FROM item starts, for messages.
func fromItemPos(f parser.FromItem) parser.Pos {
	switch f := f.(type) {
	case *parser.TableRef:
		return f.NamePos
	case *parser.SubqueryRef:
		return f.Lparen
	case *parser.JoinExpr:
		return fromItemPos(f.Left)
	}
	return parser.Pos{}
}

func (fb *fromBuilder) join(j *parser.JoinExpr) (*relation, error) {
	l, err := fb.item(j.Left)
	if err != nil {
		return nil, err
	}
	r, err := fb.item(j.Right)
	if err != nil {
		return nil, err
	}
	if err := distinctAliases(j, l, r); err != nil {
		return nil, err
	}
	out := &relation{name: l.name + " joined with " + r.name, cols: append(append([]*relCol{}, l.cols...), r.cols...),
		private: l.private || r.private, rn: fb.rn}
	defer func(was bool) { fb.rn.private = was }(fb.rn.private)
	fb.rn.private = out.private
	word := " JOIN " // an outer join with a private side runs as an inner one (outerJoin)
	if j.Kind != "" && !out.private {
		word = " " + j.Kind + " JOIN "
	}
	var on joinOn
	if j.On != nil {
		if err := on.read(j.On, l.private != r.private, out); err != nil {
			return nil, err
		}
		out.sql = l.sql + word + r.sql + " ON " + fb.rn.sql(j.On, nil)
	} else {
		if on.eqs, err = usingEqualities(j, l, r, out); err != nil {
			return nil, err
		}
		var conds []string
		for _, e := range on.eqs {
			conds = append(conds, e[0].sql+" = "+e[1].sql) // resolving them recorded the reads
		}
		out.sql = l.sql + word + r.sql + " ON " + strings.Join(conds, " AND ")
	}
	if j.Kind != "" {
		if err := outerJoin(j, l, r, out); err != nil {
			return nil, err
		}
	}
	joinedTables(j, l, r, out, on)
	if err := joinUnit(j, l, r, out, on.eqs); err != nil {
		return nil, err
	}
	return out, nil
}

// distinctAliases refuses a FROM that names a relation twice.
func distinctAliases(j *parser.JoinExpr, l, r *relation) error {
	for _, rc := range r.cols {
		if rc.qual == "" {
			continue
		}
		for _, lc := range l.cols {
			if catalog.SameName(lc.qual, rc.qual) {
				return errorf(fromItemPos(j.Right), ErrInvalidOption, "the name %q is used twice in FROM; give each table its own alias", rc.qual)
			}
		}
	}
	return nil
}

// joinOn is a join's condition: equalities of columns, and (between a
// private and a public relation) comparisons of columns — a public table
// of ranges joined by "x >= r.lo AND x < r.hi", whose rows each private
// row may fall in many of. Contribution bounding runs after the join, per
// unit, so any such join is bounded.
type joinOn struct {
	eqs  [][2]*relCol
	cmps []joinCmp
}

type joinCmp struct {
	op   string
	x, y *relCol
}

// read reads ON e, a conjunction of equalities between columns (and of
// comparisons when mixed: a private and a public relation), resolving
// its columns in out.
func (on *joinOn) read(e parser.Expr, mixed bool, out *relation) error {
	// columns resolves expressions that are each a column reference, when
	// cond holds (ok false when it does not, when one is not a column
	// reference, or names no column).
	columns := func(cond bool, xs ...parser.Expr) (cols []*relCol, ok bool) {
		if !cond {
			return nil, false
		}
		for _, x := range xs {
			ref, isRef := x.(*parser.ColumnRef)
			if !isRef {
				return nil, false
			}
			c, err := out.resolve(ref)
			if err != nil {
				return nil, false
			}
			cols = append(cols, c)
		}
		return cols, true
	}
	switch e := e.(type) {
	case *parser.ParenExpr:
		return on.read(e.X, mixed, out)
	case *parser.BinaryExpr:
		if e.Op == "AND" {
			if err := on.read(e.X, mixed, out); err != nil {
				return err
			}
			return on.read(e.Y, mixed, out)
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
				on.eqs = append(on.eqs, [2]*relCol{ca, cb})
				return nil
			}
		}
		switch e.Op {
		case "<", "<=", ">", ">=":
			if cs, ok := columns(mixed, e.X, e.Y); ok {
				on.cmps = append(on.cmps, joinCmp{op: e.Op, x: cs[0], y: cs[1]})
				return nil
			}
		}
	case *parser.BetweenExpr:
		if cs, ok := columns(mixed && !e.Not, e.X, e.Lo, e.Hi); ok {
			on.cmps = append(on.cmps, joinCmp{op: ">=", x: cs[0], y: cs[1]}, joinCmp{op: "<=", x: cs[0], y: cs[2]})
			return nil
		}
	}
	if mixed {
		return errorf(e.Pos(), ErrUnsupported, "a JOIN condition of a private and a public relation must be column = column or a comparison of columns (<, <=, >, >=, BETWEEN), joined with AND; found %s", parser.Format(e))
	}
	return errorf(e.Pos(), ErrUnsupported, "a JOIN condition must be column = column, joined with AND; found %s", parser.Format(e))
}

// joinedTables sets out.joined, the join as stored tables joined on
// column equalities and comparisons, or out.notJoined, why it is not.
func joinedTables(j *parser.JoinExpr, l, r, out *relation, on joinOn) {
	switch {
	case l.joined == nil || r.joined == nil:
		out.notJoined = l.notJoined + r.notJoined
		if out.notJoined == "" {
			out.notJoined = "the scan joins a relation that is not a stored table"
		}
	case l.joined.derived || r.joined.derived:
		out.notJoined = "the scan joins a subquery or WITH query with another table"
	case j.Kind != "" && !out.private:
		out.notJoined = "the scan reads an outer join of public tables"
	}
	if out.notJoined != "" {
		return
	}
	joined := &Joined{Tables: append(append([]string{}, l.joined.Tables...), r.joined.Tables...),
		On: append(append([][2]TableColumn{}, l.joined.On...), r.joined.On...), Compare: append(append([]JoinComparison{}, l.joined.Compare...), r.joined.Compare...)}
	for _, e := range on.eqs {
		if e[0].ref == 0 || e[1].ref == 0 {
			out.notJoined = "the scan joins on a computed column"
			return
		}
		joined.On = append(joined.On, [2]TableColumn{{e[0].ref, e[0].column}, {e[1].ref, e[1].column}})
	}
	for _, c := range on.cmps {
		if c.x.ref == 0 || c.y.ref == 0 {
			out.notJoined = "the scan joins on a computed column"
			return
		}
		joined.Compare = append(joined.Compare, JoinComparison{X: TableColumn{c.x.ref, c.x.column}, Y: TableColumn{c.y.ref, c.y.column}, Op: c.op})
	}
	out.joined = joined
}

// joinUnit gives the join its privacy unit: two private relations only
// on their unit columns (the left's bounds apply); a private and a public
// one, the private's (and each public column lists its values as public
// groups).
func joinUnit(j *parser.JoinExpr, l, r, out *relation, eqs [][2]*relCol) error {
	switch {
	case !l.private && !r.private:
		return nil
	case l.private && r.private:
		if l.unitSQL == "" || r.unitSQL == "" || l.unit.Column == "" || r.unit.Column == "" {
			return errorf(j.JoinPos, ErrNotPrivate, "joining two private relations needs a privacy_unit_column on both, equated in ON (%s, %s)", l.name, r.name)
		}
		matched := false
		for _, e := range eqs {
			if (e[0].unit == l.unitSQL && e[1].unit == r.unitSQL) || (e[1].unit == l.unitSQL && e[0].unit == r.unitSQL) {
				matched = true
			}
		}
		if !matched {
			return errorf(j.JoinPos, ErrNotPrivate, "two private relations may only be joined on their privacy unit columns: add %s = %s to ON", l.unitBase, r.unitBase)
		}
		out.unit, out.unitSQL, out.unitBase = l.unit, l.unitSQL, l.unitBase
		if r.unit.BoundsWarnings == catalog.BoundsWarningsError {
			out.unit.BoundsWarnings = r.unit.BoundsWarnings // either table's owner may refuse warned answers
		}
		if out.joined != nil {
			out.joined.Unit = l.joined.Unit
		}
		return nil
	}
	p, pub := l, r
	if r.private {
		p, pub = r, l
	}
	out.unit, out.unitSQL, out.unitBase = p.unit, p.unitSQL, p.unitBase
	if out.joined != nil && p.joined != nil {
		out.joined.Unit = p.joined.Unit
	}
	// Each public column can list its values as public groups.
	for k, c := range out.cols {
		for _, pc := range pub.cols {
			if c.sql == pc.sql {
				cp := *c
				cp.groupsSQL = "SELECT DISTINCT " + c.sql + " FROM " + pub.sql + " WHERE " + c.sql + " IS NOT NULL ORDER BY 1"
				out.cols[k] = &cp
			}
		}
	}
	return nil
}

// outerJoin checks LEFT/RIGHT JOIN and prints it. Public ⋈ public keeps
// SQL's meaning. With a private side, the preserved side must be public:
// the public-groups idiom (BigQuery's PUBLIC_GROUPS). Private rows are
// then joined as by an inner join — a public row without a match adds no
// row to any aggregate — and a GROUP BY on a preserved column takes its
// groups from the public side's values, every one output (empty groups
// get a noisy zero), so no private value decides which groups exist.
func outerJoin(j *parser.JoinExpr, l, r, out *relation) error {
	keep, other := l, r
	if j.Kind == "RIGHT" {
		keep, other = r, l
	}
	if !l.private && !r.private {
		if j.Kind == "RIGHT" && len(j.Using) > 0 {
			mergedOnRight(out, l, r, j.Using)
		}
		return nil
	}
	if keep.private {
		return errorf(j.JoinPos, ErrUnsupported, "%s JOIN must preserve a public relation (the public-groups idiom: FROM public_groups LEFT JOIN private_table ON ...); %s is private — use [INNER] JOIN", j.Kind, keep.name)
	}
	if !other.private {
		return nil
	}
	if j.Kind == "RIGHT" && len(j.Using) > 0 {
		mergedOnRight(out, l, r, j.Using)
	}
	for k, c := range out.cols {
		for _, kc := range keep.cols {
			if c.sql == kc.sql {
				cp := *c
				cp.publicGroups = true
				out.cols[k] = &cp
			}
		}
	}
	return nil
}

// mergedOnRight makes the unqualified name of each USING column of a
// RIGHT JOIN name the right side's column, the one SQL merges from the
// preserved side.
func mergedOnRight(out, l, r *relation, using []string) {
	visible := func(rel *relation, name string) string {
		for _, c := range rel.cols {
			if catalog.SameName(c.name, name) && !c.qualifiedOnly {
				return c.sql
			}
		}
		return ""
	}
	for _, name := range using {
		lsql, rsql := visible(l, name), visible(r, name)
		for k, c := range out.cols {
			if c.sql == lsql || c.sql == rsql {
				cp := *c
				cp.qualifiedOnly = c.sql == lsql
				out.cols[k] = &cp
			}
		}
	}
}

// usingEqualities resolves JOIN ... USING (a, ...): each name must be a
// column of both sides, once on each; the pairs are equated as ON l.a =
// r.a would. In out, an unqualified reference to a USING column names
// the left side's (equal to the right's on every joined row), as SQL's
// merged column; a qualified one still names its own side.
func usingEqualities(j *parser.JoinExpr, l, r, out *relation) ([][2]*relCol, error) {
	var eqs [][2]*relCol
	for i, name := range j.Using {
		ref := &parser.ColumnRef{NamePos: j.UsingPos[i], Name: name}
		lc, err := l.resolve(ref)
		if err != nil {
			return nil, errorf(ref.NamePos, ErrUnknownName, "USING (%s): %v", name, strings.TrimPrefix(err.Error(), ref.NamePos.String()+": "))
		}
		rc, err := r.resolve(&parser.ColumnRef{NamePos: ref.NamePos, Name: name})
		if err != nil {
			return nil, errorf(ref.NamePos, ErrUnknownName, "USING (%s): %v", name, strings.TrimPrefix(err.Error(), ref.NamePos.String()+": "))
		}
		for _, e := range eqs {
			if e[0] == lc {
				return nil, errorf(ref.NamePos, ErrInvalidOption, "column %q appears twice in USING", name)
			}
		}
		eqs = append(eqs, [2]*relCol{lc, rc})
		for k, c := range out.cols {
			if c == rc {
				hidden := *rc
				hidden.qualifiedOnly = true
				out.cols[k] = &hidden
			}
		}
	}
	return eqs, nil
}

// expandStar returns q with SELECT * replaced by the base table's
// columns, in order, as if the analyst had listed them (q itself is not
// changed: the statement's canonical text keeps its *). Each becomes a
// column reference resolved like any other, so the unit column it
// includes carries the unit as a listed one does.
func expandStar(q *parser.SelectStmt, base *relation) *parser.SelectStmt {
	star := false
	for _, it := range q.Items {
		star = star || it.Star
	}
	if !star {
		return q
	}
	out := *q
	out.Items = nil
	for _, it := range q.Items {
		if !it.Star {
			out.Items = append(out.Items, it)
			continue
		}
		for _, c := range base.cols {
			out.Items = append(out.Items, parser.SelectItem{At: it.At, Expr: &parser.ColumnRef{NamePos: it.At, Name: c.name}})
		}
	}
	return &out
}

// numericAffinity reports whether a column declared with type t has
// SQLite's INTEGER, REAL or NUMERIC affinity (its rules: "INT" gives
// INTEGER; else "CHAR", "CLOB" or "TEXT" give TEXT; else "BLOB" or no
// type give BLOB; else REAL or NUMERIC).
func numericAffinity(t string) bool {
	t = catalog.FoldName(t)
	if strings.Contains(t, "int") {
		return true
	}
	for _, w := range []string{"char", "clob", "text", "blob"} {
		if strings.Contains(t, w) {
			return false
		}
	}
	return t != ""
}
