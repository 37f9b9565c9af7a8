package budget

import (
	"context"
	"database/sql"
	"errors"
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

func TestChargeRefusesWithoutBudgetAndWhenExhausted(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "b.db"))
	if err := Charge(ctx, db, Cost{Epsilon: 0.1}, "q"); !errors.Is(err, ErrNoBudget) {
		t.Fatalf("charge without budget: %v, want ErrNoBudget", err)
	}
	if err := SetTotal(ctx, db, Cost{Epsilon: 1, Delta: 1e-6}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ { // ten charges of 0.1 must all fit despite float sums
		if err := Charge(ctx, db, Cost{Epsilon: 0.1}, "q"); err != nil {
			t.Fatalf("charge %d: %v", i, err)
		}
	}
	if err := Charge(ctx, db, Cost{Epsilon: 0.01}, "q"); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("over-budget charge: %v, want ErrBudgetExhausted", err)
	}
	if err := Charge(ctx, db, Cost{Epsilon: 0, Delta: 1e-5}, "q"); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("over-budget delta: %v, want ErrBudgetExhausted", err)
	}
	entries, err := Ledger(ctx, db)
	if err != nil || len(entries) != 10 {
		t.Fatalf("ledger has %d entries (%v), want 10: refusals must charge nothing", len(entries), err)
	}
	if err := Charge(ctx, db, Cost{Epsilon: -1}, "q"); !errors.Is(err, ErrInvalidCost) {
		t.Errorf("negative cost: %v", err)
	}
	if err := SetTotal(ctx, db, Cost{Epsilon: 0}); !errors.Is(err, ErrInvalidCost) {
		t.Errorf("zero total: %v", err)
	}
}

func TestLedgerSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	db := open(t, path)
	if err := SetTotal(ctx, db, Cost{Epsilon: 2}); err != nil {
		t.Fatal(err)
	}
	if err := Charge(ctx, db, Cost{Epsilon: 0.5}, "SELECT COUNT(*) FROM t"); err != nil {
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
	if err := SetTotal(ctx, a, Cost{Epsilon: 1}); err != nil {
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
			err := Charge(ctx, db, Cost{Epsilon: 0.1}, "q")
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
	SetTotal(ctx, db, Cost{Epsilon: 1})
	if err := Charge(ctx, db, Cost{Epsilon: 1}, "q1"); err != nil {
		t.Fatal(err)
	}
	if err := Charge(ctx, db, Cost{Epsilon: 0.5}, "q2"); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("before reset: %v", err)
	}
	if err := Reset(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := Charge(ctx, db, Cost{Epsilon: 0.5}, "q3"); err != nil {
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
	if err := SetTotal(ctx, db, Cost{Epsilon: 1, Delta: 1e-6}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := Charge(ctx, db, Cost{Epsilon: 0.1}, "q"); err != nil {
			t.Fatalf("charge %d of 0.1: %v", i, err)
		}
	}
	for _, c := range []Cost{{Epsilon: EpsilonUnit}, {Epsilon: 1e-9}, {Delta: DeltaUnit}} {
		if c.Delta > 0 {
			if err := Charge(ctx, db, Cost{Delta: 1e-6}, "q"); err != nil {
				t.Fatalf("δ charge within the total: %v", err)
			}
		}
		if err := Charge(ctx, db, c, "q"); !errors.Is(err, ErrBudgetExhausted) {
			t.Errorf("charge %+v after exhaustion: %v, want ErrBudgetExhausted", c, err)
		}
	}
	if err := Charge(ctx, db, Cost{Epsilon: 5e-324}, "q"); !errors.Is(err, ErrBudgetExhausted) {
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
	if err := Charge(ctx, db, Cost{Epsilon: 0.25}, "q"); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("charge of 0.25: %v, want ErrBudgetExhausted", err)
	}
	if err := Charge(ctx, db, Cost{Epsilon: 0.249999999999}, "q"); err != nil {
		t.Errorf("charge of exactly what remains: %v", err)
	}
}
