package audit

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/dpsql/dpsql/parser"
)

// Statement is one generated query with its parameters. Refuse marks a
// near-miss: a statement just outside what the planner may accept, which
// it must refuse on both databases alike, without spending anything.
type Statement struct {
	SQL    string
	Args   []any
	Refuse bool
	// Constructs lists the dialect constructs the statement uses (for the
	// coverage report).
	Constructs []string
}

// relation is a FROM clause of the schema with the columns a statement may
// use over it.
type relation struct {
	name    string // construct name
	with    string // a WITH clause to put before SELECT
	from    string
	nums    []string // numeric or any-class columns, for arguments
	texts   []string // text columns
	plain   []string // columns with declared bounds (no bounds needed)
	keys    []string // GROUP BY columns with a public domain
	freeKey []string // GROUP BY columns without one (need delta)
	bins    []string // columns whose declared bounds the relation shows (FLOOR/CASE keys)
	unit    string   // the unit column to COUNT(DISTINCT ...), "" if none visible
	units   bool     // the relation has privacy units (contribution options allowed)
	raw     string   // a column that is neither grouped nor aggregated (near-misses)
}

// generator builds one statement.
type generator struct {
	r          *rand.Rand
	rel        *relation
	args       []any
	params     bool
	dollar     bool // $N placeholders instead of ?
	constructs map[string]bool
}

func (g *generator) use(c string) { g.constructs[c] = true }

func (g *generator) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g *generator) chance(p float64) bool { return g.r.Float64() < p }

// literals of every storage class, including ones that overflow or raise in
// careless SQL.
var literals = []string{"0", "1", "-1", "2.5", "3", "100", "9223372036854775807", "(-9223372036854775807 - 1)",
	"1e308", "-1e308", "1e15", "'12abc'", "''", "'a'", "NULL", "0.5", "TRUE",
	"EXP(1000)", "(- EXP(1000))", "(EXP(1000) - EXP(1000))"}

var paramValues = []any{int64(0), int64(3), int64(-9223372036854775808), 2.5, 1e308, "a", "12abc", "", nil, []byte("7"), true}

func (g *generator) literal() string {
	if g.params && g.chance(0.1) {
		g.args = append(g.args, paramValues[g.r.IntN(len(paramValues))])
		if g.dollar {
			g.use("parameter $N")
			return fmt.Sprintf("$%d", len(g.args))
		}
		g.use("parameter ?")
		return "?"
	}
	return g.pick(literals)
}

