// Package pgmove moves a test's SQLite database into PostgreSQL, so that
// the engine's tests run the same data on both: the engine's suite on
// PostgreSQL and the PostgreSQL tests (internal/testing/pgengine).
package pgmove

import (
	"context"
	"database/sql"
	"os"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/storesql"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

// Move copies the user tables of the SQLite database at path
// into a new PostgreSQL database called name (pgtest.CopyFromSQLiteTo:
// values converted by a fixed per-row rule, so that the copies of
// neighbouring databases are neighbours too), writes the rest of the file
// (policies, budget, ledger) to state without those tables, and opens it
// once as the owner, which adopts the policies and budget into
// PostgreSQL. state may be path itself. It returns the database's DSN.
func Move(srv *pgtest.Server, path, state, name string) (string, error) {
	ctx := context.Background()
	dsn, err := srv.CreateDatabase(ctx, name)
	if err != nil {
		return "", err
	}
	src, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	tables, err := storesql.Collect(ctx, src, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\_dpsql\_%' ESCAPE '\' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`, nil,
		func(rows *sql.Rows) (name string, err error) { return name, rows.Scan(&name) })
	if err != nil {
		return "", err
	}
	if err := srv.CopyFromSQLiteTo(ctx, dsn, src, tables...); err != nil {
		return "", err
	}
	st := src
	if state != path {
		os.Remove(state)
		if _, err := src.Exec(`VACUUM INTO ?`, state); err != nil {
			return "", err
		}
		if st, err = sql.Open("sqlite", "file:"+state); err != nil {
			return "", err
		}
		defer st.Close()
	}
	for _, name := range tables {
		if _, err := st.Exec(`DROP TABLE "` + name + `"`); err != nil {
			return "", err
		}
	}
	owner, err := dpsql.Open(state, dpsql.Options{Owner: true, Postgres: dsn})
	if err != nil {
		return "", err
	}
	return dsn, owner.Close()
}
