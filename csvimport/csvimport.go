// Package csvimport loads a CSV file into a new SQLite table, all or
// nothing, in one streaming pass.
//
// Column types are inferred from a sample of the first rows: INTEGER when
// every non-empty field is an integer, REAL when every one is a number,
// TEXT otherwise. Rows are inserted as they are read, in multi-row INSERT
// statements, inside one transaction. When a later row does not fit a
// sampled type, that pass is rolled back and the file is read a second
// time with the widened types (INTEGER → REAL when every value is a number
// a REAL holds exactly, else → TEXT), so nothing is lost or converted
// twice, and the rolled-back pass leaves no pages behind. Any error rolls
// the transaction back: a failed import leaves no table behind.
package csvimport

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/parser"
)

// Options configure an import.
type Options struct {
	// Delimiter separates fields. 0 means ',' and also that the caller
	// did not choose: a first line that is a single field containing ';',
	// a tab or '|' is then refused with a hint to choose.
	Delimiter rune
	// NoHeader: the first row is data; columns are named c1, c2, ...
	NoHeader bool
	// SampleRows is how many rows type inference looks at (default 10,000).
	SampleRows int
	// Progress, when set, is called now and then with the rows inserted
	// so far and the fraction of the file read.
	Progress func(rows int64, fraction float64)
	// Sampled, when set, is called by Check once the sample has given
	// the columns their types, before the rest of the file is read (rows
	// after the sample may still widen them): a reader of the same file
	// can start with these.
	Sampled func(cols []Column)
}

// MaxColumns is the most columns a table may have (SQLite's default
// SQLITE_MAX_COLUMN).
const MaxColumns = 2000

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

// kindOf is the narrowest kind that holds a non-empty field without
// changing it: INTEGER only for a plain decimal integer within int64
// without leading zeros ("0" itself aside) or a '+'; REAL only for a plain
// decimal number (the same integer part, an optional fraction and
// exponent) whose float64 is the same number as the text, up to trailing
// zeros ("1.50" is 1.5, but "99999999999999999999" would become 1e20); no
// hexadecimal, underscores, spaces, Inf or NaN. Anything else is TEXT, so
// "02134" stays a string.
func kindOf(v string) kind {
	if _, ok := parseInt(v); ok {
		return kindInt
	}
	if _, ok := parseReal(v); ok {
		return kindReal
	}
	return kindText
}

// parseInt reads v as INTEGER when kindOf's rule allows it.
func parseInt(v string) (int64, bool) {
	d := v
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if d == "" || d[0] < '0' || d[0] > '9' || (d[0] == '0' && (len(d) > 1 || len(v) > 1)) {
		return 0, false // empty, a sign other than '-', a leading zero, or "-0"
	}
	i, err := strconv.ParseInt(v, 10, 64) // rejects every other non-digit
	return i, err == nil
}

// plainDecimal reports whether v is -?(0|[1-9][0-9]*)?(\.[0-9]*)?([eE][+-]?[0-9]+)?
// with at least one digit before the exponent.
func plainDecimal(v string) bool {
	i := 0
	if i < len(v) && v[i] == '-' {
		i++
	}
	digits := 0
	start := i
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i-start > 1 && v[start] == '0' {
		return false // a leading zero
	}
	digits += i - start
	if i < len(v) && v[i] == '.' {
		i++
		f := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		digits += i - f
	}
	if digits == 0 {
		return false
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		e := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == e {
			return false
		}
	}
	return i == len(v)
}

