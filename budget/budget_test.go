package budget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

func openFile(t testing.TB, path string) *Store {
	return openStore(t, "sqlite", "file:"+path+"?_pragma=busy_timeout(20000)", func(db *sql.DB) *Store { return SQLite(db, db) })
}

// openStore opens a handle on a budget and makes its tables.
func openStore(t testing.TB, driver, dsn string, store func(*sql.DB) *Store) *Store {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := store(db)
	if err := Init(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// ChargeLaplace records the cost of a pure (Laplace) query of one part.
func ChargeLaplace(ctx context.Context, db *Store, cost Cost, statement string) error {
	_, err := ChargeFirst(ctx, db, "", []Charge{LaplaceCharge(cost.Epsilon, cost.Delta, nil)}, statement, nil)
	return err
}

func TestChargeRefusesWithoutBudgetAndWhenExhausted(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		db := open()
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
	})
}

func TestLedgerSurvivesReopen(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		db := open()
		if err := SetTotal(ctx, db, Cost{Epsilon: 2}, false); err != nil {
			t.Fatal(err)
		}
		if err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.5}, "SELECT COUNT(*) FROM t"); err != nil {
			t.Fatal(err)
		}
		db.db.Close()
		s, err := GetStatus(ctx, open())
		if err != nil {
			t.Fatal(err)
		}
		if !s.Set || s.Total.Epsilon != 2 || s.Spent.Epsilon != 0.5 || s.Remaining().Epsilon != 1.5 {
			t.Errorf("after reopen: %+v", s)
		}
	})
}

// TestConcurrentSpendersCannotOverspend runs 40 charges of 0.1 from two
// separate connection pools (as two processes would) against a total of 1.
func TestConcurrentSpendersCannotOverspend(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		a, b := open(), open()
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
	})
}

func TestResetKeepsTheLedger(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		db := open()
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
	})
}

// TestExactUnits: charges are whole ledger units with no slack. Ten
// charges of 0.1 spend exactly 1; after that not even the smallest charge
// passes (a float sum with a tolerance let tiny charges run forever), and
// a cost below one unit is rounded up to a unit rather than charged as zero.
func TestExactUnits(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		db := open()
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
	})
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
	db := openFile(t, path)
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

// TestQueriesLeftForAnAnalyst: an analyst with a pure budget (no δ: no
// ρ of their own) under a database with a zCDP total is told how many
// queries fit by both, with a Laplace query's ρ (it said 0: issue 29).
func TestQueriesLeftForAnAnalyst(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		db := open()
		if err := SetTotal(ctx, db, Cost{Epsilon: 10, Delta: 1e-6}, false); err != nil {
			t.Fatal(err)
		}
		// A Gaussian query at the database level: from then on only zCDP
		// certifies the database's charges.
		st0, _ := GetStatus(ctx, db)
		if _, err := ChargeFirst(ctx, db, "", []Charge{{Mechanism: Gaussian, Epsilon: 0.5, Rho: st0.GaussianRho(0.5)}}, "q", nil); err != nil {
			t.Fatal(err)
		}
		if err := CreateAnalyst(ctx, db, "ann", "v", &Cost{Epsilon: 2}); err != nil {
			t.Fatal(err)
		}
		st, err := GetAnalystStatus(ctx, db, "ann")
		if err != nil {
			t.Fatal(err)
		}
		if got := st.QueriesLeft(0.2); got != 10 {
			t.Errorf("an analyst with ε = 2 left: %d queries of 0.2 fit, want 10", got)
		}
	})
}

// TestMixedCompositionByHand: a Laplace query, a Gaussian one and a
// partition selection, against ρ and δ computed by hand, under a total
// (ε = 1, δ = 1e-6): partition selection may spend 5e-7, and zCDP may spend
// ρ_T = RhoFor(1, 5e-7).
func TestMixedCompositionByHand(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		db := open()
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
	})
}

// TestGaussianSharesFitExactly: 100 Gaussian queries at ε = 0.01 of a
// total ε = 1 fit exactly, and a 101st does not (ρ shares are rounded
// down to whole units, so rounding never refuses the last one).
func TestGaussianSharesFitExactly(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		db := open()
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
	})
}

// TestPureBudget: SET BUDGET ... PURE has δ = 0 and no zCDP; Gaussian
// charges are refused, Laplace ones compose by ε.
func TestPureBudget(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		db := open()
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
	})
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
		db := openFile(t, path)
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
		db.db.Close()
		if e2, _ := Ledger(ctx, openFile(t, path)); len(e2) != 3 || e2[0].Rho != 0.125 {
			t.Errorf("%s: after reopening %+v", tc.name, e2)
		}
	}
}

