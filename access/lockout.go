package access

import (
	"net"
	"strings"
	"sync"
	"time"
)

// Lockout counts failed log-ins by key (Keys: a name from one client
// address, and the address) and locks a key out once it has failed
// MaxFailures times within Window (an address: AddrFailures times): both
// listeners ask it before checking a password, so that guessing is
// bounded per name and client address, and per address, whichever way
// in. No key is a name alone: failures from one address never refuse the
// right password from another (a name-wide count let anyone lock any
// analyst, and the owner, out of both listeners).
type Lockout struct {
	// MaxFailures (0: 5) failures within Window (0: 15 minutes) lock a
	// name out from one address for Window.
	MaxFailures int
	// AddrFailures (0: 4 × MaxFailures) failures within Window, whatever
	// the names, lock an address out for Window. Behind a proxy every
	// client has the proxy's address: this many typos by all its users
	// together lock them all out (docs/server.md).
	AddrFailures int
	Window       time.Duration
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

// limits is the number of failures that lock key out, and the window.
func (l *Lockout) limits(key string) (int, time.Duration) {
	n, w := l.MaxFailures, l.Window
	if n <= 0 {
		n = 5
	}
	if strings.HasPrefix(key, addrPrefix) {
		if l.AddrFailures > 0 {
			n = l.AddrFailures
		} else {
			n *= 4
		}
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
	now := l.now()
	if l.failures == nil {
		l.failures = map[string]*failure{}
	}
	_, window := l.limits("")
	for _, k := range keys {
		max, window := l.limits(k)
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

// Succeed forgets key's failures: a log-in's pair key (Keys()[0]), so
// that a user who logged in from an address starts that pair's count
// again; the address keeps its count.
func (l *Lockout) Succeed(key string) {
	l.mu.Lock()
	delete(l.failures, key)
	l.mu.Unlock()
}

// Keys are the keys a log-in of user from the client address remote
// counts against: the pair (PairKey), then the address (AddrKey).
func Keys(user, remote string) []string {
	return []string{PairKey(user, remote), AddrKey(remote)}
}

// PairKey is the key of a user name tried from one client address.
func PairKey(user, remote string) string { return "user:" + user + "\x00" + AddrKey(remote) }

const addrPrefix = "addr:"

// AddrKey is the key of a client's address: its host, without the port
// ("10.0.0.1:40000" and "10.0.0.1" are one key).
func AddrKey(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		remote = host
	}
	return addrPrefix + remote
}
