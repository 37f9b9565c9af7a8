package measuresql

import (
	"reflect"
	"testing"
)

// TestTreePrints pins each node's printed form: the printer is the one
// place that writes SQL text, and every shape and dialect form is made
// of these nodes.
func TestTreePrints(t *testing.T) {
	t.Parallel()
	x, y := raw("x"), raw("y")
	for _, c := range []struct {
		node expr
		want string
	}{
		{paren(x, "+", y), "(x + y)"},
		{bare(x, "<=", y), "x <= y"},
		{not(x), "(NOT x)"},
		{unary{o: "-", x: x, bare: true}, "-x"},
		{call{fn: "f", args: []expr{x, y}}, "f(x, y)"},
		{call{fn: "count", star: true}, "count(*)"},
		{call{fn: "count", args: []expr{x}, distinct: true}, "count(DISTINCT x)"},
		{filtered{call{fn: "count", star: true}, bare(x, ">", raw("0"))}, "count(*) FILTER (WHERE x > 0)"},
		{window{agg: call{fn: "row_number"}, part: exprs("u"), order: exprs("h", "x")}, "row_number() OVER (PARTITION BY u ORDER BY h, x)"},
		{window{agg: call{fn: "count", star: true}, part: exprs("u")}, "count(*) OVER (PARTITION BY u)"},
		{window{agg: call{fn: "row_number"}, order: exprs("x")}, "row_number() OVER (ORDER BY x)"},
		{ifThen(x, y, raw("0")), "(CASE WHEN x THEN y ELSE 0 END)"},
		{caseOf{whens: []when{{x, y}}, bare: true}, "CASE WHEN x THEN y END"},
		{cast{x, "BIGINT"}, "CAST(x AS BIGINT)"},
		{isNull{x: x, not: true, bare: true}, "x IS NOT NULL"},
		{isNull{x: x}, "(x IS NULL)"},
		{in{x, []expr{raw("1"), raw("2")}}, "(x IN (1, 2))"},
		{as{x, "a0"}, "x AS a0"},
		{ref{"ug", "_n"}, "ug._n"},
		{formOf("({})::int8", x), "(x)::int8"},
		{formOf("{} SEMI JOIN {} ON {}", x, y, raw("TRUE")), "x SEMI JOIN y ON TRUE"},
		{list{[]expr{x, y}, " AND "}, "x AND y"},
		{num(int64(-3)), "-3"},
		{numbered("k", 2), "k2"},
	} {
		if got := printed(DuckDB{}, c.node); got != c.want {
			t.Errorf("%#v printed %q, want %q", c.node, got, c.want)
		}
	}
}

// TestTextLiteralsAreNumberedAsPrinted: a dialect that binds text
// literals (PostgreSQL) gets them as parameters numbered in the order the
// statement holds them — a WITH relation's before the query's — and each
// use of a literal is a parameter of its own.
func TestTextLiteralsAreNumberedAsPrinted(t *testing.T) {
	t.Parallel()
	a, b := text("a"), text("b'c")
	inner := &query{items: []expr{a}, from: withName{name: "s"}}
	q := &query{with: []named{{"w", inner, false}}, items: []expr{b, a}, from: withName{name: "w"}}
	sql, args := printStatement(Postgres{}, q)
	if want := "WITH w AS (SELECT $1::text FROM s) SELECT $2::text, $3::text FROM w"; sql != want {
		t.Errorf("PostgreSQL: %s\nwant %s", sql, want)
	}
	if want := []any{"a", "b'c", "a"}; !reflect.DeepEqual(args, want) {
		t.Errorf("PostgreSQL's parameters %v, want %v", args, want)
	}
	sql, args = printStatement(DuckDB{}, q)
	if want := "WITH w AS (SELECT 'a' FROM s) SELECT 'b''c', 'a' FROM w"; sql != want || args != nil {
		t.Errorf("DuckDB: %s %v\nwant %s and no parameters", sql, args, want)
	}
}

// TestCompoundIsAWalkOfTheTree: PostgreSQL binds an operand that holds a
// guarded form (a CASE, a binding) anywhere inside it, and prints the rest
// in place.
func TestCompoundIsAWalkOfTheTree(t *testing.T) {
	t.Parallel()
	p := Postgres{}
	guarded := ifThen(raw("c"), raw("x"), raw("y"))
	bound := p.Let(raw("x"), func(v expr) expr { return v })
	for _, c := range []struct {
		x    expr
		want bool
	}{
		{raw("x"), false},
		{paren(raw("x"), "*", raw("2")), false},
		{p.Value(raw(`"y"`), Real), false},
		{guarded, true},
		{cast{paren(raw("1"), "+", guarded), "DOUBLE PRECISION"}, true},
		{bound, true},
		{call{fn: "f", args: []expr{raw("a"), bound}}, true},
	} {
		if got := compound(c.x); got != c.want {
			t.Errorf("compound(%s) = %v, want %v", printed(p, c.x), got, c.want)
		}
	}
}
