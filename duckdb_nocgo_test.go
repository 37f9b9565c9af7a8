//go:build !cgo

package dpsql_test

import (
	"os"
	"testing"
)

// duckOf is "": a build without cgo has no DuckDB.
func (h *harness) duckOf(string) (string, error) { return "", nil }

// TestDuckDBIsBuilt fails where DuckDB is required (DPSQL_REQUIRE_DUCKDB=1,
// as in CI) but this build has none (CGO_ENABLED=0), instead of letting
// the DuckDB tests vanish silently.
func TestDuckDBIsBuilt(t *testing.T) {
	parallel(t)
	if os.Getenv("DPSQL_REQUIRE_DUCKDB") != "" {
		t.Fatal("DPSQL_REQUIRE_DUCKDB is set, but this test binary was built without cgo, so without DuckDB")
	}
	t.Skip("built without cgo: no DuckDB (set CGO_ENABLED=1 to test it)")
}
