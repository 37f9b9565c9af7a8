// Package cache keeps the answers of private queries, so that an identical
// query is answered again with the same released answer and no new charge
// (issue 12, "free repeats"): consistent answers, no averaging of repeated
// noisy answers, no budget spent twice on one question.
//
// Returning an answer that was already released is post-processing of that
// release, so it costs nothing. Whether a query hits the cache depends only
// on the statements asked before and on the owner's dpsql operations, never
// on the data: entries are invalidated when the owner changes a table's
// policy through dpsql (policy, bounds, domains, public/private) — not by
// looking at the rows, which would make a hit or a miss a non-private
// signal about them. Changes made to the file with other tools are not
// detected; the owner runs RESET CACHE after them.
package cache

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/interval"
)

const schema = `
CREATE TABLE IF NOT EXISTS _dpsql_cache (
	key TEXT PRIMARY KEY,
	statement TEXT NOT NULL,
	result TEXT NOT NULL,
	epsilon REAL NOT NULL,
	delta REAL NOT NULL,
	created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS _dpsql_cache_tables (
	key TEXT NOT NULL,
	table_name TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS _dpsql_cache_epochs (
	table_name TEXT PRIMARY KEY COLLATE NOCASE,
	epoch INTEGER NOT NULL
);`

// Init creates the cache's tables when they are missing (an up-to-date
// database is only read).
func Init(ctx context.Context, db *sql.DB) error {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('_dpsql_cache', '_dpsql_cache_tables', '_dpsql_cache_epochs')`).Scan(&n); err != nil {
		return err
	}
	if n == 3 {
		return nil
	}
	_, err := db.ExecContext(ctx, schema)
	return err
}

// Answer is a cached answer: what the query released, and what it cost
// when it was first asked.
type Answer struct {
	Columns     []string
	Rows        [][]any // int64, float64, string or nil
	ErrorBounds map[string]float64
	// Intervals are the values' 95% intervals, as Rows (nil: none; answers
	// cached by versions before intervals have none).
	Intervals [][]*Interval
	Notes     []string
	Epsilon   float64
	Delta     float64
	Created   time.Time
}

// value is one cell as stored: its type survives the round trip.
type value struct {
	I *int64   `json:"i,omitempty"`
	F *float64 `json:"f,omitempty"`
	S *string  `json:"s,omitempty"`
}

// Interval is a released value's 95% interval, kept with its answer
// (package interval; its JSON form is the cache's).
type Interval = interval.Interval

type stored struct {
	Columns     []string           `json:"columns"`
	Rows        [][]value          `json:"rows"`
	ErrorBounds map[string]float64 `json:"error_bounds"`
	Intervals   [][]*Interval      `json:"intervals,omitempty"`
	Notes       []string           `json:"notes"`
}

// Get returns the answer cached under key, if any.
func Get(ctx context.Context, db *sql.DB, key string) (*Answer, bool, error) {
	var text, created string
	a := &Answer{}
	err := db.QueryRowContext(ctx, `SELECT result, epsilon, delta, created FROM _dpsql_cache WHERE key = ?`, key).Scan(&text, &a.Epsilon, &a.Delta, &created)
	if err == sql.ErrNoRows {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var st stored
	if err := json.Unmarshal([]byte(text), &st); err != nil {
		return nil, false, fmt.Errorf("cache: %w", err)
	}
	a.Columns, a.ErrorBounds, a.Notes, a.Intervals = st.Columns, st.ErrorBounds, st.Notes, st.Intervals
	for _, r := range st.Rows {
		row := make([]any, len(r))
		for i, v := range r {
			switch {
			case v.I != nil:
				row[i] = *v.I
			case v.F != nil:
				row[i] = *v.F
			case v.S != nil:
				row[i] = *v.S
			}
		}
		a.Rows = append(a.Rows, row)
	}
	a.Created, _ = time.Parse(time.RFC3339Nano, created)
	return a, true, nil
}

// ErrBusy is Put's error when the database's write lock stayed taken for
// the whole wait: the answer was not stored, and may be stored later.
var ErrBusy = errors.New("cache: the database's write lock is taken")

// ErrStale is Put's error when a table the answer read changed after
// Epochs was read for it: the answer is not stored, and never will be.
var ErrStale = errors.New("cache: a table the answer read has changed since")

// Epochs is a snapshot of the invalidation counters of tables (and of
// the whole cache, RESET CACHE's), read before the data they answer
// about: Put stores an answer only while they are unchanged, so that an
// answer computed from rows a policy change or an import has since
// replaced is never stored.
type Epochs string

// ReadEpochs returns the counters of tables now.
func ReadEpochs(ctx context.Context, db *sql.DB, tables []string) (Epochs, error) {
	return readEpochs(ctx, db, tables)
}

// queryer reads rows; *sql.DB and *sql.Tx both have it.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readEpochs(ctx context.Context, db queryer, tables []string) (Epochs, error) {
	var sb strings.Builder
	for _, t := range append([]string{""}, tables...) {
		var n int64
		err := db.QueryRowContext(ctx, `SELECT epoch FROM _dpsql_cache_epochs WHERE table_name = ?`, t).Scan(&n)
		if err != nil && err != sql.ErrNoRows {
			return "", err
		}
		fmt.Fprintf(&sb, "%d,", n)
	}
	return Epochs(sb.String()), nil
}

// Put stores an answer under key, with the statement (for SHOW CACHE) and
// the tables it read (for invalidation), if the tables' counters still
// read epochs (else ErrStale). It waits at most wait for the database's
// write lock (else ErrBusy). The first answer stored under a key stays.
func Put(ctx context.Context, db *sql.DB, key, statement string, tables []string, epochs Epochs, a *Answer, wait time.Duration) error {
	st := stored{Columns: a.Columns, ErrorBounds: a.ErrorBounds, Notes: a.Notes}
	for _, r := range a.Intervals {
		row := make([]*Interval, len(r))
		for i, iv := range r {
			if iv != nil && !math.IsInf(iv.Lo, 0) && !math.IsInf(iv.Hi, 0) && !math.IsNaN(iv.Lo) && !math.IsNaN(iv.Hi) {
				row[i] = iv // JSON has no infinities: such an interval is not kept
			}
		}
		st.Intervals = append(st.Intervals, row)
	}
	for _, r := range a.Rows {
		row := make([]value, len(r))
		for i, v := range r {
			switch x := v.(type) {
			case int64:
				row[i].I = &x
			case float64:
				row[i].F = &x
			case string:
				row[i].S = &x
			case nil:
			default:
				return fmt.Errorf("cache: unexpected value %T", v)
			}
		}
		st.Rows = append(st.Rows, row)
	}
	text, err := json.Marshal(st)
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var timeout int64
	if err := conn.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&timeout); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, wait.Milliseconds())); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), fmt.Sprintf(`PRAGMA busy_timeout = %d`, timeout))
	// BEGIN IMMEDIATE takes the write lock first, so that the counters
	// read next cannot change before the answer is stored.
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return busy(err)
	}
	if err := putLocked(ctx, conn, key, statement, tables, epochs, a, string(text)); err != nil {
		_, _ = conn.ExecContext(context.Background(), `ROLLBACK`)
		return err
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		_, _ = conn.ExecContext(context.Background(), `ROLLBACK`)
		return busy(err)
	}
	return nil
}

// putLocked is Put's work inside its write transaction.
func putLocked(ctx context.Context, conn *sql.Conn, key, statement string, tables []string, epochs Epochs, a *Answer, text string) error {
	now, err := readEpochs(ctx, conn, tables)
	if err != nil {
		return err
	}
	if now != epochs {
		return ErrStale
	}
	res, err := conn.ExecContext(ctx, `INSERT OR IGNORE INTO _dpsql_cache (key, statement, result, epsilon, delta, created) VALUES (?, ?, ?, ?, ?, ?)`,
		key, statement, text, a.Epsilon, a.Delta, time.Now().UTC().Format(time.RFC3339Nano))
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		for _, t := range tables {
			if _, err := conn.ExecContext(ctx, `INSERT INTO _dpsql_cache_tables (key, table_name) VALUES (?, ?)`, key, t); err != nil {
				return err
			}
		}
	}
	return nil
}

// busy makes SQLite's "database is locked" ErrBusy.
func busy(err error) error {
	if err != nil && (strings.Contains(err.Error(), "SQLITE_BUSY") || strings.Contains(err.Error(), "database is locked")) {
		return fmt.Errorf("%w (%v)", ErrBusy, err)
	}
	return err
}

// Execer runs statements; *sql.DB, *sql.Conn and *sql.Tx all have it.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Invalidate removes the answers that read table (compared as SQLite
// compares names), inside the owner's transaction, and moves the table's
// counter on, so that an answer computed before is never stored after.
func Invalidate(ctx context.Context, db Execer, table string) error {
	if err := bump(ctx, db, table); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM _dpsql_cache WHERE key IN (SELECT key FROM _dpsql_cache_tables WHERE table_name = ? COLLATE NOCASE)`, table); err != nil {
		return err
	}
	_, err := db.ExecContext(ctx, `DELETE FROM _dpsql_cache_tables WHERE table_name = ? COLLATE NOCASE`, table)
	return err
}

