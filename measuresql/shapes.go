package measuresql

import (
	"math"
	"strconv"

	"github.com/dpsql/dpsql/measure"
)

// clipped prints the argument clipped to [lo, hi] as an integer to sum:
// the value itself for an integer column with integer bounds, else
// round(clip·2^F) (measure.FixedPoint). It returns F.
func (c *compiler) clipped(arg int, lo, hi float64) (expr, int) {
	if t := c.argType(arg); isInt(t) && integerBounds(lo, hi) {
		return intClip(numbered("a", arg), lo, hi), 0
	}
	f, ok := measure.FixedPoint(lo, hi)
	if !ok {
		panic(decline("bounds off the fixed-point grid"))
	}
	return c.onGrid(arg, lo, hi, f), f
}

// onGrid prints the numeric argument clipped to [lo, hi] as the integer
// round(clip·2^f), rounded half to even.
func (c *compiler) onGrid(arg int, lo, hi float64, f int) expr {
	t := c.argType(arg)
	if !isInt(t) && t != Real {
		panic(decline("a sum of text"))
	}
	var x expr = numbered("a", arg)
	l, h := c.d.Float(lo), c.d.Float(hi)
	if isInt(t) {
		x = c.d.ToDouble(x)
	}
	// NaN (above every number in DuckDB, NULL to the reference) is
	// tested only for values above hi.
	clip := caseOf{whens: []when{{bare(x, "<", l), l}, {bare(x, "<=", h), x}, {c.d.IsNaN(x), raw("NULL")}, {bare(x, ">", h), h}}}
	if f < 0 {
		// A scale below 1 can take a tiny value to 0 (an underflow).
		return c.d.RoundToInt64(c.floatOp(clip, '*', c.d.Float(math.Ldexp(1, f))))
	}
	return c.d.RoundToInt64(bare(clip, "*", c.d.Float(math.Ldexp(1, f))))
}

// unitGrid is a per-unit sum's grid (measure.UnitGrid), or a decline.
func unitGrid(sp measure.Spec) int {
	f, _, ok := measure.UnitGrid(sp.Lo, sp.Hi)
	if !ok {
		panic(decline("per-unit sum bounds off the grid"))
	}
	return f
}

// out adds a spec's output column(s) and records how to read them.
func (c *compiler) out(items *[]expr, exprs ...expr) int {
	col := len(c.st.keys) + len(c.st.Detail)
	if len(c.st.Detail) > 0 {
		col++ // the weight
	}
	col += len(*items)
	for _, e := range exprs {
		*items = append(*items, c.d.ToText(e))
	}
	return col
}

