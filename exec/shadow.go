package exec

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/parser"
)

// A scan that reads more than one table reference reads the inner ones
// lazily: SQLite scans a join's inner table once per outer row that
// passes, and materializes a subquery only when a row first needs it.
// For a table stored in the file that is private only through timing.
// For a virtual table, each scan is a statement sent to another engine
// (a PostgreSQL mirror sends one per scan), and whether it is sent at all
// — and so whether it can fail, for whatever reason — would depend on
// whether some private row passed the filters before it: a yes/no oracle
// about the rows, which no noise covers.
//
// So before such a scan, every virtual table it reads is copied whole,
// once, into a temporary table of the same name on the scan's connection
// (SQLite finds temp before main for an unqualified name, and the
// printed statements never qualify a table), and the scan reads the
// copies. The statements sent to the other engine are then one plain
// read per table, whatever the rows hold, all sent before the scan reads
// its first row and before the charge: one that fails costs nothing.
// A scan of a single table reference reads it once, first, as before
// (streamed, with its pushed comparisons, whose values are constants).

// shadow copies every virtual table of reads (the plan's reads: per
// table, the columns it uses, "*" for every column of a public table)
// into a temporary table of the same name, and returns them. The copies
// are empty until fillShadows.
func shadow(ctx context.Context, conn *sql.Conn, reads map[string]map[string]bool) ([]shadowTable, error) {
	tables := make([]string, 0, len(reads))
	for t := range reads {
		tables = append(tables, t)
	}
	slices.Sort(tables)
	var made []shadowTable
	for _, t := range tables {
		var name string
		err := conn.QueryRowContext(ctx, `SELECT name FROM main.sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE AND sql LIKE 'CREATE VIRTUAL TABLE%'`, t).Scan(&name)
		if err == sql.ErrNoRows {
			continue // stored in the file
		}
		if err != nil {
			return made, err
		}
		st := shadowTable{name: name, columns: shadowColumns(reads[t])}
		q := parser.QuoteIdent(name)
		if _, err := conn.ExecContext(ctx, "DROP TABLE IF EXISTS temp."+q); err != nil {
			return made, err
		}
		// WHERE 0: the copy's columns, with their affinities, and no row
		// read yet (compiling the scan reads no data).
		if _, err := conn.ExecContext(ctx, "CREATE TEMP TABLE "+q+" AS SELECT "+st.columns+" FROM main."+q+" WHERE 0"); err != nil {
			return made, fmt.Errorf("copying %s: %w", q, err)
		}
		made = append(made, st)
	}
	return made, nil
}

// shadowTable is a temporary copy of a virtual table: its name and the
// columns it keeps, as a select list.
type shadowTable struct{ name, columns string }

// shadowColumns lists what a copy keeps: every column of a public table,
// the used ones of a private table (a hidden column among them, such as
// its rows' identity), or a placeholder when only its rows are counted.
func shadowColumns(cols map[string]bool) string {
	if cols["*"] {
		return "*"
	}
	var names []string
	for c := range cols {
		if catalog.SameName(c, "ROWID") {
			continue // a file's tables only: never virtual
		}
		names = append(names, parser.QuoteIdent(c))
	}
	if len(names) == 0 {
		return "NULL AS " + parser.QuoteIdent(catalog.InternalPrefix+"none")
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// fillShadows reads each virtual table into its copy, once.
func fillShadows(ctx context.Context, conn *sql.Conn, shadows []shadowTable) error {
	for _, st := range shadows {
		q := parser.QuoteIdent(st.name)
		if _, err := conn.ExecContext(ctx, "INSERT INTO temp."+q+" SELECT "+st.columns+" FROM main."+q); err != nil {
			return err
		}
	}
	return nil
}

// dropShadows removes the copies.
func dropShadows(conn *sql.Conn, shadows []shadowTable) {
	for _, st := range shadows {
		_, _ = conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS temp."+parser.QuoteIdent(st.name))
	}
}
