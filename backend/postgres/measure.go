package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/measure"
	"github.com/dpsql/dpsql/measuresql"
)

// ErrUnreadable reports a table the connection's role may not read: the
// query is refused before anything is charged (it is the same for every
// query that reads the table, whatever its rows).
var ErrUnreadable = errors.New("dpsql's PostgreSQL role may not read the table")

// classOf is how the compiler reads a column of PostgreSQL type typname
// so that it sees what the mirror gives SQLite: int8 as it is, int2 and
// int4 widened, a boolean as 0/1, float4 and float8 as float8 (NaN
// guarded), text, varchar and char(n) as their text (char's without its
// padding) in the "C" collation. Every other type is not compiled:
// numeric (the mirror rounds it to a double, where a cast to float8
// raises beyond its range) and the rest, read through their text output.
func classOf(typname string) measuresql.Type {
	switch typname {
	case "int8":
		return measuresql.Int
	case "int2", "int4":
		return measuresql.Int32
	case "bool":
		return measuresql.Bool
	case "float4", "float8":
		return measuresql.Real
	case "text", "varchar", "bpchar":
		return measuresql.Text
	}
	return measuresql.Other
}

// compiled is a plan's statement for PostgreSQL, or why there is none.
type compiled struct {
	st      *measuresql.Statement
	why     string
	types   map[measure.Col]measuresql.Type
	dialect measuresql.Postgres
}

// compile prints the plan in PostgreSQL's dialect, for the mirrors of
// the state file state: ok is false when a table it reads is not one of
// this source's mirrors (why says so, as does a form the printer does not
// compile). A table the role may not read is an error (ErrUnreadable).
func (s *Source) compile(ctx context.Context, state *sql.DB, m *measure.Plan, key uint64) (compiled, error) {
	if s.Knobs.Grouping() == knobs.GroupNever {
		return compiled{why: "anything: the tests' setting keeps every scan on the mirror"}, nil
	}
	if s.Pool == nil {
		return compiled{why: "anything: the engine has no connection to PostgreSQL"}, nil
	}
	utf8, err := s.storesUTF8(ctx)
	if err != nil {
		return compiled{}, err
	}
	d := measuresql.Postgres{Tables: map[string][2]string{}, UTF8: utf8}
	types := map[measure.Col]measuresql.Type{}
	for i, name := range append([]string{m.Table}, m.Joins...) {
		id, schema, table, ok, err := mirrorOf(ctx, state, name)
		if err != nil {
			return compiled{}, err
		}
		if !ok || id != s.ID {
			return compiled{why: "a table that is not one of this PostgreSQL database's"}, nil
		}
		cols, err := s.columns(ctx, schema, table)
		if err != nil {
			return compiled{}, fmt.Errorf("table %s: %w", Quote(name), err)
		}
		if !cols[0].readable {
			return compiled{}, fmt.Errorf("%w %s.%s (GRANT SELECT ON it to the role dpsql connects as)", ErrUnreadable, Quote(schema), Quote(table))
		}
		d.Tables[name] = [2]string{schema, table}
		d.Distributed = d.Distributed || cols[0].partitioned
		for _, c := range cols {
			types[measure.Column(i, c.name)] = classOf(c.typname)
		}
	}
	st, ok := measuresql.Compile(m, types, d, key)
	if !ok {
		return compiled{why: measuresql.WhyNot(m, types, d)}, nil
	}
	return compiled{st: st, types: types, dialect: d}, nil
}

// storesUTF8 reports whether the database stores UTF8, where
// PostgreSQL counts characters as SQLite does (a SQL_ASCII database's
// bytes are its characters): asked of a connection the first time only.
func (s *Source) storesUTF8(ctx context.Context) (bool, error) {
	s.encoding.Lock()
	defer s.encoding.Unlock()
	if !s.encoding.known {
		conn, err := s.Pool.Acquire(ctx)
		if err != nil {
			return false, err
		}
		s.encoding.utf8 = conn.Conn().PgConn().ParameterStatus("server_encoding") == "UTF8"
		s.encoding.known = true
		conn.Release()
	}
	return s.encoding.utf8, nil
}

