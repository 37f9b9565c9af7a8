//go:build cgo

package duckdb

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/dpsql/dpsql/measuresql"
)

// TestResourceErrorsByType: DuckDB's failure for want of memory is told
// apart by its error type (duckdb.ErrorTypeOutOfMemory), not its text; any
// other failure (here a conversion) stays the query's own error.
func TestResourceErrorsByType(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`SET memory_limit = '2MB'; SET threads = 1; SET preserve_insertion_order = false; SET temp_directory = ''`); err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`SELECT string_agg(i::VARCHAR || repeat('x', 100), ',') FROM range(1000000) t(i) GROUP BY i % 100000`)
	if err == nil {
		t.Fatal("a 100 MB aggregation ran in 2 MB without a temporary directory")
	}
	if got := resourceError(err); !errors.Is(got, measuresql.ErrEngineResources) {
		t.Errorf("out of memory not told as ErrEngineResources: %v", err)
	}
	_, err = db.Exec(`SELECT 'a'::INTEGER`)
	if err == nil {
		t.Fatal("a conversion of 'a' to INTEGER ran")
	}
	if got := resourceError(err); errors.Is(got, measuresql.ErrEngineResources) {
		t.Errorf("a conversion error told as ErrEngineResources: %v", err)
	}
}
