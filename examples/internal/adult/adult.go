// Package adult reads the Adult census CSV file for the examples that
// score dpsql's answers against the exact ones.
package adult

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
)

// ReadAges returns the Age column of the CSV file at path, row by row
// (rows whose Age is not an integer are left out).
func ReadAges(path string) ([]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	col := -1
	for i, name := range rows[0] {
		if name == "Age" {
			col = i
		}
	}
	if col < 0 {
		return nil, fmt.Errorf("%s has no Age column", path)
	}
	var ages []int
	for _, r := range rows[1:] {
		if a, err := strconv.Atoi(r[col]); err == nil {
			ages = append(ages, a)
		}
	}
	return ages, nil
}
