package measuresql

// The statement's relations. Each shape (shapes.go) is built from these
// relations — scans of stored tables, joins, selections with their
// filters, groupings and windows, unions — over expression nodes
// (tree.go), and printed once, by the dialect where engines differ (a
// semi-join), so that no shape pastes together the text of another.

// rel is a relation the statement reads: printed as a FROM item.
type rel interface {
	expr
}

// scan reads a stored table (stored: by the dialect's name for it) or a
// WITH relation, by its name, under an alias ("" for none).
type scan struct {
	table, alias string
	stored       bool
}

func (s scan) print(p *printer) {
	if s.stored {
		p.w(p.d.Table(s.table))
	} else {
		p.w(p.d.Quote(s.table))
	}
	if s.alias != "" {
		p.w(" AS " + p.d.Quote(s.alias))
	}
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
	on          []expr
}

// conditions is the conjunction of conds (TRUE for none).
func conditions(conds []expr) expr {
	if len(conds) == 0 {
		return raw("TRUE")
	}
	return list{conds, " AND "}
}

func (j join) print(p *printer) {
	on := conditions(j.on)
	switch j.kind {
	case semiJoin:
		item, exists := p.d.SemiJoin(j.left, j.right, on)
		if exists {
			// query.printQuery prints it as EXISTS; every semi-join is a query's FROM.
			panic(decline("a semi-join nested in a join"))
		}
		item.print(p)
	case crossJoin:
		formOf("({} CROSS JOIN {})", j.left, j.right).print(p)
	case leftJoin:
		formOf("{} LEFT JOIN {} ON {}", j.left, j.right, on).print(p)
	default:
		formOf("{} JOIN {} ON {}", j.left, j.right, on).print(p)
	}
}

// list is the nodes with sep between them.
type list struct {
	xs  []expr
	sep string
}

func (l list) print(p *printer) { p.list(l.xs, l.sep) }

// query is SELECT items FROM from [WHERE where] [GROUP BY groupBy], with
// the WITH relations first when it is the statement, under alias when it
// is a FROM item.
type query struct {
	with    []named
	items   []expr
	from    rel
	where   []expr
	groupBy []expr
	alias   string
}

// named is a relation of a WITH clause; scan marks the scan's rows, which
// a dialect may read where they are used rather than once (Dialect.With).
type named struct {
	name string
	q    *query
	scan bool
}

// statement is a query printed as a statement (or a subquery's body).
type statement struct{ q *query }

func (s statement) print(p *printer) { s.q.printQuery(p) }

// printQuery prints the query as a statement (or a subquery's body).
func (q *query) printQuery(p *printer) {
	for i, n := range q.with {
		if i == 0 {
			p.w("WITH ")
		} else {
			p.w(", ")
		}
		p.d.With(n.name, statement{n.q}, n.scan).print(p)
	}
	if len(q.with) > 0 {
		p.w(" ")
	}
	items := q.items
	if len(items) == 0 {
		items = []expr{raw("1 AS one")}
	}
	from, where := q.from, q.where
	if j, ok := from.(join); ok && j.kind == semiJoin {
		if _, exists := p.d.SemiJoin(nil, nil, nil); exists {
			// The dialect has no semi-join: EXISTS among the conditions.
			exists := formOf("EXISTS (SELECT 1 FROM {} WHERE {})", j.right, conditions(j.on))
			from, where = j.left, append(append([]expr{}, where...), exists)
		}
	}
	p.w("SELECT ")
	p.list(items, ", ")
	p.w(" FROM ")
	from.print(p)
	if len(where) > 0 {
		p.w(" WHERE ")
		p.list(where, " AND ")
	}
	if len(q.groupBy) > 0 {
		p.w(" GROUP BY ")
		p.list(q.groupBy, ", ")
	}
}

// print prints the query as a FROM item: (statement) AS alias.
func (q *query) print(p *printer) {
	p.w("(")
	q.printQuery(p)
	p.w(") AS " + q.alias)
}

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

func (u union) print(p *printer) {
	p.w("(")
	for i, q := range u.parts {
		if i > 0 {
			p.w(" UNION ALL ")
		}
		q.printQuery(p)
	}
	p.w(") AS " + u.alias)
}

// withName reads a WITH relation by its name (unquoted: the compiler's
// own names) under an alias ("" for none).
type withName struct{ name, alias string }

func (w withName) print(p *printer) {
	p.w(w.name)
	if w.alias != "" {
		p.w(" AS " + w.alias)
	}
}