func (c *compiler) unbounded(rows *query, keyNames []string, specs []measure.Spec) *query {
	group := exprs(keyNames...)
	for _, a := range c.st.Detail {
		group = append(group, numbered("a", a))
	}
	sel := append([]expr(nil), group...)
	if len(c.st.Detail) > 0 {
		sel = append(sel, c.countRows())
	}
	var items []expr
	units := false
	c.st.outs = make([]specOut, len(specs))
	for i, sp := range specs {
		switch {
		case c.st.DetailSpec[i]:
			continue
		case sp.Kind == measure.Units && c.keptUnits:
			// The group's distinct units, on its first row only (the
			// rows are per distinct value, and Decode adds them up).
			first := bare(c.rowNumber(exprs(keyNames...), group), "=", raw("1"))
			c.st.outs[i] = specOut{col: c.out(&items, caseOf{whens: []when{{first, c.fn("max", raw("_nu"))}}, els: raw("0"), bare: true})}
			units = true
		case sp.Kind == measure.Rows || sp.Kind == measure.Units:
			c.st.outs[i] = specOut{col: c.out(&items, c.countRows())}
		case sp.Kind == measure.Values || sp.Kind == measure.UnitsWithValue:
			// (each row its own unit: a unit with a value is a row with one)
			c.st.outs[i] = specOut{col: c.out(&items, c.count(sp.Arg))}
		case sp.Kind == measure.Sum:
			e, f := c.clipped(sp.Arg, sp.Lo, sp.Hi)
			c.st.outs[i] = specOut{col: c.out(&items, c.sum(e)), shift: f}
		case sp.Kind == measure.Squares:
			c.st.outs[i] = c.squares(&items, sp)
		case sp.Kind == measure.UnitRows || sp.Kind == measure.UnitValues:
			// Each row is its own unit: it counts clip(1), or for a value
			// the reference does not see, clip(0).
			if !integerBounds(sp.Lo, sp.Hi) {
				panic(decline("per-unit count bounds"))
			}
			one, zero := whole(math.Max(sp.Lo, math.Min(sp.Hi, 1))), whole(math.Max(sp.Lo, math.Min(sp.Hi, 0)))
			cnt := c.countRows()
			var e expr = bare(cnt, "*", one)
			if sp.Kind == measure.UnitValues {
				v := c.count(sp.Arg)
				e = bare(bare(v, "*", one), "+", bare(paren(cnt, "-", v), "*", zero))
			}
			c.st.outs[i] = specOut{col: c.out(&items, c.wide(e))}
		case sp.Kind == measure.UnitSum || sp.Kind == measure.UnitMean:
			// Each row is its own unit, its mean its value. A row's term
			// clipped to the bounds on the grid is its value clipped, then
			// put on the grid (the bounds are on it): for an integer column
			// with integer bounds on a grid of F ≥ 0, the clipped integer
			// itself.
			f := unitGrid(sp)
			if isInt(c.argType(sp.Arg)) && integerBounds(sp.Lo, sp.Hi) && f >= 0 {
				c.st.outs[i] = specOut{col: c.out(&items, c.sum(intClip(numbered("a", sp.Arg), sp.Lo, sp.Hi)))}
				break
			}
			c.st.outs[i] = specOut{col: c.out(&items, c.sum(c.onGrid(sp.Arg, sp.Lo, sp.Hi, f))), shift: f}
		default:
			panic(decline("spec " + sp.String()))
		}
	}
	sel = append(sel, items...)
	q := &query{items: sel, from: rows.as("r"), groupBy: group}
	if units {
		var nk, on []expr
		for _, k := range keyNames {
			nk = append(nk, as{raw(k), "n" + k})
			on = append(on, bare(raw("n"+k), "IS NOT DISTINCT FROM", raw(k)))
		}
		nu := &query{items: append(nk, as{call{fn: c.d.Func("count"), args: exprs("u"), distinct: true}, "_nu"}), from: withName{name: "kr"}, groupBy: exprs(keyNames...), alias: "nu"}
		q.with = []named{{"kr", rows, false}}
		q.from = join{kind: innerJoin, left: withName{name: "kr", alias: "r"}, right: nu, on: on}
	}
	return q
}

// sum is the dialect's SUM of x.
func (c *compiler) sum(x expr) expr { return c.fn("sum", x) }

// sumWhere is the sum of x over the rows where cond holds, 0 for none.
func (c *compiler) sumWhere(cond, x expr) expr {
	return call{fn: "COALESCE", args: []expr{c.sum(caseOf{whens: []when{{cond, x}}, els: raw("0"), bare: true}), raw("0")}}
}

// wide is x cast to the dialect's wide integer type.
func (c *compiler) wide(x expr) expr { return cast{x, c.d.Wide()} }

// squareTerms are a q spec's clipped value and its square, integers in
// the wide type, and the grid's F (the value is the integer·2^-F): an
// integer column with integer bounds of at most 2^38 as it is (F = 0),
// else on the squares' grid (measure.SquaresGrid, as the reference
// rounds), so that both sums are exact and cannot overflow.
func (c *compiler) squareTerms(sp measure.Spec) (clip, square expr, f int) {
	if t := c.argType(sp.Arg); isInt(t) && integerBounds(sp.Lo, sp.Hi) && math.Max(math.Abs(sp.Lo), math.Abs(sp.Hi)) <= 1<<38 {
		clip = intClip(numbered("a", sp.Arg), sp.Lo, sp.Hi)
	} else {
		var ok bool
		if f, ok = measure.SquaresGrid(sp.Lo, sp.Hi); !ok {
			panic(decline("squares with bounds of 2^38 or more, or off the squares' grid"))
		}
		clip = c.onGrid(sp.Arg, sp.Lo, sp.Hi, f)
	}
	sq := c.wide(clip)
	return clip, c.d.WideOp(sq, '*', sq), f
}

