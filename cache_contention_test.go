package dpsql_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
)

// lockHolder takes the database's write lock from another connection
// (as an owner's import or another process would) for hold at a time,
// letting go for gap between, until stop is called.
func lockHolder(t *testing.T, path string, hold, gap time.Duration) (stop func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
				t.Errorf("lock holder: %v", err)
				return
			}
			time.Sleep(hold)
			if _, err := conn.ExecContext(context.Background(), `COMMIT`); err != nil {
				t.Errorf("lock holder: %v", err)
				return
			}
			time.Sleep(gap)
		}
	}()
	return func() {
		close(done)
		<-finished
		conn.Close()
		db.Close()
	}
}

// chargesOf counts the ledger's charges by statement, for those that
// contain part.
func (h *harness) chargesOf(t *testing.T, path, part string) map[string]int {
	t.Helper()
	owner := h.open(t, path, dpsql.Options{Owner: true})
	charged := map[string]int{}
	for _, row := range query(t, owner, "SHOW LEDGER").Rows {
		if s := fmt.Sprint(row[3]); strings.Contains(s, part) {
			charged[s]++
		}
	}
	return charged
}

// TestRepeatsStayFreeWhileTheLockIsHeld: another connection holds the
// database's write lock for longer than an answer waits to be cached,
// over and over, while sessions repeat the same few queries and others
// charge new ones. Each repeated query is charged once (the answer waits
// in memory for the lock, and repeats are answered from there), and once
// the engine closes every answer is in the cache for the next process.
// (1.2% of repeats were charged again under such load when an answer
// that missed the lock went uncached.)
func TestRepeatsStayFreeWhileTheLockIsHeld(t *testing.T) {
	h := parallel(t)
	path := h.hardDB(t, `CREATE TABLE c (x INTEGER); WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 199999) INSERT INTO c SELECT i FROM n;`,
		`CREATE PRIVACY POLICY ON c; ALTER PRIVACY POLICY ON c SET BOUNDS x (0, 1000); SET BUDGET epsilon = 1e6`)
	k := &knobs.Knobs{CacheStoreWait: 50 * time.Millisecond}
	e, err := h.openEngineWith(path, dpsql.Options{Epsilon: 0.01}, nil, k) // real noise, the cache on
	if err != nil {
		t.Fatal(err)
	}
	stop := lockHolder(t, path, 200*time.Millisecond, 10*time.Millisecond)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	var cachedRepeats, repeats int
	var mu sync.Mutex
	for w := 0; w < 3; w++ {
		wg.Add(2)
		go func(w int) { // new questions: a charge each
			defer wg.Done()
			s, _ := e.NewSession(dpsql.SessionOptions{Epsilon: 0.01})
			for j := 0; j < 3; j++ {
				if _, err := s.Query(ctx, fmt.Sprintf("SELECT SUM(x) FROM c WHERE x < %d", 1000+w*100+j)); err != nil {
					errs <- err
				}
			}
		}(w)
		go func() { // the same three questions, over and over
			defer wg.Done()
			s, _ := e.NewSession(dpsql.SessionOptions{Epsilon: 0.01})
			for j := 0; j < 12; j++ {
				res, err := s.Query(ctx, fmt.Sprintf("SELECT COUNT(*) FROM c WHERE x > %d", j%3))
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				repeats++
				if res.Cached {
					cachedRepeats++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	stop()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	charged := h.chargesOf(t, path, "COUNT(*)")
	if len(charged) != 3 {
		t.Errorf("%d repeated statements in the ledger, want 3: %v", len(charged), charged)
	}
	for s, n := range charged {
		if n != 1 {
			t.Errorf("%s charged %d times, want once", s, n)
		}
	}
	if cachedRepeats != repeats-3 {
		t.Errorf("%d of %d answers came from the cache, want all but the first of each of the 3 queries", cachedRepeats, repeats)
	}
	// The next process finds every answer in the file.
	nextEngine, err := h.openEngineWith(path, dpsql.Options{}, nil, nil) // real noise: the cache on
	if err != nil {
		t.Fatal(err)
	}
	defer nextEngine.Close()
	next, _ := nextEngine.NewSession(dpsql.SessionOptions{Epsilon: 0.01})
	for j := 0; j < 3; j++ {
		if res, err := next.Query(ctx, fmt.Sprintf("SELECT COUNT(*) FROM c WHERE x > %d", j)); err != nil || !res.Cached {
			t.Errorf("query %d: not in the cache after the engine closed (%v)", j, err)
		}
	}
}

// TestUnstoredAnswerGoesStale: an answer waiting in memory for the write
// lock answers repeats until its table changes (here the lock's holder
// invalidates the table as another process's import would): then the
// next identical query is answered afresh, not served the old answer,
// and the old answer never reaches the cache.
func TestUnstoredAnswerGoesStale(t *testing.T) {
	h := parallel(t)
	path := h.hardDB(t, `CREATE TABLE c (x INTEGER); INSERT INTO c VALUES (1), (2), (3);`,
		`CREATE PRIVACY POLICY ON c; SET BUDGET epsilon = 1e6`)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var once sync.Once
	k := &knobs.Knobs{CacheStoreWait: 20 * time.Millisecond, BeforeCacheStore: func() {
		once.Do(func() { // the first answer, charged: now the lock is taken
			if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
				t.Error(err)
			}
		})
	}}
	e, err := h.openEngineWith(path, dpsql.Options{Epsilon: 1}, nil, k)
	if err != nil {
		t.Fatal(err)
	}
	const q = `SELECT COUNT(*) FROM "c"` // canonical: as the ledger has it
	first := query(t, e, q)
	if first.Cached {
		t.Fatal("the first answer came from the cache")
	}
	if again := query(t, e, q); !again.Cached || fmt.Sprint(again.Rows) != fmt.Sprint(first.Rows) {
		t.Errorf("the repeat while the answer waits for the lock: cached %v, %v (first %v)", again.Cached, again.Rows, first.Rows)
	}
	// Another process changes the table (as an import does) and lets go.
	if _, err := conn.ExecContext(ctx, `INSERT INTO _dpsql_cache_epochs (table_name, epoch) VALUES ('c', 1) ON CONFLICT (table_name) DO UPDATE SET epoch = epoch + 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if third := query(t, e, q); third.Cached {
		t.Errorf("after the table changed, the old answer was served: %v", third.Rows)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if n := h.chargesOf(t, path, "COUNT(*)")[q]; n != 2 {
		t.Errorf("%d charges, want 2 (the first answer, and the one after the change)", n)
	}
	var stored int
	if err := db.QueryRow(`SELECT COUNT(*) FROM _dpsql_cache`).Scan(&stored); err != nil || stored != 1 {
		t.Errorf("%d answers in the cache (%v), want 1: the one after the change", stored, err)
	}
}
