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
	if s.Spent.Epsilon > 1+tolerance {
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
