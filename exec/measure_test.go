package exec_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/exec"
)

// TestWithoutFreeSlots: when every slot function is taken, a query calls
// the measurement aggregate with its handle and gets the same answer.
func TestWithoutFreeSlots(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t (uid INTEGER, x REAL); INSERT INTO t VALUES (1, 1.5), (2, 2.5), (2, 3.5), (3, NULL)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	owner, err := dpsql.Open(path, dpsql.Options{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Run(context.Background(), `CREATE PRIVACY POLICY ON t OPTIONS (privacy_unit_column = uid, max_rows_contributed = 5); SET BUDGET epsilon = 10000`, func(*dpsql.Result) error { return nil }); err != nil {
		t.Fatal(err)
	}
	owner.Close()
	e, err := dpsql.Open(path, dpsql.Options{Epsilon: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	q := `SELECT COUNT(*), COUNT(x) FROM t WHERE x > 0 OR x IS NULL`
	for _, held := range []bool{false, true} {
		if held {
			release := exec.HoldAllSlots()
			defer release()
		}
		res, err := e.Query(context.Background(), q)
		if err != nil {
			t.Fatalf("slots held %v: %v", held, err)
		}
		// ε = 1000 per query: noise of scale 0.002 vanishes in the rounding.
		if res.Rows[0][0] != int64(4) || res.Rows[0][1] != int64(3) {
			t.Errorf("slots held %v: %v, want [4 3]", held, res.Rows[0])
		}
	}
}