// parseReal reads v as REAL when kindOf's rule allows it.
func parseReal(v string) (float64, bool) {
	if !plainDecimal(v) {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	// The float must be the number written. Short decimals without an
	// exponent always are (15 significant digits survive a float64); the
	// others are compared exactly with the float's shortest decimal.
	if len(v) <= 15 && !strings.ContainsAny(v, "eE") {
		return f, true
	}
	written, ok1 := new(big.Rat).SetString(v)
	stored, ok2 := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok1 || !ok2 || written.Cmp(stored) != 0 {
		return 0, false
	}
	return f, true
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
	n, cols, final, err := importOnce(ctx, db, table, path, opts, nil)
	if err != nil || final == nil {
		return n, cols, err
	}
	// Rows after the sample needed wider types: the first pass was rolled
	// back, and a second one stores every value with the final types, so
	// none passes through a narrower type on the way (a REAL column that
	// must become TEXT would otherwise keep "1.0" for "1").
	n, cols2, again, err := importOnce(ctx, db, table, path, opts, final)
	if err != nil {
		return 0, nil, err
	}
	if again != nil {
		return 0, nil, &Error{Msg: "internal error: the column types changed between two passes"}
	}
	for i := range cols2 {
		cols2[i].Widened = cols[i].Type != cols2[i].Type || cols[i].Widened
	}
	return n, cols2, nil
}

// importOnce runs one pass: the types are the sample's, or forced. When a
// row after the sample needs a wider type it rolls back and returns the
// final types to force in a second pass.
func importOnce(ctx context.Context, db *sql.DB, table, path string, opts Options, forced []kind) (int64, []Column, []kind, error) {
	src, err := openCSV(path, opts)
	if err != nil {
		return 0, nil, nil, err
	}
	defer src.f.Close()
	first, cols, err := src.header(opts)
	if err != nil {
		return 0, nil, nil, err
	}
	sample, whole, err := src.sample(first, opts)
	if err != nil {
		return 0, nil, nil, err
	}
	kinds := sampleKinds(sample, len(cols), whole)
	if forced != nil {
		copy(kinds, forced)
	}
	for i := range cols {
		cols[i].Type = typeNames[kinds[i]]
	}

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	defer tx.Rollback()
	if err := createTable(ctx, tx, table, cols); err != nil {
		return 0, nil, nil, err
	}
	ins := newInserter(ctx, tx, table, len(cols))
	defer ins.close()
	n, seen, big, err := src.insertAll(ctx, ins, sample, kinds, opts)
	if err != nil {
		return 0, nil, nil, err
	}
	if final := finalKinds(kinds, seen, big); final != nil {
		return 0, cols, final, nil // the deferred Rollback undoes this pass
	}
	if err := tx.Commit(); err != nil {
		return 0, nil, nil, err
	}
	if opts.Progress != nil {
		opts.Progress(n, 1)
	}
	return n, cols, nil, nil
}

// csvSource is a CSV file being read, with how far the reading is.
type csvSource struct {
	f       *os.File
	size    int64
	counter *countingReader
	cr      *csv.Reader
	blankAt int // the line of a blank line met in a file of more than one column, not yet followed by a row
}

// next reads the next row and its line. A blank line is one empty value in
// a file of one column; in a wider file, blank lines at the end are
// ignored and one before a row is an error (sqlite3 fills such a line with
// NULLs and warns; a row of no values is more likely a mistake).
func (src *csvSource) next() ([]string, int, error) {
	for {
		rec, err := src.cr.Read()
		if err == io.EOF {
			return nil, 0, io.EOF
		}
		var pe *csv.ParseError
		if err != nil && errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) && len(rec) == 1 && rec[0] == "" {
			if src.blankAt == 0 {
				src.blankAt = pe.Line
			}
			continue
		}
		if err != nil {
			return nil, 0, readErr(err)
		}
		line, _ := src.cr.FieldPos(0)
		if src.blankAt > 0 {
			return nil, 0, &Error{Line: src.blankAt, Msg: fmt.Sprintf("the line is blank, but the file has %d columns: remove blank lines, or write the row's empty values with commas", len(rec))}
		}
		if err := validUTF8(rec, line); err != nil {
			return nil, 0, err
		}
		return rec, line, nil
	}
}

// openCSV opens a CSV file (a byte-order mark is skipped).
func openCSV(path string, opts Options) (*csvSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	src := &csvSource{f: f, counter: &countingReader{r: f}}
	if st, err := f.Stat(); err == nil {
		src.size = st.Size()
	}
	br := bufio.NewReader(src.counter)
	if bom, _ := br.Peek(3); string(bom) == "\ufeff" {
		br.Discard(3) // a byte-order mark, even before a quoted header
	}
	src.cr = csv.NewReader(newBlankKeeper(br))
	if opts.Delimiter != 0 {
		src.cr.Comma = opts.Delimiter
	}
	return src, nil
}

// header reads the first line and the columns it names (or numbers).
func (src *csvSource) header(opts Options) ([]string, []Column, error) {
	first, err := src.cr.Read()
	if err == io.EOF {
		return nil, nil, &Error{Msg: "the file is empty"}
	}
	if err != nil {
		return nil, nil, readErr(err)
	}
	first = append([]string(nil), first...)
	if err := validUTF8(first, 1); err != nil {
		return nil, nil, err
	}
	if opts.Delimiter == 0 && len(first) == 1 {
		for _, d := range []string{";", "\t", "|"} {
			if strings.Contains(first[0], d) {
				flag := d
				if d == "\t" {
					flag = `\t`
				}
				return nil, nil, &Error{Line: 1, Msg: fmt.Sprintf("the first line is a single field %q, with %q but no commas: if %q separates the fields, pass --delimiter '%s' (to import one column, pass --delimiter ',')", first[0], d, d, flag)}
			}
		}
	}
	cols, err := header(first, opts.NoHeader)
	return first, cols, err
}

