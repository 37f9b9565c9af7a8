//go:build cgo

package duckdb

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Resources are the memory limit and thread count a DuckDB handle gets
// when the owner sets neither.
type Resources struct {
	MemoryBytes uint64 // DuckDB's memory_limit
	Threads     int    // DuckDB's threads
}

// Bytes per thread DuckDB's guidance asks for in aggregation-heavy work
// (1–2 GB a thread; at least 125 MB): the compiled measurement's per-unit
// windows and hash aggregates are that work.
const (
	perThread    = 1536 << 20 // 1.5 GB: what a thread is given when memory is short
	minPerThread = 125 << 20
)

// DefaultResources chooses from the machine's cores and memory: DuckDB's
// own default limit, 80% of the memory, and as many threads as there are
// cores, but no more than give each thread 1.5 GB of that limit (at least
// one thread). A fixed 1 GB over 16 threads was 64 MB a thread: the
// bounded statements ran out of memory and fell back to the reference
// evaluator, 88× slower. With memory unknown (0) it keeps 1 GB and
// threads for 125 MB each.
func DefaultResources(cores int, memory uint64) Resources {
	cores = max(cores, 1)
	if memory == 0 {
		return Resources{MemoryBytes: 1 << 30, Threads: max(1, min(cores, int((1<<30)/minPerThread)))}
	}
	limit := memory / 10 * 8
	threads := max(1, min(cores, int(limit/perThread)))
	return Resources{MemoryBytes: limit, Threads: threads}
}

// machineResources is DefaultResources on this machine, read once.
var machineResources = sync.OnceValue(func() Resources {
	return DefaultResources(runtime.NumCPU(), physicalMemory())
})

// physicalMemory is the machine's memory in bytes (Linux's MemTotal, or
// the cgroup limit below it), 0 when unknown.
func physicalMemory() uint64 {
	var total uint64
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err == nil {
					total = kb << 10
				}
				break
			}
		}
		f.Close()
	}
	// A container's limit (cgroup v2), when lower.
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 && (total == 0 || v < total) {
			total = v
		}
	}
	return total
}

// setting is r as DSN parameters.
func (r Resources) setting() string {
	return fmt.Sprintf("&memory_limit=%dMB&threads=%d", max(1, r.MemoryBytes>>20), r.Threads)
}
