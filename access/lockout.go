package access

import (
	"net"
	"sync"
	"time"
)

// Lockout counts failed log-ins by key ("user:NAME", "addr:IP") and
// locks a key out once it has failed MaxFailures times within Window:
// both listeners ask it before checking a password, so that guessing is
// bounded per name and per client address whichever way in.
type Lockout struct {
	// MaxFailures (0: 5) failures within Window (0: 15 minutes) lock a key
	// out for Window.
	MaxFailures int
	Window      time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu       sync.Mutex
	failures map[string]*failure
}

type failure struct {
	count       int
	first       time.Time
	lockedUntil time.Time
}

func (l *Lockout) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Lockout) limits() (int, time.Duration) {
	n, w := l.MaxFailures, l.Window
	if n <= 0 {
		n = 5
	}
	if w <= 0 {
		w = 15 * time.Minute
	}
	return n, w
}

// Locked reports whether one of keys is locked out now, and until when.
func (l *Lockout) Locked(keys ...string) (until time.Time, locked bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, k := range keys {
		if f := l.failures[k]; f != nil && now.Before(f.lockedUntil) && f.lockedUntil.After(until) {
			until, locked = f.lockedUntil, true
		}
	}
	return until, locked
}

// Fail counts a failed log-in for each key; the MaxFailures-th within
// Window locks the key out for Window.
func (l *Lockout) Fail(keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	max, window := l.limits()
	now := l.now()
	if l.failures == nil {
		l.failures = map[string]*failure{}
	}
	for _, k := range keys {
		f := l.failures[k]
		if f == nil || now.Sub(f.first) > window {
			f = &failure{first: now, lockedUntil: lockedUntil(f)}
			l.failures[k] = f
		}
		f.count++
		if f.count >= max {
			f.lockedUntil = now.Add(window)
			f.count, f.first = 0, now
		}
	}
	// Forget stale entries now and then, so that the map stays small.
	if len(l.failures) > 10000 {
		for k, f := range l.failures {
			if now.Sub(f.first) > window && now.After(f.lockedUntil) {
				delete(l.failures, k)
			}
		}
	}
}

func lockedUntil(f *failure) time.Time {
	if f == nil {
		return time.Time{}
	}
	return f.lockedUntil
}

// Succeed forgets key's failures (a name that logged in).
func (l *Lockout) Succeed(key string) {
	l.mu.Lock()
	delete(l.failures, key)
	l.mu.Unlock()
}

// UserKey and AddrKey are the keys of a user name and a client address.
func UserKey(name string) string { return "user:" + name }

// AddrKey is the key of a client's address: its host, without the port
// ("10.0.0.1:40000" and "10.0.0.1" are one key).
func AddrKey(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		remote = host
	}
	return "addr:" + remote
}
