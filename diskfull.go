package dpsql

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrDiskFull reports that the disk holding the database (or its
// journal) has no free space; the statement changed nothing.
var ErrDiskFull = errors.New("the disk is full")

// diskError turns SQLite's I/O errors on a full disk ("disk I/O error
// (4874)" when the shared-memory file cannot grow, "database or disk is
// full") into a message that says so, with what to do; other errors are
// returned as they are.
func diskError(path string, err error) error {
	if err == nil || errors.Is(err, ErrDiskFull) {
		return err
	}
	msg := err.Error()
	if !strings.Contains(msg, "disk I/O error") && !strings.Contains(msg, "disk is full") {
		return err
	}
	dir := filepath.Dir(path)
	if abs, aerr := filepath.Abs(dir); aerr == nil {
		dir = abs
	}
	if !diskFull(dir) && !strings.Contains(msg, "disk is full") {
		return err
	}
	return fmt.Errorf("%w: no space left in %s for %s (SQLite said: %v); nothing was changed — free some space and run it again", ErrDiskFull, dir, filepath.Base(path), err)
}

// accessError says what a read-only database file means for dpsql: the
// ledger is written before any answer, so a private query cannot run
// without write access.
func accessError(path string, err error) error {
	if err == nil || errors.Is(err, ErrReadOnly) {
		return err
	}
	msg := err.Error()
	if strings.Contains(msg, "unable to open database file") {
		// SQLite's SQLITE_CANTOPEN (14) for a file that is there: its
		// directory or mount is read-only (the journal or WAL files
		// cannot be made) or the file cannot be opened for writing.
		if st, serr := os.Stat(path); serr != nil || st.IsDir() {
			return err
		}
		return fmt.Errorf("%w: dpsql cannot write to %s or beside it in %s (a read-only file, directory or mount?); it records each private query's cost in the file before it answers: copy the file to a writable place, or ask the owner for write access (SQLite said: %v)", ErrReadOnly, path, filepath.Dir(path), err)
	}
	if !strings.Contains(msg, "readonly database") {
		return err
	}
	return fmt.Errorf("%w: dpsql needs write access to %s for its ledger (each private query records its cost there before it answers): ask the owner for write access, or query it through 'dpsql serve' (SQLite said: %v)", ErrReadOnly, path, err)
}
