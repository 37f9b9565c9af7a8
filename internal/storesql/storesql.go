// Package storesql runs dpsql's own statements — the catalog's and the
// budget's — on the store that keeps them: the SQLite database itself
// (tables _dpsql_*), or the schema dpsql of a PostgreSQL database
// (tables dpsql.*). Each statement is written once, in the SQL both
// engines share, with SQLite's names and '?' parameters; on PostgreSQL
// it is translated to the schema's names and numbered parameters.
package storesql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
)

// Schema is the PostgreSQL schema of dpsql's own tables.
const Schema = "dpsql"

// SchemaLock is the key of the advisory lock under which the catalog and
// the budget make their tables in Schema: two processes making them at
// once would otherwise collide in PostgreSQL's catalog.
const SchemaLock int64 = 7_102_115_113_108 // any fixed number; dpsql uses no other advisory lock

// Runner is what a statement runs on: a database, a connection or a
// transaction.
type Runner interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// On runs statements written for SQLite on R, translated for PostgreSQL
// when Postgres is set.
type On struct {
	R        Runner
	Postgres bool
}

// QueryRowContext runs a query that returns one row.
func (o On) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return o.R.QueryRowContext(ctx, Translate(o.Postgres, query), args...)
}

// QueryContext runs a query.
func (o On) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return o.R.QueryContext(ctx, Translate(o.Postgres, query), args...)
}

// ExecContext runs a statement.
func (o On) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return o.R.ExecContext(ctx, Translate(o.Postgres, query), args...)
}

// Translate turns a statement of dpsql's own (tables _dpsql_*, parameters
// ?) into PostgreSQL's when postgres is set: tables dpsql.*, parameters
// $1, $2, ... The statements it is given have no '?' and no "_dpsql_"
// inside a string literal.
func Translate(postgres bool, query string) string {
	if !postgres {
		return query
	}
	query = strings.ReplaceAll(query, "_dpsql_", Schema+".")
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Querier runs queries: a database, a connection, a transaction or On.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Collect runs a query and scans every row into a list.
func Collect[T any](ctx context.Context, q Querier, query string, args []any, scan func(*sql.Rows) (T, error)) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Prepared is a Runner over a database that prepares each statement once
// and keeps it (database/sql prepares it again on each pooled connection
// as needed): dpsql's own statements are few and constant, and SQLite
// spent a good part of a query's cost parsing them again and again.
// Statements whose text varies (user SQL) must not go through it.
type Prepared struct {
	DB    *sql.DB
	stmts sync.Map // query text → *sql.Stmt
}

// stmt is the prepared statement of query, or nil when it cannot be
// prepared (the caller then runs the text itself, for its error).
func (p *Prepared) stmt(ctx context.Context, query string) *sql.Stmt {
	if s, ok := p.stmts.Load(query); ok {
		return s.(*sql.Stmt)
	}
	s, err := p.DB.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if prev, loaded := p.stmts.LoadOrStore(query, s); loaded {
		s.Close()
		return prev.(*sql.Stmt)
	}
	return s
}

// QueryRowContext runs a query that returns one row.
func (p *Prepared) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := p.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return p.DB.QueryRowContext(ctx, query, args...)
}

// QueryContext runs a query.
func (p *Prepared) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := p.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return p.DB.QueryContext(ctx, query, args...)
}

// ExecContext runs a statement.
func (p *Prepared) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := p.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return p.DB.ExecContext(ctx, query, args...)
}

// Close closes the prepared statements.
func (p *Prepared) Close() {
	p.stmts.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		p.stmts.Delete(k)
		return true
	})
}
