package audit

import (
	"fmt"
	"sort"
	"strings"
)

// choice draws a query whose groups are chosen by comparison: a threshold
// query (OPTIONS (max_groups_above = c) with HAVING agg > T, the sparse
// vector technique) or ORDER BY agg DESC LIMIT k (report noisy max, or
// the noisy histogram where it is as accurate), over relations where one
// unit falls in many groups — a private table joined with a public one by
// an inequality — and over plain tables. With refuse, a near-miss that
// the planner must refuse.
func (g *generator) choice(refuse, unstableRows bool) Statement {
	type shape struct {
		name, from string
		keys       []string // groups from public values
		compared   []string // aggregates a choice may compare
		extra      []string // other aggregates the select list may release
		units      bool
		pubKeys    bool   // keys of the public table: top-k needs PUBLIC_GROUPS
		raw        string // a column without declared bounds (its SUM searches for them)
	}
	shapes := []shape{
		{"private JOIN public by an inequality", "p JOIN pub ON p.w >= pub.weight", []string{"pub.label", "pub.g"},
			[]string{"COUNT(*)", "COUNT(DISTINCT p.uid)", "SUM(p.n)", "SUM(p.w)", "COUNT(*, contribution_bounds_per_group => (0, 3))", "SUM(p.v, contribution_bounds_per_row => (0, 5))"},
			[]string{"AVG(p.w)", "COUNT(*)", "SUM(p.n)"}, true, true, "p.v"},
		{"private JOIN public", "p JOIN pub ON p.g = pub.g", []string{"pub.label"},
			[]string{"COUNT(*)", "SUM(p.n)", "COUNT(p.v)"}, []string{"AVG(p.n)", "COUNT(*)"}, true, true, "p.v"},
		{"table with units", "p", []string{"p.g", "p.n"},
			[]string{"COUNT(*)", "COUNT(DISTINCT p.uid)", "SUM(p.w)", "SUM(p.n)"}, []string{"AVG(p.w)", "VAR_POP(p.w)", "COUNT(*)"}, true, false, "p.v"},
		{"rows as units JOIN public by an inequality", "q JOIN pub ON q.y <= pub.weight", []string{"pub.label", "pub.g"},
			[]string{"COUNT(*)", "SUM(q.y)", "COUNT(q.x)"}, []string{"AVG(q.y)", "COUNT(*)"}, false, true, "q.x"},
	}
	if unstableRows {
		shapes = shapes[:len(shapes)-1] // the rows-as-units join (Config.UnstableRowIdentities)
	}
	sh := shapes[g.r.IntN(len(shapes))]
	g.use("choice FROM " + sh.name)
	var keys []string
	for _, k := range sh.keys {
		if len(keys) == 0 || g.chance(0.3) {
			keys = append(keys, k)
		}
	}
	compared := g.pick(sh.compared)
	items := append([]string{}, keys...)
	if g.chance(0.7) {
		items = append(items, compared+" AS v0")
	}
	if g.chance(0.4) {
		items = append(items, g.pick(sh.extra)+" AS v1")
	}
	options := []string{"epsilon = " + g.pick([]string{"0.5", "1", "2"})}
	if sh.units && g.chance(0.4) {
		options = append(options, fmt.Sprintf("max_rows_contributed = %d", 1+g.r.IntN(3)))
	}
	tail := " GROUP BY " + strings.Join(keys, ", ")
	threshold := g.chance(0.6)
	if threshold {
		g.use("threshold query (max_groups_above)")
		options = append(options, fmt.Sprintf("max_groups_above = %d", 1+g.r.IntN(3)))
		tail += " HAVING " + compared + " > " + g.pick([]string{"0", "1", "3", "-2"})
		if g.chance(0.3) {
			tail += " ORDER BY 1 DESC"
		}
	} else {
		g.use("top-k (ORDER BY aggregate DESC LIMIT k)")
		if sh.units {
			options = append(options, fmt.Sprintf("max_groups_contributed = %d", 1+g.r.IntN(8)))
		}
		if sh.pubKeys {
			options = append(options, "group_selection_strategy = PUBLIC_GROUPS")
		}
		tail += fmt.Sprintf(" ORDER BY %s DESC LIMIT %d", compared, 1+g.r.IntN(2))
	}
	st := Statement{}
	if refuse {
		st.Refuse = true
		g.use("near-miss: choice")
		switch g.r.IntN(4) {
		case 0: // no HAVING
			options = append(options, "max_groups_above = 2")
			tail = " GROUP BY " + strings.Join(keys, ", ")
		case 1: // a comparison of an average
			options = append(options, "max_groups_above = 2")
			tail = " GROUP BY " + strings.Join(keys, ", ") + " HAVING " + sh.extra[0] + " > 1"
		case 2: // Gaussian noise
			options = append(options, "max_groups_above = 1", "noise = 'gaussian'")
			tail = " GROUP BY " + strings.Join(keys, ", ") + " HAVING " + compared + " > 1"
		default: // bounds chosen privately
			options = append(options, "max_groups_above = 1")
			tail = " GROUP BY " + strings.Join(keys, ", ") + " HAVING SUM(" + sh.raw + ") > 1"
		}
		// a near-miss option list must not keep two max_groups_above
		options = dedupeOption(options, "max_groups_above")
	}
	st.SQL = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (" + strings.Join(options, ", ") + ") " + strings.Join(items, ", ") + " FROM " + sh.from + tail
	for c := range g.constructs {
		st.Constructs = append(st.Constructs, c)
	}
	sort.Strings(st.Constructs)
	return st
}

// dedupeOption keeps the last of the options named name.
func dedupeOption(options []string, name string) []string {
	last := -1
	for i, o := range options {
		if strings.HasPrefix(o, name+" ") {
			last = i
		}
	}
	var out []string
	for i, o := range options {
		if strings.HasPrefix(o, name+" ") && i != last {
			continue
		}
		out = append(out, o)
	}
	return out
}
