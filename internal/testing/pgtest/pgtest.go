// Package pgtest starts a private PostgreSQL server for tests and
// benchmarks: initdb and pg_ctl from Debian's postgresql package (or any
// on PATH), a data directory and a Unix socket in a temporary directory,
// no TCP port. It is test tooling for the PostgreSQL backend (issue 13);
// nothing in the engine imports it.
package pgtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// ErrNoServer reports that no PostgreSQL server binaries were found.
var ErrNoServer = errors.New("pgtest: no PostgreSQL server binaries (initdb, pg_ctl) found; install Debian's postgresql package")

// Server is a running PostgreSQL server.
type Server struct {
	dir    string // data directory and socket live under it
	bin    string
	runAs  *user.User // the server's OS user when the tests run as root
	socket string
}

// binDir finds the directory of initdb and pg_ctl: PATH first, then the
// newest /usr/lib/postgresql/N/bin.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return filepath.Dir(real), nil
			}
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoServer
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// Start runs initdb and starts a server in a fresh temporary directory.
// PostgreSQL refuses to run as root, so as root the server runs as the
// system user "postgres" (which the Debian package creates).
func Start(ctx context.Context) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	base := ""
	if os.Geteuid() == 0 {
		base = "/tmp" // the server's user must be able to reach its directory
	}
	dir, err := os.MkdirTemp(base, "dpsql-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin, socket: filepath.Join(dir, "sock")}
	if os.Geteuid() == 0 {
		if s.runAs, err = user.Lookup("postgres"); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: running as root needs the system user postgres: %w", err)
		}
		uid, _ := strconv.Atoi(s.runAs.Uid)
		gid, _ := strconv.Atoi(s.runAs.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.run(ctx, "mkdir", "-p", s.socket); err != nil {
		s.cleanup()
		return nil, err
	}
	if err := s.run(ctx, filepath.Join(bin, "initdb"), "-D", s.data(), "-U", "dpsql", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		s.cleanup()
		return nil, err
	}
	opts := fmt.Sprintf("-c listen_addresses='' -c unix_socket_directories=%s -c fsync=off -c max_connections=200", s.socket)
	if err := s.run(ctx, filepath.Join(bin, "pg_ctl"), "-D", s.data(), "-o", opts, "-l", filepath.Join(s.dir, "log"), "-w", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		s.cleanup()
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	return s, nil
}

// StartT starts a server for a test or benchmark and stops it at the end;
// without server binaries it skips, saying why — unless
// DPSQL_REQUIRE_POSTGRES is set (as CI sets it), when it fails.
func StartT(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start(context.Background())
	if errors.Is(err, ErrNoServer) && os.Getenv("DPSQL_REQUIRE_POSTGRES") == "" {
		tb.Skip(err.Error())
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// run runs a command, as the server's user when there is one.
func (s *Server) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if s.runAs != nil {
		// As the server's user, set on the process itself: no runuser,
		// which a shell without /usr/sbin on its PATH (env -i, su without
		// -) does not find.
		if err := runAs(cmd, s.runAs); err != nil {
			return err
		}
		cmd.Env = append(cmd.Env, "HOME="+s.runAs.HomeDir, "USER="+s.runAs.Username)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: %s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return nil
}

// DSN is a connection string for the server's database postgres, as the
// superuser dpsql, over the Unix socket.
func (s *Server) DSN() string {
	return fmt.Sprintf("host=%s user=dpsql dbname=postgres sslmode=disable", s.socket)
}

// URL is DSN as a postgres:// URL (the form dpsql's --db takes).
func (s *Server) URL() string {
	return "postgres://dpsql@/postgres?host=" + url.QueryEscape(s.socket) + "&sslmode=disable"
}

// Socket is the directory of the server's Unix socket (a libpq host,
// such as postgres_fdw's host option).
func (s *Server) Socket() string { return s.socket }

// Open connects through database/sql (driver "pgx").
func (s *Server) Open() (*sql.DB, error) { return sql.Open("pgx", s.DSN()) }

// Stop stops the server and removes its directory.
func (s *Server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = s.run(ctx, filepath.Join(s.bin, "pg_ctl"), "-D", s.data(), "-m", "immediate", "-w", "stop")
	s.cleanup()
}

func (s *Server) cleanup() { os.RemoveAll(s.dir) }

// CopyFromSQLite creates each named table of the SQLite database src in
// the server's database and copies its rows (COPY): INTEGER columns become
// bigint, REAL double precision, BLOB bytea, the rest text. A value that
// does not fit its column's type is converted by a fixed rule (convert),
// row by row, so that copies of neighbouring databases are neighbours.
// Tests use it to run the same data on both backends.
func (s *Server) CopyFromSQLite(ctx context.Context, src *sql.DB, tables ...string) error {
	return s.CopyFromSQLiteTo(ctx, s.DSN(), src, tables...)
}

// CopyFromSQLiteTo is CopyFromSQLite into the database of dsn.
func (s *Server) CopyFromSQLiteTo(ctx context.Context, dsn string, src *sql.DB, tables ...string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, name := range tables {
		rows, err := src.QueryContext(ctx, `SELECT name, type FROM pragma_table_info(?) ORDER BY cid`, name)
		if err != nil {
			return err
		}
		var cols, defs []string
		var types []string
		for rows.Next() {
			var c, typ string
			if err := rows.Scan(&c, &typ); err != nil {
				rows.Close()
				return err
			}
			pgType := TypeOf(typ)
			cols = append(cols, c)
			types = append(types, pgType)
			defs = append(defs, pgx.Identifier{c}.Sanitize()+" "+pgType)
		}
		rows.Close()
		if len(cols) == 0 {
			return fmt.Errorf("pgtest: SQLite has no table %q", name)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE "+pgx.Identifier{name}.Sanitize()+" ("+strings.Join(defs, ", ")+")"); err != nil {
			return err
		}
		data, err := src.QueryContext(ctx, "SELECT * FROM "+pgx.Identifier{name}.Sanitize())
		if err != nil {
			return err
		}
		var batch [][]any
		for data.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := data.Scan(ptrs...); err != nil {
				data.Close()
				return err
			}
			for i, v := range vals {
				vals[i] = Convert(types[i], v)
			}
			batch = append(batch, vals)
		}
		data.Close()
		if err := data.Err(); err != nil {
			return err
		}
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{name}, cols, pgx.CopyFromRows(batch)); err != nil {
			return fmt.Errorf("pgtest: copying %s: %w", name, err)
		}
	}
	return nil
}

// TypeOf is the PostgreSQL type a copied SQLite column of declared type
// decl gets: INTEGER bigint, REAL double precision, BLOB bytea, the rest
// text.
func TypeOf(decl string) string {
	switch strings.ToUpper(decl) {
	case "INTEGER", "INT":
		return "bigint"
	case "REAL", "FLOAT", "DOUBLE":
		return "double precision"
	case "BLOB":
		return "bytea"
	}
	return "text"
}

// Convert fits a SQLite value to a PostgreSQL column type: integral reals
// into bigint, integers into double precision, text without NUL and in
// UTF-8 as it is, any other value into text as its SQLite-like printing
// (blobs as X'..'), and what still does not fit (text in a number
// column, a fraction in bigint) as NULL.
func Convert(pgType string, v any) any {
	switch pgType {
	case "bigint":
		switch x := v.(type) {
		case int64:
			return x
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
				return int64(x)
			}
		}
		return nil
	case "double precision":
		switch x := v.(type) {
		case int64:
			return float64(x)
		case float64:
			return x
		}
		return nil
	case "bytea":
		switch x := v.(type) {
		case []byte:
			return x
		case string:
			return []byte(x)
		}
		return nil
	}
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if utf8.ValidString(x) && !strings.ContainsRune(x, 0) {
			return x
		}
		return fmt.Sprintf("X'%X'", x)
	case []byte:
		if utf8.Valid(x) && !bytes.ContainsRune(x, 0) {
			return string(x)
		}
		return fmt.Sprintf("X'%X'", x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// CreateDatabase creates a database on the server and returns its DSN.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return fmt.Sprintf("host=%s user=dpsql dbname=%s sslmode=disable", s.socket, name), nil
}
