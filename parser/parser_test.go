package parser

import (
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGoldenFormat parses every statement of testdata/valid.sql, renders it
// canonically, compares with testdata/valid.golden, and checks that the
// canonical form parses back to itself.
func TestGoldenFormat(t *testing.T) {
	src, err := os.ReadFile("testdata/valid.sql")
	if err != nil {
		t.Fatal(err)
	}
	stmts, err := ParseScript(string(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var out strings.Builder
	for _, s := range stmts {
		text := FormatStmt(s)
		out.WriteString(s.Pos().String() + "\t" + text + "\n")
		again, err := ParseStatement(text)
		if err != nil {
			t.Errorf("canonical form does not parse: %q: %v", text, err)
			continue
		}
		if got := FormatStmt(again); got != text {
			t.Errorf("round trip changed the statement:\n first %s\nsecond %s", text, got)
		}
	}
	checkGolden(t, "testdata/valid.golden", out.String())
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test ./parser -update to accept):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

var errorComment = regexp.MustCompile(`/\* ERROR "((?:[^"\\]|\\.)*)" \*/`)

// TestErrors checks each line of testdata/errors.sql: the parse must fail
// with a message matching the ERROR comment, positioned at the token that
// stands right before the comment.
func TestErrors(t *testing.T) {
	src, err := os.ReadFile("testdata/errors.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(src)), "\n") {
		m := errorComment.FindStringSubmatchIndex(line)
		if m == nil {
			t.Fatalf("line without ERROR comment: %s", line)
		}
		want := regexp.MustCompile(strings.ReplaceAll(line[m[2]:m[3]], `\"`, `"`))
		sql := line[:m[0]] + line[m[1]:]
		// The expected position is that of the last token before the comment.
		lx := newLexer(line[:m[0]])
		var last token
		for tok := lx.next(); tok.kind != tokEOF; tok = lx.next() {
			last = tok
			if tok.kind == tokIllegal {
				break
			}
		}
		if strings.Contains(want.String(), "found end of input") {
			last.pos.Offset = len(sql)
		}
		_, err := ParseScript(sql)
		var list ErrorList
		if !errors.As(err, &list) {
			t.Errorf("%s: want error %q, got %v", sql, want, err)
			continue
		}
		if !want.MatchString(list[0].Msg) {
			t.Errorf("%s: error %q does not match %q", sql, list[0].Msg, want)
		}
		if list[0].Pos.Offset != last.pos.Offset {
			t.Errorf("%s: error at offset %d (%s), want %d", sql, list[0].Pos.Offset, list[0].Pos, last.pos.Offset)
		}
	}
}

func TestPositionsAreLineColumn(t *testing.T) {
	_, err := ParseScript("SELECT COUNT(*)\nFROM t\nWHERE a = ;")
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want ErrorList, got %v", err)
	}
	if got := list[0].Pos.String(); got != "3:11" {
		t.Errorf("position %s, want 3:11", got)
	}
	if line, col := list.Position(); line != 3 || col != 11 {
		t.Errorf("Position() = %d:%d", line, col)
	}
}

func TestScriptRecoversAfterError(t *testing.T) {
	_, err := ParseScript("SELECT FROM;\nSHOW BUDGET;\nSELECT 1 +;")
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("want two errors, got %v", err)
	}
	if list[0].Pos.Line != 1 || list[1].Pos.Line != 3 {
		t.Errorf("errors at %s and %s, want lines 1 and 3", list[0].Pos, list[1].Pos)
	}
}

func TestMinMaxAggregateOrScalar(t *testing.T) {
	for _, tc := range []struct {
		src string
		agg bool
	}{{"MAX(a)", true}, {"MAX(a, b)", false}, {"COUNT(*)", true}, {"ABS(a)", false}} {
		e, err := ParseExpr(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		if got := IsAggregate(e.(*CallExpr)); got != tc.agg {
			t.Errorf("IsAggregate(%s) = %v", tc.src, got)
		}
	}
}

func FuzzParseScript(f *testing.F) {
	src, _ := os.ReadFile("testdata/valid.sql")
	for _, line := range strings.Split(string(src), "\n") {
		f.Add(line)
	}
	f.Add("SELECT '")
	f.Add("/*")
	f.Add(`SELECT "a""b" FROM "t"`)
	f.Fuzz(func(t *testing.T, s string) {
		stmts, err := ParseScript(s)
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		for _, st := range stmts {
			text := FormatStmt(st)
			if _, err := ParseStatement(text); err != nil {
				t.Fatalf("canonical form %q of %q does not parse: %v", text, s, err)
			}
		}
	})
}

// TestKeywordsFoldASCIIOnly: SQLite folds ASCII letters only, so neither
// does the parser: "ſ" (U+017F, which Go's Unicode folding takes for "s")
// does not make a keyword or a function name.
func TestKeywordsFoldASCIIOnly(t *testing.T) {
	for _, src := range []string{"ſelect 1", "SELECT ſum(x) FROM t"} {
		if _, err := ParseStatement(src); err == nil {
			t.Errorf("%q parsed", src)
		}
	}
	if _, err := ParseStatement("select sUm(x) fRoM t"); err != nil {
		t.Errorf("ASCII case variants: %v", err)
	}
}

// TestNestingLimit: deep nesting is a syntax error at its position, not a
// stack overflow that kills the process; nesting within MaxDepth parses.
func TestNestingLimit(t *testing.T) {
	deep := func(n int, open, mid, close string) string {
		return "SELECT " + strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	for _, src := range []string{
		deep(300000, "(", "1", ")"),
		deep(300000, "- ", "1", ""),
		deep(300000, "NOT ", "1", ""),
		deep(300000, "ABS(", "1", ")"),
		"SELECT 1" + strings.Repeat(" + 1", 300000),
		"SELECT 1" + strings.Repeat(" || 'a'", 300000),
		"SELECT COUNT(*) FROM " + strings.Repeat("(SELECT x FROM ", 5000) + "t" + strings.Repeat(") s", 5000),
	} {
		_, err := ParseStatement(src)
		var list ErrorList
		if !errors.As(err, &list) || !strings.Contains(list[0].Msg, "nested too deeply") {
			t.Errorf("%.40s...: %v", src, err)
		}
	}
	for _, src := range []string{deep(MaxDepth/2-5, "(", "1", ")"), "SELECT 1" + strings.Repeat(" + 1", MaxDepth-10), deep(MaxDepth/2-5, "- ", "1", "")} {
		if _, err := ParseStatement(src); err != nil {
			t.Errorf("%.40s... (within the limit): %v", src, err)
		}
	}
}

// TestComplete: a statement is complete when its last token, comments
// aside, is ';' outside strings, quoted identifiers and comments.
func TestComplete(t *testing.T) {
	for src, want := range map[string]bool{
		"SELECT 1;":               true,
		"SHOW BUDGET; -- note":    true,
		"SHOW BUDGET; /* note */": true,
		"SELECT 'a;\n":            false,
		"SELECT 'a;\nb';":         true,
		`SELECT "x;`:              false,
		"SELECT 1 /* ; */":        false,
		"SELECT 1 /* ;":           false,
		"SELECT 1":                false,
		"SELECT 1; SELECT 2":      false,
		"SELECT 1; SELECT 2;":     true,
		"SELECT 1 -- ;":           false,
		"SELECT @;":               true, // an illegal character still ends the statement (and is reported)
	} {
		if got := Complete(src); got != want {
			t.Errorf("Complete(%q) = %v, want %v", src, got, want)
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []string
	}{
		{"SELECT 1", []string{"SELECT 1"}},
		{"SELECT 1;  \n SELECT 2;", []string{"SELECT 1", "SELECT 2"}},
		{"SELECT ';'; SELECT \"a;b\" FROM t", []string{"SELECT ';'", `SELECT "a;b" FROM t`}},
		{"SELECT 1 /* ; */; -- ;\n", []string{"SELECT 1 /* ; */"}},
		{"-- first\nSELECT 1;;\n;SELECT 2", []string{"-- first\nSELECT 1", "SELECT 2"}},
		{"SELECT 'open; still", []string{"SELECT 'open; still"}},
		{"  ; -- nothing", nil},
	} {
		if got := Split(tc.src); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Split(%q) = %q, want %q", tc.src, got, tc.want)
		}
	}
}

func TestRedactPasswords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`CREATE ANALYST a PASSWORD 'it''s me' BUDGET epsilon = 1`, `CREATE ANALYST a PASSWORD '***' BUDGET epsilon = 1`},
		{"alter analyst b password /* c */ 'x;y'; SELECT 'password'", "alter analyst b password /* c */ '***'; SELECT 'password'"},
		{`SELECT COUNT(*) FROM t WHERE name = 'PASSWORD'`, `SELECT COUNT(*) FROM t WHERE name = 'PASSWORD'`},
		{`CREATE ANALYST a PASSWORD 'unterminated`, `CREATE ANALYST a PASSWORD '***`},
	} {
		if got := RedactPasswords(tc.in); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

// TestSQLLiteralRoundTrips: every value SQLLiteral prints reads back as
// the same value and type in SQLite — NUL bytes, invalid UTF-8, quotes,
// infinities and integral reals included.
func TestSQLLiteralRoundTrips(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, v := range []any{nil, int64(-9223372036854775808), int64(42), 3.0, -0.1, 1e300, math.Inf(1), math.Inf(-1),
		"it's", "a\x00b", "\xff\xfe", "", []byte{0, 1, 2}} {
		var got any
		if err := db.QueryRow("SELECT " + SQLLiteral(v)).Scan(&got); err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if b, ok := got.([]byte); ok && v != nil {
			if _, isBytes := v.([]byte); !isBytes {
				got = string(b)
			}
		}
		if fmt.Sprintf("%T %#v", got, got) != fmt.Sprintf("%T %#v", v, v) {
			t.Errorf("%s: read back %T %#v, want %T %#v", SQLLiteral(v), got, got, v, v)
		}
	}
}
