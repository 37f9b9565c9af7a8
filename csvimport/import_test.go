package csvimport

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

func testDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "i.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func writeRows(t *testing.T, rows int, extra string) string {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("id,x,name\n")
	for i := 0; i < rows; i++ {
		fmt.Fprintf(&sb, "%d,%d.5,n%d\n", i, i, i)
	}
	sb.WriteString(extra)
	path := filepath.Join(t.TempDir(), "rows.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPipelinedImport: the reader and the inserting goroutine together
// store every row exactly once, in order, partial last batch included; an
// error on either side (a malformed row, a cancelled context) leaves no
// table. Run it under -race.
func TestPipelinedImport(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	n, cols, err := Import(ctx, db, "t", writeRows(t, 70_007, ""), Options{})
	if err != nil || n != 70_007 || cols[1].Type != "REAL" {
		t.Fatalf("import: %d %v %v", n, cols, err)
	}
	var count, sum int64
	if err := db.QueryRow(`SELECT COUNT(*), SUM(id) FROM t`).Scan(&count, &sum); err != nil || count != 70_007 || sum != 70_006*70_007/2 {
		t.Errorf("stored %d rows, id sum %d (%v)", count, sum, err)
	}

	_, _, err = Import(ctx, db, "bad", writeRows(t, 50_000, "1,2\n"), Options{})
	var ie *Error
	if !errors.As(err, &ie) || ie.Line != 50_002 {
		t.Errorf("malformed last row: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, _, err = Import(cctx, db, "cancelled", writeRows(t, 120_000, ""), Options{Progress: func(int64, float64) { cancel() }})
	if err == nil {
		t.Error("a cancelled import succeeded")
	}
	var tables int
	db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name IN ('bad', 'cancelled')`).Scan(&tables)
	if tables != 0 {
		t.Errorf("%d tables left by failed imports", tables)
	}
}