// squares prints a q spec's Σc, Σc² and count.
func (c *compiler) squares(items *[]expr, sp measure.Spec) specOut {
	e, sq, f := c.squareTerms(sp)
	col := c.out(items, c.sum(e), c.sum(sq), c.count(sp.Arg))
	return specOut{col: col, q: true, mid: sp.Lo/2 + sp.Hi/2, shift: f}
}

// bounded prints a plan under contribution bounding: per unit and group
// the row-level measurements over its l∞ rows ranked first and the
// per-unit ones over all its rows there (perUnit), then per unit its l0
// groups ranked first (keptGroups), summed per group.
//
// With the plan's estimate of what bounding dropped, the estimate reads
// the same per-unit relation (ug, each unit's rows per group, _n) beside
// the measurement, so that the table is scanned once.
func (c *compiler) bounded(rows *query, keyNames []string, specs []measure.Spec) *query {
	b := c.boundedSpecs(specs)
	partCols := append([]string{"u"}, keyNames...)
	with, from := c.perUnit(rows, partCols, b)
	measured := &query{with: with, items: append(exprs(keyNames...), b.final...), from: c.keptGroups(from, keyNames), groupBy: exprs(keyNames...)}
	if !c.m.Dropped {
		return measured
	}
	if !b.needRank {
		// ug is the per-unit relation itself, now with its row counts.
		ug := from.(*query)
		ug.items = append(ug.items[:len(partCols):len(partCols)], append([]expr{as{c.countRows(), "_n"}}, ug.items[len(partCols):]...)...)
		if c.ranksGroups() {
			// The l0 choice's window over each unit's groups also totals
			// them, and each unit's first group (always kept) carries its
			// part of the counts, which Decode adds over the rows.
			ranks := &query{items: append([]expr{raw("*"), c.groupRank(keyNames)}, c.unitTotals()...), from: ug, alias: "g"}
			measured.from = &query{items: exprs("*"), from: ranks, where: []expr{c.groupKept()}, alias: "kept"}
			c.st.dropped, c.st.droppedPerRow = c.st.width(), true
			measured.items = append(measured.items, c.droppedCounts(bare(raw("gn"), "=", raw("1")), "_g", "_t", "_s", "_mx")...)
			return measured
		}
		ug.alias = ""
		measured.with, measured.from = []named{{"ug", ug, false}}, c.keptGroups(withName{name: "ug", alias: "ug"}, keyNames)
	}
	with, measured.with, measured.alias = measured.with, nil, "m"
	return &query{with: with, items: exprs("m.*", "dr.du", "dr.da", "dr.ds"), from: join{kind: crossJoin, left: measured, right: c.dropped(withName{name: "ug"})}}
}

// boundedMeasures are a bounded plan's measurements at each level.
type boundedMeasures struct {
	ug       []expr // per unit and group, over all its rows: expr AS name
	rowAggs  []as   // per unit and group, over its l∞ kept rows
	final    []expr // per group, over the units' kept groups
	needRank bool   // some measurement is row-level: the rows are ranked
}

