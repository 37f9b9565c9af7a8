// Package adultdata holds what the tutorial's test and the examples that
// measure dpsql on the Adult census share: the file's exact ages (to
// score answers), the tutorial's public tables, and reading a released
// number.
package adultdata

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/csvimport"
)

// ReadAges returns the Age column of the CSV file at path, row by row
// (rows whose Age is not an integer are left out).
func ReadAges(path string) ([]int, error) {
	vs, err := ReadColumn(path, "Age")
	if err != nil {
		return nil, err
	}
	var ages []int
	for _, v := range vs {
		if a := int(v); float64(a) == v {
			ages = append(ages, a)
		}
	}
	return ages, nil
}

// ReadColumn returns the numeric column name of the CSV file at path,
// row by row (rows whose value is not a number are left out).
func ReadColumn(path, name string) ([]float64, error) {
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
	for i, h := range rows[0] {
		if h == name {
			col = i
		}
	}
	if col < 0 {
		return nil, fmt.Errorf("%s has no %s column", path, name)
	}
	var vs []float64
	for _, r := range rows[1:] {
		if v, err := strconv.ParseFloat(r[col], 64); err == nil {
			vs = append(vs, v)
		}
	}
	return vs, nil
}

// AgeRanges are the tutorial's age ranges [lo, hi) with 30 ≤ lo < hi ≤ 70
// (820 of them), in the order of the age_ranges table.
func AgeRanges() [][2]int {
	var out [][2]int
	for lo := 30; lo < 70; lo++ {
		for hi := lo + 1; hi <= 70; hi++ {
			out = append(out, [2]int{lo, hi})
		}
	}
	return out
}

// ImportPublicTables imports the tutorial's two tables (not yet declared
// public) with the owner engine, through CSV files written in dir:
// clip_bounds, the candidate clipping bounds b = 0, 5, ..., 150, and
// age_ranges (lo, hi), AgeRanges.
func ImportPublicTables(ctx context.Context, owner *dpsql.Engine, dir string) error {
	var bounds, ranges strings.Builder
	bounds.WriteString("b\n")
	for b := 0; b <= 150; b += 5 {
		fmt.Fprintf(&bounds, "%d\n", b)
	}
	ranges.WriteString("lo,hi\n")
	for _, r := range AgeRanges() {
		fmt.Fprintf(&ranges, "%d,%d\n", r[0], r[1])
	}
	for _, tb := range []struct{ name, text string }{{"clip_bounds", bounds.String()}, {"age_ranges", ranges.String()}} {
		path := filepath.Join(dir, tb.name+".csv")
		if err := os.WriteFile(path, []byte(tb.text), 0o600); err != nil {
			return err
		}
		if _, _, err := owner.ImportCSV(ctx, tb.name, path, csvimport.Options{}); err != nil {
			return err
		}
	}
	return nil
}

// Num reads a released number (NaN for anything else).
func Num(v any) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	}
	return math.NaN()
}
