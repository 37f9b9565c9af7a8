package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/access"
	"github.com/jackc/pgx/v5/pgproto3"
)

// conn is one client connection.
type conn struct {
	srv    *Server
	nc     net.Conn
	be     *pgproto3.Backend
	remote string
	tls    bool
	params map[string]string // the startup packet's
	user   string
	owner  bool
	sess   *dpsql.Session
	pid    uint32
	secret []byte

	mu      sync.Mutex
	busy    bool
	closed  bool
	running context.CancelFunc // the running statement's
	// statementTimeout is the client's SET statement_timeout (0: none).
	statementTimeout time.Duration

	stmts   map[string]*prepared
	portals map[string]*portal
	// depth is how many session commands (EXECUTE, DECLARE, COPY) the
	// statement running now is inside (run).
	depth int
	// sqlPrepared are SQL PREPAREd statements, cursors the DECLAREd ones.
	sqlPrepared map[string]string
	cursors     map[string]*cursor
	skipping    bool // an extended-protocol error: skip until Sync
}

// prepared is a statement of the extended protocol.
type prepared struct {
	query     string
	params    int
	paramOIDs []uint32
	desc      *description // once described
}

// portal is a bound statement, with its answer once executed.
type portal struct {
	stmt    *prepared
	args    []any
	formats []int16
	res     *answer
	sent    int // rows sent so far (Execute with a row limit)
}

// description is a result's shape as the client is told it.
type description struct {
	columns []string
	types   []string // dpsql.TypeInteger, TypeReal, TypeText, typeBool
}

// answer is one statement's outcome as the wire sends it.
type answer struct {
	desc    *description // nil: no rows
	rows    [][]any
	tag     string
	notices []string
	copyOut *copyOut // set: sent as COPY ... TO STDOUT
}

func (c *conn) who() string {
	if c.owner {
		return c.user + " (owner)"
	}
	return c.user
}

// fatal sends a FATAL error; the connection then closes.
func (c *conn) fatal(code, msg string) {
	c.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
	_ = c.be.Flush()
}

// shutdown ends an idle connection at once; a busy one ends after its
// statement, or at once with force (its statement cancelled).
func (c *conn) shutdown(force bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.busy && !force {
		return // serve sees closing after the statement
	}
	if c.running != nil {
		c.running()
	}
	if !c.busy {
		// The serving goroutine is blocked reading: nothing else writes.
		msg, _ := (&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01", Message: "terminating connection: the server is shutting down"}).Encode(nil)
		_, _ = c.nc.Write(msg)
	}
	c.closed = true
	c.nc.Close()
}

func (c *conn) cancelStatement() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != nil {
		c.running()
	}
}

// setBusy marks the connection busy (or idle) and reports whether it
// should go on.
func (c *conn) setBusy(b bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy = b
	return !c.closed
}

// serve reads and answers messages until the client leaves, idles out
// or the server shuts down.
func (c *conn) serve() {
	c.stmts, c.portals = map[string]*prepared{}, map[string]*portal{}
	defer c.sess.Close()
	for {
		if d := c.srv.cfg.IdleTimeout; d > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(d))
		}
		msg, err := c.be.Receive()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.fatal("57P05", fmt.Sprintf("terminating connection: idle for more than %s", c.srv.cfg.IdleTimeout))
			}
			return
		}
		_ = c.nc.SetReadDeadline(time.Time{})
		if !c.setBusy(true) {
			return
		}
		quit := c.dispatch(msg)
		if quit {
			return
		}
		// As PostgreSQL does, answers to the extended protocol's messages
		// wait in the buffer until Sync or Flush: one write per round trip.
		switch msg.(type) {
		case *pgproto3.Query, *pgproto3.Sync, *pgproto3.Flush:
			if err := c.be.Flush(); err != nil {
				return
			}
		}
		if !c.setBusy(false) {
			return
		}
		c.srv.mu.Lock()
		closing := c.srv.closing
		c.srv.mu.Unlock()
		if closing {
			c.fatal("57P01", "terminating connection: the server is shutting down")
			return
		}
	}
}

// dispatch answers one message; it reports whether the connection ends.
func (c *conn) dispatch(msg pgproto3.FrontendMessage) bool {
	switch m := msg.(type) {
	case *pgproto3.Query:
		c.simpleQuery(m.String)
		c.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	case *pgproto3.Sync:
		c.skipping = false
		c.be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	case *pgproto3.Flush:
	case *pgproto3.Terminate:
		return true
	case *pgproto3.Parse, *pgproto3.Bind, *pgproto3.Describe, *pgproto3.Execute, *pgproto3.Close:
		if c.skipping {
			return false
		}
		if err := c.extended(m); err != nil {
			c.sendError(err, "", 0)
			c.skipping = true
		}
	default:
		c.fatal("08P01", fmt.Sprintf("unexpected message %T", msg))
		return true
	}
	return false
}

