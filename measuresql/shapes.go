package measuresql

import (
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

func (c *compiler) bounded(rows *query, keyNames []string, specs []measure.Spec) string {
	m := c.m
	ks := strings.Join(keyNames, ", ")
	var rowVals []string
	for i := range m.Args {
		rowVals = append(rowVals, "a"+strconv.Itoa(i))
	}
	// Per unit and group: the row-level measurements over the l∞ rows
	// ranked first, the per-unit ones over all the unit's rows there.
	needRank := false
	var ug, final []string  // ug: per-unit aggregates ("expr AS name")
	var rowAggs [][2]string // row-level aggregates over a unit's kept rows: {expr, name}
	c.st.outs = make([]specOut, len(specs))
	kept := "rn <= " + strconv.FormatInt(m.MaxRows, 10)
	for i, sp := range specs {
		v := "v" + strconv.Itoa(i)
		switch sp.Kind {
		case measure.Rows:
			needRank = true
			rowAggs = append(rowAggs, [2]string{c.d.Func("count") + "(*)", v})
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("sum")+"("+v+")")}
		case measure.Values:
			needRank = true
			rowAggs = append(rowAggs, [2]string{c.count(sp.Arg), v})
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("sum")+"("+v+")")}
		case measure.Sum:
			needRank = true
			e, f := c.clipped(sp.Arg, sp.Lo, sp.Hi)
			rowAggs = append(rowAggs, [2]string{c.d.Func("sum") + "(" + e + ")", v})
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("sum")+"("+v+")"), shift: f}
		case measure.Squares:
			needRank = true
			e, sq, f := c.squareTerms(sp)
			rowAggs = append(rowAggs, [2]string{c.d.Func("sum") + "(" + e + ")", v + "s"}, [2]string{c.d.Func("sum") + "(" + sq + ")", v + "q"},
				[2]string{c.count(sp.Arg), v + "c"})
			col := c.out(&final, c.d.Func("sum")+"("+v+"s)", c.d.Func("sum")+"("+v+"q)", c.d.Func("sum")+"("+v+"c)")
			c.st.outs[i] = specOut{col: col, q: true, mid: sp.Lo/2 + sp.Hi/2, shift: f}
		case measure.Units:
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("count")+"(*)")}
		case measure.UnitSum, measure.UnitMean:
			// Σ over units of clip(the unit's exact sum of its rows' terms
			// on the grid), as integers (measure.UnitGrid).
			f := unitGrid(sp)
			_, r, _ := measure.UnitGrid(sp.Lo, sp.Hi)
			if sp.Kind == measure.UnitMean {
				// The unit's sum clipped to n times the bounds, then over n
				// on the finer grid (measure.MeanBits), truncated.
				ug = append(ug, c.d.Func("sum")+"(CAST("+c.onGrid(sp.Arg, -r, r, f)+" AS "+c.d.Wide()+")) AS "+v+"s", c.count(sp.Arg)+" AS "+v+"n")
				l, h := strconv.FormatFloat(math.Ldexp(sp.Lo, f), 'f', 0, 64), strconv.FormatFloat(math.Ldexp(sp.Hi, f), 'f', 0, 64)
				n := "CAST(" + v + "n AS " + c.d.Wide() + ")"
				clipped := "CASE WHEN " + v + "s < " + n + " * " + l + " THEN " + n + " * " + l + " WHEN " + v + "s > " + n + " * " + h + " THEN " + n + " * " + h + " ELSE " + v + "s END"
				mean := c.d.WideDiv("("+clipped+") * "+strconv.FormatInt(1<<measure.MeanBits, 10), "NULLIF("+v+"n, 0)")
				c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("sum")+"("+mean+")"), shift: f + measure.MeanBits}
				break
			}
			if isInt(c.argType(sp.Arg)) && integerBounds(sp.Lo, sp.Hi) && f >= 0 {
				// An integer column on a grid of F ≥ 0: each term is 2^F
				// times the value as a double clamped to ±r (r is a power
				// of 2 below 2^63, so clamping the integer first is the
				// same), summed and clipped as integers at F = 0.
				ug = append(ug, c.d.Func("sum")+"(CAST("+c.d.ToDouble(intClip("a"+strconv.Itoa(sp.Arg), -r, r))+" AS "+c.d.Wide()+")) AS "+v)
				c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("sum")+"("+intClip(v, sp.Lo, sp.Hi)+")")}
				break
			}
			ug = append(ug, c.d.Func("sum")+"(CAST("+c.onGrid(sp.Arg, -r, r, f)+" AS "+c.d.Wide()+")) AS "+v)
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("sum")+"("+intClip(v, math.Ldexp(sp.Lo, f), math.Ldexp(sp.Hi, f))+")"), shift: f}
		case measure.UnitRows, measure.UnitValues:
			if !integerBounds(sp.Lo, sp.Hi) {
				panic(decline("per-unit count bounds"))
			}
			cnt := c.d.Func("count") + "(*)"
			if sp.Kind == measure.UnitValues {
				cnt = c.count(sp.Arg)
			}
			ug = append(ug, cnt+" AS "+v)
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("sum")+"("+intClip(v, sp.Lo, sp.Hi)+")")}
		case measure.UnitsWithValue:
			ug = append(ug, c.count(sp.Arg)+" AS "+v)
			c.st.outs[i] = specOut{col: c.out(&final, c.d.Func("count")+"(*) FILTER (WHERE "+v+" > 0)")}
		default:
			panic(decline("spec " + sp.String()))
		}
	}
	partCols := append([]string{"u"}, keyNames...)
	var with []named
	var from rel
	if !needRank {
		from = &query{items: append(append([]string{}, partCols...), ug...), from: rows.as("r"), groupBy: partCols, alias: "ug"}
	} else {
		// l∞: per unit and group, the rows ranked first by a keyed hash of
		// their values. Most groups of a unit have at most l∞ rows and keep
		// them all, so the rows are ranked (a window, which sorts) only in
		// the groups that have more: their measurements replace the rest.
		order := c.d.Hash(append([]string{"u"}, append(keyNames, rowVals...)...), c.key)
		if tie := strings.Join(rowVals, ", "); tie != "" {
			order += ", " + tie
		}
		l := strconv.FormatInt(m.MaxRows, 10)
		var all, filtered, picked, names []string
		for _, ra := range rowAggs {
			all = append(all, ra[0]+" AS "+ra[1])
			filtered = append(filtered, ra[0]+" FILTER (WHERE "+kept+") AS "+ra[1])
			picked = append(picked, "CASE WHEN ug._n > "+l+" THEN heavy."+ra[1]+" ELSE ug."+ra[1]+" END AS "+ra[1])
			names = append(names, ra[1])
		}
		var unitNames []string
		for _, u := range ug {
			unitNames = append(unitNames, "ug."+u[strings.LastIndex(u, " AS ")+4:])
		}
		perGroup := &query{items: append(append(append(append([]string{}, partCols...), c.d.Func("count")+"(*) AS _n"), all...), ug...), from: withName{name: "r"}, groupBy: partCols}
		heavyGroups := &query{items: partCols, from: withName{name: "ug"}, where: []string{"_n > " + l}, alias: "h"}
		ranked := &query{items: []string{"r.*", c.d.Func("row_number") + "() OVER (PARTITION BY " + strings.Join(partCols, ", ") + " ORDER BY " + order + ") AS rn"},
			from: join{kind: semiJoin, left: withName{name: "r"}, right: heavyGroups, on: same("h", "r", partCols)}, alias: "r"}
		heavy := &query{items: append(append([]string{}, partCols...), filtered...), from: ranked, groupBy: partCols}
		with = []named{{"r", rows, true}, {"ug", perGroup, false}, {"heavy", heavy, false}}
		if len(ug) == 0 {
			// Only row-level measurements: the light groups and the heavy
			// ones (a join of every group with the few heavy ones costs more).
			light := &query{items: append(append([]string{}, partCols...), names...), from: withName{name: "ug"}, where: []string{"_n <= " + l}}
			from = union{parts: []*query{light, {items: []string{"*"}, from: withName{name: "heavy"}}}, alias: "ug"}
		} else {
			var ugCols []string
			for _, col := range partCols {
				ugCols = append(ugCols, "ug."+col)
			}
			from = &query{items: append(append(ugCols, picked...), unitNames...), from: join{kind: leftJoin, left: withName{name: "ug"}, right: withName{name: "heavy"}, on: same("ug", "heavy", partCols)}, alias: "ug"}
		}
	}
	// Per unit: its l0 groups ranked first.
	gorder := c.d.Hash(append([]string{"u"}, keyNames...), c.key^0x9e3779b97f4a7c15)
	if ks != "" {
		gorder += ", " + ks
	}
	ranks := &query{items: []string{"*", c.d.Func("row_number") + "() OVER (PARTITION BY u ORDER BY " + gorder + ") AS gn"}, from: from, alias: "g"}
	keptGroups := &query{items: []string{"*"}, from: ranks, where: []string{"gn <= " + strconv.FormatInt(m.MaxGroups, 10)}, alias: "kept"}
	if groups, ok := domainGroups(m.Keys); ok && groups <= m.MaxGroups {
		// No unit can have more groups than l0 (the public domains allow at
		// most that many): every unit keeps all of its groups.
		keptGroups = &query{items: []string{"*"}, from: from, alias: "kept"}
	}
	return (&query{with: with, items: append(append([]string(nil), keyNames...), final...), from: keptGroups, groupBy: keyNames}).text(c.d)
}

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
	m := c.m
	part := append([]string{"u"}, keyNames...)
	var rowVals []string
	for i := range m.Args {
		rowVals = append(rowVals, "a"+strconv.Itoa(i))
	}
	order := c.d.Hash(append(append([]string{}, part...), rowVals...), c.key)
	if tie := strings.Join(rowVals, ", "); tie != "" {
		order += ", " + tie
	}
	rank := func(from rel) *query {
		return &query{items: []string{"r.*", c.d.Func("row_number") + "() OVER (PARTITION BY " + strings.Join(part, ", ") + " ORDER BY " + order + ") AS rn"}, from: from, alias: "r"}
	}
	rowsKept := []string{"rn <= " + strconv.FormatInt(m.MaxRows, 10)}
	if groups, ok := domainGroups(m.Keys); ok && groups <= m.MaxGroups {
		// No unit can have more groups than l0.
		return &query{items: []string{"r.*"}, from: rank(rows.as("r")), where: rowsKept}
	}
	gorder := c.d.Hash(part, c.key^0x9e3779b97f4a7c15)
	if ks := strings.Join(keyNames, ", "); ks != "" {
		gorder += ", " + ks
	}
	// The rows are read once (WITH b), ranked within their groups, and
	// the groups ranked within their unit.
	ranks := &query{items: append(append([]string{}, part...), c.d.Func("row_number")+"() OVER (PARTITION BY u ORDER BY "+gorder+") AS gn"), from: withName{name: "b", alias: "r"}, groupBy: part, alias: "g"}
	groups := &query{items: part, from: ranks, where: []string{"gn <= " + strconv.FormatInt(m.MaxGroups, 10)}, alias: "g"}
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
