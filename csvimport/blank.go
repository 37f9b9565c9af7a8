package csvimport

import (
	"bytes"
	"io"
)

// blankKeeper passes a CSV stream through, writing an empty quoted field
// ("") on every blank line after the first, so that encoding/csv, which
// skips blank lines, reads each one as a record of one empty field: in a
// one-column file that is an empty value, as sqlite3's .import and
// DuckDB's read_csv keep it; in a wider file the reader refuses it (see
// csvSource.read). Line numbers are unchanged (no line break is added).
//
// It tracks quoting with one bit: a '"' opens or closes a quoted field, and
// a doubled "" inside one closes and reopens it. encoding/csv rejects a
// bare quote in an unquoted field, so for every file it accepts the bit is
// exact, and a line break inside quotes is never taken for a blank line.
type blankKeeper struct {
	r        io.Reader
	buf      []byte // read from r, not yet passed on
	out      []byte // to pass on before anything else
	inQuote  bool
	started  bool // a line with content was met (encoding/csv skips blank lines before the header)
	atStart  bool // the last byte passed on ended a line outside quotes
	pendingR bool // a '\r' at the start of a line, waiting to see whether '\n' follows
	err      error
}

func newBlankKeeper(r io.Reader) *blankKeeper {
	return &blankKeeper{r: r, buf: make([]byte, 0, 64<<10)}
}

func (b *blankKeeper) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if len(b.buf) == 0 {
			if b.err != nil {
				if b.pendingR {
					b.pendingR = false
					b.out = append(b.out, '\r')
					break
				}
				return 0, b.err
			}
			n, err := b.r.Read(b.buf[:cap(b.buf)])
			b.buf = b.buf[:n]
			b.err = err
			continue
		}
		b.scan()
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// scan moves the buffered bytes to out, adding "" before each blank line's
// break.
func (b *blankKeeper) scan() {
	b.out = b.out[:0]
	data := b.buf
	for len(data) > 0 {
		if b.pendingR {
			b.pendingR = false
			if data[0] == '\n' {
				b.out = append(b.out, '"', '"', '\r', '\n')
				data = data[1:]
				b.atStart = true
				continue
			}
			b.out = append(b.out, '\r')
			b.atStart = false
		}
		if b.atStart && !b.inQuote {
			switch data[0] {
			case '\n':
				b.out = append(b.out, '"', '"', '\n')
				data = data[1:]
				continue
			case '\r':
				b.pendingR = true
				data = data[1:]
				continue
			}
		}
		b.atStart = false
		// Copy up to and including the next quote or line feed.
		i := bytes.IndexAny(data, "\"\n")
		if i < 0 {
			if len(data) > 1 || data[0] != '\r' {
				b.started = true
			}
			b.out = append(b.out, data...)
			data = nil
			break
		}
		b.out = append(b.out, data[:i+1]...)
		if data[i] == '"' {
			b.inQuote = !b.inQuote
			b.started = true
		} else if !b.inQuote {
			if i > 0 && !(i == 1 && data[0] == '\r') {
				b.started = true
			}
			b.atStart = b.started
		}
		data = data[i+1:]
	}
	b.buf = b.buf[:0]
}