// WhyNot says why Measure would decline the plan ("": it runs it).
func (s *Source) WhyNot(ctx context.Context, state *sql.DB, m *measure.Plan) (string, error) {
	c, err := s.compile(ctx, state, m, 0)
	return c.why, err
}

// Explain says where a scan with this measurement plan runs: in
// PostgreSQL as one statement, or through the reference evaluator over
// the mirror, and why (m nil: the scan has no plan, for the reason
// noPlan); statement is the one it runs there (measuresql.Shown), "" on
// the mirror.
func (s *Source) Explain(ctx context.Context, state *sql.DB, m *measure.Plan, noPlan string) (where, statement string, err error) {
	const reference = "the reference evaluator (dpsql_measure in SQLite) over the rows the mirror reads from PostgreSQL"
	if m == nil {
		return reference + ": " + noPlan, "", nil
	}
	c, err := s.compile(ctx, state, m, 0)
	if err != nil {
		return "", "", err
	}
	if c.why != "" {
		return reference + ": the PostgreSQL printer does not compile " + c.why, "", nil
	}
	statement, _ = measuresql.Shown(m, c.types, c.dialect)
	return "one PostgreSQL statement (measuresql): PostgreSQL measures every group where the data is and returns only per-group aggregates", statement, nil
}

// Measure runs a scan's measurement plan as one PostgreSQL statement
// (measuresql, dialect Postgres; the analyst's text literals bound as
// parameters) and returns its per-group measurements; ok is false when
// the plan's forms or its tables' column types are not compiled. Only
// tables the state file mirrors from this source are read.
func (s *Source) Measure(ctx context.Context, state *sql.DB, m *measure.Plan, key uint64) (*measuresql.Statement, []*measuresql.Group, bool, error) {
	c, err := s.compile(ctx, state, m, key)
	if err != nil || c.st == nil {
		return nil, nil, false, err
	}
	st := c.st
	tx, err := s.Pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, nil, false, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }() // read only: nothing to keep
	if _, err := tx.Exec(ctx, pinned, statementTimeout(ctx)); err != nil {
		return nil, nil, false, err
	}
	s.observe(st.SQL)
	rows, err := tx.Query(ctx, st.SQL, st.Args...)
	if err != nil {
		return nil, nil, false, debugFailure(err, st.SQL)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, nil, false, err
		}
		for i, v := range vals {
			vals[i] = measuresql.Normalize(v)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, false, debugFailure(err, st.SQL)
	}
	groups, err := st.Decode(out)
	return st, groups, err == nil, err
}

// DefaultStatementTimeout is PostgreSQL's statement_timeout for a
// compiled statement whose context has no deadline (the server's
// --statement-timeout, a client's SET statement_timeout, give one).
const DefaultStatementTimeout = time.Hour

// pinned sets, for the measuring transaction only, the search path to
// pg_catalog (pg_temp last: it is never searched for operators and
// functions), so that every operator, cast, type and collation the
// statement names unqualified is PostgreSQL's built-in one whatever the
// role's or database's search_path holds (an owner's <=(int8, int4) in an
// earlier schema otherwise runs in its place), and statement_timeout, so
// that PostgreSQL stops the statement itself even if dpsql is gone. The
// tables it reads are schema-qualified.
const pinned = `SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true), pg_catalog.set_config('statement_timeout', $1, true)`

// statementTimeout is statement_timeout's value for ctx: the time left
// before its deadline (at least 1 ms), or DefaultStatementTimeout.
func statementTimeout(ctx context.Context) string {
	d := DefaultStatementTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = max(time.Until(dl), time.Millisecond)
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// debugFailure returns err, printing it with the statement first when
// DPSQL_DEBUG_POSTGRES is set (a compiled statement should never fail).
func debugFailure(err error, stmt string) error {
	if os.Getenv("DPSQL_DEBUG_POSTGRES") != "" {
		fmt.Fprintln(os.Stderr, "postgres error:", err, "\n", stmt)
	}
	return err
}