// simpleQuery runs each statement of a Query message in order, stopping
// at the first error.
func (c *conn) simpleQuery(text string) {
	pieces := splitStatements(text)
	if len(pieces) == 0 {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
		return
	}
	for _, p := range pieces {
		a, err := c.run(p.text, nil)
		if err != nil {
			c.sendError(err, text, p.offset)
			return
		}
		if a.copyOut != nil {
			if err := c.sendCopy(a); err != nil {
				c.sendError(err, "", 0)
				return
			}
			continue
		}
		if a.desc != nil {
			c.be.Send(rowDescription(a.desc, nil))
		}
		if err := c.sendRows(a, a.rows, nil); err != nil {
			c.sendError(err, "", 0)
			return
		}
		c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(commandTag(a))})
	}
}

// run answers one statement: from the catalog emulation, or by the
// session as the connected analyst.
// track makes cancel the running statement's, for a CancelRequest or
// the connection's close (calling it at once if the connection is
// closing), and returns what ends that.
func (c *conn) track(cancel context.CancelFunc) (untrack func()) {
	c.mu.Lock()
	c.running = cancel
	closed := c.closed
	c.mu.Unlock()
	if closed {
		cancel()
	}
	return func() {
		c.mu.Lock()
		c.running = nil
		c.mu.Unlock()
		cancel()
	}
}

// maxNesting bounds how deep session commands nest (EXECUTE of a query
// is 2).
const maxNesting = 4

func (c *conn) run(text string, args []any) (*answer, error) {
	// Session commands run the statements they hold through run: a
	// limit on the nesting keeps any form that could reach itself from
	// growing the stack (sessionCommand refuses the known ones).
	if c.depth >= maxNesting {
		return nil, &wireError{code: "54001", msg: fmt.Sprintf("statement nested more than %d deep in session commands", maxNesting)}
	}
	c.depth++
	defer func() { c.depth-- }()
	if a, err, ok := c.sessionCommand(text); ok {
		return a, err
	}
	if a, err, ok := c.emulate(text); ok {
		return a, err
	}
	st := access.Statement{Who: c.who(), Remote: c.remote, Via: "wire", Text: text, Timeout: c.timeout(), Track: c.track}
	res, err := access.Run(context.Background(), c.srv.log, st, func(ctx context.Context) (*dpsql.Result, error) {
		return c.sess.Query(ctx, text, args...)
	}, func(err error) string { code, _ := sqlstate(err); return code })
	var stopped *access.Cancelled
	if errors.As(err, &stopped) {
		// Cancelled (a CancelRequest, shutdown) or timed out: say which,
		// as PostgreSQL does; the engine's own message, in the detail,
		// says whether the query's cost was charged before it stopped (a
		// private query charged before that stays charged).
		return nil, &wireError{code: "57014", msg: stopped.Reason(), detail: stopped.Err.Error()}
	}
	if err != nil {
		return nil, err
	}
	a := &answer{rows: res.Rows, tag: tagOf(text)}
	if res.Columns != nil {
		a.desc = &description{columns: pgColumns(res.Columns, res.PostgresColumns), types: res.Types()}
	}
	if res.Message != "" {
		a.notices = append(a.notices, res.Message)
	}
	a.notices = append(a.notices, res.Notes...)
	if n := costNotice(res); n != "" {
		a.notices = append(a.notices, n)
	}
	return a, nil
}

// maxIntervalRows is how many rows' intervals the cost notice lists.
const maxIntervalRows = 20

// costNotice says what a private query spent and each released value's
// 95% interval, row by row ("" for other statements). SET
// interval_columns = on gives the intervals as columns instead.
func costNotice(res *dpsql.Result) string {
	if res.Cost.Epsilon == 0 && res.Cost.Delta == 0 && res.Intervals == nil {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "spent ε=%g, δ=%g", res.Cost.Epsilon, res.Cost.Delta)
	if res.Cost.Epsilon == 0 && res.Cost.Delta == 0 {
		sb.Reset()
		sb.WriteString("answered from the cache, nothing spent")
	}
	var rows []string
	for r, ivs := range res.Intervals {
		if r == maxIntervalRows {
			rows = append(rows, fmt.Sprintf("… (%d rows in all)", len(res.Intervals)))
			break
		}
		var parts []string
		for j, iv := range ivs {
			if iv != nil && j < len(res.Columns) {
				part := fmt.Sprintf("%s [%.6g, %.6g]", res.Columns[j], iv.Lo, iv.Hi)
				if iv.Wide {
					part += " (few rows)"
				}
				parts = append(parts, part)
			}
		}
		if len(parts) > 0 {
			rows = append(rows, fmt.Sprintf("row %d: %s", r+1, strings.Join(parts, ", ")))
		}
	}
	if len(rows) > 0 {
		sb.WriteString("; 95% intervals: " + strings.Join(rows, "; "))
	}
	return sb.String()
}

