package parser

import (
	"fmt"
	"github.com/dpsql/dpsql/dperr"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Error is one syntax error at a position.
type Error struct {
	Pos Pos
	Msg string
	// Kind is the error's kind when it is more than a syntax error (an
	// unknown function: dperr.UndefinedFunction); nil means dperr.Syntax.
	Kind *dperr.Kind
	// Hint suggests what to write instead, or is "".
	Hint string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Position returns the error's line and column.
func (e *Error) Position() (line, col int) { return e.Pos.Line, e.Pos.Col }

// Unwrap gives the error's kind: dperr.Syntax unless Kind says more.
func (e *Error) Unwrap() error {
	if e.Kind != nil {
		return e.Kind
	}
	return dperr.Syntax
}

// ErrorList is a list of syntax errors, in source order.
type ErrorList []*Error

func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", l[0], len(l)-1)
}

// Position returns the first error's line and column.
func (l ErrorList) Position() (line, col int) {
	if len(l) == 0 {
		return 0, 0
	}
	return l[0].Pos.Line, l[0].Pos.Col
}

// Err returns nil for an empty list, else the list sorted by position.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	sort.SliceStable(l, func(i, j int) bool { return l[i].Pos.Offset < l[j].Pos.Offset })
	return l
}

// maxErrors is how many errors a script may produce before parsing stops.
const maxErrors = 10

// bailout is the private panic that stops parsing; only ParseScript recovers it.
type bailout struct{}

// reserved words cannot be used as bare column or table names.
var reserved = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "GROUP": true, "BY": true, "HAVING": true,
	"ORDER": true, "LIMIT": true, "OFFSET": true, "AS": true, "AND": true, "OR": true, "NOT": true,
	"IN": true, "BETWEEN": true, "LIKE": true, "IS": true, "NULL": true, "TRUE": true, "FALSE": true,
	"CASE": true, "WHEN": true, "THEN": true, "ELSE": true, "END": true, "CAST": true,
	"DISTINCT": true, "ASC": true, "DESC": true, "WITH": true, "ON": true, "JOIN": true,
	"UNION": true, "EXCEPT": true, "INTERSECT": true, "ALL": true, "SET": true, "CREATE": true,
	"ALTER": true, "DROP": true, "TABLE": true, "EXPLAIN": true, "SHOW": true, "INSERT": true,
	"UPDATE": true, "DELETE": true, "ATTACH": true, "DETACH": true, "PRAGMA": true,
	"LEFT": true, "RIGHT": true, "INNER": true, "OUTER": true, "CROSS": true, "USING": true,
}

// aggregateNames are the aggregate functions the grammar accepts; the
// planner decides which of them it can answer privately.
var aggregateNames = map[string]bool{
	"COUNT": true, "SUM": true, "AVG": true, "MIN": true, "MAX": true,
	"VAR_POP": true, "VARIANCE": true, "STDDEV_POP": true, "STDDEV": true,
	"VAR_SAMP": true, "STDDEV_SAMP": true, "VAR": true, "STD": true,
	"MEDIAN": true, "PERCENTILE_CONT": true, "APPROX_QUANTILES": true,
}

// scalarFuncs are the deterministic scalar functions of the dialect, with
// their minimum and maximum argument counts (-1: no maximum).
var scalarFuncs = map[string][2]int{
	"ABS": {1, 1}, "ROUND": {1, 2}, "COALESCE": {2, -1}, "IFNULL": {2, 2}, "NULLIF": {2, 2},
	"LOWER": {1, 1}, "UPPER": {1, 1}, "LENGTH": {1, 1}, "SUBSTR": {2, 3}, "TRIM": {1, 1},
	"LTRIM": {1, 1}, "RTRIM": {1, 1}, "REPLACE": {3, 3}, "INSTR": {2, 2},
	"SQRT": {1, 1}, "EXP": {1, 1}, "LN": {1, 1}, "LOG10": {1, 1}, "POWER": {2, 2},
	"FLOOR": {1, 1}, "CEIL": {1, 1}, "SIGN": {1, 1},
	"PI": {0, 0}, "IF": {3, 3}, "IIF": {3, 3}, // IF(c, a, b): BigQuery's; IIF: SQLite's name
	"RAND": {0, 0},                  // uniform in [0, 1) (SmartNoise's, BigQuery's); not deterministic
	"MIN":  {2, -1}, "MAX": {2, -1}, // with two or more arguments MIN and MAX are scalar
	// JSON_EXTRACT(json, '$.path') (SQLite's; JSON_VALUE is BigQuery's
	// name): NULL for text that is not JSON; the path is a constant.
	"JSON_EXTRACT": {2, 2}, "JSON_VALUE": {2, 2},
}

// windowFuncs are the window-only functions (SQLite's), with their
// argument counts; aggregates take OVER too. Both are for public queries
// and queries over released results: the planner refuses them on
// private tables.
var windowFuncs = map[string][2]int{
	"ROW_NUMBER": {0, 0}, "RANK": {0, 0}, "DENSE_RANK": {0, 0}, "PERCENT_RANK": {0, 0}, "CUME_DIST": {0, 0},
	"NTILE": {1, 1}, "LAG": {1, 3}, "LEAD": {1, 3}, "FIRST_VALUE": {1, 1}, "LAST_VALUE": {1, 1}, "NTH_VALUE": {2, 2},
}

// upperASCII changes the case of ASCII letters only, as SQLite does for
// keywords and names: "ſ" (U+017F) is not "s" to SQLite, so it must not be
// to dpsql either.
func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}

// FoldName folds an identifier exactly as SQLite compares identifiers:
// ASCII letters A–Z become a–z and every other byte stays as it is. Go's
// Unicode case folding must never be used on names: it would make the
// planner and SQLite resolve one name to different objects (U+0130 "İ"
// folds to "i" in Go, and not at all in SQLite).
func FoldName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// Complete reports whether src ends with a complete statement, as
// sqlite3_complete does: its last token, comments aside, is ';', and no
// string, quoted identifier or comment is left open. An interactive shell
// asks it whether to run what was typed or to read another line.
func Complete(src string) bool {
	l := newLexer(src)
	var last token
	for {
		t := l.next()
		switch {
		case t.kind == tokEOF:
			return last.kind == tokOp && last.text == ";"
		case t.kind == tokIllegal && strings.HasPrefix(t.text, "unterminated"):
			return false
		}
		last = t
	}
}

