package measuresql

import (
	"strconv"
	"strings"
)

// Postgres is PostgreSQL's dialect (issue 37: the PostgreSQL backend
// compiles its measurements with it).
//
// Total forms: a column is read through a widening cast (int2 and int4
// as they are, int8, float4 and float8 as float8), which cannot fail; a
// NaN (equal to itself and above every number in PostgreSQL, NULL to the
// reference) is guarded wherever it is used, as in DuckDB. Sums are in
// numeric (exact, unbounded); the float8 → int8 cast of a fixed-point
// term rounds half to even (rint) and its magnitude is below 2^62, so it
// cannot raise. Built-ins are called as pg_catalog.name, which no
// function in another schema can stand in for, and text is compared,
// grouped and hashed under the "C" collation (bytes). PostgreSQL has no
// semi-join syntax: a semi-join is EXISTS among the conditions.
type Postgres struct {
	Standard
	// Tables gives the schema and name in PostgreSQL of each table the
	// plan names (a mirror's); a table not in it is read by its name.
	Tables map[string][2]string
	// Distributed: a table the plan reads is partitioned (With).
	Distributed bool
	// UTF8: the database stores text as UTF8 (not SQL_ASCII, whose
	// bytes PostgreSQL counts as characters); Chars needs it.
	UTF8 bool
}

// Chars is x itself (PostgreSQL's text holds no NUL), counted in
// characters where the database is UTF8.
func (p Postgres) Chars(x expr) (expr, bool) { return x, p.UTF8 }

// Func is the built-in function name, qualified with pg_catalog; trim
// of a text and its characters is btrim.
func (Postgres) Func(name string) string {
	if name == "trim" {
		name = "btrim"
	}
	return "pg_catalog." + name
}

// Value reads a column as the reference sees it.
func (Postgres) Value(x expr, t Type) expr {
	switch t {
	case Integer:
		return formOf("({})::int8", x)
	case Bool:
		return formOf("(({})::int4)::int8", x) // 0/1: bool has no cast to int8
	case Real:
		return formOf("({})::float8", x)
	case Text:
		return formOf(`(({})::text COLLATE "C")`, x) // char(n) without its padding, as its text is
	}
	return x
}

// Float prints a float64 exactly (PostgreSQL reads the shortest decimal
// form back to the same double).
func (Postgres) Float(f float64) expr {
	return raw("'" + strconv.FormatFloat(f, 'g', -1, 64) + "'::float8")
}

// Hash mixes the values with the key: hash_record_extended of the row of
// values (every type hashes; NULL too), seeded with the key, then hashed
// again as an int8 (hashint8extended: Jenkins' lookup3, a full mix; the
// key is in the inner hash already, so the outer one's seed is 0). The record hash alone combines its columns' hashes nearly
// linearly, so that it ranks a unit's groups by the group more than by
// the key: PostgreSQL kept one of two groups for 3% to 84% of the units
// (TestBoundingKeepsGroupsAndRowsEvenly); the second pass makes every
// ranking as likely as under SQLite's and DuckDB's keyed hashes.
func (p Postgres) Hash(values []expr, key uint64) expr {
	record := call{fn: p.Func("hash_record_extended"), args: []expr{call{fn: "ROW", args: values}, num(int64(key))}}
	return call{fn: p.Func("hashint8extended"), args: []expr{record, raw("0")}}
}

// IsNaN is x = 'NaN' (PostgreSQL's NaN equals itself).
func (Postgres) IsNaN(x expr) expr { return formOf("(({}) = 'NaN'::float8)", x) }

