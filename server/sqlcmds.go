package server

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
)

// PostgreSQL's session-level SQL commands that clients send on their
// own (psycopg2's named cursors, psql's \copy of a result, ORMs'
// PREPARE/EXECUTE): the statement inside each is an ordinary dpsql
// statement, run (and charged) once, when it runs.

var (
	rePrepare    = regexp.MustCompile(`(?is)^PREPARE\s+("(?:[^"]|"")+"|\w+)\s*(?:\([^)]*\))?\s+AS\s+(.+)$`)
	reExecute    = regexp.MustCompile(`(?is)^EXECUTE\s+("(?:[^"]|"")+"|\w+)\s*(?:\((.*)\))?$`)
	reDeallocate = regexp.MustCompile(`(?is)^DEALLOCATE\s+(?:PREPARE\s+)?("(?:[^"]|"")+"|\w+)$`)
	reDeclare    = regexp.MustCompile(`(?is)^DECLARE\s+("(?:[^"]|"")+"|\w+)\s+(?:BINARY\s+)?(?:(?:NO\s+)?SCROLL\s+)?CURSOR\s+(?:WITH(?:OUT)?\s+HOLD\s+)?FOR\s+(.+)$`)
	reFetch      = regexp.MustCompile(`(?is)^(FETCH|MOVE)\s+(?:(NEXT|PRIOR|FIRST|LAST|ABSOLUTE\s+[+-]?\d+|RELATIVE\s+[+-]?\d+|FORWARD(?:\s+(?:ALL|[+-]?\d+))?|BACKWARD(?:\s+(?:ALL|[+-]?\d+))?|ALL|[+-]?\d+)\s+)?(?:(?:FROM|IN)\s+)?("(?:[^"]|"")+"|\w+)$`)
	reClose      = regexp.MustCompile(`(?is)^CLOSE\s+("(?:[^"]|"")+"|\w+)$`)
	reCopy       = regexp.MustCompile(`(?is)^COPY\s*\((.+)\)\s*TO\s+STDOUT\s*(.*)$`)
)

// cursor is a DECLAREd cursor: its query's answer, read by FETCH and
// MOVE. pos is PostgreSQL's cursor position: 0 before the first row, k on
// row k, len(rows)+1 after the last.
type cursor struct {
	a   *answer
	pos int
}

// move carries out a FETCH or MOVE direction (as PostgreSQL's: NEXT,
// PRIOR, FIRST, LAST, ABSOLUTE n, RELATIVE n, n, ALL, FORWARD [n|ALL],
// BACKWARD [n|ALL]; "" is NEXT) and returns the rows it passes over, in
// the order a FETCH returns them. The answer was released whole when the
// cursor was declared: moving in it reads nothing new.
func (c *cursor) move(direction string) [][]any {
	all := c.a.rows
	n := len(all)
	f := strings.Fields(strings.ToUpper(direction))
	count := func(i int) int { // the count after a keyword, or ALL
		if len(f) <= i {
			return 1
		}
		if f[i] == "ALL" {
			return n + 1
		}
		v, _ := strconv.Atoi(f[i])
		return v
	}
	at := func(k int) [][]any { // position on row k (clamped), returning it if it exists
		c.pos = max(0, min(k, n+1))
		if c.pos >= 1 && c.pos <= n {
			return all[c.pos-1 : c.pos]
		}
		return nil
	}
	steps := 1
	switch {
	case len(f) == 0 || f[0] == "NEXT":
	case f[0] == "PRIOR":
		steps = -1
	case f[0] == "FIRST":
		return at(1)
	case f[0] == "LAST":
		return at(n)
	case f[0] == "ABSOLUTE":
		k := count(1)
		if k < 0 {
			k = n + 1 + k
		}
		return at(k)
	case f[0] == "RELATIVE":
		k := count(1)
		if k == 0 {
			return at(c.pos)
		}
		return at(c.pos + k)
	case f[0] == "FORWARD":
		steps = count(1)
	case f[0] == "BACKWARD":
		steps = -count(1)
	case f[0] == "ALL":
		steps = n + 1
	default:
		steps = count(0)
	}
	var rows [][]any
	switch {
	case steps > 0:
		for i := 0; i < steps && c.pos <= n; i++ {
			c.pos++
			if c.pos <= n {
				rows = append(rows, all[c.pos-1])
			}
		}
	case steps < 0:
		for i := 0; i < -steps && c.pos >= 1; i++ {
			c.pos--
			if c.pos >= 1 {
				rows = append(rows, all[c.pos-1])
			}
		}
	default: // FETCH 0, FORWARD 0, BACKWARD 0: the current row
		return at(c.pos)
	}
	return rows
}