// Split cuts a script into its statements' texts at the semicolons
// between them (not those in strings, quoted names or comments), each
// without its ';' and the space around it; blank pieces are dropped. A
// console that runs several statements records each under its own text.
func Split(src string) []string {
	var out []string
	l := newLexer(src)
	start := 0
	cut := func(end int) {
		if piece := strings.TrimSpace(src[start:end]); !Blank(piece) {
			out = append(out, piece)
		}
	}
	for {
		t := l.next()
		if t.kind == tokEOF || t.kind == tokIllegal && strings.HasPrefix(t.text, "unterminated") {
			cut(len(src))
			return out
		}
		if t.kind == tokOp && t.text == ";" {
			cut(t.pos.Offset)
			start = t.pos.Offset + 1
		}
	}
}

// Blank reports whether src holds nothing but whitespace and complete
// comments: no statement has begun.
func Blank(src string) bool { return newLexer(src).next().kind == tokEOF }

// ScalarFunctions returns the dialect's scalar functions with their
// minimum and maximum argument counts (-1: no maximum).
func ScalarFunctions() map[string][2]int {
	out := make(map[string][2]int, len(scalarFuncs))
	for k, v := range scalarFuncs {
		out[k] = v
	}
	return out
}

// IsAggregate reports whether call is an aggregate call (MIN and MAX with
// one argument are aggregates, with more they are scalar).
func IsAggregate(call *CallExpr) bool {
	if !aggregateNames[call.Name] || call.Over != nil {
		return false
	}
	if call.Name == "MIN" || call.Name == "MAX" {
		return len(call.Args) == 1 && !call.Star
	}
	return true
}

type parser struct {
	lex     *lexer
	tok     token
	errs    ErrorList
	params  int // '?' parameters seen so far
	depth   int // current nesting, see MaxDepth
	maxErrs int // bail out after this many errors (< 0: never)
}

// ParseScript parses a semicolon-separated list of statements. Positions are
// relative to the whole script. On error it returns an ErrorList and the
// statements that precede the first error.
func ParseScript(src string) ([]Stmt, error) {
	stmts, errs := parseScript(src, maxErrors)
	if err := errs.Err(); err != nil {
		// Keep the statements before the first error: a script runner
		// executes those, then reports the error.
		first := errs[0].Pos.Offset
		n := 0
		for n < len(stmts) && stmts[n].Pos().Offset < first {
			n++
		}
		return stmts[:n], err
	}
	return stmts, nil
}

// ScriptItem is one statement of a script, or the syntax error that stands
// in place of a statement that did not parse.
type ScriptItem struct {
	Stmt Stmt
	Err  *Error
}

// ParseScriptItems parses every statement of a script, recovering after
// each syntax error at the next ';', and returns statements and errors in
// source order (for runners that go on after errors).
func ParseScriptItems(src string) []ScriptItem {
	stmts, errs := parseScript(src, -1)
	errs.Err() // sorts
	var items []ScriptItem
	i, j := 0, 0
	for i < len(stmts) || j < len(errs) {
		if j == len(errs) || (i < len(stmts) && stmts[i].Pos().Offset < errs[j].Pos.Offset) {
			items = append(items, ScriptItem{Stmt: stmts[i]})
			i++
		} else {
			items = append(items, ScriptItem{Err: errs[j]})
			j++
		}
	}
	return items
}

// parseScript parses statements until the end, or until limit errors
// (limit < 0: no limit).
func parseScript(src string, limit int) ([]Stmt, ErrorList) {
	p := &parser{lex: newLexer(src), maxErrs: limit}
	p.next()
	var stmts []Stmt
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(bailout); !ok {
					panic(r)
				}
			}
		}()
		for p.tok.kind != tokEOF {
			if p.tok.is(";") {
				p.next()
				continue
			}
			if s := p.statementOrSync(); s != nil {
				stmts = append(stmts, s)
			}
		}
	}()
	return stmts, p.errs
}

// ParseStatement parses exactly one statement (a trailing ';' is allowed).
func ParseStatement(src string) (Stmt, error) {
	stmts, err := ParseScript(src)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		return nil, ErrorList{{Pos: Pos{Offset: 0, Line: 1, Col: 1}, Msg: fmt.Sprintf("expected one statement, found %d", len(stmts))}}
	}
	return stmts[0], nil
}

// ParseExpr parses a single scalar expression (used by tests and tools).
func ParseExpr(src string) (Expr, error) {
	p := &parser{lex: newLexer(src), maxErrs: maxErrors}
	p.next()
	var e Expr // p.depth starts at 0
	func() {
		defer func() {
			if r := recover(); r != nil {
				_, bail := r.(bailout)
				_, stop := r.(stmtError)
				if !bail && !stop {
					panic(r)
				}
			}
		}()
		e = p.expr()
		if p.tok.kind != tokEOF {
			p.fail(p.tok.pos, "expected end of expression, found %s", p.tok.describe())
		}
	}()
	if err := p.errs.Err(); err != nil {
		return nil, err
	}
	return e, nil
}

// stmtError carries a statement-level error up to statementOrSync.
type stmtError struct{}

func (p *parser) statementOrSync() (s Stmt) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stmtError); !ok {
				panic(r)
			}
			s = nil
			for p.tok.kind != tokEOF && !p.tok.is(";") {
				p.next()
			}
		}
	}()
	p.depth = 0
	s = p.statement()
	if p.tok.kind != tokEOF && !p.tok.is(";") {
		p.fail(p.tok.pos, "expected ';' or end of input, found %s", p.tok.describe())
	}
	return s
}

func (p *parser) next() { p.tok = p.lex.next() }

// peekKind is the kind of the token after the current one.
func (p *parser) peekKind() tokenKind {
	l := *p.lex
	return l.next().kind
}

