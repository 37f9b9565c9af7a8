package console_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dpsql/dpsql/console"
)

// TestSlowBodiesAreCut: a client that sends /api/login's headers and then
// trickles its body is cut off once ReadTimeout passes (before, 20 such
// connections stayed open indefinitely); the connections beyond MaxConns
// wait to be accepted, and get in when one closes.
func TestSlowBodiesAreCut(t *testing.T) {
	t.Parallel()
	limits := console.HTTPLimits{ReadTimeout: 300 * time.Millisecond, IdleTimeout: time.Second, MaxConns: 2}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := console.NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}), nil, limits)
	go srv.Serve(console.Listen(ln, limits))
	defer srv.Close()
	addr := ln.Addr().String()
	trickle := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, "POST /api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Two trickling clients hold both slots; a third is not answered.
	a, b := trickle(), trickle()
	defer a.Close()
	defer b.Close()
	third, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, err := io.WriteString(third, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// While both slots are held, it waits.
	_ = third.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	if n, err := third.Read(make([]byte, 1)); n > 0 || err == nil {
		t.Fatal("a connection beyond MaxConns was answered at once")
	}
	// Within ReadTimeout (and some slack) the server closes both slow
	// connections, whatever they still send.
	for _, c := range []net.Conn{a, b} {
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 1024)
		for {
			if _, err := c.Read(buf); err != nil {
				break // closed (after a 408 or without an answer)
			}
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("a trickled body held its connection for %v", d)
		}
	}
	// Their slots are free: the third client is answered.
	_ = third.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatalf("the waiting client was not answered once slots were free: %v", err)
	}
	resp.Body.Close()
}
