//go:build cgo

package ducktest

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/testing/audit"
)

// FromAudit builds one of the sensitivity auditor's generated databases
// (audit.NewDatabase(r)) in a directory of the test's own and moves it
// into a DuckDB file (its untyped columns as doubles, so that their
// numbers are summed in DuckDB), whose path it returns.
func FromAudit(t testing.TB, r *rand.Rand) string {
	t.Helper()
	dir := t.TempDir()
	path, _, err := audit.NewDatabase(r).Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	duck := filepath.Join(dir, "d.duckdb")
	if err := Move(path, dpsql.DuckDBStateFile(duck), duck, "double precision"); err != nil {
		t.Fatal(err)
	}
	return duck
}