// peekIs reports whether the token after the current one is s.
func (p *parser) peekIs(s string) bool {
	l := *p.lex // the lexer is plain values: a copy looks ahead
	return l.next().is(s)
}

// ShowKinds are dpsql's own SHOW statements (SHOW POLICY takes a table):
// the one list the parser, the wire server (which answers every other
// SHOW as a PostgreSQL setting) and the error messages read.
var ShowKinds = []string{"BUDGET", "TABLES", "POLICY", "COLUMNS", "LEDGER", "CACHE", "ANALYSTS", "WATCHES"}

// MaxDepth bounds how deeply expressions and subqueries may nest (and how
// long a chain of binary operators may be, since each link nests the
// tree one level deeper). Without it a few hundred kilobytes of
// parentheses overflow Go's stack, which kills the process. The engine
// prints each level in at most two levels of SQL, so statements within
// it stay within SQLite's own limit of 1,000.
const MaxDepth = 400

// deeper enters one more level of nesting at pos.
func (p *parser) deeper(pos Pos) {
	p.depth++
	if p.depth > MaxDepth {
		p.fail(pos, "expression nested too deeply (more than %d levels)", MaxDepth)
	}
}

// restoreDepth returns to a depth saved on entry (deferred).
func (p *parser) restoreDepth(d int) { p.depth = d }

// fail records an error and abandons the current statement. When the
// current token is a lexical error, that error is reported instead.
func (p *parser) fail(pos Pos, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if p.tok.kind == tokIllegal {
		pos, msg = p.tok.pos, p.tok.text
	}
	e := &Error{Pos: pos, Msg: msg}
	if p.tok.kind == tokIllegal && p.tok.text == `unexpected character ':'` {
		e.Hint = "dpsql has no :: casts: write CAST(x AS type)"
	}
	p.errs = append(p.errs, e)
	if p.maxErrs >= 0 && len(p.errs) >= p.maxErrs {
		panic(bailout{})
	}
	panic(stmtError{})
}

// failKind is fail with an error of a kind other than syntax.
func (p *parser) failKind(pos Pos, kind *dperr.Kind, format string, args ...any) {
	p.errs = append(p.errs, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...), Kind: kind})
	if p.maxErrs >= 0 && len(p.errs) >= p.maxErrs {
		panic(bailout{})
	}
	panic(stmtError{})
}

func (p *parser) expect(s string) Pos {
	pos := p.tok.pos
	if !p.tok.is(s) {
		p.fail(pos, "expected %s, found %s", quoteWord(s), p.tok.describe())
	}
	p.next()
	return pos
}

func quoteWord(s string) string {
	if len(s) > 0 && (s[0] >= 'A' && s[0] <= 'Z' || s[0] >= 'a' && s[0] <= 'z') {
		return upperASCII(s)
	}
	return "'" + s + "'"
}

func (p *parser) accept(s string) bool {
	if p.tok.is(s) {
		p.next()
		return true
	}
	return false
}

func (p *parser) statement() Stmt {
	t := p.tok
	switch {
	case t.is("SELECT"), t.is("WITH"):
		return p.selectStmt()
	case t.is("EXPLAIN"):
		p.next()
		if !p.tok.is("SELECT") && !p.tok.is("WITH") {
			p.fail(p.tok.pos, "expected SELECT after EXPLAIN, found %s", p.tok.describe())
		}
		return &ExplainStmt{ExplainPos: t.pos, Query: p.selectStmt()}
	case t.is("SET"):
		return p.setStmt()
	case t.is("RESET"):
		p.next()
		if p.accept("CACHE") {
			return &ResetCacheStmt{ResetPos: t.pos}
		}
		p.expect("BUDGET")
		return &ResetBudgetStmt{ResetPos: t.pos}
	case t.is("DESCRIBE") || t.is("DESC"):
		// DESCRIBE t, DESC t: SHOW COLUMNS FROM t (DuckDB's and MySQL's).
		p.next()
		return &ShowStmt{ShowPos: t.pos, What: "COLUMNS", Table: p.tableRef()}
	case t.is("SHOW"):
		return p.showStmt()
	case (t.is("CREATE") || t.is("ALTER") || t.is("DROP")) && p.peekIs("ANALYST"):
		return p.analystStmt()
	case (t.is("CREATE") || t.is("DROP")) && p.peekIs("WATCH"):
		return p.watchStmt()
	case t.is("CREATE"):
		return p.createPolicyStmt()
	case t.is("ALTER"):
		return p.alterStmt()
	case t.is("DROP"):
		return p.dropStmt()
	}
	if t.kind == tokIdent {
		p.fail(t.pos, "unsupported statement %s: dpsql accepts SELECT, EXPLAIN, SET, SHOW, DESCRIBE and the owner's policy statements", upperASCII(t.text))
	}
	p.fail(t.pos, "expected a statement, found %s", t.describe())
	return nil
}

// setStmt parses SET BUDGET ... [PURE] or SET name = value (ON and OFF
// as TRUE and FALSE).
func (p *parser) setStmt() Stmt {
	pos := p.tok.pos
	p.next()
	if p.tok.is("BUDGET") {
		p.next()
		st := &SetBudgetStmt{SetPos: pos, Options: p.optionList(false)}
		st.Pure = p.accept("PURE")
		return st
	}
	name := p.plainName("parameter name")
	p.expect("=")
	if p.tok.is("ON") || p.tok.is("OFF") {
		v := &Literal{ValuePos: p.tok.pos, Kind: BoolLit, Raw: map[bool]string{true: "TRUE", false: "FALSE"}[p.tok.is("ON")]}
		p.next()
		return &SetStmt{SetPos: pos, Name: FoldName(name), Value: v}
	}
	return &SetStmt{SetPos: pos, Name: FoldName(name), Value: p.expr()}
}

