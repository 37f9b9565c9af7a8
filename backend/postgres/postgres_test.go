package postgres

import (
	"math"
	"reflect"
	"testing"

	"modernc.org/sqlite/vtab"

	"github.com/dpsql/dpsql/catalog"
)

func TestWeightColumnIsTheCatalogs(t *testing.T) {
	if weightColumn != catalog.WeightColumn || identityColumn != catalog.IdentityColumn {
		t.Fatalf("%q, %q != %q, %q", weightColumn, identityColumn, catalog.WeightColumn, catalog.IdentityColumn)
	}
}

// TestSelectSQL: the two statement shapes a scan sends, for every kind
// of column.
func TestSelectSQL(t *testing.T) {
	tb := &table{schema: "sh", name: `o"rders`, cols: []column{
		{name: "i", kind: kindInteger, compared: intCompare}, {name: "f", kind: kindReal, compared: realCompare}, {name: "n", kind: kindNumeric},
		{name: "b", kind: kindBlob}, {name: `t"x`, kind: kindText}}}
	for _, c := range []struct {
		used                 []int
		weighted, identified bool
		want                 string
	}{
		{[]int{0, 1, 2, 3, 4}, false, false, `SELECT "i", "f", "n"::text, "b", "t""x"::text FROM "sh"."o""rders"`},
		{[]int{1}, false, true, `SELECT "f", tableoid::int8, ctid FROM "sh"."o""rders"`},
		{nil, false, false, `SELECT FROM "sh"."o""rders"`},
		{nil, false, true, `SELECT tableoid::int8, ctid FROM "sh"."o""rders"`},
		{[]int{4, 1}, true, false, `SELECT "t""x"::text COLLATE "C", float8send("f"::float8), COUNT(*) FROM "sh"."o""rders" GROUP BY 1, 2`},
		{[]int{2, 0, 3}, true, false, `SELECT "n"::text COLLATE "C", "i", "b", COUNT(*) FROM "sh"."o""rders" GROUP BY 1, 2, 3`},
		{nil, true, false, `SELECT COUNT(*) FROM "sh"."o""rders" HAVING COUNT(*) > 0`},
	} {
		if got := tb.selectSQL(c.used, c.weighted, c.identified, ""); got != c.want {
			t.Errorf("selectSQL(%v, %v)\n got %s\nwant %s", c.used, c.weighted, got, c.want)
		}
	}
	where, args := tb.where([]string{"0>=", "0<", "1=", "0=", "9=", "0<>", "2>"}, []vtab.Value{int64(3), 2.5, int64(1), int64(-7), int64(0), int64(1), int64(0)})
	if got, want := tb.selectSQL([]int{0}, true, false, where), `SELECT "i", COUNT(*) FROM "sh"."o""rders" WHERE "i" >= $1::int8 AND "f" = $2::float8 AND "i" = $3::int8 GROUP BY 1`; got != want || !reflect.DeepEqual(args, []any{int64(3), 1.0, int64(-7)}) {
		t.Errorf("with filters\n got %s %v\nwant %s [3 1 -7]", got, args, want)
	}
}

// TestWhereSendsOnlyExactComparisons: a filter is sent only where
// PostgreSQL compares exactly as SQLite does — an integer column with an
// integer, a float column with a float or an integer a float64 holds, a
// text column with text, as bytes — by one of the five operators, as a
// parameter; anything else is left to SQLite.
func TestWhereSendsOnlyExactComparisons(t *testing.T) {
	tb := &table{cols: []column{{name: "i", kind: kindInteger, compared: intCompare}, {name: "flag", kind: kindInteger}, {name: "f", kind: kindReal, compared: realCompare},
		{name: "s", kind: kindText, compared: textCompare}, {name: "n", kind: kindNumeric}}}
	for _, c := range []struct {
		filters []string
		vals    []vtab.Value
		want    string
		args    []any
	}{
		{[]string{"0>"}, []vtab.Value{int64(5)}, ` WHERE "i" > $1::int8`, []any{int64(5)}},
		{[]string{"0>"}, []vtab.Value{5.5}, ``, nil},                               // a float with an integer column: SQLite compares
		{[]string{"0="}, []vtab.Value{"5"}, ``, nil},                               // text
		{[]string{"0="}, []vtab.Value{nil}, ``, nil},                               // NULL
		{[]string{"1="}, []vtab.Value{int64(1)}, ``, nil},                          // boolean, oid
		{[]string{"2<"}, []vtab.Value{2.5}, ` WHERE "f" < $1::float8`, []any{2.5}}, // float column, float value
		{[]string{"2<"}, []vtab.Value{math.Inf(1)}, ` WHERE "f" < $1::float8`, []any{math.Inf(1)}},
		{[]string{"2>="}, []vtab.Value{int64(1 << 53)}, ` WHERE "f" >= $1::float8`, []any{float64(1 << 53)}},
		{[]string{"2>="}, []vtab.Value{int64(1<<53 + 1)}, ``, nil}, // not exactly a float64
		{[]string{"2="}, []vtab.Value{math.NaN()}, ``, nil},
		{[]string{"3="}, []vtab.Value{int64(1)}, ``, nil}, // a number with a text column
		{[]string{"3>="}, []vtab.Value{"naïve"}, ` WHERE "s"::text COLLATE "C" >= $1::text`, []any{"naïve"}},
		{[]string{"3="}, []vtab.Value{"a\x00b"}, ``, nil}, // PostgreSQL's text cannot hold it
		{[]string{"3="}, []vtab.Value{"\xff"}, ``, nil},
		{[]string{"3="}, []vtab.Value{[]byte("a")}, ``, nil},                                     // a blob
		{[]string{"4="}, []vtab.Value{1.5}, ``, nil},                                             // numeric column (rounded in Go)
		{[]string{"0=", "0<"}, []vtab.Value{int64(1)}, ` WHERE "i" = $1::int8`, []any{int64(1)}}, // fewer values than filters
		{[]string{"0 OR 1=1 --="}, []vtab.Value{int64(1)}, ``, nil},                              // not BestIndex's
		{[]string{"x"}, []vtab.Value{int64(1)}, ``, nil},
	} {
		if got, args := tb.where(c.filters, c.vals); got != c.want || !reflect.DeepEqual(args, c.args) {
			t.Errorf("where(%q, %v) = %q %v, want %q %v", c.filters, c.vals, got, args, c.want, c.args)
		}
	}
}