// identName reads a name as PostgreSQL does: quoted as written, else
// folded to lower case.
func identName(s string) string {
	if strings.HasPrefix(s, `"`) {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return strings.ToLower(s)
}

// sessionCommand answers PREPARE, EXECUTE, DEALLOCATE, DECLARE ...
// CURSOR, FETCH, CLOSE and COPY (SELECT ...) TO STDOUT; ok is false for
// any other statement.
func (c *conn) sessionCommand(text string) (a *answer, err error, ok bool) {
	q := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(stripComments(text)), ";"))
	word := ""
	if f := strings.Fields(q); len(f) > 0 {
		word, _, _ = strings.Cut(f[0], "(") // COPY(SELECT ...)
	}
	var re *regexp.Regexp
	switch strings.ToUpper(word) {
	case "PREPARE":
		re = rePrepare
	case "EXECUTE":
		re = reExecute
	case "DEALLOCATE":
		re = reDeallocate
	case "DECLARE":
		re = reDeclare
	case "FETCH", "MOVE":
		re = reFetch
	case "CLOSE":
		re = reClose
	case "COPY":
		re = reCopy
	default:
		return nil, nil, false // most statements: no pattern to try
	}
	m := re.FindStringSubmatch(q)
	if m == nil {
		return nil, nil, false
	}
	switch re {
	case rePrepare, reDeclare, reCopy:
		// As in PostgreSQL, the statement inside is a query, never another
		// session command: so no EXECUTE can reach itself (PREPARE a AS
		// EXECUTE a once overflowed the server's stack and ended every
		// session).
		body := m[len(m)-1]
		if re == reCopy {
			body = m[1]
		}
		if w := sessionWord(body); w != "" {
			return nil, &wireError{code: "42601", msg: fmt.Sprintf("%s takes a query, not %s", strings.ToUpper(word), w)}, true
		}
	}
	switch re {
	case rePrepare, reExecute, reDeallocate:
		return c.preparedCommand(re, m)
	case reDeclare, reFetch, reClose:
		return c.cursorCommand(re, m)
	case reCopy:
		csvFormat, header, err := copyOptions(m[2])
		if err != nil {
			return nil, err, true
		}
		res, err := c.run(m[1], nil)
		if err != nil {
			return nil, err, true
		}
		res.copyOut = &copyOut{csv: csvFormat, header: header}
		return res, nil, true
	}
	return nil, nil, false
}

// preparedCommand runs PREPARE name AS query, EXECUTE name (args) and
// DEALLOCATE name|ALL (m: re's match).
func (c *conn) preparedCommand(re *regexp.Regexp, m []string) (*answer, error, bool) {
	switch re {
	case rePrepare:
		if c.sqlPrepared == nil {
			c.sqlPrepared = map[string]string{}
		}
		name := identName(m[1])
		if _, dup := c.sqlPrepared[name]; dup {
			return nil, &wireError{code: "42P05", msg: fmt.Sprintf("prepared statement %q already exists", name)}, true
		}
		c.sqlPrepared[name] = m[2]
		return &answer{tag: "PREPARE"}, nil, true
	case reExecute:
		stmt, found := c.sqlPrepared[identName(m[1])]
		if !found {
			return nil, &wireError{code: "26000", msg: fmt.Sprintf("prepared statement %q does not exist", identName(m[1]))}, true
		}
		args, err := literalArgs(m[2])
		if err != nil {
			return nil, err, true
		}
		a, err := c.run(stmt, args)
		return a, err, true
	}
	if strings.EqualFold(m[1], "all") {
		c.sqlPrepared = nil
	} else {
		delete(c.sqlPrepared, identName(m[1]))
	}
	return &answer{tag: "DEALLOCATE"}, nil, true
}