// showStmt parses SHOW kind (ShowKinds; POLICY t, COLUMNS FROM|IN t),
// SHOW ALL or SHOW setting.
func (p *parser) showStmt() Stmt {
	pos := p.tok.pos
	p.next()
	for _, kind := range ShowKinds {
		if p.accept(kind) {
			st := &ShowStmt{ShowPos: pos, What: kind}
			switch kind {
			case "POLICY":
				st.Table = p.tableRef()
			case "COLUMNS": // SHOW COLUMNS FROM t (MySQL's, DuckDB's)
				if !p.accept("FROM") {
					p.expect("IN")
				}
				st.Table = p.tableRef()
			}
			return st
		}
	}
	if p.accept("ALL") {
		return &ShowStmt{ShowPos: pos, What: "ALL"}
	}
	if p.tok.kind == tokIdent {
		// SHOW epsilon: a session setting (the engine knows which).
		name := p.plainName("setting name")
		return &ShowStmt{ShowPos: pos, What: "SETTING", Name: FoldName(name)}
	}
	p.fail(p.tok.pos, "expected %s, ALL or a setting's name after SHOW, found %s", strings.Join(ShowKinds, ", "), p.tok.describe())
	return nil
}

// createPolicyStmt parses CREATE PRIVACY POLICY ON t [OPTIONS (...)].
func (p *parser) createPolicyStmt() Stmt {
	pos := p.tok.pos
	p.next()
	if !p.tok.is("PRIVACY") {
		p.fail(p.tok.pos, "expected PRIVACY POLICY, ANALYST or WATCH after CREATE (dpsql does not create tables with SQL; use 'dpsql import'), found %s", p.tok.describe())
	}
	p.next()
	p.expect("POLICY")
	p.expect("ON")
	s := &CreatePolicyStmt{CreatePos: pos, Table: p.tableRef()}
	if p.accept("OPTIONS") {
		s.Options = p.optionList(true)
	}
	return s
}

// alterStmt parses ALTER TABLE t SET PUBLIC|PRIVATE and ALTER PRIVACY
// POLICY ON t SET BOUNDS col (lo, hi) | DOMAIN col (v, ...).
func (p *parser) alterStmt() Stmt {
	pos := p.tok.pos
	p.next()
	if p.accept("TABLE") {
		tbl := p.tableRef()
		p.expect("SET")
		if p.accept("PRIVATE") {
			return &SetPublicStmt{AlterPos: pos, Table: tbl, Private: true}
		}
		p.expect("PUBLIC")
		return &SetPublicStmt{AlterPos: pos, Table: tbl}
	}
	if !p.tok.is("PRIVACY") {
		p.fail(p.tok.pos, "expected PRIVACY POLICY or TABLE after ALTER, found %s", p.tok.describe())
	}
	p.next()
	p.expect("POLICY")
	p.expect("ON")
	tbl := p.tableRef()
	p.expect("SET")
	switch {
	case p.accept("BOUNDS"):
		col := p.columnName()
		p.expect("(")
		lo := p.expr()
		p.expect(",")
		hi := p.expr()
		p.expect(")")
		return &SetBoundsStmt{AlterPos: pos, Table: tbl, Column: col, Lo: lo, Hi: hi}
	case p.accept("DOMAIN"):
		col := p.columnName()
		p.expect("(")
		vals := []Expr{p.expr()}
		for p.accept(",") {
			vals = append(vals, p.expr())
		}
		p.expect(")")
		return &SetDomainStmt{AlterPos: pos, Table: tbl, Column: col, Values: vals}
	}
	p.fail(p.tok.pos, "expected BOUNDS or DOMAIN after SET, found %s", p.tok.describe())
	return nil
}

// dropStmt parses DROP TABLE [IF EXISTS] t and DROP PRIVACY POLICY ON t.
func (p *parser) dropStmt() Stmt {
	pos := p.tok.pos
	p.next()
	if p.accept("TABLE") {
		st := &DropTableStmt{DropPos: pos}
		if p.accept("IF") {
			p.expect("EXISTS")
			st.IfExists = true
		}
		st.Table = p.tableRef()
		return st
	}
	if !p.tok.is("PRIVACY") {
		p.fail(p.tok.pos, "expected PRIVACY POLICY or TABLE after DROP, found %s", p.tok.describe())
	}
	p.next()
	p.expect("POLICY")
	p.expect("ON")
	return &DropPolicyStmt{DropPos: pos, Table: p.tableRef()}
}

// watchStmt parses CREATE WATCH name OPTIONS (...) or DROP WATCH name.
func (p *parser) watchStmt() Stmt {
	s := &WatchStmt{StmtPos: p.tok.pos, Op: upperASCII(p.tok.text)}
	p.next()
	p.expect("WATCH")
	s.NamePos = p.tok.pos
	s.Name = p.foldedName("watch name")
	if s.Op == "CREATE" {
		p.expect("OPTIONS")
		s.Options = p.optionList(true)
	}
	return s
}

// analystStmt parses CREATE, ALTER or DROP ANALYST.
func (p *parser) analystStmt() Stmt {
	s := &AnalystStmt{StmtPos: p.tok.pos, Op: upperASCII(p.tok.text)}
	p.next()
	p.expect("ANALYST")
	s.NamePos = p.tok.pos
	s.Name = p.foldedName("analyst name")
	if s.Op == "DROP" {
		return s
	}
	if p.accept("PASSWORD") {
		s.Password = p.expr()
	} else if s.Op == "CREATE" {
		p.fail(p.tok.pos, "expected PASSWORD 'password' after CREATE ANALYST %s, found %s", s.Name, p.tok.describe())
	}
	if p.accept("BUDGET") {
		s.Budget = p.optionList(false)
	}
	if s.Op == "ALTER" && s.Password == nil && s.Budget == nil {
		p.fail(p.tok.pos, "expected PASSWORD or BUDGET after ALTER ANALYST %s, found %s", s.Name, p.tok.describe())
	}
	return s
}

// foldedName parses a name (what names it in errors) that folds to lower
// case unless quoted, as PostgreSQL folds user names.
func (p *parser) foldedName(what string) string {
	quoted := p.tok.kind == tokQuotedIdent
	name := p.plainName(what)
	if !quoted {
		name = FoldName(name)
	}
	return name
}