// bump moves table's counter on ("" is the whole cache's).
func bump(ctx context.Context, db Execer, table string) error {
	_, err := db.ExecContext(ctx, `INSERT INTO _dpsql_cache_epochs (table_name, epoch) VALUES (?, 1) ON CONFLICT (table_name) DO UPDATE SET epoch = epoch + 1`, table)
	return err
}

// Reset empties the cache; an answer being computed now is not stored.
func Reset(ctx context.Context, db *sql.DB) (int64, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if err := bump(ctx, tx, ""); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM _dpsql_cache`)
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM _dpsql_cache_tables`); err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return n, tx.Commit()
}

// Entry is a cached answer as SHOW CACHE lists it.
type Entry struct {
	Statement string
	Tables    string
	Epsilon   float64
	Delta     float64
	Created   string
}

// List returns the cached answers, oldest first.
func List(ctx context.Context, db *sql.DB) ([]Entry, error) {
	rows, err := db.QueryContext(ctx, `SELECT c.statement, COALESCE((SELECT group_concat(table_name, ', ') FROM _dpsql_cache_tables t WHERE t.key = c.key), ''), c.epsilon, c.delta, c.created FROM _dpsql_cache c ORDER BY c.created, c.rowid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		if err := rows.Scan(&e.Statement, &e.Tables, &e.Epsilon, &e.Delta, &e.Created); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Key is the cache key of a query: its canonical statement (parameters
// bound as literals) and, as plain text, every value that shapes its plan
// and its answer (settings, analyst, policy). It holds nothing a build or
// a process chooses — no address, no pointer — so every build of dpsql
// that gives the statement the same meaning finds the same answer.
func Key(statement string, parts ...string) string {
	var sb strings.Builder
	sb.WriteString(statement)
	for _, s := range parts {
		sb.WriteString("\x1f")
		sb.WriteString(s)
	}
	return sb.String()
}

// Float prints a number for Key: exactly, and the same in every build.
func Float(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