// FloatOp is x op y of float8 values as IEEE computes it, where
// PostgreSQL itself raises "value out of range": on a +, − or × of finite
// values that overflows (IEEE gives ±Inf, as the reference does) and on a
// × of non-zero values that underflows to 0 (IEEE gives ±0). Each form
// computes x op y only where it cannot raise, and otherwise decides the
// result by comparisons on operands scaled by powers of two (exact in the
// normal range, where rounding commutes with the scaling):
//
//   - x + y (and x − y as x + (−y)): plain when both are below 2^1022 in
//     magnitude (or either is not finite: ±Inf and NaN never raise); when
//     one is at least 2^1022 and the other below 1, the sum is the large
//     one (the small one is below half its ulp); otherwise both halves
//     are at least 1/2, their sum h = round(x + y)/2 is finite, and the
//     sum overflows exactly when |h| ≥ 2^1023.
//   - x × y: plain when either is 0 or not finite, or both lie in
//     [10^-150, 10^150]; when both are at least 1, p = (x·2^-600)(y·2^-600)
//     is normal and the product overflows exactly when |p| ≥ 2^-176; when
//     both are at most 1, p = (x·2^600)(y·2^600) is normal and the product
//     rounds to 0 when |p| < 2^125 (and, a gap: when |p| = 2^125 exactly,
//     where the product may round up to the least subnormal instead; 0 is
//     returned, which cannot raise); one above 1 and one below cannot
//     overflow or reach 0.
//
// Division is not compiled (a division by 0 raises; the reference gives
// NULL).
//
// The forms test each operand many times; an operand that is itself such
// a form (nested arithmetic) is bound first (bound: a derived table that
// PostgreSQL evaluates once per row), so that the statement and the work
// grow linearly with the nesting, not exponentially.
func (p Postgres) FloatOp(x expr, op byte, y expr) (expr, bool) {
	if op != '+' && op != '-' && op != '*' {
		return nil, false
	}
	if compound(x) || compound(y) {
		// The alias is short (the body names it about 40 times) and none
		// of the printer's relations is named so.
		body, _ := p.floatOp(raw("_f.a"), op, raw("_f.b"))
		return formOf("(SELECT {} FROM (SELECT {} AS a, {} AS b OFFSET 0) AS _f)", body, x, y), true
	}
	return p.floatOp(x, op, y)
}

// Let binds x in a derived table evaluated once per row: a scalar
// subquery over (SELECT x OFFSET 0), which OFFSET 0 keeps PostgreSQL's
// planner from flattening (flattening would substitute x back into every
// use). x's own references resolve outside it (a derived table sees no
// sibling), and body's references to the alias resolve to this binding:
// Dialect.Let's rule keeps bindings from nesting around a use.
func (Postgres) Let(x expr, body func(v expr) expr) expr {
	return formOf("(SELECT {} FROM (SELECT {} AS v OFFSET 0) AS dpsql_let)", body(raw("dpsql_let.v")), x)
}

// compound reports whether an operand holds a guarded form (a CASE, or
// a binding), which FloatOp binds rather than repeat; columns, literals
// and integer arithmetic are printed as they are (their size is linear).
func compound(x expr) bool {
	return holds(x, func(n expr) bool {
		switch n := n.(type) {
		case caseOf:
			return true
		case form:
			return strings.Contains(n.tmpl, "SELECT") || strings.Contains(n.tmpl, "CASE")
		}
		return false
	})
}