// TestConcurrentGaussianChargesCannotOverspend: 50 connections, in two
// pools as two processes would have, race to buy ρ shares of ε = 0.03
// each of a total ε = 1: exactly 33 are admitted and ρ stays within ρ_T.
func TestConcurrentGaussianChargesCannotOverspend(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		a, b := open(), open()
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
			go func(db *Store) {
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
			}(map[bool]*Store{true: a, false: b}[i%2 == 0])
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
	})
}

// TestRunningSumsMatchTheLedger: whatever happens — charges by analysts
// and local sessions, resets, charges recorded by a program that does not
// keep the running sums, running sums lost or naming ids beyond the
// ledger — what the accountant reads as spent equals the sums over the
// ledger since the last reset, computed afresh.
func TestRunningSumsMatchTheLedger(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		db := open()
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
			q := `SELECT CAST(COALESCE(SUM(epsilon_units), 0) AS BIGINT), CAST(COALESCE(SUM(delta_units), 0) AS BIGINT), COALESCE(SUM(CAST(rho_units AS DOUBLE PRECISION)), 0), COUNT(*) FILTER (WHERE mechanism <> 'laplace')
				FROM _dpsql_ledger WHERE id > (SELECT COALESCE(MAX(after_entry), 0) FROM _dpsql_budget_resets)`
			args := []any{}
			if who != "" {
				q += ` AND analyst = ?`
				args = append(args, who)
			}
			if err := db.on(db.db).QueryRowContext(ctx, q, args...).Scan(&l.spent.eps, &l.spent.delta, &l.rho, &l.impure); err != nil {
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
				if _, err := db.on(db.db).ExecContext(ctx, `INSERT INTO _dpsql_ledger (charged, statement, epsilon, delta, epsilon_units, delta_units, mechanism, rho_units, analyst)
					VALUES ('t', 'older program', 0.5, 0, 500000000000, 0, 'laplace', 1250000000000, ?)`, analyst); err != nil {
					t.Fatal(err)
				}
				kinds["unkept charge"]++
			case k < 19:
				if _, err := db.on(db.db).ExecContext(ctx, `DELETE FROM _dpsql_spent WHERE scope = ?`, who[rng.IntN(3)]); err != nil {
					t.Fatal(err)
				}
				kinds["lost sums"]++
			default:
				if _, err := db.on(db.db).ExecContext(ctx, `UPDATE _dpsql_spent SET through_id = through_id + 1000, epsilon_units = 0`); err != nil {
					t.Fatal(err)
				}
				kinds["sums beyond the ledger"]++
			}
			for _, w := range who {
				got, err := readLedger(ctx, db.on(db.db), w)
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
	})
}

// eachStore runs test on a budget kept in a SQLite file and on one kept
// in a PostgreSQL database; open returns a new handle on that same budget
// each time (as another process would have).
func eachStore(t *testing.T, test func(t *testing.T, open func() *Store)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "b.db")
		test(t, func() *Store { return openFile(t, path) })
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := freshDatabase(t)
		test(t, func() *Store { return openPostgres(t, dsn) })
	})
}

// server is the package's PostgreSQL server, started by the first test
// that needs one and stopped by TestMain.
var server struct {
	once sync.Once
	s    *pgtest.Server
	err  error
	n    int
	mu   sync.Mutex
}

func TestMain(m *testing.M) {
	code := m.Run()
	if server.s != nil {
		server.s.Stop()
	}
	os.Exit(code)
}

