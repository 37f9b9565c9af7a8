package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dpsql/dpsql"
	"github.com/jackc/pgx/v5/pgproto3"
)

// PostgreSQL type OIDs the server uses.
const (
	oidBool    = 16
	oidInt8    = 20
	oidInt2    = 21
	oidInt4    = 23
	oidText    = 25
	oidFloat4  = 700
	oidFloat8  = 701
	oidVarchar = 1043
	oidNumeric = 1700
)

// typeBool is a column of booleans (the catalog emulation's only).
const typeBool = "BOOL"

// piece is one statement of a query string and where it starts.
type piece struct {
	text   string
	offset int // bytes into the query string
}

// splitStatements cuts a query string at the semicolons outside quotes
// and comments; pieces with nothing but blanks and comments are dropped.
func splitStatements(q string) []piece {
	var out []piece
	start := 0
	add := func(end int) {
		if t := q[start:end]; strings.TrimSpace(stripComments(t)) != "" {
			out = append(out, piece{text: t, offset: start})
		}
		start = end + 1
	}
	for i := 0; i < len(q); i++ {
		switch {
		case q[i] == '\'' || q[i] == '"':
			quote := q[i]
			for i++; i < len(q); i++ {
				if q[i] == quote {
					if i+1 < len(q) && q[i+1] == quote {
						i++
						continue
					}
					break
				}
			}
		case q[i] == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case q[i] == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				i = len(q)
			} else {
				i += end + 3
			}
		case q[i] == ';':
			add(i)
		}
	}
	add(len(q))
	return out
}

// stripComments removes -- and /* */ comments (outside quotes).
func stripComments(q string) string {
	var sb strings.Builder
	for i := 0; i < len(q); i++ {
		switch {
		case q[i] == '\'' || q[i] == '"':
			j := i + 1
			for j < len(q) && q[j] != q[i] {
				j++
			}
			end := min(j+1, len(q))
			sb.WriteString(q[i:end])
			i = end - 1
		case q[i] == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
			sb.WriteByte(' ')
		case q[i] == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return sb.String()
			}
			i += end + 3
			sb.WriteByte(' ')
		default:
			sb.WriteByte(q[i])
		}
	}
	return sb.String()
}

func oidOf(t string) (oid uint32, size int16) {
	switch t {
	case dpsql.TypeInteger:
		return oidInt8, 8
	case dpsql.TypeReal:
		return oidFloat8, 8
	case typeBool:
		return oidBool, 1
	}
	return oidText, -1
}

func format(formats []int16, i int) int16 {
	switch {
	case len(formats) == 0:
		return 0
	case len(formats) == 1:
		return formats[0]
	case i < len(formats):
		return formats[i]
	}
	return 0
}

func rowDescription(d *description, formats []int16) *pgproto3.RowDescription {
	rd := &pgproto3.RowDescription{}
	for i, name := range d.columns {
		oid, size := oidOf(d.types[i])
		rd.Fields = append(rd.Fields, pgproto3.FieldDescription{Name: []byte(name), DataTypeOID: oid, DataTypeSize: size, TypeModifier: -1, Format: format(formats, i)})
	}
	return rd
}

// encodeValue renders v as a column of type t in the given format (0
// text, 1 binary). A value that does not fit the described type is an
// error, never silently changed.
func encodeValue(v any, t string, fmtCode int16) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	switch t {
	case dpsql.TypeInteger:
		var n int64
		switch x := v.(type) {
		case int64:
			n = x
		case float64:
			if x != math.Trunc(x) || math.Abs(x) > 1<<62 {
				return nil, fmt.Errorf("value %v is not the integer the statement was described to return (use the simple query protocol)", x)
			}
			n = int64(x)
		case bool:
			n = map[bool]int64{false: 0, true: 1}[x]
		default:
			return nil, fmt.Errorf("value of type %T is not the integer the statement was described to return (use the simple query protocol)", v)
		}
		if fmtCode == 1 {
			return binary.BigEndian.AppendUint64(nil, uint64(n)), nil
		}
		return strconv.AppendInt(nil, n, 10), nil
	case dpsql.TypeReal:
		var f float64
		switch x := v.(type) {
		case int64:
			f = float64(x)
		case float64:
			f = x
		default:
			return nil, fmt.Errorf("value of type %T is not the number the statement was described to return (use the simple query protocol)", v)
		}
		if fmtCode == 1 {
			return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), nil
		}
		return []byte(floatText(f)), nil
	case typeBool:
		b, _ := v.(bool)
		if fmtCode == 1 {
			return []byte{map[bool]byte{false: 0, true: 1}[b]}, nil
		}
		return []byte(map[bool]string{false: "f", true: "t"}[b]), nil
	}
	// Text: any value in its text form (text has the same bytes in both
	// formats).
	switch x := v.(type) {
	case string:
		return []byte(x), nil
	case []byte:
		return x, nil
	case int64:
		return strconv.AppendInt(nil, x, 10), nil
	case float64:
		return []byte(floatText(x)), nil
	case bool:
		return []byte(map[bool]string{false: "f", true: "t"}[x]), nil
	}
	return []byte(fmt.Sprint(v)), nil
}

