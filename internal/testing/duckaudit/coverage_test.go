//go:build cgo

package duckaudit_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testing/audit"
	"github.com/dpsql/dpsql/internal/testing/ducktest"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/parser"
)

// TestCompiledCoverage measures how many of the sensitivity auditor's
// generated private statements (their bounds no unit reaches, as in the
// differential test) DuckDB runs as one compiled statement, by EXPLAIN's
// engine step, and logs the reasons for the rest (go test -v -run
// CompiledCoverage ./internal/testing/duckaudit; docs/benchmarks.md). The
// statements are drawn from fixed seeds, so the count is the same each
// run: the test fails should it fall below what it was when last raised.
func TestCompiledCoverage(t *testing.T) {
	t.Parallel()
	const databases, perDatabase, atLeast = 4, 100, 114
	r := rand.New(rand.NewPCG(5, 17))
	reasons := map[string]int{}
	compiled, total := 0, 0
	plainCompiled, plain := 0, 0 // scans of statements that use no SQLite library form
	for d := 0; d < databases; d++ {
		e := enginetest.OpenDuckDB(t, ducktest.FromAudit(t, r), false, nil)
		for i := 0; i < perDatabase; i++ {
			st := audit.Generate(r, 0)
			res, err := e.Query(context.Background(), "EXPLAIN "+st.SQL, st.Args...)
			if err != nil {
				continue // refused: no scan to count
			}
			library := usesSQLiteLibrary(st.SQL)
			for _, row := range res.Rows {
				if row[0] != "engine" {
					continue
				}
				total++
				if !library {
					plain++
				}
				where := fmt.Sprint(row[1])
				if strings.HasPrefix(where, "one DuckDB statement") {
					compiled++
					if !library {
						plainCompiled++
					}
					continue
				}
				if i := strings.Index(where, ": "); i >= 0 {
					where = where[i+2:]
				}
				reasons[where]++
			}
		}
		e.Close()
	}
	type reason struct {
		why string
		n   int
	}
	var rs []reason
	for why, n := range reasons {
		rs = append(rs, reason{why, n})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].n > rs[j].n || rs[i].n == rs[j].n && rs[i].why < rs[j].why })
	t.Logf("%d of %d private scans compiled (%.0f%%); of the scans of statements that call none of SQLite's library (usesSQLiteLibrary), %d of %d (%.0f%%); the rest ran through the reference evaluator:",
		compiled, total, 100*float64(compiled)/float64(max(total, 1)), plainCompiled, plain, 100*float64(plainCompiled)/float64(max(plain, 1)))
	for _, r := range rs {
		t.Logf("%5d  %s", r.n, r.why)
	}
	if compiled < atLeast {
		t.Errorf("%d of %d scans compiled, fewer than the %d before", compiled, total, atLeast)
	}
}

// libraryCall finds the calls of a statement's text.
var libraryCall = regexp.MustCompile(`\b([A-Z_][A-Z_0-9]*)\(`)

// usesSQLiteLibrary reports whether a generated statement applies a
// form whose meaning is SQLite's own function library — a whitelisted
// scalar function other than those the printers compile (COALESCE,
// IFNULL, NULLIF, IF, IIF, ABS, FLOOR, CEIL), a CAST, division, modulo
// or concatenation — which a dialect compiles only by reimplementing
// SQLite's conversions (a number's text, text read as a number, its
// rounding, NULL where another engine raises).
func usesSQLiteLibrary(sql string) bool {
	if strings.Contains(sql, " / ") || strings.Contains(sql, " % ") || strings.Contains(sql, "||") {
		return true
	}
	scalar := parser.ScalarFunctions()
	for _, m := range libraryCall.FindAllStringSubmatch(sql, -1) {
		switch name := m[1]; name {
		case "COALESCE", "IFNULL", "NULLIF", "IF", "IIF", "ABS", "FLOOR", "CEIL", "CEILING":
		case "CAST":
			return true
		default:
			if _, ok := scalar[name]; ok {
				return true
			}
		}
	}
	return false
}