// sendRows sends an answer's notices and rows (without RowDescription).
func (c *conn) sendRows(a *answer, rows [][]any, formats []int16) error {
	for _, n := range a.notices {
		c.be.Send(&pgproto3.NoticeResponse{Severity: "NOTICE", SeverityUnlocalized: "NOTICE", Code: "00000", Message: n})
	}
	a.notices = nil
	for _, row := range rows {
		vals := make([][]byte, len(row))
		for j, v := range row {
			b, err := encodeValue(v, a.desc.types[j], format(formats, j))
			if err != nil {
				return fmt.Errorf("column %q: %w", a.desc.columns[j], err)
			}
			vals[j] = b
		}
		c.be.Send(&pgproto3.DataRow{Values: vals})
	}
	return nil
}

// extended handles the extended query protocol's messages.
func (c *conn) extended(msg pgproto3.FrontendMessage) error {
	switch m := msg.(type) {
	case *pgproto3.Parse:
		if _, dup := c.stmts[m.Name]; dup && m.Name != "" {
			return &wireError{code: "42P05", msg: fmt.Sprintf("prepared statement %q already exists", m.Name)}
		}
		p := &prepared{query: m.Query, paramOIDs: m.ParameterOIDs}
		if _, _, ok := c.emulate(m.Query); !ok {
			pieces := splitStatements(m.Query)
			if len(pieces) > 1 {
				return &wireError{code: "42601", msg: "cannot insert multiple commands into a prepared statement"}
			}
			if len(pieces) == 1 {
				n, err := dpsql.CheckSyntax(pieces[0].text)
				if err != nil {
					return &queryError{err: err, query: m.Query, offset: pieces[0].offset}
				}
				p.params = n
			}
		}
		c.stmts[m.Name] = p
		c.be.Send(&pgproto3.ParseComplete{})
	case *pgproto3.Bind:
		p, ok := c.stmts[m.PreparedStatement]
		if !ok {
			return &wireError{code: "26000", msg: fmt.Sprintf("prepared statement %q does not exist", m.PreparedStatement)}
		}
		args, err := decodeParams(p, m)
		if err != nil {
			return err
		}
		c.portals[m.DestinationPortal] = &portal{stmt: p, args: args, formats: m.ResultFormatCodes}
		c.be.Send(&pgproto3.BindComplete{})
	case *pgproto3.Describe:
		if m.ObjectType == 'S' {
			p, ok := c.stmts[m.Name]
			if !ok {
				return &wireError{code: "26000", msg: fmt.Sprintf("prepared statement %q does not exist", m.Name)}
			}
			oids := make([]uint32, max(p.params, len(p.paramOIDs)))
			copy(oids, p.paramOIDs)
			c.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: oids})
			d, err := c.describe(p)
			if err != nil {
				return err
			}
			c.sendDescription(d, nil)
			return nil
		}
		pt, ok := c.portals[m.Name]
		if !ok {
			return &wireError{code: "34000", msg: fmt.Sprintf("portal %q does not exist", m.Name)}
		}
		d, err := c.describe(pt.stmt)
		if err != nil {
			return err
		}
		c.sendDescription(d, pt.formats)
	case *pgproto3.Execute:
		pt, ok := c.portals[m.Portal]
		if !ok {
			return &wireError{code: "34000", msg: fmt.Sprintf("portal %q does not exist", m.Portal)}
		}
		if len(splitStatements(pt.stmt.query)) == 0 {
			c.be.Send(&pgproto3.EmptyQueryResponse{})
			return nil
		}
		if pt.res == nil {
			a, err := c.run(pt.stmt.query, pt.args)
			if err != nil {
				return &queryError{err: err, query: pt.stmt.query}
			}
			if a.desc != nil {
				// Values go out as the statement was described.
				d, err := c.describe(pt.stmt)
				if err != nil {
					return err
				}
				if len(d.columns) == len(a.desc.columns) {
					a.desc = d
				}
			}
			pt.res = a
		}
		rows := pt.res.rows[pt.sent:]
		if m.MaxRows > 0 && int(m.MaxRows) < len(rows) {
			rows = rows[:m.MaxRows]
		}
		if err := c.sendRows(pt.res, rows, pt.formats); err != nil {
			return err
		}
		pt.sent += len(rows)
		if pt.sent < len(pt.res.rows) {
			c.be.Send(&pgproto3.PortalSuspended{})
			return nil
		}
		c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(commandTag(pt.res))})
	case *pgproto3.Close:
		if m.ObjectType == 'S' {
			delete(c.stmts, m.Name)
		} else {
			delete(c.portals, m.Name)
		}
		c.be.Send(&pgproto3.CloseComplete{})
	}
	return nil
}

