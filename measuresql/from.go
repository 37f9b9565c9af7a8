package measuresql

import "github.com/dpsql/dpsql/measure"

// from is the statement's FROM clause: the table, or the tables joined
// on the plan's equalities, each under the next join that has both its
// tables (every join is inner, so where an equality sits does not change
// the rows), or the plan's grouping per unit.
func (c *compiler) from() rel {
	m := c.m
	if m.PerUnit != nil {
		return c.grouped()
	}
	if len(m.Joins) == 0 {
		return scan{table: m.Table, stored: true}
	}
	on := make([][]expr, len(m.Joins)+1)
	for _, e := range m.On {
		t0, t1 := e[0].Table, e[1].Table
		if t0 > len(m.Joins) || t1 > len(m.Joins) {
			panic(decline("a join equality of an unknown table"))
		}
		last := max(t0, t1, 1)
		on[last] = append(on[last], c.equal(e[0], e[1]))
	}
	for _, e := range m.Compare {
		t0, t1 := e.X.Table, e.Y.Table
		if t0 > len(m.Joins) || t1 > len(m.Joins) {
			panic(decline("a join comparison of an unknown table"))
		}
		last := max(t0, t1, 1)
		on[last] = append(on[last], c.compareColumns(e.X, e.Op, e.Y))
	}
	var r rel = scan{table: m.Table, alias: "t0", stored: true}
	for i, t := range m.Joins {
		r = join{kind: innerJoin, left: r, right: scan{table: t, alias: string(numbered("t", i+1)), stored: true}, on: on[i+1]}
	}
	return r
}

// rowsOnce reports whether the plan's unit is the identity of one
// table's rows (measure.RowIdentity: each row of a table without a unit
// column is its own unit, and l0 = l∞ = 1) while every key and measured
// argument reads that table alone, with row-level measurements only.
// Then every copy a join makes of a row has the same keys and values,
// and the reference's bounding keeps exactly one of the copies that pass
// the filter: the same as counting each row once when some combination
// of the other tables' rows matches it and passes — a semi-join, with
// no bounding. It returns the table.
func (c *compiler) rowsOnce() (int, bool) {
	m := c.m
	t := m.Unit.Table
	if len(m.Joins) == 0 || !m.Unit.Identity || m.MaxGroups != 1 || m.MaxRows != 1 {
		return 0, false
	}
	for _, sp := range m.Specs {
		switch sp.Kind {
		case measure.Rows, measure.Units, measure.Values, measure.UnitsWithValue, measure.Sum, measure.Squares:
		default:
			if !sp.Kind.Detail() {
				return 0, false
			}
		}
	}
	cols := map[measure.Col]bool{}
	for _, k := range m.Keys {
		if k.Case != nil {
			caseColumns(k.Case, cols)
			continue
		}
		if k.Arith != nil {
			arithColumns(k.Arith, cols)
			continue
		}
		cols[k.Column] = true
	}
	for i, a := range m.Args {
		if cs := m.Cases[i]; cs != nil {
			caseColumns(cs, cols)
			continue
		}
		cols[a] = true
	}
	for col := range cols {
		if col.Table != t {
			return 0, false
		}
	}
	return t, true
}

// semiJoin is the FROM clause of rowsOnce, table t semi-joined with the
// other tables on the join's equalities and the parts of the plan's
// filter that read them (measured three times faster than EXISTS in
// DuckDB), and the parts of the filter that read t alone.
func (c *compiler) semiJoin(t int) (from rel, filter []expr) {
	m := c.m
	tables := append([]string{m.Table}, m.Joins...)
	var inner []expr
	for _, e := range m.On {
		inner = append(inner, c.equal(e[0], e[1]))
	}
	for _, e := range m.Compare {
		inner = append(inner, c.compareColumns(e.X, e.Op, e.Y))
	}
	for _, f := range conjuncts(m.Where) {
		cols := map[measure.Col]bool{}
		filterColumns(f, cols)
		alone := true
		for col := range cols {
			if col.Table != t {
				alone = false
			}
		}
		if alone {
			filter = append(filter, c.filter(f))
		} else {
			inner = append(inner, c.filter(f))
		}
	}
	var others rel
	for i, name := range tables {
		if i == t {
			continue
		}
		s := scan{table: name, alias: string(numbered("t", i)), stored: true}
		if others == nil {
			others = s
		} else {
			others = join{kind: crossJoin, left: others, right: s}
		}
	}
	return join{kind: semiJoin, left: scan{table: tables[t], alias: string(numbered("t", t)), stored: true}, right: others, on: inner}, filter
}

// conjuncts are the parts of a filter that must all hold (nil: none).
func conjuncts(f measure.Filter) []measure.Filter {
	switch a := f.(type) {
	case nil:
		return nil
	case measure.And:
		var out []measure.Filter
		for _, p := range a.Parts {
			out = append(out, conjuncts(p)...)
		}
		return out
	}
	return []measure.Filter{f}
}

// caseColumns adds the columns a CASE reads to cols.
func caseColumns(cs *measure.Case, cols map[measure.Col]bool) {
	for _, w := range cs.Whens {
		filterColumns(w.Cond, cols)
	}
	for _, o := range operands(cs) {
		if !o.Column.IsZero() {
			cols[o.Column] = true
		}
		arithColumns(o.Arith, cols)
	}
}

