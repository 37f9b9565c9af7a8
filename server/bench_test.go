package server_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/jackc/pgx/v5"
)

// benchQuery is a small private COUNT; with the cache off (the fixture's
// engine has NoCache) every execution plans, charges the ledger durably,
// scans and adds noise.
const benchQuery = `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.001) COUNT(*) FROM t`

// BenchmarkWireCount measures the same private COUNT over the wire (pgx,
// extended protocol with a cached prepared statement) and through the Go
// API (Engine.NewSession().Query), with 1, 8 and 32 concurrent clients, in
// one run. It reports queries per second and p50/p99 latency; the wire's
// overhead is the difference between the two at one client.
// docs/benchmarks.md has the numbers.
//
// Each sub-benchmark gets a fresh database: reading what was spent scans
// the ledger since the last reset, so a ledger grown by an earlier
// sub-benchmark would make a later one slower.
func BenchmarkWireCount(b *testing.B) {
	ctx := context.Background()
	fresh := func(b *testing.B) *fixture {
		f := newFixture(b, nil)
		if err := f.eng.Run(ctx, `SET BUDGET epsilon = 1000000, delta = 0;
			ALTER ANALYST alice BUDGET epsilon = 1000000`, func(*dpsql.Result) error { return nil }); err != nil {
			b.Fatal(err)
		}
		return f
	}
	for _, clients := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("api/clients=%d", clients), func(b *testing.B) {
			f := fresh(b)
			sessions := make([]*dpsql.Session, clients)
			for i := range sessions {
				s, err := f.eng.NewSession(dpsql.SessionOptions{Analyst: "alice"})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				sessions[i] = s
			}
			measure(b, clients, func(i int) error {
				_, err := sessions[i].Query(ctx, benchQuery)
				return err
			})
		})
		b.Run(fmt.Sprintf("wire/clients=%d", clients), func(b *testing.B) {
			f := fresh(b)
			conns := make([]*pgx.Conn, clients)
			for i := range conns {
				conns[i] = f.connect(b, "alice", "secret")
			}
			measure(b, clients, func(i int) error {
				var n int64
				return conns[i].QueryRow(ctx, benchQuery).Scan(&n)
			})
		})
	}
}

// measure runs b.N calls of do spread over clients goroutines (do(i) for
// client i) and reports throughput and latency percentiles.
func measure(b *testing.B, clients int, do func(client int) error) {
	var (
		next      atomic.Int64
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, b.N)
		failed    atomic.Value
		wg        sync.WaitGroup
	)
	b.ResetTimer()
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := do(i); err != nil {
					failed.Store(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(latencies))/elapsed.Seconds(), "queries/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
