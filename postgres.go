package dpsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend/postgres"
)

// IsPostgresDSN reports whether a --db argument names a PostgreSQL
// database rather than a file.
func IsPostgresDSN(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// openPostgres connects the state file to its PostgreSQL source, if it
// has one or opts gives one; the returned func releases it.
func openPostgres(ctx context.Context, db *sql.DB, path string, opts Options) (func(), error) {
	none := func() {}
	id, err := postgres.SourceID(ctx, db, opts.Owner && opts.Postgres != "")
	if err != nil {
		return none, fmt.Errorf("opening %s: %w", path, err)
	}
	if opts.Postgres == "" {
		if id != "" {
			return none, fmt.Errorf("%s is the state file of a PostgreSQL database: open it with that database's connection string (dpsql --db postgres://... --state %s)", path, path)
		}
		return none, nil
	}
	if id == "" {
		return none, fmt.Errorf("%w: %s has no PostgreSQL tables yet (the owner mirrors them: dpsql --owner --db postgres://... --state %s)", ErrNoDatabase, path, path)
	}
	pool, err := postgres.Connect(ctx, opts.Postgres)
	if err != nil {
		return none, err
	}
	release := postgres.Register(id, pool)
	return func() { release(); pool.Close() }, nil
}

// mirrorPostgres declares the PostgreSQL tables the state file does not
// have yet, and says which it added and which it could not.
func mirrorPostgres(ctx context.Context, db *sql.DB, opts Options) error {
	id, err := postgres.SourceID(ctx, db, false)
	if err != nil {
		return err
	}
	pool, err := postgres.Lookup(id)
	if err != nil {
		return err
	}
	added, skipped, err := postgres.Mirror(ctx, db, pool, id)
	if err != nil {
		return err
	}
	if opts.Notify != nil {
		if len(added) > 0 {
			opts.Notify("mirrored from PostgreSQL (private, each row its own unit, until a policy says otherwise): " + strings.Join(added, ", "))
		}
		if len(skipped) > 0 {
			opts.Notify("not mirrored (the name is reserved or taken in the state file): " + strings.Join(skipped, ", "))
		}
	}
	return nil
}