// filterColumns adds the columns a filter reads to cols.
func filterColumns(f measure.Filter, cols map[measure.Col]bool) {
	switch f := f.(type) {
	case measure.And:
		for _, p := range f.Parts {
			filterColumns(p, cols)
		}
	case measure.Or:
		for _, p := range f.Parts {
			filterColumns(p, cols)
		}
	case measure.Not:
		filterColumns(f.X, cols)
	case measure.Compare:
		if !f.Column.IsZero() {
			cols[f.Column] = true
		}
		arithColumns(f.Arith, cols)
		arithColumns(f.Right, cols)
	case measure.IsNull:
		if f.Arith != nil {
			arithColumns(f.Arith, cols)
			break
		}
		cols[f.Column] = true
	case measure.In:
		cols[f.Column] = true
	case measure.Like:
		cols[f.Column] = true
	case measure.Truth:
	default:
		panic(decline("a filter the compiler cannot read the columns of"))
	}
}

// arithColumns adds the columns arithmetic reads to cols.
func arithColumns(a *measure.Arith, cols map[measure.Col]bool) {
	if a == nil {
		return
	}
	if !a.Column.IsZero() {
		cols[a.Column] = true
	}
	if a.Case != nil {
		caseColumns(a.Case, cols)
	}
	arithColumns(a.X, cols)
	arithColumns(a.Y, cols)
}

// groupingTypes sets the classes of the plan's grouping's outputs: a
// grouped column's, an integer for a count, the column's for a minimum
// or maximum. Grouping by a float is declined (-0 and 0, NaN and NULL
// group apart in one engine and together in the other).
func (c *compiler) groupingTypes() {
	g := c.m.PerUnit
	if len(c.m.Joins) > 0 {
		panic(decline("a grouping over a join"))
	}
	for _, col := range g.By {
		if c.typeOf(col) == Real {
			panic(decline("a subquery grouped by a float column"))
		}
	}
	c.outTypes = make([]Type, len(g.Outputs))
	for i, a := range g.Outputs {
		switch a.Func {
		case "count":
			c.outTypes[i] = Integer
		case "count_distinct":
			// Distinct integers or texts (bytes) are the same in every
			// engine; doubles are not (-0 and 0, NaN).
			if t := c.typeOf(a.Column); !isInt(t) && t != Text {
				panic(decline("a per-unit distinct count of a column that is not integers or text"))
			}
			c.outTypes[i] = Integer
		case "", "min", "max":
			t := c.typeOf(a.Column)
			if isInt(t) {
				t = Integer
			}
			c.outTypes[i] = t
		default:
			panic(decline("a per-unit " + a.Func))
		}
	}
}

// grouped is the plan's grouping as a subquery d whose columns are its
// outputs (o0, o1, ...), computed as the reference computes them: a
// count of the values it sees (not NULL, not NaN) or of the distinct
// ones, the least or greatest of them (text by bytes).
func (c *compiler) grouped() rel {
	g := c.m.PerUnit
	q := &query{from: scan{table: c.m.Table, stored: true}, alias: "d"}
	for _, col := range g.By {
		q.groupBy = append(q.groupBy, c.value(col))
	}
	for i, a := range g.Outputs {
		var e expr
		switch a.Func {
		case "":
			e = c.value(a.Column)
		case "count":
			if a.Column.IsZero() {
				e = c.countRows()
				break
			}
			e = c.fn("count", c.value(a.Column))
		case "count_distinct":
			e = call{fn: c.d.Func("count"), args: []expr{c.value(a.Column)}, distinct: true}
		default:
			e = c.fn(a.Func, c.value(a.Column))
		}
		if a.Func != "" && !a.Column.IsZero() && c.typeOf(a.Column) == Real {
			e = filtered{e, c.notIsNaN(c.value(a.Column))}
		}
		q.items = append(q.items, as{e, string(numbered("o", i))})
	}
	if g.Where != nil {
		q.where = []expr{c.filter(g.Where)}
	}
	return q
}

// equal prints a join's equality of two columns where the engines
// decide it alike: both integers (read as 64-bit), both text (bytes), or
// both floats (NaN, NULL to the reference, equal to nothing; -0 = 0 in
// both). Columns of two classes are declined: the reference converts by
// affinity (5 = '5' holds there) where an engine casts, and may raise.
// compareColumns is x op y (<, <=, >, >=) of two join columns of one class, as
// SQLite compares them: integers of any width exactly, reals with NaN
// (which SQLite never stores: it reads as NULL) matching nothing; text
// and mixed classes are declined (PostgreSQL orders text by its collation,
// SQLite by bytes; an integer beyond 2^53 compared with a real is rounded
// by DuckDB and PostgreSQL).
func (c *compiler) compareColumns(x measure.Col, op string, y measure.Col) expr {
	switch op {
	case "<", "<=", ">", ">=":
	default:
		panic(decline("a join comparison " + op))
	}
	tx, ty := c.typeOf(x), c.typeOf(y)
	switch {
	case isInt(tx) && isInt(ty):
		return bare(c.value(x), op, c.value(y))
	case tx == Real && ty == Real:
		return formOf("({})", list{[]expr{bare(c.value(x), op, c.value(y)), c.notIsNaN(c.value(x)), c.notIsNaN(c.value(y))}, " AND "})
	}
	panic(decline("a join comparison of columns of two classes (or of text)"))
}

func (c *compiler) equal(x, y measure.Col) expr {
	tx, ty := c.typeOf(x), c.typeOf(y)
	switch {
	case isInt(tx) && isInt(ty), tx == Text && ty == Text:
		return bare(c.value(x), "=", c.value(y))
	case tx == Real && ty == Real:
		return paren(bare(c.value(x), "=", c.value(y)), "AND", c.notIsNaN(c.value(x)))
	}
	panic(decline("a join of columns of two classes"))
}

// notIsNaN is NOT isnan(x), bare: the double x is a number or NULL.
func (c *compiler) notIsNaN(x expr) expr {
	return unary{o: "NOT ", x: c.d.IsNaN(x), bare: true}
}