// TestSQLiteValue: every decoded value becomes a SQLite value by a rule
// that cannot fail.
func TestSQLiteValue(t *testing.T) {
	for _, c := range []struct {
		k    kind
		in   any
		want any
	}{
		{kindInteger, int16(-3), int64(-3)},
		{kindInteger, int32(7), int64(7)},
		{kindInteger, true, int64(1)},
		{kindInteger, false, int64(0)},
		{kindInteger, uint32(4000000000), int64(4000000000)},
		{kindReal, float32(1.5), 1.5},
		{kindReal, math.NaN(), nil},
		{kindReal, math.Inf(-1), math.Inf(-1)},
		{kindNumeric, "1e400", math.Inf(1)},
		{kindNumeric, "-1e400", math.Inf(-1)},
		{kindNumeric, "NaN", nil},
		{kindNumeric, "12.50", 12.5},
		{kindText, "12.50", "12.50"},
		{kindBlob, []byte{0, 1}, []byte{0, 1}},
		{kindText, nil, nil},
	} {
		if got := sqliteValue(c.k, c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("sqliteValue(%v, %#v) = %#v, want %#v", c.k, c.in, got, c.want)
		}
	}
}

func TestUnliteral(t *testing.T) {
	for in, want := range map[string]string{`'a'`: "a", ` 'it''s' `: "it's", `''`: ""} {
		if got, err := unliteral(in); err != nil || got != want {
			t.Errorf("unliteral(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{`a`, `'a`, `"a"`, ``} {
		if _, err := unliteral(bad); err == nil {
			t.Errorf("unliteral(%q) accepted", bad)
		}
	}
	if got := Literal("it's"); got != `'it''s'` {
		t.Errorf("Literal: %s", got)
	}
}

// TestParseMirror: the compiled measurement finds a mirror's PostgreSQL table from the
// statement Mirror wrote, whatever the names hold; other statements are
// not mirrors.
func TestParseMirror(t *testing.T) {
	for _, names := range [][3]string{
		{"src1", "public", "t"},
		{"s'x", "my, schema", "it's (a) 'table'"},
		{"", "", "''"},
	} {
		stmt := "CREATE VIRTUAL TABLE " + Quote(names[2]) + " USING " + Module + mirrorArgs(names[0], names[1], names[2])
		id, schema, table, ok := parseMirror(stmt)
		if !ok || [3]string{id, schema, table} != names {
			t.Errorf("%s: %q %q %q %v", stmt, id, schema, table, ok)
		}
	}
	for _, stmt := range []string{
		`CREATE TABLE t (x INTEGER)`,
		`CREATE VIRTUAL TABLE t USING fts5(a, b)`,
		`CREATE VIRTUAL TABLE t USING dpsql_postgres('a', 'b')`,
		`CREATE VIRTUAL TABLE t USING dpsql_postgres('a', 'b', 'c', 'd')`,
		`CREATE VIRTUAL TABLE t USING dpsql_postgres('a', 'b', c)`,
		`CREATE VIRTUAL TABLE t USING dpsql_postgres('a', 'b', 'c`,
	} {
		if _, _, _, ok := parseMirror(stmt); ok {
			t.Errorf("%s read as a mirror", stmt)
		}
	}
}
