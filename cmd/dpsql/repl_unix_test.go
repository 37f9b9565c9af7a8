//go:build unix

package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dpsql/dpsql"
	_ "modernc.org/sqlite"
)

// TestCtrlCStopsARead: an interrupt while a .read script runs cancels its
// running statement and the rest of the script, and the shell goes on
// (issue 11). The statement waits for a write lock another connection
// holds; its notice sends the process a real SIGINT.
func TestCtrlCStopsARead(t *testing.T) {
	dir, _ := shellDB(t, 5, `SET BUDGET epsilon = 5`, dpsql.Options{})
	path := filepath.Join(dir, "p.db")
	holder, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	eng, err := dpsql.Open(path, dpsql.Options{Epsilon: 1, Notify: func(string) { syscall.Kill(os.Getpid(), syscall.SIGINT) }})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	script := filepath.Join(dir, "s.sql")
	os.WriteFile(script, []byte("SELECT COUNT(*) FROM people;\nSELECT 'not reached' AS x;\n"), 0o644)
	out, errs := typeInto(t, eng, "csv", ".read "+script+"\nSELECT 'after' AS y;\n.quit\n")
	if !strings.Contains(errs, "cancelled") || !strings.Contains(errs, "nothing was charged") || strings.Contains(out, "not reached") || !strings.Contains(out, "after") {
		t.Errorf("screen:\n%s\nerrors:\n%s", out, errs)
	}
}
