package budget

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	_ "modernc.org/sqlite"
)

func open(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(20000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := Init(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

// ChargeLaplace records the cost of a pure (Laplace) query of one part.
func ChargeLaplace(ctx context.Context, db *sql.DB, cost Cost, statement string) error {
	_, err := ChargeFirst(ctx, db, "", []Charge{LaplaceCharge(cost.Epsilon, cost.Delta, nil)}, statement, nil)
	return err
}

func TestChargeRefusesWithoutBudgetAndWhenExhausted(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "b.db"))
	if err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.1}, "q"); !errors.Is(err, ErrNoBudget) {
		t.Fatalf("charge without budget: %v, want ErrNoBudget", err)
	}
	if err := SetTotal(ctx, db, Cost{Epsilon: 1, Delta: 1e-6}, false); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ { // ten charges of 0.1 must all fit despite float sums
		if err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.1}, "q"); err != nil {
			t.Fatalf("charge %d: %v", i, err)
		}
	}
	if err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.01}, "q"); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("over-budget charge: %v, want ErrBudgetExhausted", err)
	}
	if err := ChargeLaplace(ctx, db, Cost{Epsilon: 0, Delta: 1e-5}, "q"); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("over-budget delta: %v, want ErrBudgetExhausted", err)
	}
	entries, err := Ledger(ctx, db)
	if err != nil || len(entries) != 10 {
		t.Fatalf("ledger has %d entries (%v), want 10: refusals must charge nothing", len(entries), err)
	}
	if err := ChargeLaplace(ctx, db, Cost{Epsilon: -1}, "q"); !errors.Is(err, ErrInvalidCost) {
		t.Errorf("negative cost: %v", err)
	}
	if err := SetTotal(ctx, db, Cost{Epsilon: 0}, false); !errors.Is(err, ErrInvalidCost) {
		t.Errorf("zero total: %v", err)
	}
}

func TestLedgerSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	db := open(t, path)
	if err := SetTotal(ctx, db, Cost{Epsilon: 2}, false); err != nil {
		t.Fatal(err)
	}
	if err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.5}, "SELECT COUNT(*) FROM t"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := GetStatus(ctx, open(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Set || s.Total.Epsilon != 2 || s.Spent.Epsilon != 0.5 || s.Remaining().Epsilon != 1.5 {
		t.Errorf("after reopen: %+v", s)
	}
}

// TestConcurrentSpendersCannotOverspend runs 40 charges of 0.1 from two
// separate connection pools (as two processes would) against a total of 1.
func TestConcurrentSpendersCannotOverspend(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	a, b := open(t, path), open(t, path)
	if err := SetTotal(ctx, a, Cost{Epsilon: 1}, false); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for i := 0; i < 40; i++ {
		db := a
		if i%2 == 1 {
			db = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.1}, "q")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrBudgetExhausted):
				refused++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 10 || refused != 30 {
		t.Errorf("%d charges accepted and %d refused, want 10 and 30", ok, refused)
	}
	s, _ := GetStatus(ctx, a)
	if s.Spent.Epsilon > 1 {
		t.Errorf("spent %v of 1", s.Spent.Epsilon)
	}
}

func TestResetKeepsTheLedger(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "b.db"))
	SetTotal(ctx, db, Cost{Epsilon: 1}, false)
	if err := ChargeLaplace(ctx, db, Cost{Epsilon: 1}, "q1"); err != nil {
		t.Fatal(err)
	}
	if err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.5}, "q2"); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("before reset: %v", err)
	}
	if err := Reset(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.5}, "q3"); err != nil {
		t.Fatalf("after reset: %v", err)
	}
	s, _ := GetStatus(ctx, db)
	entries, _ := Ledger(ctx, db)
	if s.Spent.Epsilon != 0.5 || len(entries) != 2 {
		t.Errorf("spent %v with %d ledger entries, want 0.5 and 2", s.Spent.Epsilon, len(entries))
	}
}