// boundedSpecs prints each spec's measurements at the levels of the
// bounded form (and sets the outputs' places).
func (c *compiler) boundedSpecs(specs []measure.Spec) boundedMeasures {
	var b boundedMeasures
	c.st.outs = make([]specOut, len(specs))
	for i, sp := range specs {
		v := string(numbered("v", i))
		switch sp.Kind {
		case measure.Rows, measure.Values, measure.Sum:
			b.needRank = true
			var agg expr = c.countRows()
			f := 0
			switch sp.Kind {
			case measure.Values:
				agg = c.count(sp.Arg)
			case measure.Sum:
				var e expr
				e, f = c.clipped(sp.Arg, sp.Lo, sp.Hi)
				agg = c.sum(e)
			}
			b.rowAggs = append(b.rowAggs, as{agg, v})
			c.st.outs[i] = specOut{col: c.out(&b.final, c.sum(raw(v))), shift: f}
		case measure.Squares:
			b.needRank = true
			e, sq, f := c.squareTerms(sp)
			b.rowAggs = append(b.rowAggs, as{c.sum(e), v + "s"}, as{c.sum(sq), v + "q"}, as{c.count(sp.Arg), v + "c"})
			col := c.out(&b.final, c.sum(raw(v+"s")), c.sum(raw(v+"q")), c.sum(raw(v+"c")))
			c.st.outs[i] = specOut{col: col, q: true, mid: sp.Lo/2 + sp.Hi/2, shift: f}
		case measure.Units:
			c.st.outs[i] = specOut{col: c.out(&b.final, c.countRows())}
		case measure.UnitSum, measure.UnitMean:
			c.st.outs[i] = c.unitSum(&b, sp, v)
		case measure.UnitRows, measure.UnitValues:
			if !integerBounds(sp.Lo, sp.Hi) {
				panic(decline("per-unit count bounds"))
			}
			var cnt expr = c.countRows()
			if sp.Kind == measure.UnitValues {
				cnt = c.count(sp.Arg)
			}
			b.ug = append(b.ug, as{cnt, v})
			c.st.outs[i] = specOut{col: c.out(&b.final, c.sum(intClip(raw(v), sp.Lo, sp.Hi)))}
		case measure.UnitsWithValue:
			b.ug = append(b.ug, as{c.count(sp.Arg), v})
			c.st.outs[i] = specOut{col: c.out(&b.final, filtered{c.countRows(), bare(raw(v), ">", raw("0"))})}
		default:
			panic(decline("spec " + sp.String()))
		}
	}
	return b
}

// unitSum prints a per-unit sum or mean spec: Σ over units of clip(the
// unit's exact sum of its rows' terms on the grid), as integers
// (measure.UnitGrid).
func (c *compiler) unitSum(b *boundedMeasures, sp measure.Spec, v string) specOut {
	f := unitGrid(sp)
	_, r, _ := measure.UnitGrid(sp.Lo, sp.Hi)
	if sp.Kind == measure.UnitMean {
		// The unit's sum clipped to n times the bounds, then over n on
		// the finer grid (measure.MeanBits), truncated.
		l, h := whole(math.Ldexp(sp.Lo, f)), whole(math.Ldexp(sp.Hi, f))
		if _, narrow := c.d.NarrowSum(raw(v+"s"), l, h); narrow {
			panic(decline("a per-unit mean (its sum is clipped to bounds its count scales) in a dialect that cannot compare wide sums"))
		}
		b.ug = append(b.ug, as{c.sum(c.wide(c.onGrid(sp.Arg, -r, r, f))), v + "s"}, as{c.count(sp.Arg), v + "n"})
		n, s := c.wide(raw(v+"n")), raw(v+"s")
		clipped := caseOf{whens: []when{{bare(s, "<", bare(n, "*", l)), bare(n, "*", l)}, {bare(s, ">", bare(n, "*", h)), bare(n, "*", h)}}, els: s}
		mean := c.d.WideDiv(bare(clipped, "*", num(int64(1)<<measure.MeanBits)), call{fn: "NULLIF", args: []expr{raw(v + "n"), raw("0")}})
		return specOut{col: c.out(&b.final, c.sum(mean)), shift: f + measure.MeanBits}
	}
	if isInt(c.argType(sp.Arg)) && integerBounds(sp.Lo, sp.Hi) && f >= 0 {
		// An integer column on a grid of F ≥ 0: each term is 2^F times the
		// value as a double clamped to ±r (r is a power of 2 below 2^63,
		// so clamping the integer first is the same), summed and clipped
		// as integers at F = 0.
		term := c.wide(c.d.ToDouble(intClip(numbered("a", sp.Arg), -r, r)))
		return specOut{col: c.out(&b.final, c.clippedUnitSums(b, v, term, sp.Lo, sp.Hi))}
	}
	term := c.wide(c.onGrid(sp.Arg, -r, r, f))
	return specOut{col: c.out(&b.final, c.clippedUnitSums(b, v, term, math.Ldexp(sp.Lo, f), math.Ldexp(sp.Hi, f))), shift: f}
}

