// Package memtmp puts a test binary's temporary files in memory: the
// engine's SQLite and DuckDB files are then written without disk syncs,
// as the tests' PostgreSQL server runs with fsync=off, while every file
// operation behaves as on a disk.
package memtmp

import (
	"os"
	"testing"
)

// minFree is the free space /dev/shm must have to be used: a container's
// small default (64 MB) would fill, and the tests fail where a disk would
// not.
const minFree = 2 << 30

// Run runs m with TMPDIR set to a fresh directory under /dev/shm, a RAM
// file system, when there is one with room and TMPDIR is not set already
// (a TMPDIR given is kept), and returns m.Run's code; the directory is
// removed afterwards.
func Run(m *testing.M) int {
	if os.Getenv("TMPDIR") != "" || free("/dev/shm") < minFree {
		return m.Run()
	}
	dir, err := os.MkdirTemp("/dev/shm", "dpsql-test-")
	if err != nil {
		return m.Run()
	}
	defer os.RemoveAll(dir)
	os.Setenv("TMPDIR", dir)
	defer os.Unsetenv("TMPDIR")
	return m.Run()
}
