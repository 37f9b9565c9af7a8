package measuresql

import (
	"strconv"
	"strings"
)

// The statement as a typed tree. The compiler builds expressions from
// these nodes — names, operators, calls, CASE, casts, text literals —
// and relations (rel.go) from expressions; a dialect's forms are nodes
// too (Dialect: each takes and gives nodes), so that a guard that reads
// its operand several times holds the operand's node, bound once where
// the dialect binds it (Dialect.Let), and no part of the compiler pastes
// together the text of another. The tree is printed once, at the end
// (print): the printer alone writes SQL text, and numbers the text
// literals it meets in order (Dialect.Text).

// expr is an SQL expression node.
type expr interface {
	print(p *printer)
}

// printer writes a tree's SQL text.
type printer struct {
	d    Dialect
	b    strings.Builder
	args []any // the values of the text literals the dialect binds
}

// printStatement prints the statement, with the values of its
// parameters.
func printStatement(d Dialect, q *query) (string, []any) {
	p := &printer{d: d}
	q.printQuery(p)
	return p.b.String(), p.args
}

func (p *printer) w(s string) { p.b.WriteString(s) }

// list prints the nodes with sep between them.
func (p *printer) list(xs []expr, sep string) {
	for i, x := range xs {
		if i > 0 {
			p.w(sep)
		}
		x.print(p)
	}
}

// raw is a name or literal of the compiler's own (a0, u, *, NULL, TRUE,
// a number), printed as it is: nothing of the analyst's or the data's.
type raw string

func (r raw) print(p *printer) { p.w(string(r)) }

// num is an integer literal.
func num[T int | int64](n T) raw { return raw(strconv.FormatInt(int64(n), 10)) }

// numbered is a name of the compiler's own: prefix and i (a0, k1, v2).
func numbered(prefix string, i int) raw { return raw(prefix + strconv.Itoa(i)) }

// text is a text literal whose value is s, printed by the dialect
// (Dialect.Text) as a literal or a parameter, numbered in the order the
// statement holds them.
type text string

func (t text) print(p *printer) {
	lit, bind := p.d.Text(string(t), len(p.args)+1)
	if bind {
		p.args = append(p.args, string(t))
	}
	p.w(lit)
}

// op is x o y, in parentheses unless bare.
type op struct {
	x    expr
	o    string
	y    expr
	bare bool
}

func (o op) print(p *printer) {
	p.parens(o.bare, func() {
		o.x.print(p)
		p.w(" " + o.o + " ")
		o.y.print(p)
	})
}

// parens prints body, in parentheses unless bare.
func (p *printer) parens(bare bool, body func()) {
	if !bare {
		p.w("(")
	}
	body()
	if !bare {
		p.w(")")
	}
}

// paren is x o y in parentheses; bare without.
func paren(x expr, o string, y expr) op { return op{x: x, o: o, y: y} }
func bare(x expr, o string, y expr) op  { return op{x: x, o: o, y: y, bare: true} }

// unary is o x in parentheses (NOT x, -x), or bare.
type unary struct {
	o    string
	x    expr
	bare bool
}

func (u unary) print(p *printer) {
	p.parens(u.bare, func() {
		p.w(u.o)
		u.x.print(p)
	})
}

// not is (NOT x).
func not(x expr) unary { return unary{o: "NOT ", x: x} }

// call is a function fn(args), fn already in the dialect's form
// (Dialect.Func for a built-in, or syntax such as COALESCE); star: fn(*);
// distinct: fn(DISTINCT args).
type call struct {
	fn       string
	args     []expr
	star     bool
	distinct bool
}

func (c call) print(p *printer) {
	p.w(c.fn + "(")
	switch {
	case c.star:
		p.w("*")
	case c.distinct:
		p.w("DISTINCT ")
	}
	p.list(c.args, ", ")
	p.w(")")
}

// filtered is an aggregate over the rows where cond holds.
type filtered struct {
	agg, cond expr
}

func (f filtered) print(p *printer) {
	f.agg.print(p)
	p.w(" FILTER (WHERE ")
	f.cond.print(p)
	p.w(")")
}

// window is an aggregate over a window: PARTITION BY part ORDER BY order.
type window struct {
	agg         expr
	part, order []expr
}

func (w window) print(p *printer) {
	w.agg.print(p)
	p.w(" OVER (")
	if len(w.part) > 0 {
		p.w("PARTITION BY ")
		p.list(w.part, ", ")
		if len(w.order) > 0 {
			p.w(" ")
		}
	}
	if len(w.order) > 0 {
		p.w("ORDER BY ")
		p.list(w.order, ", ")
	}
	p.w(")")
}