// TestExactUnits: charges are whole ledger units with no slack. Ten
// charges of 0.1 spend exactly 1; after that not even the smallest charge
// passes (a float sum with a tolerance let tiny charges run forever), and
// a cost below one unit is rounded up to a unit rather than charged as zero.
func TestExactUnits(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "b.db"))
	if err := SetTotal(ctx, db, Cost{Epsilon: 1, Delta: 1e-6}, false); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.1}, "q"); err != nil {
			t.Fatalf("charge %d of 0.1: %v", i, err)
		}
	}
	for _, c := range []Cost{{Epsilon: EpsilonUnit}, {Epsilon: 1e-9}, {Delta: DeltaUnit}} {
		if c.Delta > 0 {
			// Partition selection may spend half the total δ (the other
			// half converts zCDP): 5e-7 of 1e-6.
			if err := ChargeLaplace(ctx, db, Cost{Delta: 5e-7}, "q"); err != nil {
				t.Fatalf("δ charge within the selection share: %v", err)
			}
		}
		if err := ChargeLaplace(ctx, db, c, "q"); !errors.Is(err, ErrBudgetExhausted) {
			t.Errorf("charge %+v after exhaustion: %v, want ErrBudgetExhausted", c, err)
		}
	}
	if err := ChargeLaplace(ctx, db, Cost{Epsilon: 5e-324}, "q"); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("ε = 5e-324 after exhaustion: %v, want ErrBudgetExhausted (it costs one unit, not zero)", err)
	}
	s, _ := GetStatus(ctx, db)
	if s.Spent.Epsilon != 1 {
		t.Errorf("spent %v, want exactly 1", s.Spent.Epsilon)
	}
}

// TestMigrationToUnits: a ledger written before the integer columns
// existed gets them, charges rounded up and the total down.
func TestMigrationToUnits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Exec(`CREATE TABLE _dpsql_budget (id INTEGER PRIMARY KEY CHECK (id = 1), epsilon REAL NOT NULL, delta REAL NOT NULL);
		CREATE TABLE _dpsql_ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, charged TEXT NOT NULL, statement TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL);
		INSERT INTO _dpsql_budget VALUES (1, 2, 1e-6);
		INSERT INTO _dpsql_ledger (charged, statement, epsilon, delta) VALUES ('t', 'q1', 0.5, 0), ('t', 'q2', 1.2500000000001, 1e-7);`)
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	db := open(t, path)
	s, err := GetStatus(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Set || s.Total.Epsilon != 2 || s.Spent.Epsilon != 1.750000000001 || s.Spent.Delta != 1e-7 {
		t.Fatalf("after migration: %+v", s)
	}
	// 1.2500000000001 is rounded up to 1.250000000001 ε: 2 − 1.750000000001
	// leaves 0.249999999999, so 0.25 does not fit.
	if err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.25}, "q"); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("charge of 0.25: %v, want ErrBudgetExhausted", err)
	}
	if err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.249999999999}, "q"); err != nil {
		t.Errorf("charge of exactly what remains: %v", err)
	}
}

