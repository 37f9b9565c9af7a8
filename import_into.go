package dpsql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/cache"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/parser"
)

// ImportMode says what an import does with an existing table.
type ImportMode int

// Import modes.
const (
	// ImportCreate creates a new table (an existing one is an error).
	ImportCreate ImportMode = iota
	// ImportReplace replaces an existing table's rows with the file's,
	// keeping its policy (whose columns the file must have).
	ImportReplace
	// ImportAppend adds the file's rows to an existing table, whose
	// columns the file must have, in order, each of the same type (or
	// INTEGER into REAL).
	ImportAppend
)

// ImportInto imports a CSV file as ImportCSV does, into a new table or,
// by mode, replacing or appending to an existing one: the file is read,
// checked and typed into a scratch table first, and the table changes in
// one transaction that also drops the cached answers that read it (a
// repeated query is then answered afresh, and charged). On any error the
// table is as it was. Replace and append work on tables in the database
// file (not on PostgreSQL or DuckDB tables yet).
func (e *Engine) ImportInto(ctx context.Context, table, path string, opts csvimport.Options, mode ImportMode) (int64, []csvimport.Column, error) {
	if mode == ImportCreate {
		return e.ImportCSV(ctx, table, path, opts)
	}
	if !e.owner {
		return 0, nil, fmt.Errorf("%w: importing data needs owner mode (run dpsql with --owner)", ErrOwnerOnly)
	}
	if e.be != nil {
		return 0, nil, fmt.Errorf("%w: --replace and --append work on tables in a dpsql database file; replace or append to the table in %s (then RESET CACHE)", ErrUnsupported, e.be.Where())
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		return 0, nil, err
	}
	t, ok := cat.Table(table)
	if !ok || catalog.IsInternalName(table) {
		return 0, nil, fmt.Errorf("%w: no table %q to %s (an import without --replace or --append creates it)", ErrUnknownName, table, modeVerb(mode))
	}
	e.def.mu.Lock()
	defer e.def.mu.Unlock()
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	scratch := catalog.InternalPrefix + "import_" + hex.EncodeToString(suffix[:])
	n, cols, err := csvimport.Import(ctx, e.db, scratch, path, opts)
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, &stopped{msg: ErrCancelled.Error() + stopReason(ctx) + ": import cancelled, nothing was imported", cause: ctx.Err()}
		}
		return 0, nil, err
	}
	if err := e.swapIn(ctx, t, scratch, cols, mode); err != nil {
		_, _ = e.db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+parser.QuoteIdent(scratch))
		return 0, nil, err
	}
	return n, cols, nil
}

func modeVerb(mode ImportMode) string {
	if mode == ImportReplace {
		return "replace"
	}
	return "append to"
}

// swapIn moves the scratch table's rows into t, in one transaction with
// the invalidation of t's cached answers.
func (e *Engine) swapIn(ctx context.Context, t *catalog.Table, scratch string, cols []csvimport.Column, mode ImportMode) error {
	if err := checkColumns(t, cols, mode); err != nil {
		return err
	}
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	name := parser.QuoteIdent(t.Name)
	if mode == ImportReplace {
		if _, err := tx.ExecContext(ctx, "DROP TABLE "+name); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "ALTER TABLE "+parser.QuoteIdent(scratch)+" RENAME TO "+name); err != nil {
			return err
		}
	} else {
		quoted := make([]string, len(cols))
		for i, c := range cols {
			quoted[i] = parser.QuoteIdent(c.Name)
		}
		list := strings.Join(quoted, ", ")
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+name+" ("+list+") SELECT "+list+" FROM "+parser.QuoteIdent(scratch)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DROP TABLE "+parser.QuoteIdent(scratch)); err != nil {
			return err
		}
	}
	if err := cache.Invalidate(ctx, tx, t.Name); err != nil {
		return err
	}
	return tx.Commit()
}

// checkColumns checks the file's columns against the table: for append,
// the same names in the same order, each of the same type or INTEGER into
// REAL; for replace, every column the policy names.
func checkColumns(t *catalog.Table, cols []csvimport.Column, mode ImportMode) error {
	if mode == ImportAppend {
		if len(cols) != len(t.Columns) {
			return fmt.Errorf("the file has %d columns and table %s has %d: --append needs the same columns in the same order", len(cols), t.Name, len(t.Columns))
		}
		for i, c := range cols {
			have := t.Columns[i]
			if !catalog.SameName(c.Name, have.Name) {
				return fmt.Errorf("column %d is %q in the file and %q in table %s: --append needs the same columns in the same order", i+1, c.Name, have.Name, t.Name)
			}
			want := strings.ToUpper(have.Type)
			if c.Type != want && !(c.Type == "INTEGER" && want == "REAL") {
				return fmt.Errorf("column %q holds %s values in the file but is %s in table %s: nothing was appended", c.Name, c.Type, have.Type, t.Name)
			}
		}
		return nil
	}
	has := map[string]bool{}
	for _, c := range cols {
		has[catalog.FoldName(c.Name)] = true
	}
	var named []string
	if t.Unit.Column != "" {
		named = append(named, t.Unit.Column)
	}
	for c := range t.Bounds {
		named = append(named, c)
	}
	for c := range t.Domains {
		named = append(named, c)
	}
	for _, c := range named {
		if !has[catalog.FoldName(c)] {
			return fmt.Errorf("the policy of table %s names column %q, which the file lacks: nothing was replaced (fix the file, or change the policy first)", t.Name, c)
		}
	}
	// A bounded numeric column must stay numeric: as TEXT its values
	// would be read by their numeric prefix (most of them 0), and every
	// SUM and AVG of it would quietly change meaning.
	numeric := func(typ string) bool { typ = strings.ToUpper(typ); return typ == "INTEGER" || typ == "REAL" }
	for _, c := range cols {
		have, ok := t.Column(c.Name)
		if !ok {
			continue
		}
		b, bounded := t.Bounds[have.Name] // by the catalog's spelling
		if bounded && numeric(have.Type) && !numeric(c.Type) {
			return fmt.Errorf("column %q of table %s has bounds [%g, %g] and holds %s values, but the file's are %s (some are not numbers): nothing was replaced (fix those values, or drop the policy's bounds first)", c.Name, t.Name, b.Lo, b.Hi, strings.ToUpper(have.Type), c.Type)
		}
	}
	return nil
}