// functions: every whitelisted scalar function, sorted for determinism.
var functions = func() []string {
	var out []string
	for name := range parser.ScalarFunctions() {
		if name == "RAND" {
			continue // not deterministic: D and D′ could not be compared
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}()

// num returns a scalar expression over the relation's columns.
func (g *generator) num(depth int) string {
	if depth <= 0 || g.chance(0.3) {
		if g.chance(0.7) {
			return g.pick(g.rel.nums)
		}
		return g.literal()
	}
	switch g.r.IntN(9) {
	case 0, 1:
		op := g.pick([]string{"+", "-", "*", "/", "%"})
		g.use("operator " + op)
		return "(" + g.num(depth-1) + " " + op + " " + g.num(depth-1) + ")"
	case 2:
		g.use("unary minus")
		return "(- " + g.num(depth-1) + ")"
	case 3, 4, 5:
		name := g.pick(functions)
		if g.chance(0.2) {
			name = "ABS" // the one whitelisted function SQLite can make raise (on −2^63)
		}
		g.use("function " + name)
		lim := parser.ScalarFunctions()[name]
		n := lim[0]
		if lim[1] < 0 || lim[1] > lim[0] {
			n += g.r.IntN(2)
		}
		args := make([]string, n)
		for i := range args {
			if i == 1 && (name == "JSON_EXTRACT" || name == "JSON_VALUE") {
				// The planner takes constant paths only; the document stays
				// any value of the row (NULL where it is not JSON).
				args[i] = g.pick([]string{"'$'", "'$.a'", "'$[0]'", "'$.result.value'"})
				continue
			}
			if g.chance(0.4) {
				args[i] = g.pick(g.rel.nums) // extreme stored values reach the function as they are
				continue
			}
			if g.chance(0.3) && len(g.rel.texts) > 0 {
				args[i] = g.text(depth - 1)
			} else {
				args[i] = g.num(depth - 1)
			}
		}
		return name + "(" + strings.Join(args, ", ") + ")"
	case 6:
		g.use("CASE")
		if g.chance(0.5) {
			return "CASE WHEN " + g.cond(depth-1) + " THEN " + g.num(depth-1) + " ELSE " + g.num(depth-1) + " END"
		}
		return "CASE " + g.num(depth-1) + " WHEN " + g.literal() + " THEN " + g.num(depth-1) + " END"
	case 7:
		t := g.pick([]string{"INTEGER", "REAL", "TEXT", "NUMERIC", "INT64", "FLOAT64", "DOUBLE"})
		g.use("CAST AS " + t)
		return "CAST(" + g.num(depth-1) + " AS " + t + ")"
	default:
		if len(g.rel.texts) > 0 {
			return "LENGTH(" + g.text(depth-1) + ")"
		}
		return g.num(depth - 1)
	}
}

// text returns a text-valued expression.
func (g *generator) text(depth int) string {
	if depth <= 0 || len(g.rel.texts) == 0 || g.chance(0.4) {
		if len(g.rel.texts) > 0 && g.chance(0.7) {
			return g.pick(g.rel.texts)
		}
		return g.pick([]string{"'a'", "''", "'%'", "'solo'"})
	}
	switch g.r.IntN(3) {
	case 0:
		g.use("operator ||")
		return "(" + g.text(depth-1) + " || " + g.num(depth-1) + ")"
	case 1:
		g.use("function REPLACE")
		return "REPLACE(" + g.text(depth-1) + ", 'a', " + g.text(depth-1) + ")"
	default:
		f := g.pick([]string{"LOWER", "UPPER", "TRIM", "LTRIM", "RTRIM"})
		g.use("function " + f)
		return f + "(" + g.text(depth-1) + ")"
	}
}

// cond returns a condition.
func (g *generator) cond(depth int) string {
	switch g.r.IntN(9) {
	case 0, 1:
		op := g.pick([]string{"=", "==", "<>", "!=", "<", "<=", ">", ">="})
		g.use("comparison " + op)
		return g.num(depth) + " " + op + " " + g.num(depth)
	case 2:
		g.use("IS NULL")
		return g.num(depth) + g.pick([]string{" IS NULL", " IS NOT NULL"})
	case 3:
		g.use("BETWEEN")
		return g.num(depth) + g.pick([]string{" BETWEEN ", " NOT BETWEEN "}) + g.literal() + " AND " + g.literal()
	case 4:
		if g.chance(0.3) {
			// Subqueries over the public table: run first, inlined as
			// constants (the same on D and D′).
			g.use("subquery over a public table")
			if g.chance(0.5) {
				return g.text(depth) + g.pick([]string{" IN ", " NOT IN "}) + g.pick([]string{"(SELECT label FROM pub)", "(SELECT g FROM pub WHERE weight > 0)"})
			}
			return g.num(depth) + " > " + g.pick([]string{"(SELECT MAX(weight) FROM pub)", "(SELECT weight FROM pub WHERE label = 'l2')", "(SELECT 1 FROM pub WHERE 0)"})
		}
		g.use("IN")
		return g.num(depth) + g.pick([]string{" IN (", " NOT IN ("}) + g.literal() + ", " + g.literal() + ")"
	case 5:
		g.use("LIKE")
		return g.text(depth) + g.pick([]string{" LIKE ", " NOT LIKE "}) + g.pick([]string{"'a%'", "'%'", "'%z%'", "'h_'", "''"})
	case 6:
		if depth > 0 {
			op := g.pick([]string{" AND ", " OR "})
			g.use("logical" + op)
			return "(" + g.cond(depth-1) + op + g.cond(depth-1) + ")"
		}
		return g.num(0) + " > 0"
	case 7:
		g.use("NOT")
		return "NOT (" + g.cond(depth-1) + ")"
	default:
		return g.num(depth) + " > " + g.literal()
	}
}

// boundsList holds contribution bounds, narrow ones far from zero among
// them.
var boundsList = [][2]string{{"0", "1"}, {"-5", "5"}, {"2", "3"}, {"1e15", "1000000000000002"}, {"-1e12", "1e12"},
	{"0.001", "0.002"}, {"-100", "0"}, {"-1e15", "-999999999999998"}}

// aggregate returns an aggregate call over the relation.
func (g *generator) aggregate() string {
	switch g.r.IntN(8) {
	case 0:
		if g.chance(0.3) {
			g.use("COUNT(*) with per-unit bounds")
			return "COUNT(*, contribution_bounds_per_group => " + g.pick([]string{"(0, 1)", "(0, 3)", "(1, 2)", "(0.5, 2.5)"}) + ")"
		}
		g.use("COUNT(*)")
		return "COUNT(*)"
	case 1:
		if g.chance(0.3) {
			g.use("COUNT(expr) with per-unit bounds")
			return "COUNT(" + g.num(2) + ", contribution_bounds_per_group => " + g.pick([]string{"(0, 1)", "(0, 2)", "(2, 3)"}) + ")"
		}
		g.use("COUNT(expr)")
		return "COUNT(" + g.num(2) + ")"
	case 2:
		if g.rel.unit != "" && g.chance(0.5) {
			g.use("COUNT(DISTINCT unit)")
			return "COUNT(DISTINCT " + g.rel.unit + ")"
		}
		g.use("COUNT(DISTINCT expr)")
		switch g.r.IntN(3) {
		case 0:
			return "COUNT(DISTINCT " + g.num(1) + ")"
		case 1:
			return "COUNT(DISTINCT " + g.rel.raw + ")"
		}
		return "COUNT(DISTINCT " + g.pick(g.rel.texts) + ")"
	default:
		name := g.pick([]string{"SUM", "AVG", "VAR_POP", "VARIANCE", "STDDEV", "STDDEV_POP", "SUM", "AVG", "VAR_SAMP", "STDDEV_SAMP", "VAR", "STD"})
		var arg string
		switch {
		case len(g.rel.plain) > 0 && g.chance(0.3):
			g.use(name + " with policy bounds")
			return name + "(" + g.pick(g.rel.plain) + ")"
		default:
			arg = g.num(2)
		}
		if g.chance(0.6) {
			b := boundsList[g.r.IntN(len(boundsList))]
			// BigQuery's per-group bounds clamp each unit's sum or mean;
			// VAR and STDDEV take per-row bounds only.
			form := "contribution_bounds_per_row"
			if (name == "SUM" || name == "AVG") && g.chance(0.6) {
				form = "contribution_bounds_per_group"
			}
			g.use(name + " with " + form)
			return fmt.Sprintf("%s(%s, %s => (%s, %s))", name, arg, form, b[0], b[1])
		}
		g.use(name + " with chosen bounds")
		return name + "(" + arg + ")"
	}
}

// relations returns the FROM shapes of the schema, freshly (the subquery
// shapes are random).
func (g *generator) relation() *relation {
	switch g.r.IntN(11) {
	case 0, 1, 2, 3:
		return &relation{name: "table with units", from: "p", nums: []string{"v", "w", "n", "uid"}, texts: []string{"g", "h"},
			plain: []string{"w", "n"}, keys: []string{"g", "n"}, freeKey: []string{"h"}, unit: "uid", units: true, raw: "v",
			bins: []string{"w", "n"}}
	case 4, 5:
		return &relation{name: "table, each row a unit", from: "q", nums: []string{"x", "y"}, texts: []string{"k"},
			plain: []string{"y"}, keys: []string{"k"}, raw: "x", bins: []string{"y"}}
	case 6:
		from := "p JOIN pub ON p.g = pub.g"
		if g.chance(0.5) {
			g.use("JOIN ... USING")
			from = "p JOIN pub USING (g)"
		}
		keys, freeKey := []string{"p.g"}, []string{"pub.label"}
		if g.chance(0.35) {
			// The public-groups idiom: pub's values are the groups.
			g.use("public groups (outer join)")
			from = g.pick([]string{"pub LEFT JOIN p ON pub.g = p.g", "p RIGHT OUTER JOIN pub USING (g)"})
			keys, freeKey = []string{"p.g", "pub.label", "pub.g"}, nil
		}
		return &relation{name: "private JOIN public", from: from, nums: []string{"p.v", "p.w", "pub.weight"},
			texts: []string{"pub.label", "p.h"}, plain: []string{"p.w", "p.n"}, keys: keys, freeKey: freeKey,
			unit: "p.uid", units: true, raw: "p.v", bins: []string{"p.w", "p.n"}}
	case 7:
		from := "p JOIN p2 ON p.uid = p2.uid"
		if g.chance(0.5) {
			g.use("JOIN ... USING")
			from = "p JOIN p2 USING (uid)"
		}
		return &relation{name: "private JOIN private on units", from: from, nums: []string{"p.v", "p2.z", "p.n"},
			texts: []string{"p2.tag", "p.g"}, plain: []string{"p.n"}, keys: []string{"p.g"}, freeKey: []string{"p2.tag"},
			unit: "p.uid", units: true, raw: "p2.z", bins: []string{"p.n"}}
	default: // 3 in 11: derived relations decide the unit, where bugs have been
		return g.subquery()
	}
}

// subquery returns a per-unit subquery (inline or as a WITH query) over
// p. Its outputs are sometimes named against their provenance: another
// column called uid, the unit renamed.
func (g *generator) subquery() *relation {
	inner := &relation{nums: []string{"v", "w", "n"}, texts: []string{"g", "h"}}
	saved := g.rel
	g.rel = inner
	defer func() { g.rel = saved }()
	unitAs := g.pick([]string{"uid", "uid AS u", "uid AS uid"})
	unitName := "uid"
	if unitAs == "uid AS u" {
		unitName = "u"
	}
	grouped := g.chance(0.5)
	// Decide the names first: a column drawn and then replaced would take
	// its placeholders with it.
	name1 := "c1"
	plainC1 := false
	if unitName == "u" && g.chance(0.6) {
		g.use("subquery output named like the unit")
		name1 = "uid" // a non-unit column under the unit's name
		plainC1 = !grouped && g.chance(0.7)
	}
	var c1, c2 string
	if grouped {
		g.use("subquery with per-unit aggregates")
		agg := func() string {
			return g.pick([]string{"COUNT", "SUM", "AVG", "MIN", "MAX"}) + "(" + g.num(1) + ")"
		}
		c1, c2 = agg(), agg()
	} else {
		g.use("subquery without aggregates")
		if plainC1 {
			c1 = g.pick([]string{"v", "w", "n", "h"}) // one that differs row by row
		} else {
			c1 = g.num(2)
		}
		c2 = g.num(1)
	}
	sel := fmt.Sprintf("SELECT %s, %s AS %s, %s AS c2, g FROM p", unitAs, c1, name1, c2)
	if !grouped && unitAs == "uid" && name1 == "c1" && g.chance(0.3) {
		// * stands for p's columns, the unit among them.
		g.use("SELECT * in a subquery")
		sel = fmt.Sprintf("SELECT *, %s AS c1, %s AS c2 FROM p", c1, c2)
	}
	if g.chance(0.4) {
		sel += " WHERE " + g.cond(1)
	}
	if grouped {
		sel += " GROUP BY uid, g"
	}
	// s.g is p.g itself: its declared domain holds for it.
	rel := &relation{nums: []string{"s." + name1, "s.c2"}, texts: []string{"s.g"}, keys: []string{"s.g"}, units: true, raw: "s.c2"}
	if unitName == "u" {
		rel.unit = "s.u"
	} else {
		rel.unit = "s.uid"
	}
	if name1 == "uid" {
		rel.unit = "s.u"
	}
	if g.chance(0.5) {
		rel.name = "WITH query"
		rel.with = "WITH s AS (" + sel + ") "
		rel.from = "s"
	} else {
		rel.name = "subquery in FROM"
		rel.from = "(" + sel + ") AS s"
	}
	return rel
}

// Generate returns a random statement: with probability nearMiss one the
// planner must refuse, else one it must accept.
func Generate(r *rand.Rand, nearMiss float64) Statement { return generate(r, nearMiss, false) }

// generate is Generate; with unstableRows, without joins that repeat the
// rows of a table whose rows are units (Config.UnstableRowIdentities).
func generate(r *rand.Rand, nearMiss float64, unstableRows bool) Statement {
	refuse := r.Float64() < nearMiss
	// near-misses take no parameters: their mutations drop parts of the
	// statement, placeholders among them
	g := &generator{r: r, constructs: map[string]bool{}, params: !refuse && r.IntN(4) == 0}
	g.dollar = g.params && r.IntN(2) == 0
	if r.IntN(8) == 0 {
		// Groups chosen by comparison (choice.go): no parameters.
		g.params = false
		return g.choice(refuse, unstableRows)
	}
	g.rel = g.relation()
	g.use("FROM " + g.rel.name)
	group, needDelta := g.groupKeys()
	items, aliases := g.aggregates(group)
	options := g.options(needDelta)
	where, tail := g.tail(group, aliases)
	st := Statement{Args: g.args}
	if refuse {
		st.Refuse = true
		d := &draft{items: items, options: options, where: where, tail: tail, group: group}
		g.nearMiss(d)
		items, options, where, tail = d.items, d.options, d.where, d.tail
	}
	head := "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (" + strings.Join(options, ", ") + ") "
	if len(options) == 1 && !st.Refuse && g.chance(0.3) {
		g.use("session epsilon (no OPTIONS)")
		head = "SELECT "
	}
	comma := ""
	if g.chance(0.05) {
		g.use("trailing comma in the select list")
		comma = ","
	}
	st.SQL = g.rel.with + head + strings.Join(items, ", ") + comma + " FROM " + g.rel.from + where + tail
	st.Args = g.args
	for c := range g.constructs {
		st.Constructs = append(st.Constructs, c)
	}
	sort.Strings(st.Constructs)
	return st
}

// draft is a statement's parts before they are joined.
type draft struct {
	group, items, options []string
	where, tail           string
}

// groupKeys draws the GROUP BY keys; needDelta reports a key without a
// public domain (partition selection needs δ).
func (g *generator) groupKeys() (group []string, needDelta bool) {
	nk := g.r.IntN(3)
	for i := 0; i < nk; i++ {
		if len(g.rel.bins) > 0 && g.chance(0.25) {
			// An expression key whose bins the declared bounds enumerate.
			c := g.pick(g.rel.bins)
			var k string
			switch g.r.IntN(4) {
			case 0:
				g.use("GROUP BY FLOOR(c / w) * m bins")
				k = "FLOOR(" + c + " / " + g.pick([]string{"10", "2.5", "3"}) + ")" + g.pick([]string{"", " * 10", " * 0.5"})
			case 1:
				g.use("GROUP BY CEIL/ROUND bins")
				k = g.pick([]string{"CEIL(" + c + " / 4)", "ROUND(" + c + ")", "10 * FLOOR(" + c + " / 10)"})
			default:
				g.use("GROUP BY CASE buckets")
				// The key is written twice (select list and GROUP BY):
				// no placeholders in it.
				params := g.params
				g.params = false
				cond := g.cond(1)
				g.params = params
				k = "CASE WHEN " + cond + " THEN " + g.pick([]string{"'lo'", "1", "NULL"}) + " WHEN " + c + " < 5 THEN 'mid' ELSE " + g.pick([]string{"'hi'", "2.5", "-1"}) + " END"
			}
			if !contains(group, k) {
				group = append(group, k)
			}
			continue
		}
		if len(g.rel.freeKey) > 0 && (len(g.rel.keys) == 0 || g.chance(0.3)) {
			k := g.pick(g.rel.freeKey)
			if !contains(group, k) {
				group = append(group, k)
				needDelta = true
				g.use("GROUP BY without domain (partition selection)")
			}
		} else if len(g.rel.keys) > 0 {
			k := g.pick(g.rel.keys)
			if !contains(group, k) {
				group = append(group, k)
				g.use("GROUP BY public domain")
			}
		}
	}
	return group, needDelta
}

// aggregates draws the select list: the keys, then one to three
// aggregates (some post-processed) with their aliases.
func (g *generator) aggregates(group []string) (items, aliases []string) {
	items = append(items, group...)
	na := 1 + g.r.IntN(3)
	for i := 0; i < na; i++ {
		a := g.aggregate()
		switch g.r.IntN(6) {
		case 0:
			g.use("post-processing expression")
			a = "ROUND(" + a + ", 1)"
		case 1:
			g.use("post-processing expression")
			a = a + " / (COUNT(*) + 1)"
		}
		alias := fmt.Sprintf("a%d", i)
		items = append(items, a+" AS "+alias)
		aliases = append(aliases, alias)
	}
	return items, aliases
}

// options draws the OPTIONS.
func (g *generator) options(needDelta bool) []string {
	eps := g.pick([]string{"0.5", "1", "2"})
	options := []string{"epsilon = " + eps}
	if needDelta || g.chance(0.1) {
		options = append(options, "delta = "+g.pick([]string{"1e-6", "0.001", "0.01"}))
	}
	if needDelta && g.chance(0.2) {
		g.use("OPTIONS min_privacy_units_per_group")
		options = append(options, "min_privacy_units_per_group = "+g.pick([]string{"1", "2", "5"}))
	}
	if g.chance(0.25) {
		g.use("OPTIONS noise = 'gaussian'")
		options = append(options, "noise = 'gaussian'")
	}
	if g.chance(0.2) {
		g.use("OPTIONS bounds_epsilon_fraction")
		options = append(options, "bounds_epsilon_fraction = "+g.pick([]string{"0.1", "0.5"}))
	}
	if g.rel.units && g.chance(0.3) {
		g.use("OPTIONS contribution bounds")
		l0, lInf := fmt.Sprint(1+g.r.IntN(3)), fmt.Sprint(1+g.r.IntN(4))
		// Bounds chosen privately (AUTO) in two of the twelve draws,
		// without a draw of their own (the other statements stay those
		// the seeds gave before).
		switch l0 + lInf {
		case "34":
			g.use("OPTIONS contribution bounds AUTO")
			l0, lInf = "AUTO", "AUTO"
		case "33":
			g.use("OPTIONS contribution bounds AUTO")
			l0 = "AUTO"
		}
		options = append(options, "max_groups_contributed = "+l0+", max_rows_contributed = "+lInf)
	}
	return options
}

// tail draws WHERE, and GROUP BY, HAVING, ORDER BY and LIMIT.
func (g *generator) tail(group, aliases []string) (where, tail string) {
	if g.chance(0.5) {
		g.use("WHERE")
		where = " WHERE " + g.cond(2)
	}
	if len(group) > 0 {
		tail += " GROUP BY " + strings.Join(group, ", ")
		if g.chance(0.3) {
			g.use("HAVING")
			tail += " HAVING " + g.pick(aliases) + " > " + g.pick([]string{"0", "2", "10"})
		}
	}
	if g.chance(0.3) {
		g.use("ORDER BY")
		tail += " ORDER BY " + g.pick([]string{"1", "1 DESC", g.pick(aliases) + " DESC"})
	}
	if g.chance(0.2) {
		g.use("LIMIT")
		tail += " LIMIT " + g.pick([]string{"1", "2", "5", "2 OFFSET 1"})
	}
	return where, tail
}

// nearMiss changes an accepted statement into one the planner must refuse.
func (g *generator) nearMiss(d *draft) {
	{
		kind := g.r.IntN(9)
		if kind == 8 && g.rel.unit == "" {
			kind = 0
		}
		switch kind {
		case 0:
			g.use("near-miss: raw column")
			d.items = append(d.items, g.rel.raw)
		case 1:
			g.use("near-miss: MIN/MAX aggregate")
			d.items = append(d.items, g.pick([]string{"MIN", "MAX"})+"("+g.rel.raw+")")
		case 2:
			g.use("near-miss: SUM(DISTINCT ...)")
			d.items = append(d.items, g.pick([]string{"SUM", "AVG"})+"(DISTINCT "+g.rel.raw+")")
		case 3:
			g.use("near-miss: epsilon out of range")
			d.options[0] = "epsilon = " + g.pick([]string{"0", "5000", "-1"})
		case 4:
			g.use("near-miss: no aggregate")
			d.items = []string{"1"}
			d.tail = ""
		case 5:
			// Not enumerable from the policy, and no δ for partition
			// selection.
			g.use("near-miss: GROUP BY an expression without bins or delta")
			for i := len(d.options) - 1; i >= 0; i-- {
				if strings.HasPrefix(d.options[i], "delta = ") {
					d.options = append(d.options[:i], d.options[i+1:]...)
				}
			}
			d.items = append(d.items, g.rel.raw+" + 1")
			if len(d.group) == 0 {
				d.tail = " GROUP BY " + g.rel.raw + " + 1" + d.tail
			} else {
				d.tail = strings.Replace(d.tail, " GROUP BY ", " GROUP BY "+g.rel.raw+" + 1, ", 1)
			}
		case 6:
			g.use("near-miss: LIKE with a column pattern")
			d.where = " WHERE " + g.pick(g.rel.texts) + " LIKE " + g.pick(g.rel.texts)
		case 7:
			g.use("near-miss: privacy_unit_column in OPTIONS")
			d.options = append(d.options, "privacy_unit_column = "+g.rel.raw)
		case 8:
			g.use("near-miss: GROUP BY the privacy unit")
			if !slices.ContainsFunc(d.options, func(o string) bool { return strings.HasPrefix(o, "delta ") }) {
				d.options = append(d.options, "delta = 0.001") // an option given twice is refused
			}
			if len(d.group) == 0 {
				d.tail = " GROUP BY " + g.rel.unit + d.tail
			} else {
				d.tail = strings.Replace(d.tail, " GROUP BY ", " GROUP BY "+g.rel.unit+", ", 1)
			}
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
