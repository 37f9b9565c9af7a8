//go:build cgo

package dpsql_test

import (
	"testing"

	"github.com/dpsql/dpsql/internal/testing/ducktest"
)

// duckOf returns, when the harness is on DuckDB, the state file that
// the database file's engine opens (its tables moved into path.duckdb,
// once: moveToDuckDB); "" otherwise.
func (h *harness) duckOf(path string) (string, error) {
	if !h.duck {
		return "", nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if state, ok := h.moved[path]; ok {
		return state, nil
	}
	state := path // as on PostgreSQL: tables made after the move stay in the file
	if err := moveToDuckDB(path, state, path+".duckdb", ""); err != nil {
		return "", err
	}
	h.moved[path] = state
	return state, nil
}

// moveToDuckDB is ducktest.Move.
func moveToDuckDB(path, state, duck, untyped string) error {
	return ducktest.Move(path, state, duck, untyped)
}

// notOnDuckDB are the suite's tests that change a table's data in the
// same process while an engine has the DuckDB file open: DuckDB opens a
// file with one configuration per process (the engines read it
// read-only, so that other processes can read it too), so such a write
// is refused with "in use" (TestDuckDBImportWhileOpen checks the message).
var notOnDuckDB = map[string]string{
	"TestPublicGroups":                    "inserts rows into a table after the engine opened the DuckDB file",
	"TestMainSchemaQualifiedNames":        "imports a table while another engine of the process has the DuckDB file open",
	"TestEveryFunctionAndOperatorIsTotal": onTheirOwn,
	"TestRowEvaluationIsTotal":            onTheirOwn,
	"TestSingleQueryNeverNoisier":         plannedOnly,
}

// TestEngineSuiteOnDuckDB runs the engine suite's tests again with every
// table in a DuckDB file: exact answers with zero noise, refusals,
// budget, units, joins, subqueries, automatic bounds, percentiles, the
// hardening tests and the empirical neighbour tests. Each test builds its
// SQLite file as on SQLite; its first engine open moves the tables. The
// scans whose plans compile run in DuckDB (at least one per test that
// runs a private query: counted by the knobs), the others through the
// reference evaluator over the mirrors.
func TestEngineSuiteOnDuckDB(t *testing.T) {
	parallel(t)
	runs := runSuite(t, "DuckDB", notOnDuckDB, func() *harness { return newHarness(nil, true) })
	checkCompiled(t, "DuckDB", runs)
}
