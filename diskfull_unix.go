//go:build unix

package dpsql

import "syscall"

// diskFull reports whether the file system holding dir has no space
// left for an unprivileged writer.
func diskFull(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Bavail == 0
}
