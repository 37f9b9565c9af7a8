package choose_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testopts"
	"github.com/dpsql/dpsql/mechanism"
)

// ask sends q to a watch and returns its answer ("above" or "below") or
// the error's text.
func ask(e interface {
	Query(context.Context, string, ...any) (*dpsql.Result, error)
}, watch, what string) string {
	res, err := e.Query(context.Background(), fmt.Sprintf(`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = %s) %s`, watch, what))
	if err != nil {
		return "error: " + err.Error()
	}
	if res.Cost.Epsilon != 0 {
		return fmt.Sprintf("charged ε=%g", res.Cost.Epsilon)
	}
	return fmt.Sprint(res.Rows[0][0])
}

// TestWatchAnswersUntilItsCutoff: without noise, a watch answers each
// query above or below its threshold, charges its ε once when it opens
// and nothing per query, and closes at its c-th "above"; SHOW WATCHES
// says what is left.
func TestWatchAnswersUntilItsCutoff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, 0)
	e := f.open(t, testopts.ZeroNoise(), dpsql.Options{})
	before := spent(t, e)
	res := enginetest.Query(t, e, `CREATE WATCH busy OPTIONS (threshold = 500, sensitivity = 1, max_above = 2, epsilon = 0.5, monotonic = TRUE)`)
	if res.Cost.Epsilon != 0.5 {
		t.Errorf("opening charged %v, want ε=0.5", res.Cost)
	}
	afterOpen := spent(t, e)
	if x := explainText(t, e, `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = busy) COUNT(*) FROM people`); !strings.Contains(x, "noisy threshold") || !strings.Contains(x, "nothing: the watch was charged when it opened") {
		t.Errorf("EXPLAIN of a query to a watch:\n%s", x)
	}
	older := f.inRange(60, 200)
	for i, c := range []struct{ what, want string }{
		{`COUNT(*) FROM people WHERE age >= 60`, map[bool]string{true: "above", false: "below"}[older >= 500]},
		{`COUNT(*) FROM people WHERE age > 200`, "below"},
		{`COUNT(*) FROM people`, "above"},
		{`SUM(age, contribution_bounds_per_row => (0, 1)) FROM people`, "above"},
	} {
		if older >= 500 && i == 3 {
			c.want = "error: " // two aboves already: closed
		}
		if got := ask(e, "busy", c.what); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %s, want %s", c.what, got, c.want)
		}
	}
	if got := ask(e, "busy", `COUNT(*) FROM people`); !strings.Contains(got, "watch closed") {
		t.Errorf("after the cutoff: %s, want the watch closed", got)
	}
	if s := spent(t, e); s != afterOpen || s == before {
		t.Errorf("spent %s before, %s after opening, %s after the queries: want one charge", before, afterOpen, s)
	}
	show := enginetest.Query(t, e, `SHOW WATCHES`)
	if len(show.Rows) != 1 || fmt.Sprint(show.Rows[0][8]) != "0" || show.Rows[0][9] != "closed" {
		t.Errorf("SHOW WATCHES: %v %v", show.Columns, show.Rows)
	}
	for _, col := range show.Columns {
		if strings.Contains(col, "noisy") {
			t.Errorf("SHOW WATCHES shows %s", col)
		}
	}
	if _, err := e.Query(context.Background(), `CREATE WATCH busy OPTIONS (threshold = 1, sensitivity = 1, epsilon = 1)`); err == nil || !errors.Is(err, budget.ErrWatchExists) {
		t.Errorf("a second watch of the same name: %v", err)
	}
	if s := spent(t, e); s != afterOpen {
		t.Errorf("the refused watch spent: %s → %s", afterOpen, s)
	}
	enginetest.Query(t, e, `DROP WATCH busy`)
	if got := ask(e, "busy", `COUNT(*) FROM people`); !strings.Contains(got, "unknown watch") {
		t.Errorf("after DROP WATCH: %s", got)
	}
}

