package console

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// HTTPLimits bound what one client can hold of the console's HTTP server:
// the whole request (headers and body) must arrive within ReadTimeout
// (0: 30 s) — /api/login reads its body before it knows who is asking, so
// a body trickled byte by byte would otherwise hold its connection for
// good — an idle kept-alive connection closes after IdleTimeout (0: 2
// minutes), and at most MaxConns (0: 64) connections are open at once
// (the next waits to be accepted), as on the wire listener. A query's
// run is bounded by --statement-timeout, not by these.
type HTTPLimits struct {
	ReadTimeout time.Duration
	IdleTimeout time.Duration
	MaxConns    int
}

// NewHTTPServer is the console's http.Server under limits, over TLS when
// tlsConfig is set (the caller wraps the listener with Listen).
func NewHTTPServer(h http.Handler, tlsConfig *tls.Config, limits HTTPLimits) *http.Server {
	read, idle := limits.ReadTimeout, limits.IdleTimeout
	if read <= 0 {
		read = 30 * time.Second
	}
	if idle <= 0 {
		idle = 2 * time.Minute
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: min(read, 10*time.Second), ReadTimeout: read, IdleTimeout: idle, TLSConfig: tlsConfig}
}

// Listen caps ln at limits.MaxConns open connections: Accept waits while
// that many are open.
func Listen(ln net.Listener, limits HTTPLimits) net.Listener {
	n := limits.MaxConns
	if n <= 0 {
		n = 64
	}
	return &capped{Listener: ln, slots: make(chan struct{}, n)}
}

type capped struct {
	net.Listener
	slots chan struct{}
}

func (l *capped) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, release: func() { <-l.slots }}, nil
}

// slotConn gives its slot back once, when closed.
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