// TestMixedCompositionByHand: a Laplace query, a Gaussian one and a
// partition selection, against ρ and δ computed by hand, under a total
// (ε = 1, δ = 1e-6): partition selection may spend 5e-7, and zCDP may spend
// ρ_T = RhoFor(1, 5e-7).
func TestMixedCompositionByHand(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "b.db"))
	if err := SetTotal(ctx, db, Cost{Epsilon: 1, Delta: 1e-6}, false); err != nil {
		t.Fatal(err)
	}
	st, _ := GetStatus(ctx, db)
	rt := RhoFor(1, 5e-7)
	if math.Abs(st.RhoTotal-rt) > 1e-12 || st.DeltaCap != 5e-7 || !st.Basic {
		t.Fatalf("status %+v, want ρ_T = %g", st, rt)
	}
	// A Laplace query at ε = 0.1 in two parts of 0.05, with partition
	// selection δ = 2e-7: ρ = 2·0.05²/2 = 0.0025.
	lap := LaplaceCharge(0.1, 2e-7, []float64{0.05, 0.05})
	if math.Abs(lap.Rho-0.0025) > 1e-15 {
		t.Fatalf("Laplace ρ = %v, want 0.0025", lap.Rho)
	}
	if i, err := ChargeFirst(ctx, db, "", []Charge{lap}, "q1", nil); err != nil || i != 0 {
		t.Fatal(i, err)
	}
	// While every charge is pure, basic composition still counts: 0.9 more
	// fits by ε (though its ρ = 0.405 is far above ρ_T).
	st, _ = GetStatus(ctx, db)
	if st.Remaining().Epsilon != 0.9 || st.QueriesLeft(0.3) != 3 {
		t.Errorf("remaining %v, %d queries of 0.3", st.Remaining(), st.QueriesLeft(0.3))
	}
	// A Gaussian query buying ε = 0.5 of the total: ρ = ρ_T/2.
	g := Charge{Mechanism: Gaussian, Epsilon: 0.5, Rho: st.GaussianRho(0.5)}
	if math.Abs(g.Rho-rt/2) > 1e-12 {
		t.Fatalf("GaussianRho(0.5) = %v, want %v", g.Rho, rt/2)
	}
	if _, err := ChargeFirst(ctx, db, "", []Charge{g}, "q2", nil); err != nil {
		t.Fatal(err)
	}
	st, _ = GetStatus(ctx, db)
	if want := 0.0025 + rt/2; math.Abs(st.RhoSpent-want) > 1e-12 || st.Basic || st.Spent.Delta != 2e-7 {
		t.Fatalf("after the Gaussian query: %+v, want ρ spent %v", st, want)
	}
	// Now only zCDP counts: a Laplace query at ε = 0.3 has ρ = 0.045 >
	// what is left, so it is refused although basic composition would have
	// admitted it (0.1 + 0.5 + 0.3 ≤ 1); a small one fits by its ρ.
	if _, err := ChargeFirst(ctx, db, "", []Charge{LaplaceCharge(0.3, 0, nil)}, "q3", nil); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("Laplace 0.3 after a Gaussian query: %v, want ErrBudgetExhausted", err)
	}
	if _, err := ChargeFirst(ctx, db, "", []Charge{LaplaceCharge(0.05, 0, nil)}, "q4", nil); err != nil {
		t.Errorf("Laplace 0.05 (ρ = 0.00125): %v", err)
	}
	// The first candidate that fits is the one recorded.
	left := st.GaussianRho(0.3)
	i, err := ChargeFirst(ctx, db, "", []Charge{LaplaceCharge(0.3, 0, nil), {Mechanism: Gaussian, Epsilon: 0.3, Rho: left}}, "q5", nil)
	if err != nil || i != 1 {
		t.Errorf("candidates: chose %d (%v), want the Gaussian one", i, err)
	}
	// δ: 3.1e-7 more would pass 5e-7 (3e-7 would just fit).
	if _, err := ChargeFirst(ctx, db, "", []Charge{LaplaceCharge(1e-4, 3.1e-7, nil)}, "q6", nil); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("δ beyond the selection share: %v", err)
	}
	entries, _ := Ledger(ctx, db)
	if len(entries) != 4 || entries[1].Mechanism != Gaussian || math.Abs(entries[1].Rho-rt/2) > 1e-12 || math.Abs(entries[0].Rho-0.0025) > 1e-12 {
		t.Errorf("ledger %+v", entries)
	}
	// What was spent, converted: ρ ≤ ρ_T, so (1, 5e-7) by zCDP and 5e-7 of
	// δ by partition selection: (1, 1e-6) in all.
	st, _ = GetStatus(ctx, db)
	if st.RhoSpent > st.RhoTotal || ZCDPEpsilon(st.RhoSpent, 5e-7) > 1 {
		t.Errorf("overspent: %+v", st)
	}
}

// TestGaussianSharesFitExactly: 100 Gaussian queries at ε = 0.01 of a
// total ε = 1 fit exactly, and a 101st does not (ρ shares are rounded
// down to whole units, so rounding never refuses the last one).
func TestGaussianSharesFitExactly(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "b.db"))
	if err := SetTotal(ctx, db, Cost{Epsilon: 1, Delta: 1e-6}, false); err != nil {
		t.Fatal(err)
	}
	st, _ := GetStatus(ctx, db)
	g := Charge{Mechanism: Gaussian, Epsilon: 0.01, Rho: st.GaussianRho(0.01)}
	if st.QueriesLeft(0.01) != 100 {
		t.Errorf("QueriesLeft(0.01) = %d, want 100", st.QueriesLeft(0.01))
	}
	for i := 0; i < 100; i++ {
		if _, err := ChargeFirst(ctx, db, "", []Charge{g}, "q", nil); err != nil {
			t.Fatalf("query %d: %v", i, err)
		}
	}
	if _, err := ChargeFirst(ctx, db, "", []Charge{g}, "q", nil); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("101st: %v", err)
	}
}

// TestPureBudget: SET BUDGET ... PURE has δ = 0 and no zCDP; Gaussian
// charges are refused, Laplace ones compose by ε.
func TestPureBudget(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "b.db"))
	if err := SetTotal(ctx, db, Cost{Epsilon: 1, Delta: 1e-6}, true); !errors.Is(err, ErrInvalidCost) {
		t.Errorf("PURE with δ: %v", err)
	}
	if err := SetTotal(ctx, db, Cost{Epsilon: 1}, true); err != nil {
		t.Fatal(err)
	}
	st, _ := GetStatus(ctx, db)
	if !st.Pure || st.RhoTotal != 0 || st.GaussianRho(0.5) != 0 {
		t.Errorf("status %+v", st)
	}
	if _, err := ChargeFirst(ctx, db, "", []Charge{{Mechanism: Gaussian, Epsilon: 0.1, Rho: 1e-4}}, "q", nil); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("Gaussian under PURE: %v", err)
	}
	if err := ChargeLaplace(ctx, db, Cost{Epsilon: 1}, "q"); err != nil {
		t.Errorf("Laplace: %v", err)
	}
}

