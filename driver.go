package dpsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/dpsql/dpsql/parser"
)

// DriverName is the name dpsql registers with database/sql.
const DriverName = "dpsql"

func init() { sql.Register(DriverName, &Driver{}) }

// Driver is the database/sql driver. Open it with sql.Open("dpsql", dsn),
// where dsn is a database path or a file: URI with options:
//
//	adult.db
//	file:adult.db?role=owner
//	file:/data/adult.db?epsilon=0.5
//
// Options:
//   - role=analyst (default) or role=owner: owner mode allows policy and
//     budget statements.
//   - epsilon=E: the default ε per query for every connection (as SET
//     epsilon = E).
//   - postgres=DSN (URL-escaped): the tables live in that PostgreSQL
//     database and the path is its state file (Options.Postgres), e.g.
//     file:shop.dpsql?postgres=postgres%3A%2F%2Fdpsql%40db%2Fshop; with
//     no path (file:?postgres=...) the state file is DefaultStateFile.
//   - duckdb=PATH (URL-escaped): the tables live in that DuckDB file and
//     the path is its state file (Options.DuckDB); with no path
//     (file:?duckdb=data.duckdb) the state file is DuckDBStateFile. A
//     plain path ending in .duckdb (data.duckdb, or duckdb:data.duckdb)
//     means the same.
//
// Unknown options are errors. A *sql.DB opened on a DSN shares one Engine
// (one SQLite pool, one PostgreSQL pool), opened by sql.Open (which
// reports a missing database) and closed by sql.DB.Close; each database/sql connection is one dpsql
// Session of it: SET statements affect the connection they run on.
type Driver struct{}

// Compile-time checks of the database/sql/driver interfaces implemented.
var (
	_ driver.Driver                         = (*Driver)(nil)
	_ driver.DriverContext                  = (*Driver)(nil)
	_ driver.Connector                      = (*connector)(nil)
	_ io.Closer                             = (*connector)(nil)
	_ driver.Conn                           = (*conn)(nil)
	_ driver.QueryerContext                 = (*conn)(nil)
	_ driver.ExecerContext                  = (*conn)(nil)
	_ driver.ConnPrepareContext             = (*conn)(nil)
	_ driver.Stmt                           = (*stmt)(nil)
	_ driver.StmtQueryContext               = (*stmt)(nil)
	_ driver.StmtExecContext                = (*stmt)(nil)
	_ driver.Rows                           = (*rows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*rows)(nil)
	_ driver.RowsColumnTypeScanType         = (*rows)(nil)
)

// ErrNoTransactions: dpsql statements are not transactional (each private
// query commits its own budget charge).
var ErrNoTransactions = errors.New("dpsql: transactions are not supported")

// Open opens a connection with an engine of its own, closed with it
// (database/sql calls OpenConnector instead; prefer sql.Open).
func (d *Driver) Open(dsn string) (driver.Conn, error) {
	c, err := d.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	dc, err := c.Connect(context.Background())
	if err != nil {
		c.(*connector).Close()
		return nil, err
	}
	dc.(*conn).owned = c.(*connector).eng // closed with the connection
	return dc, nil
}

// OpenConnector parses the DSN and opens its Engine, which every
// connection database/sql makes from it shares (sql.Open calls it; so a
// missing database is reported there).
func (d *Driver) OpenConnector(dsn string) (driver.Connector, error) {
	path, opts, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	eng, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	return &connector{drv: d, eng: eng, opts: opts}, nil
}

// ParseDSN splits a DSN into the database path and the engine options.
func ParseDSN(dsn string) (string, Options, error) {
	var opts Options
	path, query, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	vals, err := url.ParseQuery(query)
	if err != nil {
		return "", opts, fmt.Errorf("dpsql: bad DSN options %q: %w", query, err)
	}
	for k, v := range vals {
		if len(v) != 1 {
			return "", opts, fmt.Errorf("dpsql: DSN option %s given %d times", k, len(v))
		}
		switch k {
		case "role":
			switch v[0] {
			case "owner":
				opts.Owner = true
			case "analyst":
			default:
				return "", opts, fmt.Errorf("dpsql: unknown role %q (owner or analyst)", v[0])
			}
		case "postgres":
			opts.Postgres = v[0]
		case "duckdb":
			opts.DuckDB = v[0]
		case "epsilon":
			f, err := strconv.ParseFloat(v[0], 64)
			if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				return "", opts, fmt.Errorf("dpsql: epsilon must be a positive number, got %q", v[0])
			}
			opts.Epsilon = f
		case "cache":
			switch v[0] {
			case "on":
			case "off":
				opts.NoCache = true
			default:
				return "", opts, fmt.Errorf("dpsql: cache is on or off, got %q", v[0])
			}
		default:
			return "", opts, fmt.Errorf("dpsql: unknown DSN option %q (known: role, epsilon, cache, postgres, duckdb)", k)
		}
	}
	if opts.DuckDB == "" && IsDuckDBPath(path) {
		opts.DuckDB, path = DuckDBFile(path), ""
	}
	if path == "" && opts.Postgres == "" && opts.DuckDB == "" {
		return "", opts, fmt.Errorf("dpsql: empty database path in DSN %q", dsn)
	}
	return path, opts, nil
}

