// Package csvimport loads a CSV file into a new SQLite table, all or
// nothing, in one streaming pass.
//
// Column types are inferred from a sample of the first rows: INTEGER when
// every non-empty field is an integer, REAL when every one is a number,
// TEXT otherwise. Rows are inserted as they are read, in multi-row INSERT
// statements, inside one transaction. When a later row does not fit a
// sampled type, the value is kept (as text or real), and before commit the
// table is rebuilt with that column widened (INTEGER → REAL when every
// value is a number, else → TEXT), so nothing is lost. Any error rolls the
// transaction back: a failed import leaves no table behind.
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

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/parser"
)

// Options configure an import.
type Options struct {
	// Delimiter separates fields (default ',').
	Delimiter rune
	// NoHeader: the first row is data; columns are named c1, c2, ...
	NoHeader bool
	// SampleRows is how many rows type inference looks at (default 10,000).
	SampleRows int
	// Progress, when set, is called now and then with the rows inserted
	// so far and the fraction of the file read.
	Progress func(rows int64, fraction float64)
}

// Column is an imported column and its type.
type Column struct {
	Name string
	Type string // INTEGER, REAL or TEXT
	// Widened is set when rows after the sample forced a wider type than
	// the sample suggested.
	Widened bool
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

func readErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = "wrong number of fields (every row must have as many fields as the first)"
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

var typeNames = [...]string{"INTEGER", "REAL", "TEXT"}

// kindOf is the narrowest kind that holds a non-empty field.
func kindOf(v string) kind {
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return kindInt
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return kindReal
	}
	return kindText
}

// countingReader counts bytes read, for progress.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// rowsPerInsert is how many rows one INSERT statement carries (bounded by
// SQLite's 32,766 parameters).
func rowsPerInsert(cols int) int { return max(1, min(256, 32000/cols)) }

// Import creates table from the CSV file at path and returns the number of
// rows imported and the columns. The table must not exist.
func Import(ctx context.Context, db *sql.DB, table, path string, opts Options) (int64, []Column, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	counter := &countingReader{r: f}
	cr := csv.NewReader(counter)
	if opts.Delimiter != 0 {
		cr.Comma = opts.Delimiter
	}
	first, err := cr.Read()
	if err == io.EOF {
		return 0, nil, &Error{Msg: "the file is empty"}
	}
	if err != nil {
		return 0, nil, readErr(err)
	}
	first = append([]string(nil), first...)
	cols, err := header(first, opts.NoHeader)
	if err != nil {
		return 0, nil, err
	}
	// The sample: the first rows, held in memory, decide the types.
	sampleRows := opts.SampleRows
	if sampleRows <= 0 {
		sampleRows = 10_000
	}
	var sample [][]string
	if opts.NoHeader {
		sample = append(sample, first)
	}
	for len(sample) < sampleRows {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, nil, readErr(err)
		}
		sample = append(sample, append([]string(nil), rec...))
	}
	kinds := make([]kind, len(cols))
	for _, rec := range sample {
		for i, v := range rec {
			if v != "" && kinds[i] != kindText {
				kinds[i] = max(kinds[i], kindOf(v))
			}
		}
	}
	for i := range cols {
		cols[i].Type = typeNames[kinds[i]]
	}

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
	if _, err := tx.ExecContext(ctx, createSQL(table, cols)); err != nil {
		return 0, nil, err
	}
	ins := &inserter{ctx: ctx, tx: tx, table: table, width: len(cols), batch: rowsPerInsert(len(cols))}
	defer ins.close()
	seen := make([]kind, len(cols)) // the widest kind met, after the sample too
	copy(seen, kinds)
	add := func(rec []string, line int) error {
		for i, v := range rec {
			ins.args = append(ins.args, convert(v, kinds[i], &seen[i]))
		}
		ins.pending++
		if ins.pending == ins.batch {
			if err := ins.flush(); err != nil {
				return &Error{Line: line, Msg: err.Error()}
			}
		}
		return nil
	}
	var n int64
	line := 1
	if !opts.NoHeader {
		line = 2
	}
	for _, rec := range sample {
		if err := add(rec, line); err != nil {
			return 0, nil, err
		}
		n++
		line++
	}
	sample = nil
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, nil, readErr(err)
		}
		line, _ = cr.FieldPos(0)
		if err := add(rec, line); err != nil {
			return 0, nil, err
		}
		n++
		if opts.Progress != nil && n%100_000 == 0 && size > 0 {
			opts.Progress(n, float64(counter.n)/float64(size))
		}
		if n%100_000 == 0 && ctx.Err() != nil {
			return 0, nil, ctx.Err()
		}
	}
	if err := ins.flush(); err != nil {
		return 0, nil, &Error{Msg: err.Error()}
	}
	if err := widen(ctx, tx, table, cols, kinds, seen); err != nil {
		return 0, nil, err
	}
	if err := tx.Commit(); err != nil {
		return 0, nil, err
	}
	if opts.Progress != nil {
		opts.Progress(n, 1)
	}
	return n, cols, nil
}

