package measuresql

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/measure"
)

// clipped prints the argument clipped to [lo, hi] as an integer to sum:
// the value itself for an integer column with integer bounds, else
// round(clip·2^F) (measure.FixedPoint). It returns F.
func (c *compiler) clipped(arg int, lo, hi float64) (string, int) {
	if t := c.argType(arg); isInt(t) && integerBounds(lo, hi) {
		return intClip("a"+strconv.Itoa(arg), lo, hi), 0
	}
	f, ok := measure.FixedPoint(lo, hi)
	if !ok {
		panic(decline("bounds off the fixed-point grid"))
	}
	return c.onGrid(arg, lo, hi, f), f
}

// onGrid prints the numeric argument clipped to [lo, hi] as the integer
// round(clip·2^f), rounded half to even.
func (c *compiler) onGrid(arg int, lo, hi float64, f int) string {
	t := c.argType(arg)
	if !isInt(t) && t != Real {
		panic(decline("a sum of text"))
	}
	a := "a" + strconv.Itoa(arg)
	l, h := c.d.Float(lo), c.d.Float(hi)
	x := a
	if isInt(t) {
		x = c.d.ToDouble(a)
	}
	// NaN (above every number in DuckDB, NULL to the reference) is
	// tested only for values above hi.
	clip := "CASE WHEN " + x + " < " + l + " THEN " + l + " WHEN " + x + " <= " + h + " THEN " + x + " WHEN " + c.d.IsNaN(x) + " THEN NULL WHEN " + x + " > " + h + " THEN " + h + " END"
	if f < 0 {
		// A scale below 1 can take a tiny value to 0 (an underflow).
		return c.d.RoundToInt64(c.floatOp("("+clip+")", '*', c.d.Float(math.Ldexp(1, f))))
	}
	return c.d.RoundToInt64("(" + clip + ") * " + c.d.Float(math.Ldexp(1, f)))
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
func (c *compiler) out(items *[]string, exprs ...string) int {
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

func (c *compiler) unbounded(rows *query, keyNames []string, specs []measure.Spec) string {
	group := append([]string(nil), keyNames...)
	for _, a := range c.st.Detail {
		group = append(group, "a"+strconv.Itoa(a))
	}
	sel := append([]string(nil), group...)
	if len(c.st.Detail) > 0 {
		sel = append(sel, c.d.Func("count")+"(*)")
	}
	var items []string
	units := false
	c.st.outs = make([]specOut, len(specs))
	for i, sp := range specs {
		switch {
		case c.st.DetailSpec[i]:
			continue
		case sp.Kind == measure.Units && c.keptUnits:
			// The group's distinct units, on its first row only (the
			// rows are per distinct value, and Decode adds them up).
			part := ""
			if len(keyNames) > 0 {
				part = "PARTITION BY " + strings.Join(keyNames, ", ") + " "
			}
			first := c.d.Func("row_number") + "() OVER (" + part + "ORDER BY " + strings.Join(group, ", ") + ") = 1"
			c.st.outs[i] = specOut{col: c.out(&items, "CASE WHEN "+first+" THEN "+c.d.Func("max")+"(_nu) ELSE 0 END")}
			units = true
		case sp.Kind == measure.Rows || sp.Kind == measure.Units:
			c.st.outs[i] = specOut{col: c.out(&items, c.d.Func("count")+"(*)")}
		case sp.Kind == measure.Values || sp.Kind == measure.UnitsWithValue:
			// (each row its own unit: a unit with a value is a row with one)
			c.st.outs[i] = specOut{col: c.out(&items, c.count(sp.Arg))}
		case sp.Kind == measure.Sum:
			e, f := c.clipped(sp.Arg, sp.Lo, sp.Hi)
			c.st.outs[i] = specOut{col: c.out(&items, c.d.Func("sum")+"("+e+")"), shift: f}
		case sp.Kind == measure.Squares:
			c.st.outs[i] = c.squares(&items, sp, c.d.Func("sum"))
		case sp.Kind == measure.UnitRows || sp.Kind == measure.UnitValues:
			// Each row is its own unit: it counts clip(1), or for a value
			// the reference does not see, clip(0).
			if !integerBounds(sp.Lo, sp.Hi) {
				panic(decline("per-unit count bounds"))
			}
			one, zero := strconv.FormatFloat(math.Max(sp.Lo, math.Min(sp.Hi, 1)), 'f', 0, 64), strconv.FormatFloat(math.Max(sp.Lo, math.Min(sp.Hi, 0)), 'f', 0, 64)
			cnt := c.d.Func("count") + "(*)"
			e := cnt + " * " + one
			if sp.Kind == measure.UnitValues {
				v := c.count(sp.Arg)
				e = v + " * " + one + " + (" + cnt + " - " + v + ") * " + zero
			}
			c.st.outs[i] = specOut{col: c.out(&items, "CAST("+e+" AS "+c.d.Wide()+")")}
		case sp.Kind == measure.UnitSum || sp.Kind == measure.UnitMean:
			// Each row is its own unit, its mean its value. A row's term
			// clipped to the bounds on the grid is its value clipped, then
			// put on the grid (the bounds are on it): for an integer column
			// with integer bounds on a grid of F ≥ 0, the clipped integer
			// itself.
			f := unitGrid(sp)
			if isInt(c.argType(sp.Arg)) && integerBounds(sp.Lo, sp.Hi) && f >= 0 {
				c.st.outs[i] = specOut{col: c.out(&items, c.d.Func("sum")+"("+intClip("a"+strconv.Itoa(sp.Arg), sp.Lo, sp.Hi)+")")}
				break
			}
			c.st.outs[i] = specOut{col: c.out(&items, c.d.Func("sum")+"("+c.onGrid(sp.Arg, sp.Lo, sp.Hi, f)+")"), shift: f}
		default:
			panic(decline("spec " + sp.String()))
		}
	}
	sel = append(sel, items...)
	q := &query{items: sel, from: rows.as("r"), groupBy: group}
	if units {
		var nk, on []string
		for _, k := range keyNames {
			nk = append(nk, k+" AS n"+k)
			on = append(on, "n"+k+" IS NOT DISTINCT FROM "+k)
		}
		nu := &query{items: append(nk, c.d.Func("count")+"(DISTINCT u) AS _nu"), from: withName{name: "kr"}, groupBy: keyNames, alias: "nu"}
		q.with = []named{{"kr", rows, false}}
		q.from = join{kind: innerJoin, left: withName{name: "kr", alias: "r"}, right: nu, on: on}
	}
	return q.text(c.d)
}

// squareTerms are a q spec's clipped value and its square, integers in
// the wide type, and the grid's F (the value is the integer·2^-F): an
// integer column with integer bounds of at most 2^38 as it is (F = 0),
// else on the squares' grid (measure.SquaresGrid, as the reference
// rounds), so that both sums are exact and cannot overflow.
func (c *compiler) squareTerms(sp measure.Spec) (clip, square string, f int) {
	if t := c.argType(sp.Arg); isInt(t) && integerBounds(sp.Lo, sp.Hi) && math.Max(math.Abs(sp.Lo), math.Abs(sp.Hi)) <= 1<<38 {
		clip = intClip("a"+strconv.Itoa(sp.Arg), sp.Lo, sp.Hi)
	} else {
		var ok bool
		if f, ok = measure.SquaresGrid(sp.Lo, sp.Hi); !ok {
			panic(decline("squares with bounds of 2^38 or more, or off the squares' grid"))
		}
		clip = c.onGrid(sp.Arg, sp.Lo, sp.Hi, f)
	}
	sq := "CAST(" + clip + " AS " + c.d.Wide() + ")"
	return clip, sq + " * " + sq, f
}

// squares prints a q spec's Σc, Σc² and count.
func (c *compiler) squares(items *[]string, sp measure.Spec, sum string) specOut {
	e, sq, f := c.squareTerms(sp)
	col := c.out(items, sum+"("+e+")", sum+"("+sq+")", c.count(sp.Arg))
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
func (c *compiler) bounded(rows *query, keyNames []string, specs []measure.Spec) string {
	b := c.boundedSpecs(specs)
	partCols := append([]string{"u"}, keyNames...)
	with, from := c.perUnit(rows, partCols, b)
	measured := &query{with: with, items: append(append([]string(nil), keyNames...), b.final...), from: c.keptGroups(from, keyNames), groupBy: keyNames}
	if !c.m.Dropped {
		return measured.text(c.d)
	}
	if !b.needRank {
		// ug is the per-unit relation itself, now with its row counts.
		ug := from.(*query)
		ug.items = append(ug.items[:len(partCols):len(partCols)], append([]string{c.d.Func("count") + "(*) AS _n"}, ug.items[len(partCols):]...)...)
		if c.ranksGroups() {
			// The l0 choice's window over each unit's groups also totals
			// them, and each unit's first group (always kept) carries its
			// part of the counts, which Decode adds over the rows.
			ranks := &query{items: append([]string{"*", c.groupRank(keyNames)}, c.unitTotals()...), from: ug, alias: "g"}
			measured.from = &query{items: []string{"*"}, from: ranks, where: []string{c.groupKept()}, alias: "kept"}
			c.st.dropped, c.st.droppedPerRow = c.st.width(), true
			measured.items = append(measured.items, c.droppedCounts("gn = 1", "_g", "_t", "_s", "_mx")...)
			return measured.text(c.d)
		}
		ug.alias = ""
		measured.with, measured.from = []named{{"ug", ug, false}}, c.keptGroups(withName{name: "ug", alias: "ug"}, keyNames)
	}
	with, measured.with, measured.alias = measured.with, nil, "m"
	return (&query{with: with, items: []string{"m.*", "dr.du", "dr.da", "dr.ds"}, from: join{kind: crossJoin, left: measured, right: c.dropped(withName{name: "ug"})}}).text(c.d)
}

// boundedMeasures are a bounded plan's measurements at each level.
type boundedMeasures struct {
	ug       []string    // per unit and group, over all its rows: "expr AS name"
	rowAggs  [][2]string // per unit and group, over its l∞ kept rows: {expr, name}
	final    []string    // per group, over the units' kept groups
	needRank bool        // some measurement is row-level: the rows are ranked
}

// boundedSpecs prints each spec's measurements at the levels of the
// bounded form (and sets the outputs' places).
func (c *compiler) boundedSpecs(specs []measure.Spec) boundedMeasures {
	var b boundedMeasures
	sum := func(x string) string { return c.d.Func("sum") + "(" + x + ")" }
	c.st.outs = make([]specOut, len(specs))
	for i, sp := range specs {
		v := "v" + strconv.Itoa(i)
		switch sp.Kind {
		case measure.Rows, measure.Values, measure.Sum:
			b.needRank = true
			agg, f := c.d.Func("count")+"(*)", 0
			switch sp.Kind {
			case measure.Values:
				agg = c.count(sp.Arg)
			case measure.Sum:
				var e string
				e, f = c.clipped(sp.Arg, sp.Lo, sp.Hi)
				agg = sum(e)
			}
			b.rowAggs = append(b.rowAggs, [2]string{agg, v})
			c.st.outs[i] = specOut{col: c.out(&b.final, sum(v)), shift: f}
		case measure.Squares:
			b.needRank = true
			e, sq, f := c.squareTerms(sp)
			b.rowAggs = append(b.rowAggs, [2]string{sum(e), v + "s"}, [2]string{sum(sq), v + "q"}, [2]string{c.count(sp.Arg), v + "c"})
			col := c.out(&b.final, sum(v+"s"), sum(v+"q"), sum(v+"c"))
			c.st.outs[i] = specOut{col: col, q: true, mid: sp.Lo/2 + sp.Hi/2, shift: f}
		case measure.Units:
			c.st.outs[i] = specOut{col: c.out(&b.final, c.d.Func("count")+"(*)")}
		case measure.UnitSum, measure.UnitMean:
			c.st.outs[i] = c.unitSum(&b, sp, v)
		case measure.UnitRows, measure.UnitValues:
			if !integerBounds(sp.Lo, sp.Hi) {
				panic(decline("per-unit count bounds"))
			}
			cnt := c.d.Func("count") + "(*)"
			if sp.Kind == measure.UnitValues {
				cnt = c.count(sp.Arg)
			}
			b.ug = append(b.ug, cnt+" AS "+v)
			c.st.outs[i] = specOut{col: c.out(&b.final, sum(intClip(v, sp.Lo, sp.Hi)))}
		case measure.UnitsWithValue:
			b.ug = append(b.ug, c.count(sp.Arg)+" AS "+v)
			c.st.outs[i] = specOut{col: c.out(&b.final, c.d.Func("count")+"(*) FILTER (WHERE "+v+" > 0)")}
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
	sum := func(x string) string { return c.d.Func("sum") + "(" + x + ")" }
	f := unitGrid(sp)
	_, r, _ := measure.UnitGrid(sp.Lo, sp.Hi)
	if sp.Kind == measure.UnitMean {
		// The unit's sum clipped to n times the bounds, then over n on
		// the finer grid (measure.MeanBits), truncated.
		b.ug = append(b.ug, sum("CAST("+c.onGrid(sp.Arg, -r, r, f)+" AS "+c.d.Wide()+")")+" AS "+v+"s", c.count(sp.Arg)+" AS "+v+"n")
		l, h := strconv.FormatFloat(math.Ldexp(sp.Lo, f), 'f', 0, 64), strconv.FormatFloat(math.Ldexp(sp.Hi, f), 'f', 0, 64)
		n := "CAST(" + v + "n AS " + c.d.Wide() + ")"
		clipped := "CASE WHEN " + v + "s < " + n + " * " + l + " THEN " + n + " * " + l + " WHEN " + v + "s > " + n + " * " + h + " THEN " + n + " * " + h + " ELSE " + v + "s END"
		mean := c.d.WideDiv("("+clipped+") * "+strconv.FormatInt(1<<measure.MeanBits, 10), "NULLIF("+v+"n, 0)")
		return specOut{col: c.out(&b.final, sum(mean)), shift: f + measure.MeanBits}
	}
	if isInt(c.argType(sp.Arg)) && integerBounds(sp.Lo, sp.Hi) && f >= 0 {
		// An integer column on a grid of F ≥ 0: each term is 2^F times the
		// value as a double clamped to ±r (r is a power of 2 below 2^63,
		// so clamping the integer first is the same), summed and clipped
		// as integers at F = 0.
		b.ug = append(b.ug, sum("CAST("+c.d.ToDouble(intClip("a"+strconv.Itoa(sp.Arg), -r, r))+" AS "+c.d.Wide()+")")+" AS "+v)
		return specOut{col: c.out(&b.final, sum(intClip(v, sp.Lo, sp.Hi)))}
	}
	b.ug = append(b.ug, sum("CAST("+c.onGrid(sp.Arg, -r, r, f)+" AS "+c.d.Wide()+")")+" AS "+v)
	return specOut{col: c.out(&b.final, sum(intClip(v, math.Ldexp(sp.Lo, f), math.Ldexp(sp.Hi, f)))), shift: f}
}

// perUnit is the relation of each unit's measurements per group (alias
// ug), with the relations it reads (WITH). Under l∞ the rows are ranked
// first by a keyed hash of their values (rowRank) — only in the groups
// of a unit that have more than l∞ rows (the others keep them all): their
// measurements replace the rest.
func (c *compiler) perUnit(rows *query, partCols []string, b boundedMeasures) ([]named, rel) {
	if !b.needRank {
		return nil, &query{items: append(append([]string{}, partCols...), b.ug...), from: rows.as("r"), groupBy: partCols, alias: "ug"}
	}
	l := strconv.FormatInt(c.m.MaxRows, 10)
	var all, filtered, picked, names []string
	for _, ra := range b.rowAggs {
		all = append(all, ra[0]+" AS "+ra[1])
		filtered = append(filtered, ra[0]+" FILTER (WHERE "+c.rowKept()+") AS "+ra[1])
		picked = append(picked, "CASE WHEN ug._n > "+l+" THEN heavy."+ra[1]+" ELSE ug."+ra[1]+" END AS "+ra[1])
		names = append(names, ra[1])
	}
	var unitNames []string
	for _, u := range b.ug {
		unitNames = append(unitNames, "ug."+u[strings.LastIndex(u, " AS ")+4:])
	}
	perGroup := &query{items: append(append(append(append([]string{}, partCols...), c.d.Func("count")+"(*) AS _n"), all...), b.ug...), from: withName{name: "r"}, groupBy: partCols}
	heavyGroups := &query{items: partCols, from: withName{name: "ug"}, where: []string{"_n > " + l}, alias: "h"}
	ranked := &query{items: []string{"r.*", c.rowRank(partCols)},
		from: join{kind: semiJoin, left: withName{name: "r"}, right: heavyGroups, on: same("h", "r", partCols)}, alias: "r"}
	heavy := &query{items: append(append([]string{}, partCols...), filtered...), from: ranked, groupBy: partCols}
	with := []named{{"r", rows, true}, {"ug", perGroup, false}, {"heavy", heavy, false}}
	if len(b.ug) == 0 {
		// Only row-level measurements: the light groups and the heavy ones
		// (a join of every group with the few heavy ones costs more).
		light := &query{items: append(append([]string{}, partCols...), names...), from: withName{name: "ug"}, where: []string{"_n <= " + l}}
		return with, union{parts: []*query{light, {items: []string{"*"}, from: withName{name: "heavy"}}}, alias: "ug"}
	}
	var ugCols []string
	for _, col := range partCols {
		ugCols = append(ugCols, "ug."+col)
	}
	return with, &query{items: append(append(ugCols, picked...), unitNames...), from: join{kind: leftJoin, left: withName{name: "ug"}, right: withName{name: "heavy"}, on: same("ug", "heavy", partCols)}, alias: "ug"}
}

// keptGroups keeps, per unit, its l0 groups ranked first (groupRank) —
// all of them when the public domains allow no more than l0 groups.
func (c *compiler) keptGroups(from rel, keyNames []string) rel {
	if !c.ranksGroups() {
		return &query{items: []string{"*"}, from: from, alias: "kept"}
	}
	ranks := &query{items: []string{"*", c.groupRank(keyNames)}, from: from, alias: "g"}
	return &query{items: []string{"*"}, from: ranks, where: []string{c.groupKept()}, alias: "kept"}
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
func (c *compiler) argNames() []string {
	var out []string
	for i := range c.m.Args {
		out = append(out, "a"+strconv.Itoa(i))
	}
	return out
}

// rowRank is the rank rn of a row among its unit's rows in a group
// (part: u and the keys): by a keyed hash of the unit, keys and values,
// ties broken by the values.
func (c *compiler) rowRank(part []string) string {
	vals := c.argNames()
	order := c.d.Hash(append(append([]string{}, part...), vals...), c.key)
	if tie := strings.Join(vals, ", "); tie != "" {
		order += ", " + tie
	}
	return c.d.Func("row_number") + "() OVER (PARTITION BY " + strings.Join(part, ", ") + " ORDER BY " + order + ") AS rn"
}

// groupRank is the rank gn of a group among its unit's groups: by a
// keyed hash of the unit and keys, ties broken by the keys.
func (c *compiler) groupRank(keyNames []string) string {
	order := c.d.Hash(append([]string{"u"}, keyNames...), c.key^groupKeyMix)
	if ks := strings.Join(keyNames, ", "); ks != "" {
		order += ", " + ks
	}
	return c.d.Func("row_number") + "() OVER (PARTITION BY u ORDER BY " + order + ") AS gn"
}

// rowKept and groupKept are the conditions on the ranks that bounding
// keeps: the first l∞ rows, the first l0 groups.
func (c *compiler) rowKept() string   { return "rn <= " + strconv.FormatInt(c.m.MaxRows, 10) }
func (c *compiler) groupKept() string { return "gn <= " + strconv.FormatInt(c.m.MaxGroups, 10) }

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
		return &query{items: []string{"r.*", c.rowRank(part)}, from: from, alias: "r"}
	}
	rowsKept := []string{c.rowKept()}
	if groups, ok := domainGroups(c.m.Keys); ok && groups <= c.m.MaxGroups {
		// No unit can have more groups than l0.
		return &query{items: []string{"r.*"}, from: rank(rows.as("r")), where: rowsKept}
	}
	// The rows are read once (WITH b), ranked within their groups, and
	// the groups ranked within their unit.
	ranks := &query{items: append(append([]string{}, part...), c.groupRank(keyNames)), from: withName{name: "b", alias: "r"}, groupBy: part, alias: "g"}
	groups := &query{items: part, from: ranks, where: []string{c.groupKept()}, alias: "g"}
	return &query{with: []named{{"b", rows, false}}, items: []string{"r.*"}, from: join{kind: semiJoin, left: rank(withName{name: "b", alias: "r"}), right: groups, on: same("g", "r", part)}, where: rowsKept}
}

// same is the conditions that rows a and b agree on the columns (NULL
// agreeing with NULL). The unit u is never NULL (the rows read have
// one): its equality is a plain one, which every engine can hash
// (PostgreSQL cannot hash IS NOT DISTINCT FROM, and joined on it alone
// compared every row with every heavy group: minutes at 10M rows).
func same(a, b string, cols []string) []string {
	var conds []string
	for _, col := range cols {
		op := " IS NOT DISTINCT FROM "
		if col == "u" {
			op = " = "
		}
		conds = append(conds, a+"."+col+op+b+"."+col)
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
func (c *compiler) withDropped(keyCols, keyFilters, keyNames []string) string {
	dropped := c.dropped(c.unitGroups(keyCols, keyFilters, keyNames))
	return (&query{items: []string{"m.*", "dr.du", "dr.da", "dr.ds"}, from: join{kind: crossJoin, left: printed{c.st.SQL, "m"}, right: dropped}}).text(c.d)
}

// dropped is the relation (alias dr) of the three counts of what
// bounding dropped (measure.Dropped) over perGroup, each unit's rows per
// group (_n); it places their columns after the measurement's.
func (c *compiler) dropped(perGroup rel) *query {
	count, sum := c.d.Func("count")+"(*)", func(x string) string { return c.d.Func("sum") + "(" + x + ")" }
	lInf := strconv.FormatInt(c.m.MaxRows, 10)
	perUnit := &query{items: []string{"u", sum("_n") + " AS t", count + " AS g", sum("CASE WHEN _n > "+lInf+" THEN "+lInf+" ELSE _n END") + " AS s", c.d.Func("max") + "(_n) AS mx"},
		from: perGroup, groupBy: []string{"u"}, alias: "pu"}
	c.st.dropped = c.st.width()
	return &query{items: c.droppedCounts("", "g", "t", "s", "mx"), from: perUnit, alias: "dr"}
}

// unitTotals are the window aggregates, over each unit's groups (one row
// each, with its rows _n), that droppedCounts reads as _g, _t, _s and _mx.
func (c *compiler) unitTotals() []string {
	sum, over := c.d.Func("sum"), " OVER (PARTITION BY u)"
	lInf := strconv.FormatInt(c.m.MaxRows, 10)
	return []string{c.d.Func("count") + "(*)" + over + " AS _g", sum + "(_n)" + over + " AS _t",
		sum + "(CASE WHEN _n > " + lInf + " THEN " + lInf + " ELSE _n END)" + over + " AS _s", c.d.Func("max") + "(_n)" + over + " AS _mx"}
}

// droppedCounts are the three counts (du, da, ds) over the units, from
// each unit's groups g, rows t, rows once each group keeps at most l∞
// s and largest group mx; with first, over the rows where first holds
// (one per unit).
func (c *compiler) droppedCounts(first, g, t, s, mx string) []string {
	l0, lInf := strconv.FormatInt(c.m.MaxGroups, 10), strconv.FormatInt(c.m.MaxRows, 10)
	wide := func(x string) string { return "CAST(" + x + " AS " + c.d.Wide() + ")" }
	affected := g + " > " + l0 + " OR " + mx + " > " + lInf
	units := c.d.Func("count") + "(*)"
	if first != "" {
		affected = first + " AND (" + affected + ")"
		units += " FILTER (WHERE " + first + ")"
	}
	// floor(2^B·(g·t − min(g, l0)·s) / (g·t)), in the wide type.
	den := "(" + wide(g) + " * " + wide(t) + ")"
	share := c.d.WideDiv("("+den+" - "+wide("CASE WHEN "+g+" > "+l0+" THEN "+l0+" ELSE "+g+" END")+" * "+wide(s)+") * "+strconv.Itoa(1<<measure.DroppedBits), den)
	return []string{c.d.ToText(units) + " AS du", c.d.ToText(c.d.Func("count")+"(*) FILTER (WHERE "+affected+")") + " AS da",
		c.d.ToText("COALESCE("+c.d.Func("sum")+"(CASE WHEN "+affected+" THEN "+share+" ELSE 0 END), 0)") + " AS ds"}
}

// printed is a statement already printed, as a FROM item under alias.
type printed struct{ sql, alias string }

func (p printed) item(Dialect) string { return "(" + p.sql + ") AS " + p.alias }

// unitGroups is the relation (alias ug) of each unit's rows per group,
// _n, over every row the plan reads (every copy a join makes, as the
// reference meets them: not the semi-join rowsOnce reads).
func (c *compiler) unitGroups(keyCols, keyFilters, keyNames []string) *query {
	m := c.m
	where := []string{c.value(m.Unit) + " IS NOT NULL"}
	if m.Where != nil {
		where = append([]string{c.filter(m.Where)}, where...)
	}
	rows := &query{items: append([]string{c.value(m.Unit) + " AS u"}, keyCols...), from: c.from(), where: append(where, keyFilters...), alias: "r"}
	part := append([]string{"u"}, keyNames...)
	return &query{items: append(append([]string{}, part...), c.d.Func("count")+"(*) AS _n"), from: rows, groupBy: part, alias: "ug"}
}

// profile prints the units' profile (measure.Profile) as one row: per bin
// of measure.ProfileBin, the units whose number of groups falls in it, then
// per bin Σ over the groups whose row count falls in it of
// floor(2^ProfileBits / the unit's number of groups).
func (c *compiler) profile(keyCols, keyFilters, keyNames []string) string {
	count, sum := c.d.Func("count")+"(*)", func(x string) string { return c.d.Func("sum") + "(" + x + ")" }
	bin := func(x string) string {
		var b strings.Builder
		b.WriteString("CASE")
		for i, cand := range measure.ProfileCandidates {
			fmt.Fprintf(&b, " WHEN %s <= %d THEN %d", x, cand, i)
		}
		fmt.Fprintf(&b, " ELSE %d END", len(measure.ProfileCandidates))
		return b.String()
	}
	perUnit := &query{items: []string{"u", count + " AS g"}, from: withName{name: "ug"}, groupBy: []string{"u"}, alias: "pu"}
	weighted := &query{items: []string{"_n", c.d.Func("count") + "(*) OVER (PARTITION BY u) AS g"}, from: withName{name: "ug"}, alias: "w"}
	var units, rows []string
	for i := 0; i <= len(measure.ProfileCandidates); i++ {
		units = append(units, c.d.ToText(count+" FILTER (WHERE "+bin("g")+" = "+strconv.Itoa(i)+")")+" AS h"+strconv.Itoa(i))
		rows = append(rows, c.d.ToText("COALESCE("+sum("CASE WHEN "+bin("_n")+" = "+strconv.Itoa(i)+" THEN "+c.d.TruncDiv(strconv.Itoa(1<<measure.ProfileBits), "g")+" ELSE 0 END")+", 0)")+" AS r"+strconv.Itoa(i))
	}
	hu := &query{items: units, from: perUnit, alias: "hu"}
	hr := &query{items: rows, from: weighted, alias: "hr"}
	return (&query{with: []named{{"ug", c.unitGroups(keyCols, keyFilters, keyNames), false}}, items: []string{"hu.*", "hr.*"}, from: join{kind: crossJoin, left: hu, right: hr}}).text(c.d)
}