// cursorCommand runs DECLARE name CURSOR FOR query, FETCH|MOVE [count]
// [FROM|IN] name and CLOSE name|ALL (m: re's match).
func (c *conn) cursorCommand(re *regexp.Regexp, m []string) (*answer, error, bool) {
	switch re {
	case reDeclare:
		name := identName(m[1])
		if _, dup := c.cursors[name]; dup {
			return nil, &wireError{code: "42P03", msg: fmt.Sprintf("cursor %q already exists", name)}, true
		}
		res, err := c.run(m[2], nil)
		if err != nil {
			return nil, err, true
		}
		if c.cursors == nil {
			c.cursors = map[string]*cursor{}
		}
		c.cursors[name] = &cursor{a: res}
		return &answer{tag: "DECLARE CURSOR", notices: res.notices}, nil, true
	case reFetch:
		cur, found := c.cursors[identName(m[3])]
		if !found {
			return nil, &wireError{code: "34000", msg: fmt.Sprintf("cursor %q does not exist", identName(m[3]))}, true
		}
		rows := cur.move(m[2])
		if strings.EqualFold(m[1], "MOVE") {
			return &answer{tag: fmt.Sprintf("MOVE %d", len(rows))}, nil, true
		}
		desc := cur.a.desc
		if desc == nil {
			desc = &description{}
		}
		return &answer{desc: desc, rows: rows, tag: fmt.Sprintf("FETCH %d", len(rows))}, nil, true
	}
	if strings.EqualFold(m[1], "all") {
		c.cursors = nil
	} else {
		delete(c.cursors, identName(m[1]))
	}
	return &answer{tag: "CLOSE CURSOR"}, nil, true
}

// sessionWord is the session command that text starts with (PREPARE,
// EXECUTE, DEALLOCATE, DECLARE, FETCH, CLOSE or COPY, upper case), or "".
func sessionWord(text string) string {
	q := strings.TrimLeft(stripComments(text), " \t\r\n(")
	f := strings.Fields(q)
	if len(f) == 0 {
		return ""
	}
	w, _, _ := strings.Cut(strings.ToUpper(f[0]), "(")
	switch w {
	case "PREPARE", "EXECUTE", "DEALLOCATE", "DECLARE", "FETCH", "MOVE", "CLOSE", "COPY":
		return w
	}
	return ""
}

// literalArgs reads EXECUTE's arguments: numbers, quoted strings and
// NULL, separated by commas.
func literalArgs(list string) ([]any, error) {
	var args []any
	s := strings.TrimSpace(list)
	for s != "" {
		var v any
		switch {
		case strings.HasPrefix(s, "'"):
			var sb strings.Builder
			i := 1
			for ; i < len(s); i++ {
				if s[i] == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' {
						sb.WriteByte('\'')
						i++
						continue
					}
					break
				}
				sb.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, &wireError{code: "42601", msg: "unterminated string in EXECUTE's arguments"}
			}
			v, s = sb.String(), s[i+1:]
		default:
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			tok := strings.TrimSpace(s[:end])
			s = s[end:]
			switch {
			case strings.EqualFold(tok, "null"):
				v = nil
			default:
				if i, err := strconv.ParseInt(tok, 10, 64); err == nil {
					v = i
				} else if f, err := strconv.ParseFloat(tok, 64); err == nil {
					v = f
				} else {
					return nil, &wireError{code: "42601", msg: fmt.Sprintf("EXECUTE takes numbers, quoted strings and NULL as arguments, got %q", tok)}
				}
			}
		}
		args = append(args, v)
		s = strings.TrimSpace(s)
		if strings.HasPrefix(s, ",") {
			s = strings.TrimSpace(s[1:])
		} else if s != "" {
			return nil, &wireError{code: "42601", msg: fmt.Sprintf("unexpected %q in EXECUTE's arguments", s)}
		}
	}
	return args, nil
}