// floatText writes a float8 as PostgreSQL does (shortest exact form).
func floatText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// decodeParams turns Bind's parameter values into the Go values the
// engine binds. Typed parameters (the OIDs given at Parse) decode as
// their type; untyped ones in text form are read as an integer, else a
// number, else text — what a literal written in their place would be.
func decodeParams(p *prepared, m *pgproto3.Bind) ([]any, error) {
	if len(m.Parameters) != p.params {
		return nil, &wireError{code: "08P01", msg: fmt.Sprintf("bind message supplies %d parameters, but the prepared statement requires %d", len(m.Parameters), p.params)}
	}
	args := make([]any, len(m.Parameters))
	for i, raw := range m.Parameters {
		if raw == nil {
			continue
		}
		var oid uint32
		if i < len(p.paramOIDs) {
			oid = p.paramOIDs[i]
		}
		v, err := decodeParam(raw, oid, format(m.ParameterFormatCodes, i))
		if err != nil {
			return nil, &wireError{code: "22P02", msg: fmt.Sprintf("parameter $%d: %v", i+1, err)}
		}
		args[i] = v
	}
	return args, nil
}

func decodeParam(raw []byte, oid uint32, fmtCode int16) (any, error) {
	if fmtCode == 1 {
		switch oid {
		case oidInt8, oidInt4, oidInt2:
			switch len(raw) {
			case 8:
				return int64(binary.BigEndian.Uint64(raw)), nil
			case 4:
				return int64(int32(binary.BigEndian.Uint32(raw))), nil
			case 2:
				return int64(int16(binary.BigEndian.Uint16(raw))), nil
			}
		case oidFloat8:
			if len(raw) == 8 {
				return math.Float64frombits(binary.BigEndian.Uint64(raw)), nil
			}
		case oidFloat4:
			if len(raw) == 4 {
				return float64(math.Float32frombits(binary.BigEndian.Uint32(raw))), nil
			}
		case oidBool:
			if len(raw) == 1 {
				return raw[0] != 0, nil
			}
		case oidText, oidVarchar, 0:
			if utf8.Valid(raw) {
				return string(raw), nil
			}
		}
		return nil, fmt.Errorf("binary value of type OID %d is not supported (send it as text)", oid)
	}
	s := string(raw)
	switch oid {
	case oidText, oidVarchar:
		return s, nil
	case oidBool:
		switch strings.ToLower(s) {
		case "t", "true", "on", "1", "yes":
			return true, nil
		case "f", "false", "off", "0", "no":
			return false, nil
		}
		return nil, fmt.Errorf("invalid boolean %q", s)
	case oidInt8, oidInt4, oidInt2:
		return strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	case oidFloat8, oidFloat4, oidNumeric:
		return strconv.ParseFloat(strings.TrimSpace(s), 64)
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) && strings.TrimSpace(s) == s {
		return f, nil
	}
	return s, nil
}

// wireError is an error with its SQLSTATE.
type wireError struct{ code, msg, detail string }

func (e *wireError) Error() string { return e.msg }

// queryError is an engine error with the query string it came from, so
// that its position can be given in the string's characters.
type queryError struct {
	err    error
	query  string
	offset int
}

func (e *queryError) Error() string { return e.err.Error() }
func (e *queryError) Unwrap() error { return e.err }

// sqlstate maps an engine error to its SQLSTATE, by its kind (the kinds
// and their codes are dperr's; dpsql's own conditions are in class ZD:
// ZD001 budget exhausted, ZD002 no budget, ZD003 not answerable
// privately, ZD004 no epsilon given), and its message.
func sqlstate(err error) (string, string) {
	var we *wireError
	if errors.As(err, &we) {
		return we.code, we.msg
	}
	return dpsql.SQLState(err), err.Error()
}

// sendError sends err as an ErrorResponse; query and offset locate it
// (a position is sent when the error has one).
func (c *conn) sendError(err error, query string, offset int) {
	var qe *queryError
	if errors.As(err, &qe) {
		query, offset = qe.query, qe.offset
	}
	code, msg := sqlstate(err)
	er := &pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: code, Message: msg, Hint: dpsql.Hint(err)}
	var we *wireError
	if errors.As(err, &we) {
		er.Detail = we.detail
	}
	var pe interface{ Position() (int, int) }
	if query != "" && errors.As(err, &pe) {
		line, col := pe.Position()
		if line > 0 && col > 0 {
			er.Position = int32(position(query, offset, line, col))
		}
	}
	c.be.Send(er)
}

// position is the 1-based character position in query of line:col of
// the statement that starts at byte offset.
func position(query string, offset, line, col int) int {
	stmt := query[offset:]
	i := 0
	for l := 1; l < line && i < len(stmt); i++ {
		if stmt[i] == '\n' {
			l++
		}
	}
	for c := 1; c < col && i < len(stmt); c++ {
		_, n := utf8.DecodeRuneInString(stmt[i:])
		i += n
	}
	return utf8.RuneCountInString(query[:offset+i]) + 1
}
