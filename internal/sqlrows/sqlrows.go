// Package sqlrows reads rows of a database/sql result as plain values:
// the one scan loop that the engine, the compiled measurement's decoder
// and the wire server's catalog share.
package sqlrows

import "database/sql"

// Values scans the current row of rows, which has n columns, into one
// value per column; text a driver gives as bytes is a string.
func Values(rows *sql.Rows, n int) ([]any, error) {
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	for i, v := range vals {
		if b, ok := v.([]byte); ok {
			vals[i] = string(b)
		}
	}
	return vals, nil
}
