//go:build cgo

package duckdb

import "testing"

// TestDefaultResourcesFollowTheMachine: 80% of the memory, a thread per
// core while each keeps 1.5 GB of it, at least one thread; unknown
// memory keeps 1 GB.
func TestDefaultResourcesFollowTheMachine(t *testing.T) {
	t.Parallel()
	const gb = 1 << 30
	for _, c := range []struct {
		cores   int
		memory  uint64
		limit   uint64
		threads int
	}{
		{16, 128 * gb, 128 * gb / 10 * 8, 16}, // the 16-core, 128 GB machine of issue 36
		{16, 16 * gb, 16 * gb / 10 * 8, 8},    // 12.8 GB: 8 threads of 1.5 GB
		{2, 24 * gb, 24 * gb / 10 * 8, 2},     // this machine
		{64, 8 * gb, 8 * gb / 10 * 8, 4},      // many cores, little memory
		{4, 1 * gb, 1 * gb / 10 * 8, 1},       // less than a thread's share: one thread
		{0, 4 * gb, 4 * gb / 10 * 8, 1},       // cores unknown
		{8, 0, 1 * gb, 8},                     // memory unknown: 1 GB, 125 MB a thread
		{32, 0, 1 * gb, 8},                    // ... at most 8 threads
	} {
		r := DefaultResources(c.cores, c.memory)
		if r.MemoryBytes != c.limit || r.Threads != c.threads {
			t.Errorf("%d cores, %d GB: %d MB and %d threads, want %d MB and %d", c.cores, c.memory/gb, r.MemoryBytes>>20, r.Threads, c.limit>>20, c.threads)
		}
		if per := r.MemoryBytes / uint64(r.Threads); c.memory > 0 && r.Threads > 1 && per < perThread {
			t.Errorf("%d cores, %d GB: %d MB a thread", c.cores, c.memory/gb, per>>20)
		}
	}
	if m := physicalMemory(); m == 0 {
		t.Log("this machine's memory is unknown here")
	}
	if s := (Resources{MemoryBytes: 3 << 30, Threads: 2}).setting(); s != "&memory_limit=3072MB&threads=2" {
		t.Errorf("setting %q", s)
	}
}
