package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"modernc.org/sqlite/vtab"
)

// cursor reads one mirrored table for one SQLite statement. SQLite calls
// Filter once per scan: once for most statements, once per outer row
// when the table is the inner side of a join. So that every scan of the
// cursor sees the same rows under the same identities (a joined table
// without a unit column is bounded by its identity column), the cursor
// keeps one connection and one REPEATABLE READ snapshot for its whole
// life, and each row's identity is its physical one in that snapshot.
// So that a join does not scan PostgreSQL once per outer row, the second
// scan is recorded and every later one replayed from memory.
type cursor struct {
	t       *table
	ctx     context.Context
	cancel  context.CancelFunc
	tx      pgx.Tx // nil until the first Filter
	release func() // gives the connection back
	scans   int

	rows     pgx.Rows // the running scan, or nil when replaying
	record   bool     // rows of the running scan are kept in recorded
	recorded []recordedRow
	complete bool   // recorded holds a whole scan of recFor
	recFor   string // the idxStr recorded
	recGroup bool   // the recorded scan was grouped (weighted)
	replay   int    // next recorded row, when replaying

	raw        []rawDecoder // the running scan's decoders (rawDecoders), or nil
	filtered   bool         // the running scan sent comparisons
	used       []int        // the used table columns, in result order
	pos        []int        // table column → position in the result, or -1
	weighted   bool         // the result's last column is the weight
	identified bool         // the result's last two columns are the row's identity
	vals       []any
	rowid      int64 // a counter (SQLite's rowid; dpsql reads the identity column instead)
	identity   int64
	eof        bool
}

type recordedRow struct {
	vals     []any
	identity int64
}

func (t *table) Open() (vtab.Cursor, error) {
	ctx, cancel := context.WithCancel(context.Background())
	return &cursor{t: t, ctx: ctx, cancel: cancel}, nil
}

// begin takes a connection and opens the cursor's snapshot. A pooled
// connection is used when one is free at once; otherwise the cursor opens
// one of its own, because the pool may be held by other cursors of the
// same statement (a join holds one per table) or of statements waiting
// for this one: waiting for the pool could deadlock.
func (c *cursor) begin() error {
	pool := c.t.src.Pool // the engine closes it after its SQLite connections
	var conn *pgx.Conn
	actx, cancel := context.WithTimeout(c.ctx, 20*time.Millisecond)
	pc, err := pool.Acquire(actx)
	cancel()
	if err == nil {
		conn, c.release = pc.Conn(), pc.Release
	} else {
		cfg := pool.Config().ConnConfig.Copy()
		if cfg.ConnectTimeout == 0 {
			cfg.ConnectTimeout = 10 * time.Second
		}
		own, err := pgx.ConnectConfig(c.ctx, cfg)
		if err != nil {
			return err
		}
		conn, c.release = own, func() { own.Close(context.Background()) }
	}
	c.tx, err = conn.BeginTx(c.ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		c.release()
		c.release = nil
	}
	return err
}

func (c *cursor) Filter(_ int, idxStr string, vals []vtab.Value) error {
	c.stopScan()
	cols, filters, _ := strings.Cut(idxStr, "|")
	if err := c.columns(cols); err != nil {
		return err
	}
	c.scans++
	c.eof, c.rowid, c.identity, c.filtered = false, 0, 0, false
	if c.complete && c.recFor == idxStr {
		c.replay, c.weighted = 0, c.recGroup
		return c.Next()
	}
	if c.tx == nil {
		if err := c.begin(); err != nil {
			return err
		}
	}
	if c.weighted {
		// The statistics are read under a savepoint: whatever happens
		// to that query, the snapshot's transaction stays usable.
		pays := true
		if sp, err := c.tx.Begin(c.ctx); err == nil {
			pays = c.t.groupingPays(c.ctx, sp, c.used)
			_ = sp.Rollback(c.ctx)
		}
		if !pays {
			c.weighted = false // every row is sent, each with weight 1
		}
	}
	// The first scan sends the pushed comparisons (with this scan's
	// values); a second one is recorded for every later scan to replay,
	// whatever their values (a join's inner side gets one per outer row),
	// so it reads every row and SQLite checks them.
	var where string
	var args []any
	if c.scans == 1 && filters != "" {
		where, args = c.t.where(strings.Split(filters, ","), vals)
	}
	c.filtered = where != ""
	q := c.t.selectSQL(c.used, c.weighted, c.identified, where)
	c.t.src.observe(q)
	rows, err := c.tx.Query(c.ctx, q, args...)
	if err != nil {
		return err
	}
	c.rows = rows
	c.raw = rawDecoders(rows.FieldDescriptions())
	// The first scan streams; a second one means more will follow (a
	// join's inner side), so it is kept.
	c.record = c.scans >= 2
	c.recorded, c.complete, c.recFor, c.recGroup = c.recorded[:0], false, idxStr, c.weighted
	return c.Next()
}

