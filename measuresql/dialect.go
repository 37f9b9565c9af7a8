package measuresql

import "strconv"

// DuckDB is DuckDB's dialect.
//
// Total forms: a column is read through a widening CAST (every integer
// type up to 32 bits unsigned and BIGINT to BIGINT, BOOLEAN to 0/1, FLOAT
// and DOUBLE to DOUBLE), which cannot fail. A NaN, which the reference
// evaluator reads as NULL (SQLite has none), is guarded wherever it is
// used: comparisons, counts, clipping. Literals are typed
// (CAST of a decimal string to DOUBLE, which DuckDB rounds correctly), so
// no comparison depends on DuckDB's literal typing. Sums are in HUGEINT
// (128 bits), and no sum of fewer than 2^48 rows can reach 2^126. Clipping
// is CASE over comparisons, which cannot raise. hash() accepts every type
// and NULL.
//
// What the owner's file holds cannot change the statement's meaning: every
// function is called by its qualified built-in name (system.main.sum), which
// a macro stored in the file cannot shadow (an unqualified sum or isnan
// resolves to a macro of the same name in the schema main first), and text
// is compared, grouped and hashed under the binary collation C, whatever
// collation the column declares (the reference compares bytes).
type DuckDB struct{ Standard }

// Func is the built-in function name, qualified with DuckDB's system
// catalog so that no macro in the file can stand in for it.
func (DuckDB) Func(name string) string { return "system.main." + name }

// Value reads a column as the reference sees it.
func (DuckDB) Value(x expr, t Type) expr {
	switch t {
	case Integer, Bool:
		return cast{x, "BIGINT"}
	case Real:
		return cast{x, "DOUBLE"} // NaN stays: the compiler guards every use
	case Text:
		return formOf("({} COLLATE C)", x) // bytes, as the reference compares them
	}
	return x
}

// Float prints a float64 exactly.
func (DuckDB) Float(f float64) expr {
	return raw("CAST('" + strconv.FormatFloat(f, 'g', -1, 64) + "' AS DOUBLE)")
}

// Hash mixes the values with the key.
func (d DuckDB) Hash(values []expr, key uint64) expr {
	return call{fn: d.Func("hash"), args: append(append([]expr{}, values...), raw("CAST("+strconv.FormatUint(key, 10)+" AS UBIGINT)"))}
}

// IsNaN is DuckDB's isnan.
func (d DuckDB) IsNaN(x expr) expr { return call{fn: d.Func("isnan"), args: []expr{x}} }

// RowIdentity is DuckDB's rowid, the identity the mirror reads.
func (DuckDB) RowIdentity(table string) string {
	if table == "" {
		return "rowid"
	}
	return table + ".rowid"
}

// TruncDiv is DuckDB's integer division //, which truncates toward
// zero.
func (DuckDB) TruncDiv(x, y expr) expr { return paren(x, "//", y) }

// WideDiv is // on HUGEINT, which truncates toward zero.
func (DuckDB) WideDiv(x, y expr) expr { return paren(x, "//", y) }

// Match is regexp_full_match (RE2; the expression is anchored anyway).
func (d DuckDB) Match(x, re expr) expr {
	return call{fn: d.Func("regexp_full_match"), args: []expr{x, re}}
}

// FloatOp is DuckDB's operator, which gives ±Inf and NaN rather than
// raise (DuckDB 1.5).
func (DuckDB) FloatOp(x expr, op byte, y expr) (expr, bool) {
	return paren(x, string(op), y), true
}

// Let binds x to a lambda's parameter: list_transform over the list
// [x] evaluates x once (measured linear in the depth of nested
// bindings; DuckDB's NULLIF and CASE copy their operand, which doubles
// the work at each level).
func (d DuckDB) Let(x expr, body func(v expr) expr) expr {
	return formOf(d.Func("list_transform")+"([{}], lambda dpsql_v: {})[1]", x, body(raw("dpsql_v")))
}

// Wide is HUGEINT.
func (DuckDB) Wide() string { return "HUGEINT" }

// SemiJoin is DuckDB's SEMI JOIN (measured faster there than EXISTS or a
// row-value IN).
func (DuckDB) SemiJoin(from, sub, on expr) (expr, bool) {
	return formOf("{} SEMI JOIN {} ON {}", from, sub, on), false
}

// Chars cuts x at its first NUL (split_part); DuckDB counts characters
// in code points, as SQLite does.
func (d DuckDB) Chars(x expr) (expr, bool) {
	return call{fn: d.Func("split_part"), args: []expr{x, call{fn: d.Func("chr"), args: []expr{raw("0")}}, raw("1")}}, true
}
