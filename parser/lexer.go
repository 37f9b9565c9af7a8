package parser

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dpsql/dpsql/dperr"
)

// Pos is a position in the SQL text: a byte offset and a 1-based line and
// column (columns count runes). It is dperr's, so that every layer's
// errors carry the same positions.
type Pos = dperr.Pos

// tokenKind classifies a lexical token.
type tokenKind int

const (
	tokEOF tokenKind = iota
	tokIdent
	tokQuotedIdent
	tokInt
	tokFloat
	tokString
	tokOp    // punctuation and operators
	tokParam // a numbered parameter $N; text holds N
	tokIllegal
)

// token is one lexical token; text holds the identifier name (unquoted),
// the string value, the number's spelling or the operator.
type token struct {
	kind tokenKind
	text string
	pos  Pos
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokIdent:
		return fmt.Sprintf("%q", t.text)
	case tokQuotedIdent:
		return fmt.Sprintf("identifier %q", t.text)
	case tokString:
		return fmt.Sprintf("string '%s'", t.text)
	case tokInt, tokFloat:
		return "number " + t.text
	case tokParam:
		return "parameter $" + t.text
	case tokOp:
		return fmt.Sprintf("%q", t.text)
	}
	return t.text
}

// is reports whether t is the keyword or operator s (keywords case-insensitively).
func (t token) is(s string) bool {
	switch t.kind {
	case tokIdent:
		return upperASCII(t.text) == upperASCII(s)
	case tokOp:
		return t.text == s
	}
	return false
}

// lexer turns SQL text into tokens. It never fails: bad input becomes a
// tokIllegal token, which the parser reports with its position.
type lexer struct {
	src  string
	off  int
	line int
	col  int
}

func newLexer(src string) *lexer { return &lexer{src: src, line: 1, col: 1} }

func (l *lexer) pos() Pos { return Pos{Offset: l.off, Line: l.line, Col: l.col} }

func (l *lexer) peekRune(ahead int) rune {
	off := l.off
	for i := 0; ; i++ {
		if off >= len(l.src) {
			return -1
		}
		r, n := utf8.DecodeRuneInString(l.src[off:])
		if i == ahead {
			return r
		}
		off += n
	}
}

func (l *lexer) advance() rune {
	if l.off >= len(l.src) {
		return -1
	}
	r, n := utf8.DecodeRuneInString(l.src[l.off:])
	l.off += n
	if r == '\n' {
		l.line++
		l.col = 1
	} else {
		l.col++
	}
	return r
}

// skipSpace skips whitespace and comments; an unterminated block comment is
// returned as an illegal token.
func (l *lexer) skipSpace() *token {
	for {
		r := l.peekRune(0)
		switch {
		case r == -1:
			return nil
		case unicode.IsSpace(r):
			l.advance()
		case r == '-' && l.peekRune(1) == '-':
			for r := l.peekRune(0); r != -1 && r != '\n'; r = l.peekRune(0) {
				l.advance()
			}
		case r == '/' && l.peekRune(1) == '*':
			start := l.pos()
			l.advance()
			l.advance()
			for {
				r := l.peekRune(0)
				if r == -1 {
					return &token{kind: tokIllegal, text: "unterminated comment", pos: start}
				}
				if r == '*' && l.peekRune(1) == '/' {
					l.advance()
					l.advance()
					break
				}
				l.advance()
			}
		default:
			return nil
		}
	}
}

var twoCharOps = []string{"<=", ">=", "<>", "!=", "==", "||", "=>"}

