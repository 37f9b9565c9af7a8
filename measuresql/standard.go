package measuresql

import "strings"

// Standard prints the forms standard SQL gives, which a dialect embeds
// and overrides form by form where its engine differs (Qrlew's way): a
// dialect's own methods are what it does not share with the standard.
//
// Go has no virtual dispatch: a Standard method never calls another
// Dialect method (an embedding dialect's override of it would not be the
// one called), so each form here stands alone.
type Standard struct{}

// Quote quotes an identifier.
func (Standard) Quote(name string) string { return quoteIdent(name) }

// quoteIdent is SQL's quoted identifier.
func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// Table is the quoted name.
func (Standard) Table(name string) string { return quoteIdent(name) }

// Text is a string literal in the statement, its quotes doubled.
func (Standard) Text(s string, _ int) (string, bool) {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'", false
}

// Widen casts to BIGINT.
func (Standard) Widen(x expr) expr { return cast{x, "BIGINT"} }

// ToDouble casts to DOUBLE PRECISION (rounded to nearest).
func (Standard) ToDouble(x expr) expr { return cast{x, "DOUBLE PRECISION"} }

// ToText casts to VARCHAR, an integer's decimal digits.
func (Standard) ToText(x expr) expr { return cast{x, "VARCHAR"} }

// RoundToInt64 casts a double to BIGINT, which rounds half to even in
// DuckDB and PostgreSQL alike.
func (Standard) RoundToInt64(x expr) expr { return cast{x, "BIGINT"} }

// TruncDiv is integer division, which truncates toward zero.
func (Standard) TruncDiv(x, y expr) expr { return formOf("(({}) / {})", x, y) }

// RowIdentity is none: standard SQL gives a row no identity.
func (Standard) RowIdentity(string) string { return "" }

// SemiJoin has no standard syntax: EXISTS among the conditions.
func (Standard) SemiJoin(_, _, _ expr) (expr, bool) { return nil, true }

// With reads the relation as the engine decides.
func (Standard) With(name string, body expr, _ bool) expr { return formOf(name+" AS ({})", body) }

// WideOp is the operator on the wide type.
func (Standard) WideOp(x expr, op byte, y expr) expr { return paren(x, string(op), y) }

// NarrowSum is none: the wide type compares with numbers.
func (Standard) NarrowSum(_, _, _ expr) (expr, bool) { return nil, false }