// optionList parses name = value [, ...], in parentheses when paren is set.
func (p *parser) optionList(paren bool) []Option {
	if paren {
		p.expect("(")
	}
	var opts []Option
	for {
		pos := p.tok.pos
		name := FoldName(p.plainName("option name"))
		for _, o := range opts {
			if o.Name == name {
				p.fail(pos, "option %s is given twice (first at %d:%d)", name, o.NamePos.Line, o.NamePos.Col)
			}
		}
		p.expect("=")
		opts = append(opts, Option{NamePos: pos, Name: name, Value: p.expr()})
		if !p.accept(",") {
			break
		}
	}
	if paren {
		p.expect(")")
	}
	return opts
}

// plainName reads an unquoted or quoted identifier.
func (p *parser) plainName(what string) string {
	if p.tok.kind != tokIdent && p.tok.kind != tokQuotedIdent {
		p.fail(p.tok.pos, "expected %s, found %s", what, p.tok.describe())
	}
	name := p.tok.text
	p.next()
	return name
}

// name reads a table or column name: quoted, or an unreserved identifier.
func (p *parser) name(what string) (string, Pos) {
	t := p.tok
	if t.kind == tokQuotedIdent || (t.kind == tokIdent && !reserved[upperASCII(t.text)]) {
		p.next()
		return t.text, t.pos
	}
	p.fail(t.pos, "expected %s, found %s", what, t.describe())
	return "", t.pos
}

// fromClause parses item { [INNER | LEFT [OUTER] | RIGHT [OUTER]] JOIN item (ON expr | USING (col, ...)) }.
func (p *parser) fromClause() FromItem {
	left := p.fromItem()
	for {
		t := p.tok
		switch {
		case t.is("INNER"):
			p.next()
			if !p.tok.is("JOIN") {
				p.fail(p.tok.pos, "expected JOIN after INNER, found %s", p.tok.describe())
			}
			left = p.joinRest(left, t.pos, "")
		case t.is("LEFT"), t.is("RIGHT"):
			kind := upperASCII(t.text)
			p.next()
			p.accept("OUTER")
			if !p.tok.is("JOIN") {
				p.fail(p.tok.pos, "expected JOIN after %s, found %s", kind, p.tok.describe())
			}
			left = p.joinRest(left, t.pos, kind)
		case t.is("JOIN"):
			left = p.joinRest(left, t.pos, "")
		case t.is(","), t.is("CROSS"), t.is("FULL"), t.is("NATURAL"), t.is("OUTER"):
			p.fail(t.pos, "only [INNER] JOIN and LEFT/RIGHT [OUTER] JOIN, with ON or USING, are supported, found %s", t.describe())
		default:
			return left
		}
	}
}

// joinRest parses JOIN item (ON cond | USING (cols)) after the join's
// kind ("", "LEFT" or "RIGHT").
func (p *parser) joinRest(left FromItem, pos Pos, kind string) FromItem {
	p.next()
	right := p.fromItem()
	if p.accept("USING") {
		j := &JoinExpr{Left: left, JoinPos: pos, Kind: kind, Right: right}
		p.expect("(")
		for {
			name, pos := p.name("a column name in USING")
			j.Using, j.UsingPos = append(j.Using, name), append(j.UsingPos, pos)
			if !p.accept(",") {
				break
			}
		}
		p.expect(")")
		return j
	}
	if !p.tok.is("ON") {
		p.fail(p.tok.pos, "expected ON or USING after the joined table, found %s", p.tok.describe())
	}
	p.next()
	return &JoinExpr{Left: left, JoinPos: pos, Kind: kind, Right: right, On: p.expr()}
}

// fromItem parses name [[AS] alias] or (SELECT ...) [AS] alias.
func (p *parser) fromItem() FromItem {
	if p.tok.is("(") {
		lp := p.tok.pos
		p.next()
		if !p.tok.is("SELECT") && !p.tok.is("WITH") {
			p.fail(p.tok.pos, "expected a subquery (SELECT ...) in FROM, found %s", p.tok.describe())
		}
		q := p.selectStmt()
		p.expect(")")
		p.accept("AS")
		alias, _ := p.name("an alias for the subquery")
		return &SubqueryRef{Lparen: lp, Query: q, Alias: alias}
	}
	t := p.tableRef()
	if p.accept("AS") {
		t.Alias, _ = p.name("alias")
	} else if p.tok.kind == tokQuotedIdent || (p.tok.kind == tokIdent && !reserved[upperASCII(p.tok.text)]) {
		t.Alias, _ = p.name("alias")
	}
	return t
}

func (p *parser) tableRef() *TableRef {
	n, pos := p.name("table name")
	if p.tok.is(".") && FoldName(n) == "main" {
		// main.t: SQLite's name for the database's own schema.
		p.next()
		n, pos = p.name("table name")
	}
	if p.tok.is(".") {
		// s.t names the table called "s.t": the owner places a table in
		// a schema by importing it under that name (SmartNoise's
		// PUMS.PUMS); dpsql has one schema, main.
		p.next()
		t, _ := p.name("table name")
		n += "." + t
	}
	return &TableRef{NamePos: pos, Name: n}
}

func (p *parser) columnName() *ColumnRef {
	n, pos := p.name("column name")
	return &ColumnRef{NamePos: pos, Name: n}
}

func (p *parser) selectStmt() *SelectStmt {
	defer p.restoreDepth(p.depth)
	p.deeper(p.tok.pos)
	var ctes []CTE
	withPos := p.tok.pos
	if p.tok.is("WITH") {
		p.next()
		for {
			name, pos := p.name("a name for the WITH query")
			p.expect("AS")
			p.expect("(")
			if !p.tok.is("SELECT") {
				p.fail(p.tok.pos, "expected SELECT in WITH, found %s", p.tok.describe())
			}
			ctes = append(ctes, CTE{NamePos: pos, Name: name, Query: p.selectStmt()})
			p.expect(")")
			if !p.accept(",") {
				break
			}
		}
	}
	s := &SelectStmt{WithPos: withPos, With: ctes, SelectPos: p.expect("SELECT")}
	top := p.selectCore(s)
	for p.tok.is("UNION") || p.tok.is("EXCEPT") || p.tok.is("INTERSECT") {
		arm := CompoundArm{OpPos: p.tok.pos, Op: upperASCII(p.tok.text)}
		p.next()
		if arm.Op == "UNION" && p.accept("ALL") {
			arm.Op = "UNION ALL"
		}
		if top != nil {
			p.fail(top.Pos(), "TOP cannot be used in a compound query (write LIMIT after its last arm)")
		}
		if p.tok.is("WITH") {
			p.fail(p.tok.pos, "WITH goes before the first arm of a compound query")
		}
		arm.Select = &SelectStmt{SelectPos: p.expect("SELECT")}
		if t := p.selectCore(arm.Select); t != nil {
			p.fail(t.Pos(), "TOP goes in the first arm of a compound query")
		}
		s.Compound = append(s.Compound, arm)
	}
	if p.tok.is("ORDER") {
		p.next()
		p.expect("BY")
		s.OrderBy = p.orderItems()
	}
	if p.tok.is("LIMIT") && top != nil {
		p.fail(p.tok.pos, "TOP and LIMIT cannot both be given")
	}
	if p.accept("LIMIT") {
		s.Limit = p.expr()
		if p.accept("OFFSET") {
			s.Offset = p.expr()
		}
	}
	if top != nil {
		s.Limit = top
	}
	return s
}

