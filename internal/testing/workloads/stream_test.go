package workloads_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
)

// streamPeople is the census table of the analyst stream: 3,000 people,
// one row each, with NULL hours for every 17th; the same rows on every
// backend (streamRows).
const streamPeople = 3000

// streamRows are the people's rows as SQL tuples: uid, age, hours,
// income, education, sex, state.
func streamRows() []string {
	educations := []string{"Bachelors", "Masters", "HS-grad", "Some-college", "Doctorate"}
	states := []string{"CA", "NY", "TX", "WA"}
	r := rand.New(rand.NewPCG(52, 60))
	rows := make([]string, streamPeople)
	for i := range rows {
		hours := "NULL"
		if i%17 != 0 {
			hours = fmt.Sprintf("%.2f", float64(r.IntN(8000))/100)
		}
		sex := "M"
		if i%2 == 0 {
			sex = "F"
		}
		rows[i] = fmt.Sprintf("(%d, %d, %s, %d, '%s', '%s', '%s')", i, 18+r.IntN(73), hours, r.IntN(150000), educations[i%5], sex, states[i%4])
	}
	return rows
}

// streamPolicy is the owner's script: people and events have units, the
// regions are public.
const streamPolicy = `SET BUDGET epsilon = 1e6, delta = 0.5;
	CREATE PRIVACY POLICY ON people OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1000, max_rows_contributed = 100000);
	ALTER PRIVACY POLICY ON people SET BOUNDS age (18, 90);
	ALTER PRIVACY POLICY ON people SET DOMAIN education ('Bachelors', 'Masters', 'HS-grad', 'Some-college', 'Doctorate');
	ALTER PRIVACY POLICY ON people SET DOMAIN sex ('F', 'M');
	ALTER PRIVACY POLICY ON people SET DOMAIN state ('CA', 'NY', 'TX', 'WA');
	CREATE PRIVACY POLICY ON events OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1000, max_rows_contributed = 100000);
	ALTER PRIVACY POLICY ON events SET DOMAIN kind ('view', 'buy');
	ALTER TABLE regions SET PUBLIC`