func (l *lexer) next() token {
	if bad := l.skipSpace(); bad != nil {
		return *bad
	}
	start := l.pos()
	r := l.peekRune(0)
	switch {
	case r == -1:
		return token{kind: tokEOF, pos: start}
	case r == '_' || unicode.IsLetter(r):
		b := l.off
		for r := l.peekRune(0); r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r); r = l.peekRune(0) {
			l.advance()
		}
		return token{kind: tokIdent, text: l.src[b:l.off], pos: start}
	case isDigit(r) || (r == '.' && isDigit(l.peekRune(1))):
		return l.number(start)
	case r == '\'':
		s, ok := l.quoted('\'')
		if !ok {
			return token{kind: tokIllegal, text: "unterminated string", pos: start}
		}
		return token{kind: tokString, text: s, pos: start}
	case r == '"' || r == '`':
		s, ok := l.quoted(r)
		if !ok {
			return token{kind: tokIllegal, text: "unterminated quoted identifier", pos: start}
		}
		if s == "" {
			return token{kind: tokIllegal, text: "empty quoted identifier", pos: start}
		}
		return token{kind: tokQuotedIdent, text: s, pos: start}
	}
	for _, op := range twoCharOps {
		if strings.HasPrefix(l.src[l.off:], op) {
			l.advance()
			l.advance()
			return token{kind: tokOp, text: op, pos: start}
		}
	}
	if r == '$' && isDigit(l.peekRune(1)) {
		l.advance()
		b := l.off
		for isDigit(l.peekRune(0)) {
			l.advance()
		}
		return token{kind: tokParam, text: l.src[b:l.off], pos: start}
	}
	if strings.ContainsRune("+-*/%=<>(),;.?", r) {
		l.advance()
		return token{kind: tokOp, text: string(r), pos: start}
	}
	l.advance()
	return token{kind: tokIllegal, text: fmt.Sprintf("unexpected character %q", r), pos: start}
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

func (l *lexer) number(start Pos) token {
	b := l.off
	kind := tokInt
	for isDigit(l.peekRune(0)) {
		l.advance()
	}
	if l.peekRune(0) == '.' {
		kind = tokFloat
		l.advance()
		for isDigit(l.peekRune(0)) {
			l.advance()
		}
	}
	if r := l.peekRune(0); r == 'e' || r == 'E' {
		next := l.peekRune(1)
		if isDigit(next) || ((next == '+' || next == '-') && isDigit(l.peekRune(2))) {
			kind = tokFloat
			l.advance()
			l.advance()
			for isDigit(l.peekRune(0)) {
				l.advance()
			}
		}
	}
	if r := l.peekRune(0); r == '_' || unicode.IsLetter(r) {
		for r := l.peekRune(0); r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r); r = l.peekRune(0) {
			l.advance()
		}
		return token{kind: tokIllegal, text: fmt.Sprintf("malformed number %q", l.src[b:l.off]), pos: start}
	}
	return token{kind: kind, text: l.src[b:l.off], pos: start}
}

// quoted reads a quoted string or identifier; a doubled quote stands for one.
func (l *lexer) quoted(q rune) (string, bool) {
	l.advance()
	var sb strings.Builder
	for {
		r := l.advance()
		switch {
		case r == -1:
			return "", false
		case r == q && l.peekRune(0) == q:
			l.advance()
			sb.WriteRune(q)
		case r == q:
			return sb.String(), true
		default:
			sb.WriteRune(r)
		}
	}
}

// RedactPasswords returns src with the string literal after each PASSWORD
// keyword replaced by '***', for logs and history files: CREATE ANALYST
// and ALTER ANALYST carry a password in clear. Comments between the
// keyword and the literal do not hide it; the rest of src is unchanged.
func RedactPasswords(src string) string {
	l := newLexer(src)
	var sb strings.Builder
	copied := 0
	afterPassword := false
	for {
		t := l.next()
		if t.kind == tokIllegal && afterPassword && t.text == "unterminated string" {
			sb.WriteString(src[copied:t.pos.Offset])
			sb.WriteString("'***")
			copied = len(src)
		}
		if t.kind == tokEOF || t.kind == tokIllegal {
			break
		}
		if t.kind == tokString && afterPassword {
			sb.WriteString(src[copied:t.pos.Offset])
			sb.WriteString("'***'")
			copied = l.off
		}
		afterPassword = t.is("PASSWORD")
	}
	if copied == 0 {
		return src
	}
	sb.WriteString(src[copied:])
	return sb.String()
}