// selectCore parses what follows SELECT up to HAVING into s: WITH
// DIFFERENTIAL_PRIVACY, DISTINCT, TOP n (returned), the select list, FROM,
// WHERE, GROUP BY and HAVING.
func (p *parser) selectCore(s *SelectStmt) (top Expr) {
	if p.tok.is("WITH") {
		p.next()
		if !p.tok.is("DIFFERENTIAL_PRIVACY") {
			p.fail(p.tok.pos, "expected DIFFERENTIAL_PRIVACY after SELECT WITH, found %s", p.tok.describe())
		}
		p.next()
		s.DP = true
		if p.accept("OPTIONS") {
			s.DPOptions = p.optionList(true)
		}
	}
	if p.accept("DISTINCT") {
		s.Distinct = true
	} else {
		p.accept("ALL")
	}
	if p.tok.is("TOP") && p.peekKind() == tokInt {
		// SmartNoise's (and SQL Server's) TOP n: LIMIT n.
		p.next()
		top = &Literal{ValuePos: p.tok.pos, Kind: IntLit, Raw: p.tok.text}
		p.next()
	}
	for {
		item := SelectItem{At: p.tok.pos}
		if p.accept("*") {
			item.Star = true
		} else {
			item.Expr = p.expr()
			if p.accept("AS") {
				item.Alias, _ = p.name("alias")
			} else if p.tok.kind == tokQuotedIdent || (p.tok.kind == tokIdent && !reserved[upperASCII(p.tok.text)]) {
				item.Alias, _ = p.name("alias")
			}
		}
		s.Items = append(s.Items, item)
		if !p.accept(",") {
			break
		}
		if p.tok.is("FROM") {
			break // a trailing comma before FROM, as BigQuery allows
		}
	}
	if p.accept("FROM") {
		s.From = p.fromClause()
	}
	if p.accept("WHERE") {
		s.Where = p.expr()
	}
	if p.tok.is("GROUP") {
		p.next()
		p.expect("BY")
		s.GroupBy = p.exprList()
	}
	if p.accept("HAVING") {
		s.Having = p.expr()
	}
	return top
}

// orderItems parses expr [ASC|DESC], ...
func (p *parser) orderItems() []OrderItem {
	var items []OrderItem
	for {
		item := OrderItem{Expr: p.expr()}
		if p.accept("DESC") {
			item.Desc = true
		} else {
			p.accept("ASC")
		}
		items = append(items, item)
		if !p.accept(",") {
			return items
		}
	}
}

func (p *parser) exprList() []Expr {
	list := []Expr{p.expr()}
	for p.accept(",") {
		list = append(list, p.expr())
	}
	return list
}

// ---- expressions, by precedence from low to high ----

func (p *parser) expr() Expr {
	defer p.restoreDepth(p.depth)
	p.deeper(p.tok.pos)
	return p.orExpr()
}

func (p *parser) orExpr() Expr { return p.chain("OR", p.andExpr) }

func (p *parser) andExpr() Expr { return p.chain("AND", p.notExpr) }

// balanceFrom is the length from which a chain of ORs (or ANDs) is built
// as a balanced tree: both are associative in SQL's three-valued logic,
// so a flat chain of 500 terms nests 9 levels instead of 500 (and stays
// within MaxDepth and SQLite's depth limit). Shorter chains stay
// left-deep, as they print (and as earlier versions keyed their cached
// answers).
const balanceFrom = 64

// chain parses operand (op operand)*: left-deep, or balanced when long.
func (p *parser) chain(op string, operand func() Expr) Expr {
	defer p.restoreDepth(p.depth)
	depth := p.depth
	xs := []Expr{operand()}
	var ops []Pos
	for p.tok.is(op) {
		pos := p.tok.pos
		p.next()
		p.depth = depth + 1 // each operand nests one level below the chain
		ops = append(ops, pos)
		xs = append(xs, operand())
	}
	if len(xs) < balanceFrom {
		p.depth = depth
		x := xs[0]
		for i, y := range xs[1:] {
			p.deeper(ops[i])
			x = &BinaryExpr{X: x, OpPos: ops[i], Op: op, Y: y}
		}
		return x
	}
	levels := int(math.Ceil(math.Log2(float64(len(xs)))))
	if depth+levels > MaxDepth {
		p.fail(ops[0], "expression nested too deeply (more than %d levels)", MaxDepth)
	}
	return balanced(op, xs, ops)
}

// balanced builds xs[0] op xs[1] op ... as a balanced tree; ops[i] is the
// position of the operator between xs[i] and xs[i+1].
func balanced(op string, xs []Expr, ops []Pos) Expr {
	if len(xs) == 1 {
		return xs[0]
	}
	mid := len(xs) / 2
	return &BinaryExpr{X: balanced(op, xs[:mid], ops[:mid-1]), OpPos: ops[mid-1], Op: op, Y: balanced(op, xs[mid:], ops[mid:])}
}