// header names the columns: the header row verbatim (trimmed, BOM removed),
// or c1, c2, ... without one.
func header(first []string, noHeader bool) ([]Column, error) {
	cols := make([]Column, len(first))
	seen := map[string]bool{}
	for i, h := range first {
		name := strings.TrimSpace(h)
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff")
		}
		if noHeader {
			name = "c" + strconv.Itoa(i+1)
		}
		if name == "" {
			return nil, &Error{Line: 1, Msg: fmt.Sprintf("column %d has an empty name", i+1)}
		}
		if seen[catalog.FoldName(name)] {
			return nil, &Error{Line: 1, Msg: fmt.Sprintf("column name %q appears twice", name)}
		}
		seen[catalog.FoldName(name)] = true
		cols[i].Name = name
	}
	return cols, nil
}

func createSQL(table string, cols []Column) string {
	defs := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = parser.QuoteIdent(c.Name) + " " + c.Type
	}
	return "CREATE TABLE " + parser.QuoteIdent(table) + " (" + strings.Join(defs, ", ") + ")"
}

// convert turns a field into the value stored for a column of kind k,
// recording in seen the widest kind met.
func convert(v string, k kind, seen *kind) any {
	if v == "" {
		return nil
	}
	switch k {
	case kindInt:
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			return i
		}
	case kindReal:
		if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	case kindText:
		return v
	}
	// Does not fit the sampled kind: keep the value as it is and widen the
	// column at the end.
	got := kindOf(v)
	*seen = max(*seen, got)
	if got == kindReal {
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	return v
}

// widen rebuilds the table when rows after the sample needed wider types.
func widen(ctx context.Context, tx *sql.Tx, table string, cols []Column, kinds, seen []kind) error {
	changed := false
	for i := range cols {
		if seen[i] > kinds[i] {
			cols[i].Type, cols[i].Widened, changed = typeNames[seen[i]], true, true
		}
	}
	if !changed {
		return nil
	}
	tmp := "_dpsql_import_" + table
	q := parser.QuoteIdent
	for _, stmt := range []string{
		createSQL(tmp, cols),
		"INSERT INTO " + q(tmp) + " SELECT * FROM " + q(table),
		"DROP TABLE " + q(table),
		"ALTER TABLE " + q(tmp) + " RENAME TO " + q(table),
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// inserter batches rows into multi-row INSERT statements.
type inserter struct {
	ctx     context.Context
	tx      *sql.Tx
	table   string
	width   int
	batch   int
	args    []any
	pending int
	full    *sql.Stmt // prepared statement for a full batch
}

func (in *inserter) statement(rows int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", in.width), ",") + ")"
	return "INSERT INTO " + parser.QuoteIdent(in.table) + " VALUES " + strings.TrimSuffix(strings.Repeat(one+",", rows), ",")
}

func (in *inserter) flush() error {
	if in.pending == 0 {
		return nil
	}
	var err error
	if in.pending == in.batch {
		if in.full == nil {
			if in.full, err = in.tx.PrepareContext(in.ctx, in.statement(in.batch)); err != nil {
				return err
			}
		}
		_, err = in.full.ExecContext(in.ctx, in.args...)
	} else {
		_, err = in.tx.ExecContext(in.ctx, in.statement(in.pending), in.args...)
	}
	in.args, in.pending = in.args[:0], 0
	return err
}

func (in *inserter) close() {
	if in.full != nil {
		in.full.Close()
	}
}
