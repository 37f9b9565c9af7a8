package cache

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/dpsql/dpsql/planner"
)

// TestPutGetInvalidate: answers round-trip with their value types, the
// first answer under a key stays, invalidation follows the tables read,
// and a write lock held elsewhere makes Put give up after putWait
// instead of waiting as long as the connection would (ErrBusy); a lock
// held for a moment (another session's charge) is waited for; an answer
// whose table changed after its epochs were read is not stored
// (ErrStale).
func TestPutGetInvalidate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(30000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := Init(ctx, db); err != nil {
		t.Fatal(err)
	}
	a := &Answer{Columns: []string{"g", "n", "x"}, Rows: [][]any{{"a", int64(3), 2.5}, {nil, int64(-1), 1e300}},
		ErrorBounds: map[string]float64{"n": 3.2}, Notes: []string{"note"}, Epsilon: 0.5}
	k1, k2 := Key("SELECT 1", Float(0.5), Float(0)), Key("SELECT 1", Float(0.25), Float(0))
	if k1 == k2 {
		t.Fatal("keys ignore the session")
	}
	const putWait = 2 * time.Second
	ep, err := ReadEpochs(ctx, db, []string{"t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Put(ctx, db, k1, "SELECT 1", []string{"t"}, ep, a, putWait); err != nil {
		t.Fatal(err)
	}
	if err := Put(ctx, db, k1, "SELECT 1", []string{"t"}, ep, &Answer{Columns: []string{"other"}}, putWait); err != nil {
		t.Fatal(err)
	}
	got, ok, err := Get(ctx, db, k1)
	if err != nil || !ok || !reflect.DeepEqual(got.Rows, a.Rows) || !reflect.DeepEqual(got.Columns, a.Columns) || got.Epsilon != 0.5 || got.Notes[0] != "note" {
		t.Fatalf("got %+v %v %v", got, ok, err)
	}
	if _, ok, _ := Get(ctx, db, k2); ok {
		t.Error("a different key hit")
	}
	if err := Invalidate(ctx, db, "T"); err != nil { // names compare as SQLite compares them
		t.Fatal(err)
	}
	if _, ok, _ := Get(ctx, db, k1); ok {
		t.Error("invalidated answer still cached")
	}
	// An answer computed before the invalidation is not stored after it.
	if err := Put(ctx, db, k1, "SELECT 1", []string{"t"}, ep, a, putWait); !errors.Is(err, ErrStale) {
		t.Errorf("an answer older than its table's change: %v, want ErrStale", err)
	}
	if _, ok, _ := Get(ctx, db, k1); ok {
		t.Error("a stale answer was stored")
	}
	other, _ := ReadEpochs(ctx, db, []string{"u"})
	if _, err := Reset(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := Put(ctx, db, k1, "SELECT 1", []string{"u"}, other, a, putWait); !errors.Is(err, ErrStale) {
		t.Errorf("an answer older than RESET CACHE: %v, want ErrStale", err)
	}
	if ep, err = ReadEpochs(ctx, db, []string{"t"}); err != nil {
		t.Fatal(err)
	}
	// Another connection holds the write lock: Put gives up after putWait.
	holder, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	c, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := Put(ctx, db, k2, "SELECT 1", []string{"t"}, ep, a, putWait); !errors.Is(err, ErrBusy) {
		t.Errorf("Put while the write lock was held elsewhere: %v, want ErrBusy", err)
	}
	if d := time.Since(start); d > putWait+5*time.Second {
		t.Errorf("Put waited %v for the lock, more than putWait (%v)", d, putWait)
	}
	// Held for a moment: Put waits and succeeds.
	go func() {
		time.Sleep(100 * time.Millisecond)
		c.ExecContext(ctx, `ROLLBACK`)
	}()
	if err := Put(ctx, db, k2, "SELECT 1", []string{"t"}, ep, a, putWait); err != nil {
		t.Errorf("Put after the lock was released: %v", err)
	}
	// and the connection's own busy timeout is back
	var timeout int
	db.QueryRow(`PRAGMA busy_timeout`).Scan(&timeout)
	if timeout != 30000 {
		t.Errorf("busy_timeout left at %d", timeout)
	}
}

// TestKeyHoldsNoAddress: a key is made of plain text only, the text the
// previous version wrote (so its entries are still found). Settings are
// plain values (planner.Settings holds no function: the public-values
// lookup and released parts are planner.Inputs, passed apart).
func TestKeyHoldsNoAddress(t *testing.T) {
	plain := planner.Settings{Epsilon: 0.5, Delta: 1e-6, BoundsFraction: 0.2, Noise: "gaussian"}
	k := Key("SELECT COUNT(*) FROM t", Float(0.5), plain.Text())
	if strings.Contains(k, "0x") || strings.Contains(k, "func") || strings.Contains(k, "map[") {
		t.Errorf("key %q holds more than values", k)
	}
	if want := "SELECT COUNT(*) FROM t\x1f0.5\x1fepsilon=0.5,delta=1e-06,bounds_fraction=0.2,noise=\"gaussian\""; k != want {
		t.Errorf("key %q, want %q", k, want)
	}
	if Key("SELECT 1", plain.Text()) == Key("SELECT 1", planner.Settings{Epsilon: 0.25}.Text()) {
		t.Error("different settings share a key")
	}
}