// sample reads the first rows, held in memory, which decide the types;
// whole reports that they are every row of the file.
func (src *csvSource) sample(first []string, opts Options) (sample [][]string, whole bool, err error) {
	sampleRows := opts.SampleRows
	if sampleRows <= 0 {
		sampleRows = 10_000
	}
	if opts.NoHeader {
		sample = append(sample, first)
	}
	for len(sample) < sampleRows {
		rec, _, err := src.next()
		if err == io.EOF {
			return sample, true, nil
		}
		if err != nil {
			return nil, false, err
		}
		sample = append(sample, append([]string(nil), rec...))
	}
	return sample, false, nil
}

// sampleKinds is each column's type as the sample shows it.
func sampleKinds(sample [][]string, ncols int, whole bool) []kind {
	kinds := make([]kind, ncols)
	valued := make([]bool, ncols)
	for _, rec := range sample {
		for i, v := range rec {
			if v != "" && kinds[i] != kindText {
				kinds[i] = max(kinds[i], kindOf(v))
			}
			valued[i] = valued[i] || v != ""
		}
	}
	for i := range kinds {
		if whole && !valued[i] {
			kinds[i] = kindText // no value at all (a header-only file): nothing says it is a number
		}
	}
	return kinds
}

// createTable creates the new table, refusing a name already taken.
func createTable(ctx context.Context, tx *sql.Tx, table string, cols []Column) error {
	var exists int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = ? COLLATE NOCASE`, table).Scan(&exists); err != nil {
		return err
	}
	if exists > 0 {
		return &Error{Msg: fmt.Sprintf("table %q already exists", table)}
	}
	_, err := tx.ExecContext(ctx, createSQL(table, cols))
	return err
}

// insertAll inserts the sample, then the rest of the file, as kinds; it
// returns the row count, the widest kind met per column and which met an
// integer beyond 2^53.
func (src *csvSource) insertAll(ctx context.Context, ins *inserter, sample [][]string, kinds []kind, opts Options) (n int64, seen []kind, big []bool, err error) {
	seen = make([]kind, len(kinds)) // the widest kind met, after the sample too
	copy(seen, kinds)
	big = make([]bool, len(kinds)) // an integer beyond 2^53 met
	add := func(rec []string, line int) error {
		for i, v := range rec {
			ins.args = append(ins.args, convert(v, kinds[i], &seen[i], &big[i]))
		}
		return ins.row(line)
	}
	line := 1
	if !opts.NoHeader {
		line = 2
	}
	for _, rec := range sample {
		if err := add(rec, line); err != nil {
			return 0, nil, nil, err
		}
		n++
		line++
	}
	for {
		rec, l, err := src.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, nil, nil, err
		}
		line = l
		if err := add(rec, line); err != nil {
			return 0, nil, nil, err
		}
		n++
		if opts.Progress != nil && n%100_000 == 0 && src.size > 0 {
			opts.Progress(n, float64(src.counter.n)/float64(src.size))
		}
		if n%100_000 == 0 && ctx.Err() != nil {
			return 0, nil, nil, ctx.Err()
		}
	}
	return n, seen, big, ins.finish()
}

// validUTF8 reports the first field of rec that is not valid UTF-8.
func validUTF8(rec []string, line int) error {
	for i, v := range rec {
		if !utf8.ValidString(v) {
			return &Error{Line: line, Msg: fmt.Sprintf("field %d is not valid UTF-8 (convert the file first, e.g. iconv -f LATIN1 -t UTF-8)", i+1)}
		}
	}
	return nil
}

// header names the columns: the header row verbatim (trimmed, BOM removed),
// or c1, c2, ... without one.
func header(first []string, noHeader bool) ([]Column, error) {
	if len(first) > MaxColumns {
		return nil, &Error{Line: 1, Msg: fmt.Sprintf("the file has %d columns; a table holds at most %d (the limit of SQLite, where dpsql keeps it)", len(first), MaxColumns)}
	}
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
		if strings.ContainsRune(name, 0) {
			return nil, &Error{Line: 1, Msg: fmt.Sprintf("column %d's name contains a NUL byte (is the file text? UTF-16 files need converting first, e.g. iconv -f UTF-16 -t UTF-8)", i+1)}
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
// recording in seen the widest kind met and in big whether an integer
// beyond 2^53 (which a REAL cannot hold) was met.
func convert(v string, k kind, seen *kind, big *bool) any {
	if v == "" {
		return nil
	}
	if k == kindText {
		return v
	}
	if i, ok := parseInt(v); ok {
		if i > 1<<53 || i < -(1<<53) {
			*big = true
		}
		if k == kindInt {
			return i
		}
	}
	if k == kindReal {
		if f, ok := parseReal(v); ok {
			return f
		}
		*seen = kindText // not a number a REAL holds exactly
		return v
	}
	// An INTEGER column meets something else: keep the value as written
	// for now; Import runs a second pass with the final types.
	*seen = max(*seen, kindOf(v))
	return v
}

// finalKinds returns the types a second pass must use, or nil when every
// value fitted the sample's types. An INTEGER column that met a real
// becomes REAL, unless it holds an integer beyond 2^53: then TEXT.
func finalKinds(kinds, seen []kind, big []bool) []kind {
	var out []kind
	for i := range kinds {
		if seen[i] <= kinds[i] {
			continue
		}
		if out == nil {
			out = append([]kind(nil), kinds...)
		}
		out[i] = seen[i]
		if out[i] == kindReal && big[i] {
			out[i] = kindText
		}
	}
	return out
}

// inserter batches rows into multi-row INSERT statements, run by a
// goroutine of its own while the caller reads and converts the next rows
// (the two halves of an import take similar time; on two cores the
// pipeline overlaps them).
type inserter struct {
	ctx   context.Context
	tx    *sql.Tx
	table string
	width int
	batch int
	// The caller's side: the rows being collected.
	args    []any
	pending int
	line    int // of the last row collected
	// The goroutine's side.
	work   chan batch
	free   chan []any // argument slices to reuse
	done   chan error
	failed atomic.Bool
	closed bool
	full   *sql.Stmt // prepared statement for a full batch
}

// batch is rows for one INSERT statement; line is the file line of its last
// row, for errors.
type batch struct {
	args []any
	rows int
	line int
}

func newInserter(ctx context.Context, tx *sql.Tx, table string, width int) *inserter {
	in := &inserter{ctx: ctx, tx: tx, table: table, width: width, batch: rowsPerInsert(width),
		work: make(chan batch, 4), free: make(chan []any, 6), done: make(chan error, 1)}
	in.args = make([]any, 0, in.batch*width)
	go in.loop()
	return in
}

// row ends the row whose values the caller appended to args; a full batch
// goes to the goroutine. After the goroutine failed it returns an error
// (finish reports which).
func (in *inserter) row(line int) error {
	in.pending++
	in.line = line
	if in.pending < in.batch {
		return nil
	}
	if in.failed.Load() {
		return in.finish()
	}
	in.send()
	return nil
}

func (in *inserter) send() {
	in.work <- batch{in.args, in.pending, in.line}
	select {
	case a := <-in.free:
		in.args = a[:0]
	default:
		in.args = make([]any, 0, in.batch*in.width)
	}
	in.pending = 0
}

// finish sends the last rows and waits for every statement to have run.
func (in *inserter) finish() error {
	if in.closed {
		return <-in.done
	}
	if in.pending > 0 && !in.failed.Load() {
		in.send()
	}
	in.closed = true
	close(in.work)
	err := <-in.done
	in.done <- err // for a second finish or close
	return err
}

func (in *inserter) loop() {
	var err error
	for b := range in.work {
		if err == nil && !in.failed.Load() { // after a failure (or close), queued rows are dropped
			if err = in.exec(b); err != nil {
				in.failed.Store(true)
			}
		}
		clear(b.args)
		select {
		case in.free <- b.args:
		default:
		}
	}
	if in.full != nil {
		in.full.Close()
	}
	in.done <- err
}

func (in *inserter) statement(rows int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", in.width), ",") + ")"
	return "INSERT INTO " + parser.QuoteIdent(in.table) + " VALUES " + strings.TrimSuffix(strings.Repeat(one+",", rows), ",")
}

func (in *inserter) exec(b batch) error {
	var err error
	if b.rows == in.batch {
		if in.full == nil {
			if in.full, err = in.tx.PrepareContext(in.ctx, in.statement(in.batch)); err != nil {
				return &Error{Line: b.line, Msg: err.Error()}
			}
		}
		_, err = in.full.ExecContext(in.ctx, b.args...)
	} else {
		_, err = in.tx.ExecContext(in.ctx, in.statement(b.rows), b.args...)
	}
	if err != nil {
		return &Error{Line: b.line, Msg: err.Error()}
	}
	return nil
}

// close stops the goroutine (when finish was not called) and waits for it:
// the transaction may be rolled back only after.
func (in *inserter) close() {
	if !in.closed {
		in.failed.Store(true)
		in.finish()
	}
}
