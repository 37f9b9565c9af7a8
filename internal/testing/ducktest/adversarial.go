//go:build cgo

package ducktest

import (
	"context"
	"strings"
)

// Adversarial makes the DuckDB file path with a table a of every column
// type dpsql reads, holding the values that make a careless expression
// raise: the extremes of every integer type, NaN, ±Inf, −0, the largest
// and smallest doubles, huge text, blobs, NULLs; its text columns compare
// without case (spellings that differ only in case are there), and the
// file holds macros named like the built-ins (HostileSchema's).
func Adversarial(ctx context.Context, path string) error {
	big := strings.Repeat("y", 100000)
	stmts := []string{
		`CREATE TABLE a (uid BIGINT, i8 TINYINT, i16 SMALLINT, i32 INTEGER, i64 BIGINT, u32 UINTEGER, b BOOLEAN,
			f4 FLOAT, f8 DOUBLE, s VARCHAR COLLATE NOCASE, bl BLOB, h HUGEINT, d DECIMAL(18,3), ts TIMESTAMP, g VARCHAR COLLATE NOCASE)`,
		`INSERT INTO a VALUES
			(1, -128, -32768, -2147483648, -9223372036854775808, 0, false, 'NaN', 'NaN', '', '\x00'::BLOB, -170141183460469231731687303715884105728, -999999999999999.999, '1970-01-01', 'a'),
			(1, 127, 32767, 2147483647, 9223372036854775807, 4294967295, true, 'Infinity', 'Infinity', 'abc', '\xff'::BLOB, 170141183460469231731687303715884105727, 999999999999999.999, '2262-04-11', 'b'),
			(2, 0, 0, 0, 0, 0, NULL, '-Infinity', '-Infinity', '` + big + `', NULL, 0, 0, NULL, 'a'),
			(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
			(3, -1, -1, -1, -1, 1, true, '-0.0', '-0.0', '1e999', '', 1, 0.001, '2000-01-01', 'c'),
			(3, 1, 1, 1, 1, 1, false, 3.4e38, 1.7976931348623157e308, '-1e999', 'x', -1, -0.001, '2000-01-01', 'c'),
			(4, 5, 5, 5, 5, 5, true, 1.4e-45, 4.9e-324, ' 12.5e1x', 'yy', 5, 5.5, '2000-01-01', NULL),
			(NULL, 5, 5, 5, 5, 5, true, -3.4e38, -1.7976931348623157e308, '0x10', 'z', 5, 5.5, '2000-01-01', 'a'),
			(5, 1, 1, 1, 1, 1, true, 1, 1, 'ABC', 'q', 1, 1, '2000-01-01', 'A')`,
	}
	for _, st := range HostileSchema {
		if strings.Contains(st, "MACRO") {
			stmts = append(stmts, st)
		}
	}
	return Exec(ctx, path, stmts...)
}
