package dpsql

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// IsDuckDBPath reports whether a --db argument names a DuckDB file: a
// name ending in .duckdb, or duckdb:PATH.
func IsDuckDBPath(s string) bool {
	return strings.HasPrefix(s, "duckdb:") || strings.HasSuffix(strings.ToLower(s), ".duckdb")
}

// DuckDBFile is the DuckDB file a --db argument names (without duckdb:).
func DuckDBFile(s string) string { return strings.TrimPrefix(s, "duckdb:") }

// DuckDBStateFile is the state file of a DuckDB file: beside it, with
// .dpsql appended (data.duckdb.dpsql). It holds the catalog's policies,
// the budget, the ledger, the analysts and the answer cache.
func DuckDBStateFile(duckPath string) string { return duckPath + ".dpsql" }

// ErrNoDuckDB reports a build without DuckDB (it needs cgo).
var ErrNoDuckDB = errors.New("this dpsql was built without DuckDB (it needs cgo: build with CGO_ENABLED=1 and a C compiler)")

// HasDuckDB reports whether this build can open DuckDB files (it needs
// cgo).
func HasDuckDB() bool { return duckAvailable }

// checkDuckDB validates a DuckDB open: the file must exist for an
// analyst (the owner's import creates it).
func checkDuckDB(opts Options) error {
	if opts.DuckDB == "" {
		return nil
	}
	if !duckAvailable {
		return ErrNoDuckDB
	}
	if st, err := os.Stat(opts.DuckDB); err == nil && st.IsDir() {
		return errors.New(opts.DuckDB + " is a directory: --db takes a DuckDB file (such as data.duckdb)")
	}
	if !opts.Owner {
		if _, err := os.Stat(opts.DuckDB); err != nil {
			return fmt.Errorf("%w: %s (the owner creates it, e.g. with 'dpsql import --db %s --table t file.csv')", ErrNoDatabase, opts.DuckDB, opts.DuckDB)
		}
	}
	return nil
}