// clippedUnitSums adds each unit's exact sum of term, as v, to its
// per-unit measurements, and returns the per-group sum of those sums
// clipped to [lo, hi] (integers): clipped in the per-unit aggregate where
// the dialect cannot compare a wide sum with a number (NarrowSum), else
// by CASE at the per-group level.
func (c *compiler) clippedUnitSums(b *boundedMeasures, v string, term expr, lo, hi float64) expr {
	if narrow, ok := c.d.NarrowSum(term, whole(lo), whole(hi)); ok {
		b.ug = append(b.ug, as{narrow, v})
		return c.sum(raw(v))
	}
	b.ug = append(b.ug, as{c.sum(term), v})
	return c.sum(intClip(raw(v), lo, hi))
}

// perUnit is the relation of each unit's measurements per group (alias
// ug), with the relations it reads (WITH). Under l∞ the rows are ranked
// first by a keyed hash of their values (rowRank) — only in the groups
// of a unit that have more than l∞ rows (the others keep them all): their
// measurements replace the rest.
func (c *compiler) perUnit(rows *query, partCols []string, b boundedMeasures) ([]named, rel) {
	part := exprs(partCols...)
	if !b.needRank {
		return nil, &query{items: append(append([]expr{}, part...), b.ug...), from: rows.as("r"), groupBy: part, alias: "ug"}
	}
	l := num(c.m.MaxRows)
	var all, filteredAggs, picked, names []expr
	for _, ra := range b.rowAggs {
		all = append(all, ra)
		filteredAggs = append(filteredAggs, as{filtered{ra.x, c.rowKept()}, ra.name})
		pick := caseOf{whens: []when{{bare(ref{"ug", "_n"}, ">", l), ref{"heavy", ra.name}}}, els: ref{"ug", ra.name}, bare: true}
		picked = append(picked, as{pick, ra.name})
		names = append(names, raw(ra.name))
	}
	var unitNames []expr
	for _, u := range b.ug {
		unitNames = append(unitNames, ref{"ug", u.(as).name})
	}
	perGroup := &query{items: append(append(append(append([]expr{}, part...), as{c.countRows(), "_n"}), all...), b.ug...), from: withName{name: "r"}, groupBy: part}
	heavyGroups := &query{items: part, from: withName{name: "ug"}, where: []expr{bare(raw("_n"), ">", l)}, alias: "h"}
	ranked := &query{items: []expr{raw("r.*"), c.rowRank(partCols)},
		from: join{kind: semiJoin, left: withName{name: "r"}, right: heavyGroups, on: same("h", "r", partCols)}, alias: "r"}
	heavy := &query{items: append(append([]expr{}, part...), filteredAggs...), from: ranked, groupBy: part}
	with := []named{{"r", rows, true}, {"ug", perGroup, false}, {"heavy", heavy, false}}
	if len(b.ug) == 0 {
		// Only row-level measurements: the light groups and the heavy ones
		// (a join of every group with the few heavy ones costs more).
		light := &query{items: append(append([]expr{}, part...), names...), from: withName{name: "ug"}, where: []expr{bare(raw("_n"), "<=", l)}}
		return with, union{parts: []*query{light, {items: exprs("*"), from: withName{name: "heavy"}}}, alias: "ug"}
	}
	var ugCols []expr
	for _, col := range partCols {
		ugCols = append(ugCols, ref{"ug", col})
	}
	return with, &query{items: append(append(ugCols, picked...), unitNames...), from: join{kind: leftJoin, left: withName{name: "ug"}, right: withName{name: "heavy"}, on: same("ug", "heavy", partCols)}, alias: "ug"}
}

// whole is an integral float as an integer literal.
func whole(f float64) raw { return raw(strconv.FormatFloat(f, 'f', 0, 64)) }

