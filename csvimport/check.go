package csvimport

import (
	"context"
	"io"
)

// Checked is what Check found in a CSV file: what Import would store,
// without storing it.
type Checked struct {
	Rows    int64
	Columns []Column // with the types Import would give them
	// Values counts each column's non-empty fields (the values that are
	// not NULL once stored), for a reader of the same file to be checked
	// against.
	Values []int64
}

// Check reads the CSV file at path as Import does — the same header,
// strictness and errors with their line numbers, the same type inference
// (the sample's types, widened by what later rows hold) — and stores
// nothing. Another reader (DuckDB's read_csv) can then load the file with
// these types, exactly as Import would have.
func Check(ctx context.Context, path string, opts Options) (*Checked, error) {
	src, err := openCSV(path, opts)
	if err != nil {
		return nil, err
	}
	defer src.f.Close()
	first, cols, err := src.header(opts)
	if err != nil {
		return nil, err
	}
	sample, whole, err := src.sample(first, opts)
	if err != nil {
		return nil, err
	}
	kinds := sampleKinds(sample, len(cols), whole)
	if opts.Sampled != nil {
		sampled := append([]Column(nil), cols...)
		for i := range sampled {
			sampled[i].Type = typeNames[kinds[i]]
		}
		opts.Sampled(sampled)
	}
	seen := append([]kind(nil), kinds...)
	big := make([]bool, len(kinds))
	values := make([]int64, len(kinds))
	var n int64
	add := func(rec []string) {
		for i, v := range rec {
			if v != "" {
				values[i]++
				convert(v, kinds[i], &seen[i], &big[i])
			}
		}
		n++
	}
	for _, rec := range sample {
		add(rec)
	}
	for {
		rec, _, err := src.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		add(rec)
		if opts.Progress != nil && n%100_000 == 0 && src.size > 0 {
			opts.Progress(n, float64(src.counter.n)/float64(src.size))
		}
		if n%100_000 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	final := kinds
	if f := finalKinds(kinds, seen, big); f != nil {
		final = f
	}
	for i := range cols {
		cols[i].Type = typeNames[final[i]]
		cols[i].Widened = final[i] != kinds[i]
	}
	if opts.Progress != nil {
		opts.Progress(n, 1)
	}
	return &Checked{Rows: n, Columns: cols, Values: values}, nil
}
