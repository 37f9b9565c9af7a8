package dpsql

import (
	"context"
	"fmt"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/csvimport"
)

// ImportCSV creates table from a CSV file (owner only) and returns the
// number of rows imported and the columns with their inferred types. On
// error nothing is created. See csvimport.Options for the settings.
func (e *Engine) ImportCSV(ctx context.Context, table, path string, opts csvimport.Options) (int64, []csvimport.Column, error) {
	if !e.owner {
		return 0, nil, fmt.Errorf("%w: importing data needs owner mode (run dpsql with --owner)", ErrOwnerOnly)
	}
	if table == "" || catalog.IsInternalName(table) {
		return 0, nil, fmt.Errorf("invalid table name %q", table)
	}
	// An import runs alone among the default session's statements.
	e.def.mu.Lock()
	defer e.def.mu.Unlock()
	var n int64
	var cols []csvimport.Column
	var err error
	if im, ok := e.be.(backend.Importer); ok {
		n, cols, err = e.importInto(ctx, im, table, path, opts) // all or nothing where the tables live
	} else {
		n, cols, err = e.importSQLite(ctx, table, path, opts)
	}
	if err != nil && ctx.Err() != nil {
		return 0, nil, &stopped{msg: ErrCancelled.Error() + stopReason(ctx) + ": import cancelled, nothing was imported", cause: ctx.Err()}
	}
	return n, cols, diskError(e.path, err)
}

// importSQLite is ImportCSV into the database file.
func (e *Engine) importSQLite(ctx context.Context, table, path string, opts csvimport.Options) (int64, []csvimport.Column, error) {
	// A database without user tables has no readers to keep reading: it is
	// filled in rollback-journal mode, which writes each page once (WAL
	// writes it twice, to the log and then to the file), and returns to WAL
	// after. If another connection has the file open, the mode stays WAL.
	var users int
	if err := e.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\_dpsql\_%' ESCAPE '\' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`).Scan(&users); err != nil {
		return 0, nil, err
	}
	if users == 0 {
		var mode string
		if err := e.db.QueryRowContext(ctx, `PRAGMA journal_mode = DELETE`).Scan(&mode); err == nil && mode == "delete" {
			defer e.db.ExecContext(context.Background(), `PRAGMA journal_mode = WAL`)
		}
	}
	return csvimport.Import(ctx, e.db, table, path, opts)
}
