//go:build cgo

package ducktest

import (
	"context"
	"database/sql"
	"os"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/testing/stricttest"
)

// Move copies the user tables of the SQLite database at path
// into the DuckDB file duck (CopyFromSQLite), writes the rest of
// the file (policies, budget, ledger) to state without those tables, and
// opens it once as the owner, which mirrors them. A column declared
// without a type is copied as untyped ("": text).
func Move(path, state, duck, untyped string) error {
	ctx := context.Background()
	src, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer src.Close()
	tables, err := stricttest.OwnerTables(ctx, src)
	if err != nil {
		return err
	}
	os.Remove(duck)
	if untyped == "" {
		untyped = "text"
	}
	if err := CopyFromSQLite(ctx, duck, src, untyped, tables...); err != nil {
		return err
	}
	st := src
	if state != path {
		os.Remove(state)
		if _, err := src.Exec(`VACUUM INTO ?`, state); err != nil {
			return err
		}
		if st, err = sql.Open("sqlite", "file:"+state); err != nil {
			return err
		}
		defer st.Close()
	}
	for _, name := range tables {
		if _, err := st.Exec(`DROP TABLE "` + name + `"`); err != nil {
			return err
		}
	}
	owner, err := dpsql.Open(state, dpsql.Options{Owner: true, DuckDB: duck})
	if err != nil {
		return err
	}
	return owner.Close()
}