// freshDatabase creates an empty database on the package's server and
// returns its DSN; without server binaries it skips (unless CI requires
// PostgreSQL).
func freshDatabase(t testing.TB) string {
	t.Helper()
	server.once.Do(func() { server.s, server.err = pgtest.Start(context.Background()) })
	if errors.Is(server.err, pgtest.ErrNoServer) && os.Getenv("DPSQL_REQUIRE_POSTGRES") == "" {
		t.Skip(server.err.Error())
	}
	if server.err != nil {
		t.Fatal(server.err)
	}
	server.mu.Lock()
	server.n++
	name := fmt.Sprintf("budget%d", server.n)
	server.mu.Unlock()
	dsn, err := server.s.CreateDatabase(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

func openPostgres(t testing.TB, dsn string) *Store {
	return openStore(t, "pgx", dsn, Postgres)
}

// TestAdoptMovesAStateFilesBudgetOnce: the budget a state file kept
// before the budget lived in PostgreSQL — its total, analysts, auth
// secret and the charges since its last reset — is adopted into the
// PostgreSQL store once, however many handles adopt it at once, and its
// charges count there.
func TestAdoptMovesAStateFilesBudgetOnce(t *testing.T) {
	ctx := context.Background()
	file := openFile(t, filepath.Join(t.TempDir(), "state.db"))
	if err := SetTotal(ctx, file, Cost{Epsilon: 2, Delta: 1e-6}, false); err != nil {
		t.Fatal(err)
	}
	if err := CreateAnalyst(ctx, file, "ann", "verifier-of-ann", &Cost{Epsilon: 1}); err != nil {
		t.Fatal(err)
	}
	secret, err := AuthSecret(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	if err := ChargeLaplace(ctx, file, Cost{Epsilon: 0.7}, "before the reset"); err != nil {
		t.Fatal(err)
	}
	if err := Reset(ctx, file); err != nil {
		t.Fatal(err)
	}
	if err := ChargeLaplace(ctx, file, Cost{Epsilon: 0.25}, "q1"); err != nil {
		t.Fatal(err)
	}
	if _, err := ChargeFirst(ctx, file, "ann", []Charge{LaplaceCharge(0.5, 0, nil)}, "q2", nil); err != nil {
		t.Fatal(err)
	}
	// A threshold watch of ann's, asked once: adopted with its threshold
	// and counts (its charge is one of the adopted ones).
	if _, err := OpenWatch(ctx, file, "ann", Watch{Name: "w", Threshold: 10, Sensitivity: 1, Cutoff: 2, Epsilon: 0.1}, LaplaceCharge(0.1, 0, nil), "CREATE WATCH w", func() (float64, error) { return 12.5, nil }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := AskWatch(ctx, file, "ann", "w", func(Watch) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	dsn := freshDatabase(t)
	var wg sync.WaitGroup
	counts := make([]int, 6)
	errs := make([]error, 6)
	for i := range counts {
		pg := openPostgres(t, dsn)
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = Adopt(ctx, file, pg, "source-1")
		}()
	}
	wg.Wait()
	total := 0
	for i := range counts {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		total += counts[i]
	}
	if total != 3 {
		t.Fatalf("adopted %v charges in all, want the 3 since the reset, once", counts)
	}
	pg := openPostgres(t, dsn)
	if n, err := Adopt(ctx, file, pg, "source-1"); n != 0 || err != nil {
		t.Errorf("adopting again: %d, %v", n, err)
	}
	st, err := GetStatus(ctx, pg)
	if err != nil || st.Total.Epsilon != 2 || st.Spent.Epsilon != 0.85 {
		t.Errorf("PostgreSQL budget after adoption: %+v (%v), want 0.85 of 2 spent", st, err)
	}
	ann, err := GetAnalystStatus(ctx, pg, "ann")
	if err != nil || ann.Total.Epsilon != 1 || ann.Spent.Epsilon != 0.6 {
		t.Errorf("ann after adoption: %+v (%v)", ann, err)
	}
	if w, err := GetWatch(ctx, pg, "ann", "w"); err != nil || w.NoisyThreshold != 12.5 || w.Asked != 1 || w.Above != 1 || w.Left() != 1 {
		t.Errorf("ann's watch after adoption: %+v (%v)", w, err)
	}
	if v, ok, err := Verifier(ctx, pg, "ann"); !ok || err != nil || v != "verifier-of-ann" {
		t.Errorf("ann's verifier: %q %v %v", v, ok, err)
	}
	if got, err := AuthSecret(ctx, pg); err != nil || string(got) != string(secret) {
		t.Errorf("auth secret not adopted: %v", err)
	}
	// The adopted charges count: 1.15 of ε is left, not 2.
	if err := ChargeLaplace(ctx, pg, Cost{Epsilon: 1.2}, "too much"); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("charge beyond what adoption left: %v", err)
	}
	// The state file keeps its ledger, for audit.
	if e, _ := Ledger(ctx, file); len(e) != 4 {
		t.Errorf("state file's ledger has %d entries, want 4", len(e))
	}
	// Another state file's budget is adopted too: its charges add up.
	other := openFile(t, filepath.Join(t.TempDir(), "other.db"))
	if err := SetTotal(ctx, other, Cost{Epsilon: 5}, false); err != nil {
		t.Fatal(err)
	}
	if err := ChargeLaplace(ctx, other, Cost{Epsilon: 1}, "q3"); err != nil {
		t.Fatal(err)
	}
	if n, err := Adopt(ctx, other, pg, "source-2"); n != 1 || err != nil {
		t.Fatalf("second state file: %d, %v", n, err)
	}
	if st, _ := GetStatus(ctx, pg); st.Total.Epsilon != 2 || st.Spent.Epsilon != 1.85 {
		t.Errorf("after the second adoption: %+v (the first total stays, the charges add)", st)
	}
}

// TestPostgresChargeWaitsForTheLedgerLock: while another transaction
// holds the ledger's lock, a charge says it is waiting once, waits, and
// is recorded when the lock is released — counted after what that
// transaction wrote.
func TestPostgresChargeWaitsForTheLedgerLock(t *testing.T) {
	ctx := context.Background()
	dsn := freshDatabase(t)
	a, b := openPostgres(t, dsn), openPostgres(t, dsn)
	if err := SetTotal(ctx, a, Cost{Epsilon: 1}, false); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { lockPoll = d }(lockPoll)
	lockPoll = 50 * time.Millisecond
	holder, err := a.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := a.lockPostgres(ctx, holder, nil); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() {
		_, err := ChargeFirst(ctx, b, "", []Charge{LaplaceCharge(0.5, 0, nil)}, "waiting", func() { waited <- struct{}{} })
		done <- err
	}()
	select {
	case <-waited:
	case err := <-done:
		t.Fatalf("charged while the lock was held: %v", err)
	}
	// The holder spends 0.6 first: the waiting charge of 0.5 then no
	// longer fits.
	if _, err := holder.ExecContext(ctx, `INSERT INTO dpsql.ledger (charged, statement, epsilon, delta, epsilon_units, delta_units, mechanism, rho_units)
		VALUES ('t', 'holder', 0.6, 0, 600000000000, 0, 'laplace', 1800000000000)`); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("charge after the holder spent 0.6 of 1: %v, want ErrBudgetExhausted", err)
	}
	if len(waited) != 0 {
		t.Errorf("waiting called %d more times", len(waited))
	}
}

// BenchmarkChargeFirst measures one charge — lock, read what is spent,
// record, commit — on each store: the latency every private query adds
// before its scan. (The test server runs with fsync off; the SQLite file
// syncs.)
//
//	go test -run XXX -bench ChargeFirst ./budget
func BenchmarkChargeFirst(b *testing.B) {
	for _, kind := range []string{"sqlite", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			var s *Store
			if kind == "sqlite" {
				s = openFile(b, filepath.Join(b.TempDir(), "b.db"))
			} else {
				s = openPostgres(b, freshDatabase(b))
			}
			ctx := context.Background()
			if err := SetTotal(ctx, s, Cost{Epsilon: MaxTotalEpsilon}, false); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := ChargeLaplace(ctx, s, Cost{Epsilon: 1e-6}, "SELECT COUNT(*) FROM t"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDeltaZeroAfterGaussianSaysWhy: after a Gaussian charge, a budget
// set again with δ = 0 admits nothing (zCDP needs δ > 0, and basic
// composition no longer applies); the refusal says so and what to do.
func TestDeltaZeroAfterGaussianSaysWhy(t *testing.T) {
	eachStore(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		db := open()
		if err := SetTotal(ctx, db, Cost{Epsilon: 2, Delta: 1e-6}, false); err != nil {
			t.Fatal(err)
		}
		if _, err := ChargeFirst(ctx, db, "", []Charge{{Mechanism: Gaussian, Epsilon: 0.1, Delta: 0, Rho: 1e-4}}, "q", nil); err != nil {
			t.Fatal(err)
		}
		if err := SetTotal(ctx, db, Cost{Epsilon: 2}, false); err != nil {
			t.Fatal(err)
		}
		err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.1}, "q")
		if !errors.Is(err, ErrBudgetExhausted) || !strings.Contains(err.Error(), "needs a total δ > 0") || !strings.Contains(err.Error(), "RESET BUDGET") {
			t.Errorf("after a Gaussian charge, with δ = 0: %v", err)
		}
		// Without the Gaussian charge the same budget says nothing more.
		if err := Reset(ctx, db); err != nil {
			t.Fatal(err)
		}
		if err := SetTotal(ctx, db, Cost{Epsilon: 0.05}, false); err != nil {
			t.Fatal(err)
		}
		if err := ChargeLaplace(ctx, db, Cost{Epsilon: 0.1}, "q"); err == nil || strings.Contains(err.Error(), "zCDP") {
			t.Errorf("a plain exhausted budget: %v", err)
		}
	})
}