// Parts of the analyst stream: what analysts write in a WHERE clause, a
// GROUP BY and an aggregate — columns compared with constants, and the
// functions of the dialect (FLOOR, ROUND, ABS, COALESCE, CAST, LENGTH,
// UPPER, LOWER, SUBSTR, TRIM), CASE, arithmetic.
var (
	streamFilters = []string{
		"age > 30", "age BETWEEN 25 AND 54", "hours >= 40", "hours IS NULL", "education IN ('Bachelors', 'Masters')",
		"sex = 'F'", "state <> 'CA'", "education LIKE '%grad'", "NOT (sex = 'M')", "hours > age",
		"FLOOR(age / 10) = 3", "ROUND(hours) > 40", "ROUND(hours, 1) >= 37.5", "ABS(hours - 40) < 5", "COALESCE(hours, 0) > 20",
		"CAST(hours AS INTEGER) >= 40", "CAST(age AS REAL) / 2 > 20", "LENGTH(education) > 8", "UPPER(sex) = 'F'", "LOWER(state) = 'ca'",
		"SUBSTR(education, 1, 4) = 'Some'", "TRIM(education) = 'Masters'", "income / 1000 > 50", "income % 2 = 0", "age * 2 + 1 > 70",
		"CEIL(hours / 8) = 5", "CASE WHEN hours > 40 THEN 'long' ELSE 'short' END = 'long'", "COALESCE(state, 'none') = 'CA'",
		"ROUND(income / 1000.0) < 75", "CAST(income AS REAL) > 1e5", "LENGTH(state) = 2 AND age < 65",
	}
	streamKeys = []string{
		"education", "sex", "state", "FLOOR(age / 10) * 10", "CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' ELSE 'old' END",
		"CAST(age / 10 AS INTEGER)", "UPPER(sex)", "SUBSTR(education, 1, 1)", "age > 40", "COALESCE(state, 'none')",
		"CASE WHEN hours IS NULL THEN 'unknown' WHEN hours >= 40 THEN 'full' ELSE 'part' END", "ROUND(age, -1)",
	}
	streamAggregates = []string{
		"COUNT(*)", "COUNT(hours)", "SUM(income, contribution_bounds_per_row => (0, 200000))", "AVG(age, contribution_bounds_per_row => (18, 90))",
		"AVG(hours, contribution_bounds_per_row => (0, 80))", "SUM(CASE WHEN sex = 'F' THEN 1 ELSE 0 END, contribution_bounds_per_row => (0, 1))",
		"AVG(CAST(hours AS INTEGER), contribution_bounds_per_row => (0, 80))", "SUM(ROUND(hours), contribution_bounds_per_row => (0, 80))",
		"AVG(COALESCE(hours, 0), contribution_bounds_per_row => (0, 80))", "SUM(income / 1000, contribution_bounds_per_row => (0, 200))",
		"STDDEV(age, contribution_bounds_per_row => (18, 90))", "VARIANCE(hours, contribution_bounds_per_row => (0, 80))",
		"COUNT(DISTINCT education)", "AVG(LENGTH(education), contribution_bounds_per_row => (0, 20))",
		"SUM(CASE WHEN hours > 40 THEN hours - 40 ELSE 0 END, contribution_bounds_per_row => (0, 40))",
		"AVG(ABS(hours - 40), contribution_bounds_per_row => (0, 40))", "AVG(age * 12, contribution_bounds_per_row => (0, 1200))",
		"SUM(CASE WHEN education IN ('Masters', 'Doctorate') THEN income ELSE 0 END, contribution_bounds_per_row => (0, 150000))",
	}
	// streamFroms are FROM clauses (with a WITH prefix where it needs
	// one) that keep the people's column names: a subquery's columns may
	// be derived.
	streamFroms = []struct{ pre, from string }{
		{"", "people"}, {"", "people"}, {"", "people"},
		{"", "people JOIN regions USING (state)"},
		{"", "(SELECT * FROM people WHERE hours IS NOT NULL) AS p"},
		{"", "(SELECT uid, age, CAST(hours AS INTEGER) AS hours, income / 1000 AS income, education, sex, state FROM people) AS p"},
		{"", "(SELECT uid, age + 1 AS age, ROUND(hours) AS hours, income, UPPER(education) AS education, sex, state FROM people WHERE age < 80) AS p"},
		{"WITH adults AS (SELECT uid, age, hours, income, education, sex, state FROM people WHERE age >= 21) ", "adults"},
	}
)

// streamStatement draws one statement of the analyst stream: one or two
// aggregates, up to two filters (AND or OR), up to one key (or the
// region of a joined public table), over one of streamFroms; one in
// twelve aggregates each person's events first.
func streamStatement(r *rand.Rand) string {
	const head = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-5) "
	if r.IntN(12) == 0 {
		agg := []string{"AVG(s.n, contribution_bounds_per_row => (0, 20))", "COUNT(*)", "SUM(s.biggest, contribution_bounds_per_row => (0, 500))", "AVG(s.total, contribution_bounds_per_row => (0, 5000))"}[r.IntN(4)]
		sub := []string{"COUNT(*) AS n", "MAX(amount) AS biggest", "SUM(amount) AS total", "COUNT(DISTINCT kind) AS n", "AVG(ROUND(amount)) AS total"}
		return head + "s.kind, " + agg + " FROM (SELECT uid, kind, " + sub[r.IntN(len(sub))] + ", MAX(amount) AS biggest, SUM(amount) AS total FROM events GROUP BY uid, kind) AS s GROUP BY s.kind"
	}
	f := streamFroms[r.IntN(len(streamFroms))]
	var items []string
	key := ""
	if r.IntN(3) > 0 {
		key = streamKeys[r.IntN(len(streamKeys))]
		if strings.Contains(f.from, "regions") && r.IntN(2) == 0 {
			key = "region"
		}
		items = append(items, key+" AS k")
	}
	for n := 1 + r.IntN(2); n > 0; n-- {
		items = append(items, streamAggregates[r.IntN(len(streamAggregates))])
	}
	q := f.pre + head + strings.Join(items, ", ") + " FROM " + f.from
	switch n := r.IntN(4); {
	case n == 1 || n == 2:
		q += " WHERE " + streamFilters[r.IntN(len(streamFilters))]
	case n == 3:
		q += " WHERE " + streamFilters[r.IntN(len(streamFilters))] + []string{" AND ", " OR "}[r.IntN(2)] + streamFilters[r.IntN(len(streamFilters))]
	}
	if key != "" {
		q += " GROUP BY " + key
	}
	return q
}

