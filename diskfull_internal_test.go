package dpsql

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiskErrorSaysTheDiskIsFull: SQLite's "database or disk is full" is
// said plainly (ErrDiskFull, with what to do); a disk I/O error on a disk
// with space left, and any other error, stay as they were.
func TestDiskErrorSaysTheDiskIsFull(t *testing.T) {
	full := diskError("/data/t.db", errors.New("database or disk is full (13)"))
	if !errors.Is(full, ErrDiskFull) || !strings.Contains(full.Error(), "free some space") {
		t.Errorf("full: %v", full)
	}
	dir := t.TempDir() // has space
	io := errors.New("disk I/O error (4874)")
	if got := diskError(dir+"/t.db", io); got != io {
		t.Errorf("an I/O error with space left became %v", got)
	}
	other := errors.New("no such table")
	if got := diskError(dir+"/t.db", other); got != other {
		t.Errorf("%v", got)
	}
}

// TestAccessErrorSaysWhyWriteAccess: a read-only file's SQLite error
// becomes ErrReadOnly, saying the ledger needs write access.
func TestAccessErrorSaysWhyWriteAccess(t *testing.T) {
	err := accessError("/data/t.db", errors.New("attempt to write a readonly database (1544)"))
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "write access to /data/t.db for its ledger") {
		t.Errorf("%v", err)
	}
}

// TestCantOpenOnAReadOnlyMountSaysWhy: SQLite's "unable to open database
// file (14)" for a file that exists (its directory or mount read-only)
// says what dpsql needs; for a missing file it stays as it is.
func TestCantOpenOnAReadOnlyMountSaysWhy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cant := errors.New("unable to open database file (14)")
	if err := accessError(path, cant); !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "read-only file, directory or mount") {
		t.Errorf("%v", err)
	}
	if err := accessError(path+".missing", cant); err != cant {
		t.Errorf("missing file: %v", err)
	}
}