// connector is one DSN's engine, shared by every connection database/sql
// makes from it.
type connector struct {
	drv  *Driver
	eng  *Engine
	opts Options

	mu     sync.Mutex
	closed bool
}

// sessionOptions are the options of a DSN's sessions.
func sessionOptions(opts Options) SessionOptions {
	return SessionOptions{Owner: opts.Owner, Epsilon: opts.Epsilon, NoCache: opts.NoCache}
}

// Connect makes a session of the DSN's engine; it opens nothing.
func (c *connector) Connect(context.Context) (driver.Conn, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, errors.New("dpsql: the database handle is closed")
	}
	sess, err := c.eng.NewSession(sessionOptions(c.opts))
	if err != nil {
		return nil, err
	}
	return &conn{sess: sess}, nil
}

func (c *connector) Driver() driver.Driver { return c.drv }

// Close closes the engine (sql.DB.Close calls it, after closing every
// connection).
func (c *connector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.eng.Close()
}

// conn is one database/sql connection: a session.
type conn struct {
	sess  *Session
	owned *Engine // an engine of its own (Driver.Open), closed with it
}

func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext checks the statement's syntax now; it is parsed again and
// bound at each execution.
func (c *conn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	return prepare(c, query)
}

func (c *conn) Close() error {
	err := c.sess.Close()
	if c.owned != nil {
		if cerr := c.owned.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (c *conn) Begin() (driver.Tx, error) { return nil, ErrNoTransactions }

func namedArgs(args []driver.NamedValue) ([]any, error) {
	out := make([]any, len(args))
	for i, a := range args {
		if a.Name != "" {
			return nil, fmt.Errorf("dpsql: named parameters are not supported (use ? or $%d)", a.Ordinal)
		}
		out[i] = a.Value
	}
	return out, nil
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	vals, err := namedArgs(args)
	if err != nil {
		return nil, err
	}
	res, err := c.sess.Query(ctx, query, vals...)
	if err != nil {
		return nil, ownerHint(err)
	}
	return newRows(res), nil
}

func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	vals, err := namedArgs(args)
	if err != nil {
		return nil, err
	}
	if _, err := c.sess.Query(ctx, query, vals...); err != nil {
		return nil, ownerHint(err)
	}
	return driver.RowsAffected(0), nil
}

type stmt struct {
	c     *conn
	query string
	n     int
}

func prepare(c *conn, query string) (*stmt, error) {
	n, err := paramCount(query)
	if err != nil {
		return nil, err
	}
	return &stmt{c: c, query: query, n: n}, nil
}

func (s *stmt) Close() error  { return nil }
func (s *stmt) NumInput() int { return s.n }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), valuesToNamed(args))
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), valuesToNamed(args))
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.c.ExecContext(ctx, s.query, args)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.QueryContext(ctx, s.query, args)
}

func valuesToNamed(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return out
}

// rows iterates over a released result. Private results are small (one row
// per public group) and are materialised before release; the budget is
// already charged when rows exist.
type rows struct {
	res *Result
	i   int
}

func newRows(r *Result) *rows { return &rows{res: r} }

func (r *rows) Columns() []string {
	if r.res.Columns == nil {
		return []string{}
	}
	return r.res.Columns
}

func (r *rows) Close() error { return nil }

func (r *rows) Next(dest []driver.Value) error {
	if r.i >= len(r.res.Rows) {
		return io.EOF
	}
	for j, v := range r.res.Rows[r.i] {
		dest[j] = v
	}
	r.i++
	return nil
}

// columnValue returns the first non-NULL value of column i.
func (r *rows) columnValue(i int) any {
	for _, row := range r.res.Rows {
		if row[i] != nil {
			return row[i]
		}
	}
	return nil
}

func (r *rows) ColumnTypeDatabaseTypeName(i int) string {
	switch r.columnValue(i).(type) {
	case int64:
		return "INTEGER"
	case float64:
		return "REAL"
	case string:
		return "TEXT"
	}
	return ""
}

func (r *rows) ColumnTypeScanType(i int) reflect.Type {
	if v := r.columnValue(i); v != nil {
		return reflect.TypeOf(v)
	}
	return reflect.TypeOf((*any)(nil)).Elem()
}

// paramCount parses query (one statement) and returns how many values it
// needs.
func paramCount(query string) (int, error) {
	st, err := parser.ParseStatement(query)
	if err != nil {
		return 0, syntaxError(err)
	}
	return parser.NumParams(st), nil
}

// ownerHint adds to an owner-only refusal how a database/sql user gets
// owner mode: the shell's advice (--owner) does not apply here.
func ownerHint(err error) error {
	if errors.Is(err, ErrOwnerOnly) {
		return fmt.Errorf("%w (through database/sql, owner statements need role=owner in the DSN: file:PATH?role=owner)", err)
	}
	return err
}