// keptGroups keeps, per unit, its l0 groups ranked first (groupRank) —
// all of them when the public domains allow no more than l0 groups.
func (c *compiler) keptGroups(from rel, keyNames []string) rel {
	if !c.ranksGroups() {
		return &query{items: exprs("*"), from: from, alias: "kept"}
	}
	ranks := &query{items: []expr{raw("*"), c.groupRank(keyNames)}, from: from, alias: "g"}
	return &query{items: exprs("*"), from: ranks, where: []expr{c.groupKept()}, alias: "kept"}
}

// ranksGroups reports whether bounding ranks each unit's groups: unless
// the public domains allow no more than l0 groups (then all are kept).
func (c *compiler) ranksGroups() bool {
	groups, ok := domainGroups(c.m.Keys)
	return !ok || groups > c.m.MaxGroups
}

// groupKeyMix is xored into the query's key for the ranks of a unit's
// groups, so that they are drawn apart from the ranks of its rows.
const groupKeyMix = 0x9e3779b97f4a7c15

// argNames are the plan's arguments as the rows name them: a0, a1, ...
func (c *compiler) argNames() []expr {
	var out []expr
	for i := range c.m.Args {
		out = append(out, numbered("a", i))
	}
	return out
}

// rank is the rank name of a row within part: row_number over part,
// ordered by a keyed hash of what, ties broken by tie. The bounding
// shapes rank rows (rowRank) and groups (groupRank) with it.
func (c *compiler) rank(name string, part, what []expr, key uint64, tie []expr) expr {
	order := append([]expr{c.d.Hash(what, key)}, tie...)
	return as{c.rowNumber(part, order), name}
}

// rowNumber is a row's number within part, in order.
func (c *compiler) rowNumber(part, order []expr) expr {
	return window{agg: c.fn("row_number"), part: part, order: order}
}

// rowRank is the rank rn of a row among its unit's rows in a group
// (part: u and the keys): by a keyed hash of the unit, keys and values,
// ties broken by the values.
func (c *compiler) rowRank(part []string) expr {
	vals := c.argNames()
	return c.rank("rn", exprs(part...), append(exprs(part...), vals...), c.key, vals)
}

// groupRank is the rank gn of a group among its unit's groups: by a
// keyed hash of the unit and keys, ties broken by the keys.
func (c *compiler) groupRank(keyNames []string) expr {
	return c.rank("gn", exprs("u"), exprs(append([]string{"u"}, keyNames...)...), c.key^groupKeyMix, exprs(keyNames...))
}

// rowKept and groupKept are the conditions on the ranks that bounding
// keeps: the first l∞ rows, the first l0 groups.
func (c *compiler) rowKept() expr   { return bare(raw("rn"), "<=", num(c.m.MaxRows)) }
func (c *compiler) groupKept() expr { return bare(raw("gn"), "<=", num(c.m.MaxGroups)) }

// detailBoundable reports whether every measurement of the plan is
// row-level (rows, values, sums, squares), computed from the distinct
// values (Detail), or partition selection's unit count: then, under
// bounding, all of them can be taken over the kept rows (keptRows), per
// group and distinct value, and summed (the unit count once per group).
func (c *compiler) detailBoundable() bool {
	for _, sp := range c.m.Specs {
		switch sp.Kind {
		case measure.Rows, measure.Values, measure.Sum, measure.Squares, measure.Units:
		default:
			if !sp.Kind.Detail() {
				return false
			}
		}
	}
	return true
}

// keptRows prints the rows contribution bounding keeps, as rows: per
// unit its l0 groups ranked first by a keyed hash of (unit, keys), in
// each its l∞ rows ranked first by a keyed hash of the unit, keys and
// values (ties broken by the keys, the values) — the choices the
// bounded form makes, which depend on the unit's own rows alone.
func (c *compiler) keptRows(rows *query, keyNames []string) *query {
	part := append([]string{"u"}, keyNames...)
	rank := func(from rel) *query {
		return &query{items: []expr{raw("r.*"), c.rowRank(part)}, from: from, alias: "r"}
	}
	rowsKept := []expr{c.rowKept()}
	if groups, ok := domainGroups(c.m.Keys); ok && groups <= c.m.MaxGroups {
		// No unit can have more groups than l0.
		return &query{items: exprs("r.*"), from: rank(rows.as("r")), where: rowsKept}
	}
	// The rows are read once (WITH b), ranked within their groups, and
	// the groups ranked within their unit.
	ranks := &query{items: append(exprs(part...), c.groupRank(keyNames)), from: withName{name: "b", alias: "r"}, groupBy: exprs(part...), alias: "g"}
	groups := &query{items: exprs(part...), from: ranks, where: []expr{c.groupKept()}, alias: "g"}
	return &query{with: []named{{"b", rows, false}}, items: exprs("r.*"), from: join{kind: semiJoin, left: rank(withName{name: "b", alias: "r"}), right: groups, on: same("g", "r", part)}, where: rowsKept}
}

