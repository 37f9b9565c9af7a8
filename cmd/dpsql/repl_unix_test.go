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

// TestEditRunsWhatTheEditorLeaves: \e opens the last statement in
// $EDITOR (here a script that replaces it) and runs what the file holds
// when the editor exits; in a script it is refused.
func TestEditRunsWhatTheEditorLeaves(t *testing.T) {
	dir, eng := shellDB(t, 5, "", dpsql.Options{})
	editor := filepath.Join(dir, "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nprintf 'SHOW TABLES;\\n' > \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VISUAL", editor)
	out, errs := typeInto(t, eng, "csv", "SHOW BUDGET;\n\\e\n.quit\n")
	if !strings.Contains(out, "SHOW TABLES;") || !strings.Contains(out, "people,private") || errs != "" {
		t.Errorf("screen:\n%s\nerrors:\n%s", out, errs)
	}
	if _, e, code := runCLI(t, "", "--db", filepath.Join(dir, "p.db"), "-c", `\e`); code == 0 || !strings.Contains(e, "interactive shell") {
		t.Errorf("\\e in a script: %d %q", code, e)
	}
}

// TestPagerOnlyForWhatDoesNotFit: results taller than the terminal, long
// lines counted as the terminal wraps them, go through the pager; the
// others, wide ones included (an answer with its note), are printed as
// they are.
func TestPagerOnlyForWhatDoesNotFit(t *testing.T) {
	short := []byte("a | b\n1 | 2\n")
	if tooBig(short, 80, 24) {
		t.Error("a short result paged")
	}
	note := " n \n---\n 5 \n(1 row; spent ε=0.1, δ=0)\n" + strings.Repeat("a note of 154 characters ", 6) + "\n"
	if tooBig([]byte(note), 80, 24) || tooBig([]byte(strings.Repeat("x", 81)+"\n"), 80, 24) {
		t.Error("a short, wide result paged")
	}
	if !tooBig([]byte(strings.Repeat("1\n", 30)), 80, 24) || !tooBig([]byte(strings.Repeat(strings.Repeat("x", 200)+"\n", 10)), 80, 24) {
		t.Error("a long result (or one long once wrapped) not paged")
	}
	t.Setenv("PAGER", "")
	if pagerCommand() != nil {
		t.Error("PAGER='' still pages")
	}
	t.Setenv("PAGER", "more -d")
	if got := pagerCommand(); strings.Join(got, " ") != "more -d" {
		t.Errorf("PAGER: %v", got)
	}
}
