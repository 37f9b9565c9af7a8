package choose_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testing/pgmove"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
	"github.com/dpsql/dpsql/internal/testopts"
)

// backendQueries are run on every backend and on both neighbours. The
// first sampled ones bound contributions by sampling (l0 = 1): their rows
// are kept by a hash of each backend's own row identities, so only the
// others' answers are compared across backends.
const sampled = 2

var backendQueries = []string{
	`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_groups_contributed = 1) product, COUNT(*) AS n FROM purchases GROUP BY product ORDER BY n DESC LIMIT 3`,
	`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, group_selection_strategy = PUBLIC_GROUPS) r.hi, COUNT(*) FROM people JOIN ranges AS r ON age < r.hi AND age >= r.lo GROUP BY r.hi`,
	rangeQuery,
	strings.Replace(rangeQuery, ", COUNT(*) AS n", "", 1),
	`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_groups_above = 2) r.lo, SUM(age) AS s, AVG(age) FROM people JOIN ranges AS r ON age BETWEEN r.lo AND r.hi GROUP BY r.lo HAVING SUM(age) >= 10000`,
	`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) product, COUNT(*) AS n FROM purchases GROUP BY product ORDER BY n DESC LIMIT 3`,
	`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_groups_above = 1) r.lo, COUNT(*) FROM people JOIN ranges AS r ON age >= r.lo GROUP BY r.lo HAVING COUNT(*) > 99999`,
}

// outcomes runs the backend queries, returning each outcome and the
// statements sent (by the given log, nil for none).
func outcomes(t *testing.T, e *dpsql.Engine, take func() []string) (outs, sent []string) {
	t.Helper()
	for _, q := range backendQueries {
		if take != nil {
			take()
		}
		outs = append(outs, enginetest.Outcome(e, q))
		if take != nil {
			sent = append(sent, hashKey.ReplaceAllString(strings.Join(slices.DeleteFunc(take(), isCatalogRead), "\n"), "$1, KEY)"))
		}
	}
	return outs, sent
}

// hashKey is the fresh key of a compiled statement's hash.
var hashKey = regexp.MustCompile(`(hash_record_extended\(ROW\([^()]*\)), -?[0-9]+\)`)

// isCatalogRead reports a statement about PostgreSQL's catalog.
func isCatalogRead(q string) bool {
	return strings.HasPrefix(q, "SELECT a.attname") || strings.HasPrefix(q, "SELECT c.reltuples")
}

// compareBackend checks a backend's outcomes against SQLite's on the same
// data, and that the statements it was sent are the same on neighbours.
func compareBackend(t *testing.T, name string, ref, outs [2][]string, sent [2][]string) {
	t.Helper()
	for i, q := range backendQueries {
		for n := range 2 {
			if i >= sampled && outs[n][i] != ref[n][i] {
				t.Errorf("%s, neighbour %d: %s\n  %s: %s\n  SQLite: %s", name, n, q, name, outs[n][i], ref[n][i])
			}
		}
		if sent[0][i] != sent[1][i] {
			t.Errorf("%s: %s sends different statements on neighbours:\n%s\n---\n%s", name, q, sent[0][i], sent[1][i])
		}
	}
}

// compiledJoins checks that the queries joined on comparisons of columns
// (public ranges) run on the backend as one compiled statement, not in
// the reference evaluator (EXPLAIN's engine row), unless for the reason
// allowed ("": none): PostgreSQL has no stable row identity for people,
// whose rows are their own units.
func compiledJoins(t *testing.T, e *dpsql.Engine, name, allowed string) {
	t.Helper()
	for _, q := range backendQueries {
		if !strings.Contains(q, "JOIN ranges") {
			continue
		}
		res, err := e.Explain(context.Background(), q)
		if err != nil {
			t.Fatalf("%s: EXPLAIN %s: %v", name, q, err)
		}
		engine := ""
		for _, row := range res.Rows {
			if row[0] == "engine" {
				engine = fmt.Sprint(row[1])
			}
		}
		if !strings.HasPrefix(engine, "one ") && (allowed == "" || !strings.HasSuffix(engine, allowed)) {
			t.Errorf("%s: %s\n  runs in %q, want one compiled statement", name, q, engine)
		}
	}
}

// reference runs the queries on SQLite for both neighbours.
func reference(t *testing.T, fs [2]*fixture) (ref [2][]string) {
	for n, f := range fs {
		ref[n], _ = outcomes(t, f.open(t, testopts.ZeroNoise(), dpsql.Options{}), nil)
	}
	return ref
}

// TestChoiceOnPostgres: the threshold and top-k queries answer on
// PostgreSQL as on SQLite, and what PostgreSQL is sent does not depend on
// the private rows.
func TestChoiceOnPostgres(t *testing.T) {
	srv := pgtest.StartT(t)
	fs := [2]*fixture{newFixture(t, 6, 0), newFixture(t, 6, 5)}
	ref := reference(t, fs)
	observe, take := enginetest.RecordPostgres()
	var outs, sent [2][]string
	for n, f := range fs {
		state := filepath.Join(t.TempDir(), "state.dpsql")
		dsn, err := pgmove.Move(srv, f.path, state, fmt.Sprintf("choose%d", n))
		if err != nil {
			t.Fatal(err)
		}
		e, err := dpsql.Open(state, dpsql.Options{Postgres: dsn, NoCache: true, Testing: &testopts.Options{Noise: testopts.ZeroNoise(), Knobs: &knobs.Knobs{FixedRandomness: true}, PostgresStatements: observe}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		outs[n], sent[n] = outcomes(t, e, take)
		compiledJoins(t, e, "PostgreSQL", "does not compile a row identity in this dialect")
	}
	compareBackend(t, "PostgreSQL", ref, outs, sent)
}