// same is the conditions that rows a and b agree on the columns (NULL
// agreeing with NULL). The unit u is never NULL (the rows read have
// one): its equality is a plain one, which every engine can hash
// (PostgreSQL cannot hash IS NOT DISTINCT FROM, and joined on it alone
// compared every row with every heavy group: minutes at 10M rows).
func same(a, b string, cols []string) []expr {
	var conds []expr
	for _, col := range cols {
		op := "IS NOT DISTINCT FROM"
		if col == "u" {
			op = "="
		}
		conds = append(conds, bare(ref{a, col}, op, ref{b, col}))
	}
	return conds
}

// domainGroups is how many groups the keys' public domains allow (ok
// false when a key has none: partition selection).
func domainGroups(keys []measure.Key) (int64, bool) {
	n := int64(1)
	for _, k := range keys {
		if k.Domain == nil {
			return 0, false
		}
		n *= int64(len(k.Domain))
		if n > 1<<40 {
			return n, true
		}
	}
	return n, true
}

// withDropped adds to the measurement's rows the three columns of what
// bounding dropped over the scan (measure.Dropped), the same in every
// row: the units, those with more than l0 groups or more than l∞ rows in
// one, and Σ each such unit's share (measure.UnitDropped) on the grid of
// 2^-DroppedBits. They are computed from the plan's rows (every copy a
// join makes, as the reference meets them: not the semi-join rowsOnce
// reads) per unit and group, then per unit — counts only, so they do
// not depend on the keyed hashes.
func (c *compiler) withDropped(measured *query, keyCols, keyFilters []expr, keyNames []string) *query {
	dropped := c.dropped(c.unitGroups(keyCols, keyFilters, keyNames))
	return &query{items: exprs("m.*", "dr.du", "dr.da", "dr.ds"), from: join{kind: crossJoin, left: measured.as("m"), right: dropped}}
}

// dropped is the relation (alias dr) of the three counts of what
// bounding dropped (measure.Dropped) over perGroup, each unit's rows per
// group (_n); it places their columns after the measurement's.
func (c *compiler) dropped(perGroup rel) *query {
	n := raw("_n")
	perUnit := &query{items: []expr{raw("u"), as{c.sum(n), "t"}, as{c.countRows(), "g"}, as{c.sum(c.atMostRows(n)), "s"}, as{c.fn("max", n), "mx"}},
		from: perGroup, groupBy: exprs("u"), alias: "pu"}
	c.st.dropped = c.st.width()
	return &query{items: c.droppedCounts(nil, "g", "t", "s", "mx"), from: perUnit, alias: "dr"}
}

// atMostRows is n rows kept at most l∞.
func (c *compiler) atMostRows(n expr) expr {
	lInf := num(c.m.MaxRows)
	return caseOf{whens: []when{{bare(n, ">", lInf), lInf}}, els: n, bare: true}
}

// unitTotals are the window aggregates, over each unit's groups (one row
// each, with its rows _n), that droppedCounts reads as _g, _t, _s and _mx.
func (c *compiler) unitTotals() []expr {
	over := func(agg expr, name string) expr { return as{window{agg: agg, part: exprs("u")}, name} }
	n := raw("_n")
	return []expr{over(c.countRows(), "_g"), over(c.sum(n), "_t"), over(c.sum(c.atMostRows(n)), "_s"), over(c.fn("max", n), "_mx")}
}

