//go:build cgo

package duckdb

import (
	"context"
	"errors"
	"strings"

	"github.com/dpsql/dpsql/csvimport"
)

// Import loads a Parquet file with DuckDB's reader, or a CSV file checked
// and typed by csvimport (as an import into a dpsql file is, so that a
// malformed file fails exactly as on SQLite) and read by DuckDB's reader;
// either way all or nothing (backend.Importer).
func (s *Source) Import(ctx context.Context, table, path string, opts csvimport.Options) (int64, []csvimport.Column, error) {
	if strings.HasSuffix(strings.ToLower(path), ".parquet") {
		n, err := s.ImportParquet(ctx, table, path)
		return n, nil, err
	}
	// DuckDB's own reader loads the file while csvimport checks it as on
	// SQLite (the same errors, types and rows); should the check fail,
	// the load is stopped and undone; should rows after the sample widen
	// a type, the file is read again with the final types; should
	// DuckDB read the file differently in any count, it is loaded through
	// a checked SQLite copy instead.
	readCtx, cancelRead := context.WithCancel(ctx)
	defer cancelRead()
	sampled := make(chan []csvimport.Column, 1)
	done := make(chan checkOutcome, 1)
	checking := opts
	checking.Sampled = func(cols []csvimport.Column) { sampled <- cols }
	go func() {
		c, err := csvimport.Check(readCtx, path, checking) // stopped too when the import returns
		if err != nil {
			cancelRead()
		}
		done <- checkOutcome{c, err}
	}()
	first, result, err := sampleOrEnd(sampled, done)
	if err != nil {
		return 0, nil, err
	}
	wait := func() (CSVCheck, error) {
		if result == nil {
			o := <-done
			result = &o
		}
		if result.err != nil {
			return CSVCheck{}, result.err
		}
		_, types := csvimport.NamesAndTypes(result.c.Columns)
		return CSVCheck{Types: types, Rows: result.c.Rows, Values: result.c.Values}, nil
	}
	names, types := csvimport.NamesAndTypes(first)
	spec := CSVSpec{Names: names, Types: types, Delimiter: opts.Delimiter, Header: !opts.NoHeader}
	n, err := s.ReadCSV(readCtx, table, path, spec, wait)
	if errors.Is(err, ErrTypesWidened) {
		_, spec.Types = csvimport.NamesAndTypes(result.c.Columns)
		n, err = s.ReadCSV(ctx, table, path, spec, wait)
	}
	if err == nil {
		return n, result.c.Columns, nil
	}
	if readCtx.Err() != nil && ctx.Err() == nil {
		// The check failed and stopped the read, maybe before DuckDB had
		// begun it (then the read says only "context canceled"): the
		// file's own error is the one to report.
		if _, cerr := wait(); cerr != nil {
			return 0, nil, cerr
		}
	}
	if !errors.Is(err, ErrCSVDiffers) {
		return 0, nil, err
	}
	if _, cerr := wait(); cerr != nil {
		return 0, nil, cerr
	}
	scratch, n, cols, err := csvimport.ImportScratch(ctx, table, path, opts)
	if err != nil {
		return 0, nil, err
	}
	defer scratch.Close()
	names, types = csvimport.NamesAndTypes(cols)
	if _, err := s.CopyTable(ctx, scratch.DB, table, names, types); err != nil {
		return 0, nil, err
	}
	return n, cols, nil
}

// checkOutcome is how csvimport's check of a CSV file ended.
type checkOutcome struct {
	c   *csvimport.Checked
	err error
}

// sampleOrEnd waits for the check's sample of column types (sampled) or
// its end (done), whichever comes first, and returns the sample and, if
// the check has ended, its outcome; err is the check's failure before it
// typed a sample. A check that ended well has sent its sample first (the
// channel holds it), or took none (a file without rows: its columns
// stand for the sample). Both channels may be ready at once — a small
// file is checked before the import waits — and select then picks
// either: an ended check is never taken for a failed one.
func sampleOrEnd(sampled <-chan []csvimport.Column, done <-chan checkOutcome) ([]csvimport.Column, *checkOutcome, error) {
	select {
	case first := <-sampled:
		return first, nil, nil
	case o := <-done:
		if o.err != nil {
			return nil, nil, o.err
		}
		select {
		case first := <-sampled:
			return first, &o, nil
		default:
			return o.c.Columns, &o, nil
		}
	}
}