// copyOut is how an answer goes out as COPY ... TO STDOUT.
type copyOut struct {
	csv, header bool
}

var reCopyOpt = regexp.MustCompile(`(?i)\b(FORMAT\s+(csv|text)|CSV|HEADER(?:\s+(true|false|on|off))?|DELIMITER|NULL|QUOTE|ESCAPE|ENCODING|BINARY)\b`)

// copyOptions reads COPY's options: FORMAT csv|text (or CSV) and HEADER;
// others are refused rather than ignored.
func copyOptions(opts string) (csvFormat, header bool, err error) {
	rest := reCopyOpt.ReplaceAllStringFunc(opts, func(o string) string {
		f := strings.Fields(strings.ToUpper(o))
		switch {
		case f[0] == "CSV" || (f[0] == "FORMAT" && f[1] == "CSV"):
			csvFormat = true
		case f[0] == "FORMAT":
		case f[0] == "HEADER":
			header = len(f) == 1 || f[1] == "TRUE" || f[1] == "ON"
		default:
			err = &wireError{code: "0A000", msg: "COPY TO STDOUT takes FORMAT csv|text and HEADER; " + f[0] + " is not supported"}
		}
		return ""
	})
	if err == nil && strings.Trim(rest, " ,()") != "" && !strings.EqualFold(strings.TrimSpace(strings.Trim(rest, " ,()")), "WITH") {
		err = &wireError{code: "0A000", msg: fmt.Sprintf("COPY TO STDOUT: unsupported options %q", strings.TrimSpace(rest))}
	}
	return csvFormat, header, err
}

// sendCopy sends an answer as COPY's output: CopyOutResponse, a CopyData
// per line, CopyDone.
func (c *conn) sendCopy(a *answer) error {
	for _, n := range a.notices {
		c.be.Send(&pgproto3.NoticeResponse{Severity: "NOTICE", SeverityUnlocalized: "NOTICE", Code: "00000", Message: n})
	}
	cols := 0
	if a.desc != nil {
		cols = len(a.desc.columns)
	}
	c.be.Send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, cols)})
	line := func(fields []string, nulls []bool) []byte {
		if a.copyOut.csv {
			var buf bytes.Buffer
			w := csv.NewWriter(&buf)
			_ = w.Write(fields)
			w.Flush()
			return buf.Bytes()
		}
		for i, f := range fields {
			if nulls != nil && nulls[i] {
				fields[i] = `\N`
				continue
			}
			fields[i] = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`).Replace(f)
		}
		return []byte(strings.Join(fields, "\t") + "\n")
	}
	if a.copyOut.header && a.desc != nil {
		c.be.Send(&pgproto3.CopyData{Data: line(append([]string(nil), a.desc.columns...), nil)})
	}
	for _, row := range a.rows {
		fields := make([]string, len(row))
		nulls := make([]bool, len(row))
		for j, v := range row {
			if v == nil {
				nulls[j] = true
				continue
			}
			b, err := encodeValue(v, a.desc.types[j], 0)
			if err != nil {
				return err
			}
			fields[j] = string(b)
		}
		c.be.Send(&pgproto3.CopyData{Data: line(fields, nulls)})
	}
	c.be.Send(&pgproto3.CopyDone{})
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(fmt.Sprintf("COPY %d", len(a.rows)))})
	return nil
}