// droppedCounts are the three counts (du, da, ds) over the units, from
// each unit's groups g, rows t, rows once each group keeps at most l∞
// s and largest group mx; with first (nil for none), over the rows where
// first holds (one per unit).
func (c *compiler) droppedCounts(first expr, g, t, s, mx string) []expr {
	l0, lInf := num(c.m.MaxGroups), num(c.m.MaxRows)
	var affected expr = bare(bare(raw(g), ">", l0), "OR", bare(raw(mx), ">", lInf))
	var units expr = c.countRows()
	if first != nil {
		affected = bare(first, "AND", formOf("({})", affected))
		units = filtered{units, first}
	}
	// floor(2^B·(g·t − min(g, l0)·s) / (g·t)), in the wide type.
	den := c.d.WideOp(c.wide(raw(g)), '*', c.wide(raw(t)))
	kept := c.wide(caseOf{whens: []when{{bare(raw(g), ">", l0), l0}}, els: raw(g), bare: true})
	share := c.d.WideDiv(c.d.WideOp(c.d.WideOp(den, '-', c.d.WideOp(kept, '*', c.wide(raw(s)))), '*', num(1<<measure.DroppedBits)), den)
	total := c.sumWhere(affected, share)
	return []expr{as{c.d.ToText(units), "du"}, as{c.d.ToText(filtered{c.countRows(), affected}), "da"}, as{c.d.ToText(total), "ds"}}
}

// unitGroups is the relation (alias ug) of each unit's rows per group,
// _n, over every row the plan reads (every copy a join makes, as the
// reference meets them: not the semi-join rowsOnce reads).
func (c *compiler) unitGroups(keyCols, keyFilters []expr, keyNames []string) *query {
	m := c.m
	where := []expr{isNull{x: c.value(m.Unit), not: true, bare: true}}
	if m.Where != nil {
		where = append([]expr{c.filter(m.Where)}, where...)
	}
	rows := &query{items: append([]expr{as{c.value(m.Unit), "u"}}, keyCols...), from: c.from(), where: append(where, keyFilters...), alias: "r"}
	part := exprs(append([]string{"u"}, keyNames...)...)
	return &query{items: append(append([]expr{}, part...), as{c.countRows(), "_n"}), from: rows, groupBy: part, alias: "ug"}
}

// profile prints the units' profile (measure.Profile) as one row: per bin
// of measure.ProfileBin, the units whose number of groups falls in it, then
// per bin Σ over the groups whose row count falls in it of
// floor(2^ProfileBits / the unit's number of groups).
func (c *compiler) profile(keyCols, keyFilters []expr, keyNames []string) *query {
	bin := func(x expr) expr {
		out := caseOf{els: num(len(measure.ProfileCandidates)), bare: true}
		for i, cand := range measure.ProfileCandidates {
			out.whens = append(out.whens, when{bare(x, "<=", num(cand)), num(i)})
		}
		return out
	}
	perUnit := &query{items: []expr{raw("u"), as{c.countRows(), "g"}}, from: withName{name: "ug"}, groupBy: exprs("u"), alias: "pu"}
	weighted := &query{items: []expr{raw("_n"), as{window{agg: c.countRows(), part: exprs("u")}, "g"}}, from: withName{name: "ug"}, alias: "w"}
	var units, rows []expr
	for i := 0; i <= len(measure.ProfileCandidates); i++ {
		units = append(units, as{c.d.ToText(filtered{c.countRows(), bare(bin(raw("g")), "=", num(i))}), string(numbered("h", i))})
		share := c.d.TruncDiv(num(1<<measure.ProfileBits), raw("g"))
		total := c.sumWhere(bare(bin(raw("_n")), "=", num(i)), share)
		rows = append(rows, as{c.d.ToText(total), string(numbered("r", i))})
	}
	hu := &query{items: units, from: perUnit, alias: "hu"}
	hr := &query{items: rows, from: weighted, alias: "hr"}
	return &query{with: []named{{"ug", c.unitGroups(keyCols, keyFilters, keyNames), false}}, items: exprs("hu.*", "hr.*"), from: join{kind: crossJoin, left: hu, right: hr}}
}