// columns reads the used columns from idxStr (BestIndex).
func (c *cursor) columns(idxStr string) error {
	c.used, c.weighted, c.identified = c.used[:0], false, false
	c.pos = make([]int, len(c.t.cols))
	for i := range c.pos {
		c.pos[i] = -1
	}
	if idxStr == "" {
		return nil
	}
	for _, s := range strings.Split(idxStr, ",") {
		switch s {
		case "w":
			c.weighted = true
		case "r":
			c.identified = true
		default:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(c.t.cols) {
				return fmt.Errorf("%s: bad column list %q", Module, idxStr)
			}
			c.pos[i] = len(c.used)
			c.used = append(c.used, i)
		}
	}
	return nil
}

func (c *cursor) Next() error {
	if c.rows == nil { // replaying
		if c.replay >= len(c.recorded) {
			c.eof = true
			return nil
		}
		r := c.recorded[c.replay]
		c.replay++
		c.vals, c.identity = r.vals, r.identity
		c.rowid++
		return nil
	}
	if !c.rows.Next() {
		c.eof = true
		err := c.rows.Err()
		c.complete = err == nil && c.record
		c.stopScan()
		return err
	}
	vals := c.decodeRaw()
	if vals == nil {
		var err error
		if vals, err = c.rows.Values(); err != nil {
			return err
		}
	}
	c.vals = vals
	c.rowid++
	if c.identified && !c.weighted {
		c.identity = rowidOf(vals[len(vals)-2], vals[len(vals)-1])
	}
	if c.record {
		c.recorded = append(c.recorded, recordedRow{vals, c.identity})
	}
	return nil
}

// decodeRaw decodes the current row from its bytes (rawDecoders), or
// returns nil for pgx to decode it.
func (c *cursor) decodeRaw() []any {
	if c.raw == nil {
		return nil
	}
	raws := c.rows.RawValues()
	if len(raws) != len(c.raw) {
		return nil
	}
	vals := make([]any, len(raws))
	for i, b := range raws {
		if b == nil {
			continue // NULL
		}
		v, ok := c.raw[i](b)
		if !ok {
			return nil
		}
		vals[i] = v
	}
	return vals
}

// rowidOf is a row's identity from its table's oid and its ctid (block,
// offset): unique within a table, and within a partitioned table unless
// two partitions' oids agree in their low 15 bits — then two rows may
// share one, which bounding treats as one unit's rows (it keeps fewer,
// never more).
func rowidOf(oid, ctid any) int64 {
	o, _ := oid.(int64)
	tid, _ := ctid.(pgtype.TID)
	return (o<<48 ^ int64(tid.BlockNumber)<<16 | int64(tid.OffsetNumber)) & (1<<63 - 1)
}

func (c *cursor) Eof() bool { return c.eof }

func (c *cursor) Column(col int) (vtab.Value, error) {
	switch col {
	case 0: // the weight
		if !c.weighted {
			return int64(1), nil
		}
		return c.vals[len(c.used)], nil // COUNT(*): an int64 ≥ 1
	case 1: // the identity
		if c.weighted {
			return c.rowid, nil // not reached: dpsql never groups a table it joins
		}
		return c.identity, nil
	}
	col -= hidden
	if col < 0 || col >= len(c.pos) || c.pos[col] < 0 {
		return nil, nil // a column the statement does not use
	}
	v := c.vals[c.pos[col]]
	if b, ok := v.([]byte); ok && c.weighted && c.t.cols[col].kind == kindReal && len(b) == 8 {
		return floatFromBits(b), nil
	}
	return sqliteValue(c.t.cols[col].kind, v), nil
}

// Rowid is a row counter. A scan that sent comparisons refuses it: only
// a plan merging several filtered scans by rowid would ask (BestIndex's
// costs keep SQLite from choosing one), and there a counter would merge
// different rows — a statement fails rather than drop rows.
func (c *cursor) Rowid() (int64, error) {
	if c.filtered {
		return 0, fmt.Errorf("%s: a filtered scan has no rowids", Module)
	}
	return c.rowid, nil
}

// stopScan ends the running scan without reading the rest of its rows.
func (c *cursor) stopScan() {
	if c.rows != nil {
		c.rows.Close()
		c.rows = nil
	}
}

func (c *cursor) Close() error {
	c.cancel() // stops a running query instead of draining its rows
	c.stopScan()
	if c.tx != nil {
		_ = c.tx.Rollback(context.Background()) // read only: nothing to keep
		c.tx = nil
	}
	if c.release != nil {
		c.release()
		c.release = nil
	}
	return nil
}