func (p *parser) notExpr() Expr {
	if p.tok.is("NOT") {
		pos := p.tok.pos
		p.next()
		defer p.restoreDepth(p.depth)
		p.deeper(pos)
		return &UnaryExpr{OpPos: pos, Op: "NOT", X: p.notExpr()}
	}
	return p.comparison()
}

var comparisonOps = map[string]string{"=": "=", "==": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

func (p *parser) comparison() Expr {
	defer p.restoreDepth(p.depth)
	x := p.additive()
	for {
		t := p.tok
		if t.kind == tokOp {
			if op, ok := comparisonOps[t.text]; ok {
				p.next()
				p.deeper(t.pos)
				x = &BinaryExpr{X: x, OpPos: t.pos, Op: op, Y: p.additive()}
				continue
			}
		}
		if t.is("IS") {
			p.next()
			p.deeper(t.pos)
			not := p.accept("NOT")
			p.expect("NULL")
			x = &IsNullExpr{X: x, Not: not}
			continue
		}
		not := false
		if t.is("NOT") {
			p.next()
			not = true
			if !p.tok.is("IN") && !p.tok.is("BETWEEN") && !p.tok.is("LIKE") {
				p.fail(p.tok.pos, "expected IN, BETWEEN or LIKE after NOT, found %s", p.tok.describe())
			}
		}
		if p.tok.is("IN") || p.tok.is("BETWEEN") || p.tok.is("LIKE") {
			p.deeper(t.pos)
		}
		switch {
		case p.accept("IN"):
			lp := p.expect("(")
			if p.tok.is("SELECT") || p.tok.is("WITH") {
				q := p.selectStmt()
				p.expect(")")
				x = &InExpr{X: x, Not: not, Sub: &SubqueryExpr{Lparen: lp, Query: q}}
				continue
			}
			list := p.exprList()
			p.expect(")")
			x = &InExpr{X: x, Not: not, List: list}
		case p.accept("BETWEEN"):
			lo := p.additive()
			p.expect("AND")
			x = &BetweenExpr{X: x, Not: not, Lo: lo, Hi: p.additive()}
		case p.accept("LIKE"):
			x = &LikeExpr{X: x, Not: not, Pattern: p.additive()}
		default:
			return x
		}
	}
}

func (p *parser) additive() Expr {
	defer p.restoreDepth(p.depth)
	x := p.multiplicative()
	for p.tok.is("+") || p.tok.is("-") {
		t := p.tok
		p.next()
		p.deeper(t.pos)
		x = &BinaryExpr{X: x, OpPos: t.pos, Op: t.text, Y: p.multiplicative()}
	}
	return x
}

func (p *parser) multiplicative() Expr {
	defer p.restoreDepth(p.depth)
	x := p.concat()
	for p.tok.is("*") || p.tok.is("/") || p.tok.is("%") {
		t := p.tok
		p.next()
		p.deeper(t.pos)
		x = &BinaryExpr{X: x, OpPos: t.pos, Op: t.text, Y: p.concat()}
	}
	return x
}

func (p *parser) concat() Expr {
	defer p.restoreDepth(p.depth)
	x := p.unary()
	for p.tok.is("||") {
		t := p.tok
		p.next()
		p.deeper(t.pos)
		x = &BinaryExpr{X: x, OpPos: t.pos, Op: "||", Y: p.unary()}
	}
	return x
}

func (p *parser) unary() Expr {
	if p.tok.is("-") || p.tok.is("+") {
		t := p.tok
		p.next()
		defer p.restoreDepth(p.depth)
		p.deeper(t.pos)
		return &UnaryExpr{OpPos: t.pos, Op: t.text, X: p.unary()}
	}
	return p.primary()
}

// castTypes are the types CAST accepts: SQLite's, and BigQuery's INT64,
// FLOAT64, DOUBLE, STRING and VARCHAR, which the planner renders with
// BigQuery's meaning for numbers (INT64 rounds half away from zero; SQLite
// truncates); STRING and VARCHAR are TEXT.
var castTypes = map[string]bool{"INTEGER": true, "REAL": true, "TEXT": true, "NUMERIC": true, "INT64": true, "FLOAT64": true, "DOUBLE": true, "STRING": true, "VARCHAR": true}

func (p *parser) primary() Expr {
	t := p.tok
	switch t.kind {
	case tokInt:
		p.next()
		return &Literal{ValuePos: t.pos, Kind: IntLit, Raw: t.text}
	case tokFloat:
		p.next()
		return &Literal{ValuePos: t.pos, Kind: FloatLit, Raw: t.text}
	case tokString:
		p.next()
		return &Literal{ValuePos: t.pos, Kind: StringLit, Raw: t.text}
	case tokQuotedIdent:
		return p.columnRef()
	case tokParam:
		p.next()
		n, err := strconv.Atoi(t.text)
		if err != nil || n < 1 || n > 32766 {
			p.fail(t.pos, "parameter $%s out of range", t.text)
		}
		return &Placeholder{At: t.pos, Index: n}
	case tokOp:
		if t.text == "?" {
			p.next()
			p.params++
			return &Placeholder{At: t.pos, Index: p.params}
		}
		if t.text == "(" {
			p.next()
			if p.tok.is("SELECT") || p.tok.is("WITH") {
				q := p.selectStmt()
				p.expect(")")
				return &SubqueryExpr{Lparen: t.pos, Query: q}
			}
			x := p.expr()
			if p.tok.is(",") {
				elems := []Expr{x}
				for p.accept(",") {
					elems = append(elems, p.expr())
				}
				p.expect(")")
				return &TupleExpr{Lparen: t.pos, Elems: elems}
			}
			p.expect(")")
			return &ParenExpr{Lparen: t.pos, X: x}
		}
	case tokIdent:
		up := upperASCII(t.text)
		switch up {
		case "NULL":
			p.next()
			return &Literal{ValuePos: t.pos, Kind: NullLit, Raw: "NULL"}
		case "TRUE", "FALSE":
			p.next()
			return &Literal{ValuePos: t.pos, Kind: BoolLit, Raw: up}
		case "CASE":
			return p.caseExpr()
		case "CAST":
			p.next()
			p.expect("(")
			x := p.expr()
			p.expect("AS")
			typPos := p.tok.pos
			typ := upperASCII(p.plainName("type name"))
			if !castTypes[typ] {
				p.fail(typPos, "unknown type %s in CAST (expected INTEGER, REAL, TEXT, NUMERIC, INT64, FLOAT64, DOUBLE, STRING or VARCHAR)", typ)
			}
			p.expect(")")
			return &CastExpr{CastPos: t.pos, X: x, Type: typ}
		case "EXISTS":
			p.fail(t.pos, "subqueries are not supported")
		}
		if reserved[up] {
			p.fail(t.pos, "expected an expression, found %s", t.describe())
		}
		if p.lexPeekIsLparen() {
			return p.call()
		}
		return p.columnRef()
	}
	p.fail(t.pos, "expected an expression, found %s", t.describe())
	return nil
}

// lexPeekIsLparen reports whether the token after the current one is '('.
func (p *parser) lexPeekIsLparen() bool {
	save := *p.lex
	t := p.lex.next()
	*p.lex = save
	return t.kind == tokOp && t.text == "("
}

func (p *parser) columnRef() Expr {
	first, pos := p.name("column name")
	if p.accept(".") {
		col, _ := p.name("column name")
		return &ColumnRef{NamePos: pos, Table: first, Name: col}
	}
	return &ColumnRef{NamePos: pos, Name: first}
}

func (p *parser) call() Expr {
	t := p.tok
	name := upperASCII(t.text)
	p.next()
	p.expect("(")
	c := &CallExpr{NamePos: t.pos, Name: name}
	_, window := windowFuncs[name]
	if !aggregateNames[name] && !window {
		if _, ok := scalarFuncs[name]; !ok {
			p.failKind(t.pos, dperr.UndefinedFunction, "unknown function %s", name)
		}
	}
	if p.accept("DISTINCT") {
		c.Distinct = true
	}
	star := p.tok.is("*")
	if star {
		p.next()
		c.Star = true
	}
	// After COUNT(*, only named arguments may follow (BigQuery's
	// COUNT(*, contribution_bounds_per_group => (lo, hi))).
	if (!star && !p.tok.is(")")) || (star && p.accept(",")) {
		for {
			if star && !(p.tok.kind == tokIdent && p.lexPeekIs("=>")) {
				p.fail(p.tok.pos, "expected a named argument (name => value) after COUNT(*, found %s", p.tok.describe())
			}
			if p.tok.kind == tokIdent && p.lexPeekIs("=>") {
				pos := p.tok.pos
				n := FoldName(p.tok.text)
				p.next()
				p.expect("=>")
				c.Named = append(c.Named, NamedArg{NamePos: pos, Name: n, Value: p.expr()})
			} else {
				if len(c.Named) > 0 {
					p.fail(p.tok.pos, "positional argument after named argument")
				}
				c.Args = append(c.Args, p.expr())
			}
			if !p.accept(",") {
				break
			}
		}
	}
	p.expect(")")
	if c.Star && (name != "COUNT" || c.Distinct) {
		p.fail(t.pos, "%s(*) is not valid; only COUNT(*) takes *", name)
	}
	if p.tok.is("FILTER") {
		p.fail(p.tok.pos, "FILTER clauses are not supported")
	}
	if p.tok.is("OVER") {
		c.Over = p.windowSpec()
		if !window && !aggregateNames[name] {
			p.fail(c.Over.OverPos, "%s is not a window or aggregate function", name)
		}
		if len(c.Named) > 0 {
			p.fail(c.Over.OverPos, "a window function takes no named arguments")
		}
	} else if window {
		p.fail(t.pos, "%s is a window function: it needs OVER (...)", name)
	}
	if window {
		lim := windowFuncs[name]
		if n := len(c.Args); n < lim[0] || n > lim[1] || c.Distinct {
			p.fail(t.pos, "wrong arguments to %s: %s", name, arity(lim))
		}
		return c
	}
	if !IsAggregate(c) && !c.Star && c.Over == nil {
		lim := scalarFuncs[name]
		n := len(c.Args)
		if n < lim[0] || (lim[1] >= 0 && n > lim[1]) || len(c.Named) > 0 || c.Distinct {
			p.fail(t.pos, "wrong arguments to %s: %s", name, arity(lim))
		}
	}
	return c
}

// windowSpec parses OVER ([PARTITION BY expr, ...] [ORDER BY item, ...]).
func (p *parser) windowSpec() *WindowSpec {
	w := &WindowSpec{OverPos: p.tok.pos}
	p.next()
	p.expect("(")
	if p.tok.is("PARTITION") {
		p.next()
		p.expect("BY")
		w.PartitionBy = p.exprList()
	}
	if p.tok.is("ORDER") {
		p.next()
		p.expect("BY")
		w.OrderBy = p.orderItems()
	}
	if !p.tok.is(")") {
		p.fail(p.tok.pos, "expected PARTITION BY, ORDER BY or ) in OVER (window frames are not supported), found %s", p.tok.describe())
	}
	p.next()
	return w
}

func arity(lim [2]int) string {
	switch {
	case lim[1] < 0:
		return fmt.Sprintf("expects at least %d arguments", lim[0])
	case lim[0] == lim[1]:
		return fmt.Sprintf("expects %d argument(s)", lim[0])
	}
	return fmt.Sprintf("expects %d to %d arguments", lim[0], lim[1])
}

func (p *parser) lexPeekIs(op string) bool {
	save := *p.lex
	t := p.lex.next()
	*p.lex = save
	return t.kind == tokOp && t.text == op
}

func (p *parser) caseExpr() Expr {
	c := &CaseExpr{CasePos: p.tok.pos}
	p.next()
	if !p.tok.is("WHEN") {
		c.Operand = p.expr()
	}
	for p.accept("WHEN") {
		cond := p.expr()
		p.expect("THEN")
		c.Whens = append(c.Whens, WhenClause{Cond: cond, Result: p.expr()})
	}
	if len(c.Whens) == 0 {
		p.fail(p.tok.pos, "expected WHEN, found %s", p.tok.describe())
	}
	if p.accept("ELSE") {
		c.Else = p.expr()
	}
	p.expect("END")
	return c
}
