// Package sqlite measures a scan of the engine's own SQLite file as one
// statement in SQLite's own SQL (measuresql, dialect SQLite): SQLite's
// GROUP BY and window functions do the per-unit grouping, the bounding
// ranks and the per-group aggregates, spilling to its temporary store,
// so that dpsql's memory does not grow with the number of units; the Go
// aggregate dpsql_measure stays the reference evaluator the differential
// tests check it against, and measures whatever this declines.
//
// Production engines do not use it: on SQLite the reference evaluator,
// fed in unit order, is measured faster on every shape
// (docs/benchmarks.md); the tests turn it on (knobs.CompileSQLite), so
// that the SQLite dialect is a third printer proved against the
// reference, as DuckDB's and PostgreSQL's are.
//
// Only tables whose columns hold one class each are compiled: STRICT
// rowid tables without a declared collation, whose INTEGER, REAL and TEXT columns hold integers, doubles
// (never a NaN) and text alone. A column of any other table may hold
// values of every class, which the compiler's class-by-class forms do not
// read as the reference does; such a scan runs through the reference,
// and EXPLAIN says why.
package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/measure"
	"github.com/dpsql/dpsql/measuresql"
	_ "github.com/dpsql/dpsql/sqlitefn" // the statement's Go functions, on every connection of the default driver
)

// Measurer is backend.Measurer for the tables of the state file itself.
type Measurer struct{}

// reference names the evaluator that measures what is not compiled.
const reference = "the reference evaluator (dpsql_measure in SQLite)"

// Explain says where a scan with this plan runs: as one SQLite statement,
// or through the reference evaluator, and why.
func (Measurer) Explain(ctx context.Context, state *sql.DB, m *measure.Plan, noPlan string) (where, statement string, err error) {
	if m == nil {
		return reference + ": " + noPlan, "", nil
	}
	types, why, err := compiled(ctx, state, m)
	if err != nil || why != "" {
		return reference + ": " + why, "", err
	}
	statement, _ = measuresql.Shown(m, types, measuresql.SQLite{})
	return "one SQLite statement (measuresql): SQLite groups, bounds and sums every group in its own storage and returns only per-group aggregates", statement, nil
}

// WhyNot says why Measure would decline the plan ("": it runs it).
func (Measurer) WhyNot(ctx context.Context, state *sql.DB, m *measure.Plan) (string, error) {
	_, why, err := compiled(ctx, state, m)
	return why, err
}

// compiled is the classes of the plan's columns, and why the plan is not
// compiled ("" when it is): a table it reads, or a form of it.
func compiled(ctx context.Context, state *sql.DB, m *measure.Plan) (map[measure.Col]measuresql.Type, string, error) {
	types, why, err := classes(ctx, state, m)
	if err != nil || why != "" {
		return nil, why, err
	}
	if why := measuresql.WhyNot(m, types, measuresql.SQLite{}); why != "" {
		return nil, "the SQLite printer does not compile " + why, nil
	}
	return types, "", nil
}

// Measure runs the plan as one SQLite statement on the state file; ok is
// false when it is not compiled (nothing ran).
func (Measurer) Measure(ctx context.Context, state *sql.DB, m *measure.Plan, key uint64) (*measuresql.Statement, []*measuresql.Group, bool, error) {
	types, why, err := classes(ctx, state, m)
	if err != nil || why != "" {
		return nil, nil, false, err
	}
	st, ok := measuresql.Compile(m, types, measuresql.SQLite{}, key)
	if !ok {
		return nil, nil, false, nil
	}
	rows, err := state.QueryContext(ctx, st.SQL, st.Args...)
	if err != nil {
		return nil, nil, false, err
	}
	defer rows.Close()
	groups, err := st.Read(rows)
	return st, groups, err == nil, err
}

// classes are the classes of the columns of every table the plan reads,
// named as the plan names them (measure.Column), from the schema alone;
// why says which table is not compiled and why ("" when all are).
func classes(ctx context.Context, state *sql.DB, m *measure.Plan) (map[measure.Col]measuresql.Type, string, error) {
	types := map[measure.Col]measuresql.Type{}
	for i, t := range append([]string{m.Table}, m.Joins...) {
		why, err := strictTable(ctx, state, t)
		if err != nil || why != "" {
			return nil, why, err
		}
		rows, err := state.QueryContext(ctx, `SELECT name, type, hidden FROM main.pragma_table_xinfo(?)`, t)
		if err != nil {
			return nil, "", err
		}
		for rows.Next() {
			var name, typ string
			var hidden int
			if err := rows.Scan(&name, &typ, &hidden); err != nil {
				rows.Close()
				return nil, "", err
			}
			types[measure.Column(i, name)] = class(typ, hidden)
		}
		if err := rows.Close(); err != nil {
			return nil, "", err
		}
	}
	return types, "", nil
}

// strictTable says why table t of the state file is not compiled ("": it
// is a STRICT rowid table without a declared collation).
func strictTable(ctx context.Context, state *sql.DB, t string) (string, error) {
	var typ string
	var withoutRowid, strict int
	err := state.QueryRowContext(ctx, `SELECT type, wr, strict FROM main.pragma_table_list(?)`, t).Scan(&typ, &withoutRowid, &strict)
	if err == sql.ErrNoRows {
		return fmt.Sprintf("%q is not a table of the file (a view, or a mirror of another engine's)", t), nil
	}
	if err != nil {
		return "", err
	}
	switch {
	case typ != "table":
		return fmt.Sprintf("%q is a %s, not a table", t, typ), nil
	case strict == 0:
		return fmt.Sprintf("table %q is not STRICT, so a column may hold values of any class", t), nil
	case withoutRowid != 0:
		return fmt.Sprintf("table %q is a WITHOUT ROWID table", t), nil
	}
	var ddl string
	if err := state.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?`, t).Scan(&ddl); err != nil {
		return "", err
	}
	if strings.Contains(strings.ToUpper(ddl), "COLLATE") {
		return fmt.Sprintf("table %q declares a collation (the reference compares text byte by byte)", t), nil
	}
	return "", nil
}

// class is a STRICT column's class: its declared type decides what it
// holds. A generated column, or one of type ANY or BLOB, is not compiled.
func class(typ string, hidden int) measuresql.Type {
	if hidden != 0 {
		return measuresql.Other
	}
	switch strings.ToUpper(typ) {
	case "INT", "INTEGER":
		return measuresql.Int
	case "REAL":
		return measuresql.Real
	case "TEXT":
		return measuresql.Text
	}
	return measuresql.Other
}