// TestMigrationToZCDP: a ledger of the version before zCDP accounting
// gets mechanism 'laplace' and ρ = ε²/2 for its charges; one that spent
// more than half its δ keeps basic composition (δ up to the whole total,
// no Gaussian).
func TestMigrationToZCDP(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		spentD  string
		legacy  bool
		wantRho float64
	}{
		{"half δ left", "1e-7", false, 0.125 + 0.02},
		{"more than half δ spent", "6e-7", true, 0.125 + 0.02},
	} {
		path := filepath.Join(t.TempDir(), "old.db")
		raw, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = raw.Exec(`CREATE TABLE _dpsql_budget (id INTEGER PRIMARY KEY CHECK (id = 1), epsilon REAL NOT NULL, delta REAL NOT NULL, epsilon_units INTEGER, delta_units INTEGER);
			CREATE TABLE _dpsql_budget_resets (id INTEGER PRIMARY KEY AUTOINCREMENT, reset TEXT NOT NULL, after_entry INTEGER NOT NULL);
			CREATE TABLE _dpsql_ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, charged TEXT NOT NULL, statement TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL, epsilon_units INTEGER, delta_units INTEGER);
			INSERT INTO _dpsql_budget VALUES (1, 2, 1e-6, 2000000000000, 1000000000000);
			INSERT INTO _dpsql_ledger (charged, statement, epsilon, delta, epsilon_units, delta_units) VALUES
				('t', 'q1', 0.5, 0, 500000000000, 0), ('t', 'q2', 0.2, ` + tc.spentD + `, 200000000000, ` + tc.spentD + `*1e18);`)
		raw.Close()
		if err != nil {
			t.Fatal(err)
		}
		db := open(t, path)
		entries, err := Ledger(ctx, db)
		if err != nil || len(entries) != 2 || entries[0].Mechanism != Laplace || entries[0].Rho != 0.125 || entries[1].Rho != 0.02 {
			t.Fatalf("%s: migrated ledger %+v (%v)", tc.name, entries, err)
		}
		st, _ := GetStatus(ctx, db)
		if math.Abs(st.RhoSpent-tc.wantRho) > 1e-12 || !st.Basic || st.Spent.Epsilon != 0.7 {
			t.Errorf("%s: status %+v", tc.name, st)
		}
		if legacy := st.RhoTotal == 0; legacy != tc.legacy {
			t.Errorf("%s: ρ_T = %v, legacy %v", tc.name, st.RhoTotal, tc.legacy)
		}
		// Basic composition carries on from the old ledger.
		if err := ChargeLaplace(ctx, db, Cost{Epsilon: 1.3}, "q3"); err != nil {
			t.Errorf("%s: the rest of ε by basic composition: %v", tc.name, err)
		}
		// Opening again changes nothing.
		db.Close()
		if e2, _ := Ledger(ctx, open(t, path)); len(e2) != 3 || e2[0].Rho != 0.125 {
			t.Errorf("%s: after reopening %+v", tc.name, e2)
		}
	}
}

// TestConcurrentGaussianChargesCannotOverspend: 50 connections, in two
// pools as two processes would have, race to buy ρ shares of ε = 0.03
// each of a total ε = 1: exactly 33 are admitted and ρ stays within ρ_T.
func TestConcurrentGaussianChargesCannotOverspend(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	a, b := open(t, path), open(t, path)
	if err := SetTotal(ctx, a, Cost{Epsilon: 1, Delta: 1e-6}, false); err != nil {
		t.Fatal(err)
	}
	st, _ := GetStatus(ctx, a)
	g := Charge{Mechanism: Gaussian, Epsilon: 0.03, Rho: st.GaussianRho(0.03)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, other := 0, []error{}
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(db *sql.DB) {
			defer wg.Done()
			_, err := ChargeFirst(ctx, db, "", []Charge{g, LaplaceCharge(0.03, 0, nil)}, "q", nil)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				admitted++
			case !errors.Is(err, ErrBudgetExhausted):
				other = append(other, err)
			}
		}(map[bool]*sql.DB{true: a, false: b}[i%2 == 0])
	}
	wg.Wait()
	if len(other) > 0 {
		t.Fatalf("errors other than exhaustion: %v", other)
	}
	st, _ = GetStatus(ctx, a)
	entries, _ := Ledger(ctx, a)
	laplace := 0
	for _, e := range entries {
		if e.Mechanism == Laplace {
			laplace++
		}
	}
	// 33 shares of 0.03 fit; after them neither the 34th share nor the
	// Laplace alternative (ρ = 0.00045 > the ρ_T/100 left) does.
	if st.RhoSpent > st.RhoTotal || admitted != len(entries) || admitted != 33 || laplace != 0 {
		t.Errorf("admitted %d (%d Laplace), ρ %v of %v", admitted, laplace, st.RhoSpent, st.RhoTotal)
	}
}