// streamStatements is the analyst stream: n statements from a fixed seed.
func streamStatements(n int) []string {
	r := rand.New(rand.NewPCG(52, 2026))
	out := make([]string, n)
	for i := range out {
		out[i] = streamStatement(r)
	}
	return out
}

// streamCoverage runs statements on e twice — through the reference
// evaluator (k.ReferenceOnly) and as the backend compiles them — and
// checks that every compiled answer equals the reference's (zero noise).
// It returns how many the reference answered and how many of those
// compiled, and logs the reasons the rest did not.
func streamCoverage(t *testing.T, e *dpsql.Engine, k *knobs.Knobs, statements []string) (answered, compiled int) {
	t.Helper()
	for _, q := range statements {
		k.ReferenceOnly = true
		want := enginetest.Outcome(e, q)
		k.ReferenceOnly = false
		before := k.Compiled.Load()
		got := enginetest.Outcome(e, q)
		if strings.HasPrefix(want, "error") {
			if got != want {
				t.Errorf("%s:\ncompiled:  %s\nreference: %s", q, got, want)
			}
			continue
		}
		answered++
		if k.Compiled.Load() == before {
			continue
		}
		compiled++
		if got != want {
			t.Errorf("%s:\ncompiled:  %s\nreference: %s", q, got, want)
		}
	}
	if n := k.CompiledFailed.Load(); n > 0 {
		t.Errorf("%d compiled statements failed in the backend (a printed expression is not total)", n)
	}
	t.Logf("%d of %d answered statements compiled (%.0f%%); the rest, by reason:", compiled, answered, 100*float64(compiled)/float64(max(answered, 1)))
	reasons := k.NotCompiled()
	byKind := map[string]int64{}
	for why, n := range reasons {
		byKind[why] += n
	}
	enginetest.LogByCount(t, byKind)
	return answered, compiled
}

// streamEvents are the events' rows as SQL tuples: uid, kind, amount.
func streamEvents() []string {
	rows := make([]string, 4*streamPeople)
	for i := range rows {
		rows[i] = fmt.Sprintf("(%d, '%s', %d.%02d)", i%streamPeople, []string{"view", "buy"}[i%2], (i*7919)%500, i%100)
	}
	return rows
}

// streamTables are the statements that make the stream's tables, with
// the given type names for 64-bit integers, 32-bit integers, doubles and
// text.
func streamTables(i64, i32, f64, text string) []string {
	return []string{
		fmt.Sprintf("CREATE TABLE people (uid %s, age %s, hours %s, income %s, education %s, sex %s, state %s)", i64, i32, f64, i64, text, text, text),
		"INSERT INTO people VALUES " + strings.Join(streamRows(), ", "),
		fmt.Sprintf("CREATE TABLE regions (state %s, region %s)", text, text),
		"INSERT INTO regions VALUES ('CA', 'West'), ('WA', 'West'), ('NY', 'East'), ('TX', 'South')",
		fmt.Sprintf("CREATE TABLE events (uid %s, kind %s, amount %s)", i64, text, f64),
		"INSERT INTO events VALUES " + strings.Join(streamEvents(), ", "),
	}
}