// describe says what a prepared statement returns, once.
func (c *conn) describe(p *prepared) (*description, error) {
	if p.desc != nil {
		return p.desc, nil
	}
	if a, err, ok := c.emulate(p.query); ok {
		if err != nil {
			return nil, err
		}
		p.desc = &description{}
		if a.desc != nil {
			p.desc = a.desc
		}
		return p.desc, nil
	}
	pieces := splitStatements(p.query)
	if len(pieces) == 0 {
		p.desc = &description{}
		return p.desc, nil
	}
	d, err := c.sess.Describe(context.Background(), pieces[0].text)
	if err != nil {
		return nil, &queryError{err: err, query: p.query, offset: pieces[0].offset}
	}
	p.desc = &description{columns: pgColumns(d.Columns, d.PostgresColumns), types: d.Types}
	return p.desc, nil
}

// pgColumns are the names sent to the client: PostgreSQL's (count, avg),
// when the engine gives them.
func pgColumns(columns, postgres []string) []string {
	if len(postgres) == len(columns) {
		return postgres
	}
	return columns
}

func (c *conn) sendDescription(d *description, formats []int16) {
	if d.columns == nil {
		c.be.Send(&pgproto3.NoData{})
		return
	}
	c.be.Send(rowDescription(d, formats))
}

// tagOf is the command tag of a statement without rows: its leading
// keywords, as PostgreSQL names them ("SET", "CREATE ANALYST", ...).
func tagOf(text string) string {
	words := strings.Fields(strings.ToUpper(stripComments(text)))
	if len(words) == 0 {
		return ""
	}
	switch words[0] {
	case "CREATE", "ALTER", "DROP":
		if len(words) > 1 && words[1] == "PRIVACY" {
			return words[0] + " PRIVACY POLICY"
		}
		if len(words) > 1 {
			return words[0] + " " + words[1]
		}
	}
	return words[0]
}

// commandTag completes an answer: SELECT n for rows.
func commandTag(a *answer) string {
	if a.desc != nil && (a.tag == "SELECT" || a.tag == "WITH" || a.tag == "") {
		return fmt.Sprintf("SELECT %d", len(a.rows))
	}
	if a.desc != nil && a.tag != "SHOW" && a.tag != "EXPLAIN" {
		return fmt.Sprintf("SELECT %d", len(a.rows))
	}
	return a.tag
}

// timeout is the statement timeout in force on the connection: the
// client's SET statement_timeout, else the server's --statement-timeout;
// the shorter when both are set.
func (c *conn) timeout() time.Duration {
	d := c.srv.cfg.StatementTimeout
	c.mu.Lock()
	own := c.statementTimeout
	c.mu.Unlock()
	if own > 0 && (d == 0 || own < d) {
		return own
	}
	return d
}

// setStatementTimeout reads SET statement_timeout's value as PostgreSQL
// does: an integer in milliseconds, or a number with a unit (us, ms, s,
// min, h, d), quoted or not; 0 or DEFAULT turns the client's off.
func (c *conn) setStatementTimeout(value string) error {
	v := strings.ToLower(strings.Trim(strings.TrimSpace(value), `'"`))
	var d time.Duration
	if v != "default" && v != "0" {
		m := reDuration.FindStringSubmatch(v)
		if m == nil {
			return &wireError{code: "22023", msg: fmt.Sprintf("invalid value for parameter \"statement_timeout\": %q (milliseconds, or a number with a unit: 500ms, 30s, 5min)", value)}
		}
		n, _ := strconv.ParseFloat(m[1], 64)
		unit := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
		d = time.Duration(n * float64(unit))
	}
	c.mu.Lock()
	c.statementTimeout = d
	c.mu.Unlock()
	return nil
}

// reDuration is a PostgreSQL time setting: a number and an optional unit.
var reDuration = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*(us|ms|s|min|h|d)?$`)