// TestRunningSumsMatchTheLedger: whatever happens — charges by analysts
// and local sessions, resets, charges recorded by a program that does not
// keep the running sums, running sums lost or naming ids beyond the
// ledger — what the accountant reads as spent equals the sums over the
// ledger since the last reset, computed afresh.
func TestRunningSumsMatchTheLedger(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "r.db"))
	if err := SetTotal(ctx, db, Cost{Epsilon: 1000, Delta: 1e-3}, false); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"a", "b"} {
		if err := CreateAnalyst(ctx, db, a, "v", &Cost{Epsilon: 500, Delta: 1e-4}); err != nil {
			t.Fatal(err)
		}
	}
	scratch := func(who string) ledger {
		var l ledger
		q := `SELECT COALESCE(SUM(epsilon_units), 0), COALESCE(SUM(delta_units), 0), TOTAL(rho_units), COUNT(*) FILTER (WHERE mechanism <> 'laplace')
			FROM _dpsql_ledger WHERE id > (SELECT COALESCE(MAX(after_entry), 0) FROM _dpsql_budget_resets)`
		args := []any{}
		if who != "" {
			q += ` AND analyst = ?`
			args = append(args, who)
		}
		if err := db.QueryRowContext(ctx, q, args...).Scan(&l.spent.eps, &l.spent.delta, &l.rho, &l.impure); err != nil {
			t.Fatal(err)
		}
		return l
	}
	rng := rand.New(rand.NewPCG(1, 2))
	who := []string{"", "a", "b"}
	kinds := map[string]int{}
	for step := range 400 {
		switch k := rng.IntN(20); {
		case k < 13:
			c := LaplaceCharge(float64(1+rng.IntN(100))/100, float64(rng.IntN(3))*1e-7, nil)
			if rng.IntN(3) == 0 {
				c = Charge{Mechanism: Gaussian, Epsilon: 0.01, Rho: float64(1+rng.IntN(50)) * 1e-6}
			}
			if _, err := ChargeFirst(ctx, db, who[rng.IntN(3)], []Charge{c}, "q", nil); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			kinds["charge"]++
		case k < 15:
			if err := Reset(ctx, db); err != nil {
				t.Fatal(err)
			}
			kinds["reset"]++
		case k < 17:
			var analyst any
			if w := who[rng.IntN(3)]; w != "" {
				analyst = w
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO _dpsql_ledger (charged, statement, epsilon, delta, epsilon_units, delta_units, mechanism, rho_units, analyst)
				VALUES ('t', 'older program', 0.5, 0, 500000000000, 0, 'laplace', 1250000000000, ?)`, analyst); err != nil {
				t.Fatal(err)
			}
			kinds["unkept charge"]++
		case k < 19:
			if _, err := db.ExecContext(ctx, `DELETE FROM _dpsql_spent WHERE scope = ?`, who[rng.IntN(3)]); err != nil {
				t.Fatal(err)
			}
			kinds["lost sums"]++
		default:
			if _, err := db.ExecContext(ctx, `UPDATE _dpsql_spent SET through_id = through_id + 1000, epsilon_units = 0`); err != nil {
				t.Fatal(err)
			}
			kinds["sums beyond the ledger"]++
		}
		for _, w := range who {
			got, err := readLedger(ctx, db, w)
			if err != nil {
				t.Fatal(err)
			}
			want := scratch(w)
			if got.spent != want.spent || got.rho != want.rho || got.impure != want.impure {
				t.Fatalf("step %d, scope %q: read %+v %v %d, ledger says %+v %v %d", step, w, got.spent, got.rho, got.impure, want.spent, want.rho, want.impure)
			}
		}
	}
	t.Logf("steps: %v", kinds)
}
