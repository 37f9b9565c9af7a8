//go:build unix

package memtmp

import "golang.org/x/sys/unix"

// free is the space a file system has for an unprivileged writer (0 when
// it cannot be read).
func free(path string) uint64 {
	var s unix.Statfs_t
	if unix.Statfs(path, &s) != nil {
		return 0
	}
	return s.Bavail * uint64(s.Bsize)
}
