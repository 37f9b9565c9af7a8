//go:build cgo

package duckdb

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Where DuckDB spills. A query over a private table that outgrows DuckDB's
// memory limit writes raw rows to its temporary directory, so that
// directory must be one no other user can read, list or prepare:
//
//   - it is made fresh by this process (os.MkdirTemp: a new name, mode
//     0700, created by mkdir, which fails rather than reuse a path another
//     user made first), inside the system's temporary directory or inside
//     the directory the owner gave (which must be a real directory owned by
//     this user and writable by no one else: checkSpillBase);
//   - it is shared by every handle of this process (DuckDB allows one
//     configuration per file per process) and removed with everything in it
//     when the last handle closes.
//
// A symlink planted beside it is never followed: nothing is ever created
// at a predictable path.
var spills = struct {
	sync.Mutex
	dirs map[string]*spillDir // by base directory ("" for the system's)
}{dirs: map[string]*spillDir{}}

type spillDir struct {
	path  string
	users int
}

// acquireSpill returns this process's private spill directory under base
// (the system's temporary directory when base is ""), creating it if
// needed; each acquire is paired with a releaseSpill.
func acquireSpill(base string) (string, error) {
	spills.Lock()
	defer spills.Unlock()
	if d := spills.dirs[base]; d != nil {
		if fi, err := os.Lstat(d.path); err == nil && fi.IsDir() {
			d.users++
			return d.path, nil
		}
		delete(spills.dirs, base) // removed under us: make another
	}
	if base != "" {
		if err := checkSpillBase(base); err != nil {
			return "", err
		}
	}
	path, err := os.MkdirTemp(base, "dpsql-duckdb-")
	if err != nil {
		return "", fmt.Errorf("creating DuckDB's temporary directory: %w", err)
	}
	spills.dirs[base] = &spillDir{path: path, users: 1}
	return path, nil
}

// releaseSpill gives back one use of the directory; the last removes it.
func releaseSpill(base string) {
	spills.Lock()
	defer spills.Unlock()
	d := spills.dirs[base]
	if d == nil {
		return
	}
	if d.users--; d.users <= 0 {
		delete(spills.dirs, base)
		os.RemoveAll(d.path)
	}
}

// checkSpillBase refuses a directory that another user could read or
// prepare: it must exist, be a directory (not a symlink to one), belong to
// this process's user and be writable by no one else.
func checkSpillBase(base string) error {
	fi, err := os.Lstat(base)
	if err != nil {
		return fmt.Errorf("DuckDB temporary directory: %w", err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("DuckDB temporary directory %s is a symbolic link: give the directory itself", base)
	}
	if !fi.IsDir() {
		return fmt.Errorf("DuckDB temporary directory %s is not a directory", base)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("DuckDB temporary directory %s is writable by other users (mode %04o): DuckDB spills private rows there; give a directory only you can write (chmod go-w)", base, fi.Mode().Perm())
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("DuckDB temporary directory %s belongs to another user (uid %d): give a directory of your own", base, uid)
	}
	if abs, err := filepath.Abs(base); err == nil && abs != base {
		return checkSpillBase(abs)
	}
	return nil
}