// floatOp prints x op y with the guards, each operand repeated.
func (p Postgres) floatOp(x expr, op byte, y expr) (expr, bool) {
	f := p.Float
	inf := raw("'Infinity'::float8")
	// @ is PostgreSQL's absolute value (the measuring transaction pins
	// the search path to pg_catalog: it is the built-in one), shorter
	// than abs(): the forms name it a dozen times.
	abs := func(v expr) expr { return unary{o: "@ ", x: v} }
	sign := func(v expr) expr { return call{fn: p.Func("sign"), args: []expr{v}} }
	// The larger and the smaller magnitude (NaN counts as the largest,
	// as PostgreSQL orders it: a NaN operand takes the plain branch).
	most := call{fn: "GREATEST", args: []expr{abs(x), abs(y)}}
	least := call{fn: "LEAST", args: []expr{abs(x), abs(y)}}
	or, and := func(a, b expr) expr { return bare(a, "OR", b) }, func(a, b expr) expr { return bare(a, "AND", b) }
	switch op {
	case '+', '-':
		yy := y
		if op == '-' {
			yy = unary{o: "-", x: y}
		}
		sum := paren(x, string(op), y)
		h := paren(bare(x, "*", f(0.5)), "+", bare(yy, "*", f(0.5)))
		return caseOf{whens: []when{
			{or(bare(most, ">=", inf), bare(most, "<", f(0x1p1022))), sum},
			{bare(abs(y), "<", f(1)), x},
			{bare(abs(x), "<", f(1)), yy},
			{bare(abs(h), ">=", f(0x1p1023)), bare(sign(h), "*", inf)},
		}, els: sum}, true
	case '*':
		prod := paren(x, "*", y)
		down := paren(paren(x, "*", f(0x1p-600)), "*", paren(y, "*", f(0x1p-600)))
		up := paren(paren(x, "*", f(0x1p600)), "*", paren(y, "*", f(0x1p600)))
		signs := paren(sign(x), "*", sign(y))
		// Products of magnitudes in [1e-150, 1e150] lie in [1e-300,
		// 1e300]: normal, so neither overflows nor underflows. The scaled
		// branches test each operand on its own: where one is a constant,
		// its test folds to FALSE when its scaled copy would overflow or
		// underflow, so PostgreSQL drops the branch before it folds that
		// constant product (folded, it raised while planning: a CASE does
		// not stop constant folding).
		return caseOf{whens: []when{
			{or(or(bare(most, ">=", inf), bare(least, "=", f(0))), paren(bare(least, ">=", f(1e-150)), "AND", bare(most, "<=", f(1e150)))), prod},
			{and(bare(abs(x), ">=", f(1)), bare(abs(y), ">=", f(1))), ifThen(bare(abs(down), ">=", f(0x1p-176)), bare(signs, "*", inf), prod)},
			{and(bare(abs(x), "<=", f(1)), bare(abs(y), "<=", f(1))), ifThen(bare(abs(up), "<=", f(0x1p125)), bare(signs, "*", f(0)), prod)},
		}, els: prod}, true
	}
	return nil, false
}

// With materializes the relation (PostgreSQL's choice for a relation
// read twice) but the scan's rows of a distributed table (Distributed):
// read where they are used (NOT MATERIALIZED), so that the aggregation
// per unit groups the stored table by its unit column and PostgreSQL can
// run it on each partition, where the partition is (partitionwise
// aggregation; on a foreign partition, postgres_fdw sends it to the
// shard). On one server that reads the table twice: about 20% slower
// with bounding at 10M rows (docs/benchmarks.md).
func (p Postgres) With(name string, body expr, scan bool) expr {
	if scan && p.Distributed {
		return formOf(name+" AS NOT MATERIALIZED ({})", body)
	}
	return formOf(name+" AS ({})", body)
}

// Wide is numeric.
func (Postgres) Wide() string { return "numeric" }

// WideDiv is div on numeric, which truncates toward zero (numeric's /
// keeps the fraction).
func (p Postgres) WideDiv(x, y expr) expr { return call{fn: p.Func("div"), args: []expr{x, y}} }

// Match is the regular expression operator ~ (the RE2 forms the
// compiler prints — (?s), ^ and $, classes, \x00, (?:...) — are
// PostgreSQL's advanced regular expressions too).
func (Postgres) Match(x, re expr) expr { return paren(x, "~", re) }

// Table is the qualified name the plan's table has in PostgreSQL
// (Tables), or the quoted name.
func (p Postgres) Table(name string) string {
	if q, ok := p.Tables[name]; ok {
		return quoteIdent(q[0]) + "." + quoteIdent(q[1])
	}
	return quoteIdent(name)
}

// Text is a parameter of type text: no literal of the analyst's reaches
// PostgreSQL's parser (whatever its standard_conforming_strings), nor
// its logs as part of the statement.
func (Postgres) Text(_ string, n int) (string, bool) {
	return "$" + strconv.Itoa(n) + "::text", true
}
