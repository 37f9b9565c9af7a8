package dpsql

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/dpsql/dpsql/cache"
)

// A charged answer must reach the cache whatever the load, or a repeat of
// its query would be charged again (issue 49). Storing it needs the
// database's write lock, which another connection (an owner's import,
// another process's charges) may hold for long; the answer itself must
// not wait for that. So an answer is kept in memory from its release
// until it is stored: repeats in this engine are answered from there, and
// a writer stores it as soon as the lock is free (Close waits for it).
// Epochs keep both honest: an answer whose tables changed after it began
// (a policy change, an import, RESET CACHE) is neither served nor stored.

// storeWait is how long one attempt to store an answer waits for the
// write lock; the first attempt runs before the answer is returned.
const storeWait = 2 * time.Second

// closeWait is how long Close keeps trying to store the answers still
// waiting for the write lock.
const closeWait = 10 * time.Second

// storeWait is storeWait, or the tests' knob.
func (e *Engine) storeWait() time.Duration {
	if e.knobs != nil && e.knobs.CacheStoreWait > 0 {
		return e.knobs.CacheStoreWait
	}
	return storeWait
}

// unstored is a released answer not yet in the cache.
type unstored struct {
	statement string
	tables    []string
	epochs    cache.Epochs
	answer    *cache.Answer
}

// answerStore holds an engine's unstored answers and their writers.
type answerStore struct {
	mu      sync.Mutex
	answers map[string]*unstored
	writers sync.WaitGroup
	closing chan struct{}
	once    sync.Once
}

func newAnswerStore() *answerStore {
	return &answerStore{answers: map[string]*unstored{}, closing: make(chan struct{})}
}

// keep stores u under key: at once if the write lock comes within
// storeWait, else in the background, serving repeats from memory
// meanwhile.
func (e *Engine) keep(ctx context.Context, key string, u *unstored) {
	st := e.store
	if e.knobs != nil && e.knobs.BeforeCacheStore != nil {
		e.knobs.BeforeCacheStore()
	}
	err := cache.Put(context.WithoutCancel(ctx), e.db, key, u.statement, u.tables, u.epochs, u.answer, e.storeWait())
	if !errors.Is(err, cache.ErrBusy) {
		return // stored, stale (never to be stored) or uncachable
	}
	st.mu.Lock()
	select {
	case <-st.closing:
		st.mu.Unlock()
		return
	default:
	}
	st.answers[key] = u
	st.writers.Add(1)
	st.mu.Unlock()
	go e.storeLater(key, u)
}

// storeLater retries storing u until it is stored, is stale, or Close
// gives up on it.
func (e *Engine) storeLater(key string, u *unstored) {
	st := e.store
	defer st.writers.Done()
	defer func() {
		st.mu.Lock()
		delete(st.answers, key)
		st.mu.Unlock()
	}()
	var deadline <-chan time.Time
	for {
		err := cache.Put(context.Background(), e.db, key, u.statement, u.tables, u.epochs, u.answer, e.storeWait())
		if !errors.Is(err, cache.ErrBusy) {
			return
		}
		select {
		case <-deadline:
			return
		case <-st.closing:
			if deadline == nil {
				deadline = time.After(closeWait)
			}
		default:
		}
	}
}

// cachedAnswer is the answer released under key: released by this engine
// and still waiting for the write lock, or from the cache. Memory is
// looked at first: a writer stores the answer before it leaves memory,
// so an answer that has left memory is in the cache (the other order
// could miss it in both, between the store and the removal).
func (e *Engine) cachedAnswer(ctx context.Context, key string) (*cache.Answer, bool) {
	if a, ok := e.unstoredAnswer(ctx, key); ok {
		return a, true
	}
	a, ok, err := cache.Get(ctx, e.db, key)
	return a, err == nil && ok
}

// unstoredAnswer is the answer released under key and not yet stored, if
// its tables are unchanged since it began.
func (e *Engine) unstoredAnswer(ctx context.Context, key string) (*cache.Answer, bool) {
	st := e.store
	st.mu.Lock()
	u, ok := st.answers[key]
	st.mu.Unlock()
	if !ok {
		return nil, false
	}
	now, err := cache.ReadEpochs(ctx, e.db, u.tables)
	if err != nil || now != u.epochs {
		return nil, false
	}
	return u.answer, true
}

// flush lets the background writers finish (at most closeWait after
// this call), before the database closes.
func (st *answerStore) flush() {
	st.once.Do(func() {
		st.mu.Lock()
		close(st.closing)
		st.mu.Unlock()
	})
	st.writers.Wait()
}