// when is a CASE's WHEN cond THEN then.
type when struct{ cond, then expr }

// caseOf is CASE WHEN ... [ELSE els] END, in parentheses unless bare.
type caseOf struct {
	whens []when
	els   expr // nil: none (NULL)
	bare  bool
}

func (c caseOf) print(p *printer) {
	p.parens(c.bare, func() {
		p.w("CASE")
		for _, w := range c.whens {
			p.w(" WHEN ")
			w.cond.print(p)
			p.w(" THEN ")
			w.then.print(p)
		}
		if c.els != nil {
			p.w(" ELSE ")
			c.els.print(p)
		}
		p.w(" END")
	})
}

// ifThen is (CASE WHEN cond THEN then ELSE els END).
func ifThen(cond, then, els expr) caseOf { return caseOf{whens: []when{{cond, then}}, els: els} }

// cast is CAST(x AS typ).
type cast struct {
	x   expr
	typ string
}

func (c cast) print(p *printer) {
	p.w("CAST(")
	c.x.print(p)
	p.w(" AS " + c.typ + ")")
}

// isNull is x IS [NOT] NULL, in parentheses unless bare.
type isNull struct {
	x         expr
	not, bare bool
}

func (n isNull) print(p *printer) {
	p.parens(n.bare, func() {
		n.x.print(p)
		if n.not {
			p.w(" IS NOT NULL")
		} else {
			p.w(" IS NULL")
		}
	})
}

// in is (x IN (list)).
type in struct {
	x    expr
	list []expr
}

func (n in) print(p *printer) {
	p.w("(")
	n.x.print(p)
	p.w(" IN (")
	p.list(n.list, ", ")
	p.w("))")
}

// as is x AS name, a select item.
type as struct {
	x    expr
	name string
}

func (a as) print(p *printer) {
	a.x.print(p)
	p.w(" AS " + a.name)
}

// ref is a column of a relation of the statement's own: table.name.
type ref struct{ table, name string }

func (r ref) print(p *printer) { p.w(r.table + "." + r.name) }

// form is a dialect's own form: its template with each {} replaced by
// the next node (Dialect: the forms where an engine's syntax differs).
type form struct {
	tmpl string
	args []expr
}

func (f form) print(p *printer) {
	parts := strings.Split(f.tmpl, "{}")
	for i, part := range parts {
		p.w(part)
		if i < len(f.args) && i < len(parts)-1 {
			f.args[i].print(p)
		}
	}
}

// formOf is the form tmpl over args.
func formOf(tmpl string, args ...expr) form { return form{tmpl: tmpl, args: args} }

// exprs makes nodes of the compiler's own names.
func exprs(names ...string) []expr {
	out := make([]expr, len(names))
	for i, n := range names {
		out[i] = raw(n)
	}
	return out
}

// printed is a node printed on its own, as text (for the tests).
func printed(d Dialect, x expr) string {
	p := &printer{d: d}
	x.print(p)
	return p.b.String()
}

// holds reports whether x or a node under it meets is.
func holds(x expr, is func(expr) bool) bool {
	if x == nil {
		return false
	}
	if is(x) {
		return true
	}
	for _, c := range children(x) {
		if holds(c, is) {
			return true
		}
	}
	return false
}

// children are the expressions directly under x.
func children(x expr) []expr {
	switch x := x.(type) {
	case op:
		return []expr{x.x, x.y}
	case unary:
		return []expr{x.x}
	case call:
		return x.args
	case filtered:
		return []expr{x.agg, x.cond}
	case window:
		return append(append([]expr{x.agg}, x.part...), x.order...)
	case caseOf:
		var out []expr
		for _, w := range x.whens {
			out = append(out, w.cond, w.then)
		}
		return append(out, x.els)
	case cast:
		return []expr{x.x}
	case isNull:
		return []expr{x.x}
	case in:
		return append([]expr{x.x}, x.list...)
	case as:
		return []expr{x.x}
	case form:
		return x.args
	}
	return nil
}

// fn is the dialect's built-in function name called on args.
func (c *compiler) fn(name string, args ...expr) call {
	return call{fn: c.d.Func(name), args: args}
}

// countRows is count(*).
func (c *compiler) countRows() call { return call{fn: c.d.Func("count"), star: true} }