// TestWatchRefusals: queries a watch cannot answer and watches that
// cannot open are refused with the reason, and change nothing.
func TestWatchRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, 0)
	e := f.open(t, testopts.ZeroNoise(), dpsql.Options{})
	enginetest.Query(t, e, `CREATE WATCH w OPTIONS (threshold = 10, sensitivity = 1, epsilon = 1, monotonic = TRUE)`)
	enginetest.Query(t, e, `CREATE WATCH g OPTIONS (threshold = 10, sensitivity = 200, epsilon = 1)`)
	before := spent(t, e)
	for _, c := range []struct{ q, want string }{
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = w) SUM(age) FROM people`, "sensitivity at most the watch's 1"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = g) SUM(age, contribution_bounds_per_row => (-1, 5)) FROM people`, ""},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = w) SUM(age, contribution_bounds_per_row => (-1, 0)) FROM people`, "must grow when a unit is added"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = w, max_rows_contributed = 3) COUNT(*) FROM purchases`, "sensitivity at most the watch's 1"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = w) COUNT(*) FROM purchases`, ""},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = w) product, COUNT(*) FROM purchases GROUP BY product`, "no GROUP BY"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = w) COUNT(*), COUNT(age) FROM people`, "selects one aggregate"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = w) COUNT(*) + 1 FROM people`, "the aggregate itself"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = w) AVG(age) FROM people`, "compares a COUNT or a SUM"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = w, epsilon = 1) COUNT(*) FROM people`, "takes no epsilon"},
		{`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (watch = nope) COUNT(*) FROM people`, "unknown watch"},
		{`CREATE WATCH x OPTIONS (sensitivity = 1, epsilon = 1)`, "threshold is missing"},
		{`CREATE WATCH x OPTIONS (threshold = 1, sensitivity = 0, epsilon = 1)`, "sensitivity takes a positive"},
		{`CREATE WATCH x OPTIONS (threshold = 1, sensitivity = 1, epsilon = 1, max_above = 0)`, "max_above takes"},
		{`CREATE WATCH x OPTIONS (threshold = 1, sensitivity = 1, epsilon = 1e9)`, "epsilon"},
		{`CREATE WATCH x OPTIONS (threshold = 1, sensitivity = 1)`, "no epsilon"},
		{`CREATE WATCH x OPTIONS (threshold = 1, sensitivity = 1, epsilon = 1, colour = 2)`, "unknown watch option"},
		{`CREATE WATCH x OPTIONS (threshold = 1, sensitivity = 1, epsilon = 2000000)`, "epsilon"},
	} {
		_, err := e.Query(context.Background(), c.q)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.q, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s:\n  error %v, want one saying %q", c.q, err, c.want)
		}
	}
	if after := spent(t, e); after != before {
		t.Errorf("refusals spent: %s → %s", before, after)
	}
	if n := len(enginetest.Query(t, e, `SHOW WATCHES`).Rows); n != 2 {
		t.Errorf("%d watches, want the 2 opened", n)
	}
}

