//go:build cgo

package duckdb

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	duck "github.com/duckdb/duckdb-go/v2"
)

// newFile makes a DuckDB file with one table.
func newFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.duckdb")
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t AS SELECT range AS x, range % 1000 AS g FROM range(300000)`); err != nil {
		t.Fatal(err)
	}
	return path
}

// tempDirOf is DuckDB's temp_directory setting on the source's handle.
func tempDirOf(t *testing.T, s *Source) string {
	t.Helper()
	db, err := s.DB()
	if err != nil {
		t.Fatal(err)
	}
	var dir string
	if err := db.QueryRow(`SELECT current_setting('temp_directory')`).Scan(&dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSpillDirectoryIsPrivateAndFresh: DuckDB spills raw rows into a
// directory this process made fresh (mode 0700, its own user), never into
// one another user prepared at a predictable path — a planted directory
// with a symlink in it is neither used nor written through — and the
// directory is removed when the last handle closes.
func TestSpillDirectoryIsPrivateAndFresh(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	planted := filepath.Join(tmp, "dpsql-duckdb") // the path dpsql used to share
	if err := os.Mkdir(planted, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(planted, 0o777)
	victim := filepath.Join(tmp, "ledger")
	if err := os.WriteFile(victim, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		os.Symlink(victim, filepath.Join(planted, "duckdb_temp_storage_DEFAULT-"+string(rune('0'+i))+".tmp"))
	}
	s := &Source{Path: newFile(t), MemoryLimit: "4MB"}
	dir := tempDirOf(t, s)
	if dir == planted || !strings.HasPrefix(dir, tmp+string(filepath.Separator)+"dpsql-duckdb-") {
		t.Fatalf("spill directory %q: want a fresh directory in %s", dir, tmp)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("spill directory mode %v, want a directory of mode 0700", fi.Mode())
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		t.Errorf("spill directory owned by %d", uid)
	}
	// A query that needs more than the memory limit spills, into dir.
	db, _ := s.DB()
	var n int64
	if err := db.QueryRow(`SELECT COUNT(*) FROM (SELECT x, g, row_number() OVER (PARTITION BY g ORDER BY hash(x)) AS r FROM t) WHERE r <= 3`).Scan(&n); err != nil {
		t.Logf("the spilling query failed (DuckDB under a 4 MB limit): %v", err)
	}
	// A second source of the process shares the directory (DuckDB's one
	// configuration per file per process).
	s2 := &Source{Path: newFile(t)}
	if d2 := tempDirOf(t, s2); d2 != dir {
		t.Errorf("second source spills to %q, first to %q", d2, dir)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Errorf("the file behind the planted symlink was written: %q", b)
	}
	entries, _ := os.ReadDir(planted)
	if len(entries) != 4 {
		t.Errorf("the planted directory holds %d entries, want its 4 symlinks", len(entries))
	}
	s.Close()
	if _, err := os.Lstat(dir); err != nil {
		t.Errorf("spill directory removed while another source still uses it: %v", err)
	}
	s2.Close()
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("spill directory %s left behind after the last handle closed (%v)", dir, err)
	}
}

// TestGivenTempDirIsChecked: a temporary directory the owner gives must be
// a directory of this user that no one else can write; otherwise opening
// fails with a clear message and nothing is written there.
func TestGivenTempDirIsChecked(t *testing.T) {
	path := newFile(t)
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	private := filepath.Join(t.TempDir(), "private")
	os.Mkdir(private, 0o700)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(private, link)
	for dir, want := range map[string]string{
		open:                          "writable by other users",
		link:                          "symbolic link",
		filepath.Join(private, "no"):  "no such file",
		filepath.Join(private, "..."): "no such file",
	} {
		s := &Source{Path: path, TempDir: dir}
		_, err := s.DB()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("TempDir %s: error %v, want %q", dir, err, want)
		}
		s.Close()
	}
	if entries, _ := os.ReadDir(open); len(entries) != 0 {
		t.Errorf("%d files written into the refused directory", len(entries))
	}
	s := &Source{Path: path, TempDir: private}
	dir := tempDirOf(t, s)
	if filepath.Dir(dir) != private {
		t.Errorf("spill directory %s, want a fresh one inside %s", dir, private)
	}
	s.Close()
	if entries, _ := os.ReadDir(private); len(entries) != 0 {
		t.Errorf("%d entries left in the given directory after close", len(entries))
	}
}

// TestLockErrorInDpsqlsTerms: DuckDB's lock error (which advises its CLI's
// -readonly flag) becomes ErrInUse naming the process that holds the file.
func TestLockErrorInDpsqlsTerms(t *testing.T) {
	msg := `IO Error: Could not set lock on file "/d/x.duckdb": Conflicting lock is held in /usr/bin/dpsql (PID 4242) by user ann. However, you would be able to open this database in read-only mode, e.g. by using the -readonly parameter in the CLI. See also https://duckdb.org/docs/stable/connect/concurrency`
	err := openError("/d/x.duckdb", fmt.Errorf("database/sql/driver: could not connect to database: %w", &duck.Error{Type: duck.ErrorTypeIO, Msg: msg}))
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "process 4242 has it open for writing") || strings.Contains(err.Error(), "-readonly") {
		t.Errorf("%v", err)
	}
	// The same text without DuckDB's type (no error of DuckDB's) is not
	// taken for a lock.
	if err := openError("/d/x.duckdb", errors.New(msg)); errors.Is(err, ErrInUse) {
		t.Errorf("an untyped error read as DuckDB's lock: %v", err)
	}
}

// TestOpenInAnotherConfigurationIsInUse: this process holding a file
// for writing, DuckDB refuses to open it read-only too (a Connection
// error, told apart by its type): ErrInUse.
func TestOpenInAnotherConfigurationIsInUse(t *testing.T) {
	path := newFile(t)
	w, err := open(path, false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := open(path, true, "")
	if err == nil {
		r.Close()
		t.Fatal("DuckDB opened the file read-only beside its writing handle")
	}
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "in another engine") {
		t.Errorf("%v", err)
	}
}

// TestHandleGetsTheMachinesResources: with no limit given, a handle runs
// with DefaultResources' threads on this machine; with one, that limit.
func TestHandleGetsTheMachinesResources(t *testing.T) {
	if os.Getenv("DPSQL_DUCKDB_MEMORY_LIMIT") != "" {
		t.Skip("DPSQL_DUCKDB_MEMORY_LIMIT is set: the machine's defaults do not apply")
	}
	path := newFile(t)
	for _, c := range []struct {
		limit   string
		threads int64
		memory  string
	}{
		{"", int64(machineResources().Threads), ""},
		{"300MB", 0, "286.1 MiB"},
	} {
		s := &Source{Path: path, MemoryLimit: c.limit}
		db, err := s.DB()
		if err != nil {
			t.Fatal(err)
		}
		var threads int64
		var memory string
		if err := db.QueryRow(`SELECT current_setting('threads'), current_setting('memory_limit')`).Scan(&threads, &memory); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if c.threads > 0 && threads != c.threads {
			t.Errorf("limit %q: %d threads, want %d", c.limit, threads, c.threads)
		}
		if c.memory != "" && memory != c.memory {
			t.Errorf("limit %q: memory_limit %s, want %s", c.limit, memory, c.memory)
		}
	}
}
