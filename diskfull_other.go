//go:build !unix

package dpsql

// diskFull cannot tell on this system: SQLite's own message stays.
func diskFull(string) bool { return false }
