package measuresql

import "strings"

// The statement as a tree. Each shape (shapes.go) is built from these
// relations — scans of stored tables, joins, selections with their
// filters, groupings and windows, unions — and printed once, by the
// dialect where engines differ (a semi-join), so that no shape pastes
// together the text of another. Expressions inside them (items,
// conditions) are the dialect's own text (values.go, filter.go).

// rel is a relation the statement reads: printed as a FROM item.
type rel interface {
	item(d Dialect) string
}

// scan reads a stored table (stored: by the dialect's name for it) or a
// WITH relation, by its name, under an alias ("" for none).
type scan struct {
	table, alias string
	stored       bool
}

func (s scan) item(d Dialect) string {
	name := d.Quote(s.table)
	if s.stored {
		name = d.Table(s.table)
	}
	if s.alias == "" {
		return name
	}
	return name + " AS " + d.Quote(s.alias)
}

// joinKind is how a join pairs its sides.
type joinKind int

const (
	innerJoin joinKind = iota // the pairs that meet the conditions
	leftJoin                  // and each left row without one, with NULLs
	semiJoin                  // the left rows some right row meets
	crossJoin                 // every pair (no conditions)
)

// join reads left and right together on the conditions.
type join struct {
	kind        joinKind
	left, right rel
	on          []string
}

func (j join) item(d Dialect) string {
	l, r := j.left.item(d), j.right.item(d)
	on := "TRUE"
	if len(j.on) > 0 {
		on = strings.Join(j.on, " AND ")
	}
	switch j.kind {
	case semiJoin:
		item, exists := d.SemiJoin(l, r, on)
		if exists {
			// query.text prints it as EXISTS; every semi-join is a query's FROM.
			panic(decline("a semi-join nested in a join"))
		}
		return item
	case crossJoin:
		return "(" + l + " CROSS JOIN " + r + ")"
	case leftJoin:
		return l + " LEFT JOIN " + r + " ON " + on
	}
	return l + " JOIN " + r + " ON " + on
}

// query is SELECT items FROM from [WHERE where] [GROUP BY groupBy], with
// the WITH relations first when it is the statement, under alias when it
// is a FROM item.
type query struct {
	with    []named
	items   []string
	from    rel
	where   []string
	groupBy []string
	alias   string
}

// named is a relation of a WITH clause; scan marks the scan's rows, which
// a dialect may read where they are used rather than once (Dialect.With).
type named struct {
	name string
	q    *query
	scan bool
}

// text prints the query as a statement (or a subquery's body).
func (q *query) text(d Dialect) string {
	var b strings.Builder
	for i, n := range q.with {
		if i == 0 {
			b.WriteString("WITH ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(d.With(n.name, n.q.text(d), n.scan))
	}
	if len(q.with) > 0 {
		b.WriteString(" ")
	}
	items := q.items
	if len(items) == 0 {
		items = []string{"1 AS one"}
	}
	from, where := q.from, q.where
	if j, ok := from.(join); ok && j.kind == semiJoin {
		if _, exists := d.SemiJoin("", "", ""); exists {
			// The dialect has no semi-join: EXISTS among the conditions.
			on := "TRUE"
			if len(j.on) > 0 {
				on = strings.Join(j.on, " AND ")
			}
			from, where = j.left, append(append([]string{}, where...), "EXISTS (SELECT 1 FROM "+j.right.item(d)+" WHERE "+on+")")
		}
	}
	b.WriteString("SELECT " + strings.Join(items, ", ") + " FROM " + from.item(d))
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	if len(q.groupBy) > 0 {
		b.WriteString(" GROUP BY " + strings.Join(q.groupBy, ", "))
	}
	return b.String()
}

func (q *query) item(d Dialect) string { return "(" + q.text(d) + ") AS " + q.alias }

// as is the query under an alias, as a FROM item.
func (q *query) as(alias string) *query {
	c := *q
	c.alias = alias
	return &c
}

// union is UNION ALL of the queries, under an alias.
type union struct {
	parts []*query
	alias string
}

func (u union) item(d Dialect) string {
	texts := make([]string, len(u.parts))
	for i, p := range u.parts {
		texts[i] = p.text(d)
	}
	return "(" + strings.Join(texts, " UNION ALL ") + ") AS " + u.alias
}

// withName reads a WITH relation by its name (unquoted: the compiler's
// own names) under an alias ("" for none).
type withName struct{ name, alias string }

func (w withName) item(Dialect) string {
	if w.alias == "" {
		return w.name
	}
	return w.name + " AS " + w.alias
}
