// Package csvimport loads a CSV file with a header row into a new SQLite
// table, all or nothing.
//
// The file is read twice: the first pass validates every row and infers
// each column's type (INTEGER when every non-empty field is an integer, REAL
// when every one is a number, TEXT otherwise); the second pass creates the
// table and inserts the rows inside one transaction. Any error rolls the
// transaction back, so a failed import leaves no table behind.
package csvimport

import (
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/parser"
)

// Column is an imported column and its inferred type.
type Column struct {
	Name string
	Type string // INTEGER, REAL or TEXT
}

// Error is an import failure at a line of the CSV file (0 when not tied to
// a line).
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

func newReader(r io.Reader) *csv.Reader {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	return cr // FieldsPerRecord 0: every row must match the header's width
}

func readErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = "wrong number of fields (every row must have as many fields as the header)"
		}
		return &Error{Line: pe.Line, Msg: msg}
	}
	return err
}

type kind int

const (
	kindInt kind = iota
	kindReal
	kindText
)

// Infer reads the whole file, checks every row and returns the columns with
// their inferred types and the number of data rows.
func Infer(path string) ([]Column, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	cr := newReader(f)
	header, err := cr.Read()
	if err == io.EOF {
		return nil, 0, &Error{Msg: "the file is empty: a header row is required"}
	}
	if err != nil {
		return nil, 0, readErr(err)
	}
	cols := make([]Column, len(header))
	seen := map[string]bool{}
	for i, h := range header {
		name := strings.TrimSpace(h)
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff")
		}
		if name == "" {
			return nil, 0, &Error{Line: 1, Msg: fmt.Sprintf("column %d has an empty name", i+1)}
		}
		if seen[strings.ToLower(name)] {
			return nil, 0, &Error{Line: 1, Msg: fmt.Sprintf("column name %q appears twice", name)}
		}
		seen[strings.ToLower(name)] = true
		cols[i].Name = name
	}
	kinds := make([]kind, len(cols))
	var n int64
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, readErr(err)
		}
		n++
		for i, v := range rec {
			if v == "" || kinds[i] == kindText {
				continue
			}
			if kinds[i] == kindInt {
				if _, err := strconv.ParseInt(v, 10, 64); err == nil {
					continue
				}
				kinds[i] = kindReal
			}
			if f, err := strconv.ParseFloat(v, 64); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				kinds[i] = kindText
			}
		}
	}
	for i := range cols {
		cols[i].Type = [...]string{"INTEGER", "REAL", "TEXT"}[kinds[i]]
	}
	return cols, n, nil
}

// Import creates table from the CSV file at path and returns the number of
// rows imported. The table must not exist.
func Import(ctx context.Context, db *sql.DB, table, path string) (int64, []Column, error) {
	cols, _, err := Infer(path)
	if err != nil {
		return 0, nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, nil, err
	}
	defer tx.Rollback()
	var exists int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = ? COLLATE NOCASE`, table).Scan(&exists); err != nil {
		return 0, nil, err
	}
	if exists > 0 {
		return 0, nil, &Error{Msg: fmt.Sprintf("table %q already exists", table)}
	}
	defs := make([]string, len(cols))
	marks := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = parser.QuoteIdent(c.Name) + " " + c.Type
		marks[i] = "?"
	}
	if _, err := tx.ExecContext(ctx, "CREATE TABLE "+parser.QuoteIdent(table)+" ("+strings.Join(defs, ", ")+")"); err != nil {
		return 0, nil, err
	}
	ins, err := tx.PrepareContext(ctx, "INSERT INTO "+parser.QuoteIdent(table)+" VALUES ("+strings.Join(marks, ", ")+")")
	if err != nil {
		return 0, nil, err
	}
	defer ins.Close()
	cr := newReader(f)
	if _, err := cr.Read(); err != nil {
		return 0, nil, readErr(err)
	}
	args := make([]any, len(cols))
	var n int64
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, nil, readErr(err) // the file changed between passes
		}
		for i, v := range rec {
			args[i] = convert(v, cols[i].Type)
		}
		if _, err := ins.ExecContext(ctx, args...); err != nil {
			return 0, nil, &Error{Line: int(n) + 2, Msg: err.Error()}
		}
		n++
	}
	if err := tx.Commit(); err != nil {
		return 0, nil, err
	}
	return n, cols, nil
}

func convert(v, typ string) any {
	if v == "" {
		return nil
	}
	switch typ {
	case "INTEGER":
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			return i
		}
	case "REAL":
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return v
}