// TestWatchThresholdIsDrawnOnce: the noisy threshold is stored with the
// charge and used by every later query, in any session and after the
// engine is reopened; a watch that the budget cannot pay for is not
// created.
func TestWatchThresholdIsDrawnOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5, 0)
	noisy := func(seed uint64) mechanism.Noiser {
		return mechanism.NewSecureNoiser(&seeded{rand.New(rand.NewPCG(seed, 1))})
	}
	stored := func() string {
		db, err := sql.Open("sqlite", "file:"+f.path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v string
		if err := db.QueryRow(`SELECT noisy_threshold || '/' || asked FROM _dpsql_watches WHERE name = 'w'`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	e := f.open(t, noisy(1), dpsql.Options{})
	enginetest.Query(t, e, `CREATE WATCH w OPTIONS (threshold = 700, sensitivity = 1, max_above = 3, epsilon = 1)`)
	first := stored()
	ask(e, "w", `COUNT(*) FROM people WHERE age < 20`)
	e.Close()
	e = f.open(t, noisy(2), dpsql.Options{})
	ask(e, "w", `COUNT(*) FROM people WHERE age < 20`)
	again := stored()
	if strings.Split(first, "/")[0] != strings.Split(again, "/")[0] || !strings.HasSuffix(again, "/2") {
		t.Errorf("stored threshold/asked %s after opening, %s after two queries and a reopen: want the same threshold, 2 asked", first, again)
	}
	// A watch whose ε the budget cannot pay is refused and not created.
	owner, err := dpsql.Open(f.path, dpsql.Options{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	enginetest.Run(t, owner, `SET BUDGET epsilon = 3`)
	owner.Close()
	if _, err := e.Query(context.Background(), `CREATE WATCH big OPTIONS (threshold = 1, sensitivity = 1, epsilon = 5)`); !errors.Is(err, budget.ErrBudgetExhausted) {
		t.Fatalf("a watch beyond the budget: %v", err)
	}
	if got := ask(e, "big", `COUNT(*) FROM people`); !strings.Contains(got, "unknown watch") {
		t.Errorf("the refused watch answers: %s", got)
	}
}

// TestWatchQueriesAreSerialized: many sessions ask one watch at once;
// exactly c of them get "above" (every query is far above the threshold)
// and the others find it closed: no "above" beyond the cutoff is ever
// released. Run under -race in CI.
func TestWatchQueriesAreSerialized(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 6, 0)
	e := f.open(t, testopts.ZeroNoise(), dpsql.Options{})
	enginetest.Query(t, e, `CREATE WATCH w OPTIONS (threshold = 1, sensitivity = 1, max_above = 3, epsilon = 1)`)
	var wg sync.WaitGroup
	answers := make([]string, 12)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := e.NewSession(dpsql.SessionOptions{})
			if err != nil {
				answers[i] = err.Error()
				return
			}
			answers[i] = ask(s, "w", `COUNT(*) FROM people`)
		}()
	}
	wg.Wait()
	above, closed := 0, 0
	for _, a := range answers {
		switch {
		case a == "above":
			above++
		case strings.Contains(a, "watch closed"):
			closed++
		default:
			t.Errorf("answer %q", a)
		}
	}
	if above != 3 || closed != 9 {
		t.Errorf("%d above, %d closed: want 3 and 9 (%v)", above, closed, answers)
	}
}

// TestWatchesAreTheirAnalysts: each analyst sees and asks only their own
// watches; the watch is charged to its analyst's budget.
func TestWatchesAreTheirAnalysts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8, 0)
	owner, err := dpsql.Open(f.path, dpsql.Options{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	enginetest.Run(t, owner, `CREATE ANALYST alice PASSWORD 'a-long-password' BUDGET epsilon = 5; CREATE ANALYST bob PASSWORD 'b-long-password' BUDGET epsilon = 5`)
	owner.Close()
	e := f.open(t, testopts.ZeroNoise(), dpsql.Options{})
	alice, err := e.NewSession(dpsql.SessionOptions{Analyst: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := e.NewSession(dpsql.SessionOptions{Analyst: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := alice.Query(ctx, `CREATE WATCH mine OPTIONS (threshold = 10, sensitivity = 1, epsilon = 2)`); err != nil {
		t.Fatal(err)
	}
	if got := ask(bob, "mine", `COUNT(*) FROM people`); !strings.Contains(got, "unknown watch") {
		t.Errorf("bob asks alice's watch: %s", got)
	}
	if res, err := bob.Query(ctx, `SHOW WATCHES`); err != nil || len(res.Rows) != 0 {
		t.Errorf("bob's SHOW WATCHES: %v %v", res, err)
	}
	if got := ask(alice, "mine", `COUNT(*) FROM people`); got != "above" {
		t.Errorf("alice asks her watch: %s", got)
	}
	budgetOf := func(s *dpsql.Session) string {
		res, err := s.Query(ctx, `SHOW BUDGET`)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(res.Rows)
	}
	if a, b := budgetOf(alice), budgetOf(bob); !strings.Contains(a, "spent 2") || strings.Contains(b, "spent 2") {
		t.Errorf("alice's budget %s, bob's %s: the watch is alice's charge", a, b)
	}
	if _, err := bob.Query(ctx, `CREATE WATCH mine OPTIONS (threshold = 10, sensitivity = 1, epsilon = 1)`); err != nil {
		t.Errorf("bob's own watch of the same name: %v", err)
	}
}
