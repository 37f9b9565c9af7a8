package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
)

// TestREPLSession types a session into the shell through readline's
// standard input and reads the screen it writes.
func TestREPLSession(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	if _, e, code := runCLI(t, "", "import", "--db", db, "--table", "people", writeCSV(t, dir, 100)); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := runCLI(t, "", "--db", db, "--owner", "-c", `CREATE PRIVACY POLICY ON people; ALTER PRIVACY POLICY ON people SET BOUNDS "Age" (0, 100); SET BUDGET epsilon = 5`); code != 0 {
		t.Fatal(e)
	}
	eng, err := dpsql.Open(db, dpsql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	t.Setenv("XDG_CONFIG_HOME", dir) // history goes to the test's directory
	keys := strings.Join([]string{
		".help",
		".tables",
		".schema people",
		".mode line",
		"SET epsilon = 0.5;",
		"SELECT COUNT(*) AS n,",
		"  AVG(\"Age\") AS a FROM people;",
		".mode table",
		".timer on",
		".explain on",
		"SELECT SUM(\"Age\") FROM people;",
		".explain off",
		"SELECT nope FROM people;",
		".budget",
		".bogus",
		".quit",
	}, "\n") + "\n"
	var out, errb bytes.Buffer
	pr, _ := newPrinter("table", &out)
	code := repl(eng, pr, io.NopCloser(strings.NewReader(keys)), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	screen := out.String()
	for _, want := range []string{
		".import [OPTIONS] FILE TABLE", // .help
		"people | private",             // .tables
		`"Capital Gain" INTEGER`,       // .schema
		"epsilon = 0.5 per query",      // SET
		"n = ", "a = ",                 // .mode line, multi-line statement
		"backend SQL",         // .explain on: planned, not run
		"time: ",              // .timer
		"remaining |     4.5", // .budget after one query of 0.5
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	// The prompt shows the database, the session's ε per query and the
	// remaining budget, apart (readline prints it only on a real terminal,
	// so it is checked directly; issue 29: "ε=4.5" read as the session's).
	if p := (&shell{eng: eng, name: "p.db"}).prompt(t.Context()); p != "p.db [ε 0.5/query, 4.5 left]> " {
		t.Errorf("prompt %q", p)
	}
	for _, want := range []string{`error: 1:8: unknown column "nope"`, "unknown command .bogus"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("errors lack %q:\n%s", want, errb.String())
		}
	}
}

func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	runCLI(t, "", "import", "--db", db, "--table", "people", writeCSV(t, dir, 3))
	eng, _ := dpsql.Open(db, dpsql.Options{})
	defer eng.Close()
	c := completer{s: &shell{eng: eng}, ctx: t.Context()}
	got, n := c.Do([]rune(`SELECT AVG("Cap`), len(`SELECT AVG("Cap`))
	if n != 4 || len(got) != 1 || string(got[0]) != `ital Gain"` {
		t.Errorf("column completion: %q %d", got, n)
	}
	// keywords complete in the case typed; quoted names across spaces (issue 11)
	for typed, want := range map[string]string{"sel": "ect", "SEL": "ECT", "Sel": "ECT", `SELECT AVG("Capital G`: `ain"`, `SELECT AVG("capital g`: `ain"`} {
		got, _ = c.Do([]rune(typed), len([]rune(typed)))
		if len(got) != 1 || string(got[0]) != want {
			t.Errorf("%q completes to %q, want %q", typed, got, want)
		}
	}
	if got, _ := c.Do([]rune(`SELECT 'a "b' AS x, "Na`), 23); len(got) != 1 || string(got[0]) != `me"` {
		t.Errorf("a quote inside a string opened a name: %q", got)
	}
	got, _ = c.Do([]rune("SELECT COUNT(*) FROM pe"), 23)
	if len(got) != 1 || string(got[0]) != "ople" {
		t.Errorf("table completion: %q", got)
	}
	// Mixed-case names complete unquoted (dpsql matches names without
	// regard to case), in their own case; .mode completes its modes.
	for typed, want := range map[string]string{"SELECT AVG(x) FROM people GROUP BY Na": "me", "GROUP BY na": "me", ".mode ma": "rkdown", ".mode js": "on|onl"} {
		got, _ = c.Do([]rune(typed), len([]rune(typed)))
		var parts []string
		for _, g := range got {
			parts = append(parts, string(g))
		}
		if strings.Join(parts, "|") != want {
			t.Errorf("%q completes to %q, want %q", typed, parts, want)
		}
	}
}

// shellDB imports a people table of rows rows into a new database, runs
// the owner's script (if any), and opens it with opts. The shell's history
// goes to the test's directory.
func shellDB(t *testing.T, rows int, ownerScript string, opts dpsql.Options) (dir string, eng *dpsql.Engine) {
	t.Helper()
	dir = t.TempDir()
	db := filepath.Join(dir, "p.db")
	if _, e, code := runCLI(t, "", "import", "--db", db, "--table", "people", writeCSV(t, dir, rows)); code != 0 {
		t.Fatal(e)
	}
	if ownerScript != "" {
		if _, e, code := runCLI(t, "", "--db", db, "--owner", "-c", ownerScript); code != 0 {
			t.Fatal(e)
		}
	}
	eng, err := dpsql.Open(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	t.Setenv("XDG_CONFIG_HOME", dir)
	return dir, eng
}

// typeInto runs the shell on keys, in output format, and returns the
// screen and the error stream.
func typeInto(t *testing.T, eng *dpsql.Engine, format, keys string) (screen, errs string) {
	t.Helper()
	var out, errb bytes.Buffer
	pr, _ := newPrinter(format, &out)
	if code := repl(eng, pr, io.NopCloser(strings.NewReader(keys)), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	return out.String(), errb.String()
}

// TestExplainOnSpendsNothing: with .explain on, every SELECT is explained —
// after a WITH, a leading comment, as the second statement on a line, or
// from .read — and the budget does not move (issue 11).
func TestExplainOnSpendsNothing(t *testing.T) {
	dir, eng := shellDB(t, 50, `CREATE PRIVACY POLICY ON people; SET BUDGET epsilon = 5`, dpsql.Options{Epsilon: 1})
	script := filepath.Join(dir, "q.sql")
	if err := os.WriteFile(script, []byte("SELECT COUNT(*) FROM people;\n/* c */ SELECT COUNT(*) FROM people;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keys := strings.Join([]string{
		".explain on",
		"WITH p AS (SELECT \"Age\" FROM people) SELECT COUNT(*) FROM people;",
		"-- a comment",
		"/* lead */ SELECT COUNT(*) FROM people;",
		"SHOW TABLES; SELECT COUNT(*) FROM people;",
		".read " + script,
		".quit",
	}, "\n") + "\n"
	out, errs := typeInto(t, eng, "table", keys)
	st, err := eng.Budget(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Spent.Epsilon != 0 {
		t.Errorf("spent ε=%v with .explain on\n%s\n%s", st.Spent.Epsilon, out, errs)
	}
	if n := strings.Count(out, "privacy cost"); n < 5 {
		t.Errorf("%d plans shown, want 5:\n%s", n, out)
	}
}

// TestPsqlHabits: \q, quit, exit, \?, \d, \d NAME, \timing and \x do what
// a psql user expects; another backslash command says what to type
// instead, and none drops into continuation mode (issue 11).
func TestPsqlHabits(t *testing.T) {
	for line, want := range map[string]string{
		`\q`: ".quit", "quit": ".quit", "exit;": ".quit", `\?`: ".help", `\d`: ".tables", `\dt`: ".tables",
		`\d people`: ".schema people", `\timing`: ".timer toggle", `\x`: ".mode toggle-line", `\copy x`: "",
		`\pset format csv`: ".mode csv", `\pset format aligned`: ".mode table", `\pset expanded on`: ".mode line",
		`\pset tuples_only on`: ".headers off", `\t off`: ".headers on", `\pset null '(null)'`: ".nullvalue (null)",
		`\pset format html`: "", `\pset border 2`: "",
		`\d+`: ".tables", `\d+ people`: ".schema people", "DESCRIBE people;": ".schema people", "desc people": ".schema people",
		`\l`: ".databases", `\list`: ".databases", `\pset`: ".show", `\echo hello world`: ".print hello world", `\set x 1`: "",
	} {
		if got, ok := psqlHabit(line); !ok || got != want {
			t.Errorf("%q: %q, %v; want %q", line, got, ok, want)
		}
	}
	for _, line := range []string{"SELECT 1;", "quit it", ".quit", "", "describe", "DESCRIBE a b"} {
		if _, ok := psqlHabit(line); ok {
			t.Errorf("%q taken for a habit", line)
		}
	}
	_, eng := shellDB(t, 20, "", dpsql.Options{Owner: true})
	keys := `\d people` + "\n" + `\x` + "\n" + `\timing` + "\n" + `\copy` + "\n" + `\q` + "\n" + "SHOW TABLES;\n"
	out, errs := typeInto(t, eng, "table", keys)
	for _, want := range []string{`"Capital Gain"`, "mode line", "timer on"} {
		if !strings.Contains(out, want) {
			t.Errorf("screen lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, `unknown command \copy`) {
		t.Errorf("stderr: %s", errs)
	}
	if strings.Contains(out, "people | private") {
		t.Errorf(`\q did not quit before SHOW TABLES:\n%s`, out)
	}
}

// TestStatementEndsAtACompleteSemicolon: a ';' followed by a comment ends
// the statement; a ';' inside a string that spans lines does not (issue 11).
func TestStatementEndsAtACompleteSemicolon(t *testing.T) {
	_, eng := shellDB(t, 20, `SET BUDGET epsilon = 5`, dpsql.Options{})
	out, errs := typeInto(t, eng, "table", "SHOW BUDGET; -- a note\nSHOW POLICY 'a;\npeople';\nSHOW TABLES;\n")
	if !strings.Contains(out, "remaining") || !strings.Contains(out, "people | private") {
		t.Errorf("screen:\n%s\nstderr:\n%s", out, errs)
	}
	if !strings.Contains(errs, "'a;\npeople'") { // one statement, the string whole
		t.Errorf("the string with ';' inside was cut: %s", errs)
	}
}

// TestModeAndIncompleteStatement: .mode alone prints the mode; Ctrl-D with
// a statement still open says it did not run (issue 11).
func TestModeAndIncompleteStatement(t *testing.T) {
	_, eng := shellDB(t, 5, "", dpsql.Options{})
	out, errs := typeInto(t, eng, "csv", ".mode\nSHOW TABLES\n")
	if !strings.Contains(out, "mode csv") || !strings.Contains(errs, "incomplete") {
		t.Errorf("screen %q, stderr %q", out, errs)
	}
}

// TestShellSettings: .headers, .nullvalue, .output, .once and .show, and
// NULL never looks like the text 'NULL' (issue 11).
func TestShellSettings(t *testing.T) {
	dir, eng := shellDB(t, 5, `CREATE PRIVACY POLICY ON people`, dpsql.Options{})
	once, out2 := filepath.Join(dir, "once.txt"), filepath.Join(dir, "out.txt")
	keys := strings.Join([]string{
		".show",
		"SELECT 'NULL' AS s, NULL AS n;",
		".nullvalue '(null)'",
		"SELECT 'NULL' AS s, NULL AS n, '(null)' AS t;",
		".headers off",
		"SELECT 'h' AS hidden_header;",
		".headers on",
		".once " + once,
		"SELECT 1 AS first_to_file;",
		"SELECT 2 AS back_on_screen;",
		".output " + out2,
		"SELECT 3 AS a;",
		".mode csv",
		"SELECT 4 AS b, NULL AS c;",
		".output",
		".show",
		".quit",
	}, "\n") + "\n"
	screen, errs := typeInto(t, eng, "table", keys)
	if errs != "" {
		t.Fatalf("errors: %s", errs)
	}
	for _, want := range []string{
		"mode: table", "headers: on", `nullvalue: "NULL"`, "output: stdout",
		"'NULL' | NULL", "NULL | (null) | '(null)'", "back_on_screen", `nullvalue: "(null)"`, "mode: csv",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	for _, gone := range []string{"hidden_header", "first_to_file", "a\n", "b,c"} {
		if strings.Contains(screen, gone) {
			t.Errorf("screen shows %q:\n%s", gone, screen)
		}
	}
	if !strings.Contains(screen, "\nh\n") {
		t.Errorf("the row without headers is missing:\n%s", screen)
	}
	for path, want := range map[string]string{once: "first_to_file\n", out2: "a\n"} {
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), want) || strings.Contains(string(b), "back_on_screen") {
			t.Errorf("%s: %q %v", path, b, err)
		}
	}
	if b, _ := os.ReadFile(out2); !strings.Contains(string(b), "b,c\n4,(null)\n") {
		t.Errorf("csv in %s: %q", out2, b)
	}
}

// TestHistoryAndContinuationPrompt: history keeps whole statements, one
// entry each; the continuation prompt lines up with the main prompt
// (issue 11).
func TestHistoryAndContinuationPrompt(t *testing.T) {
	dir, eng := shellDB(t, 5, `ALTER TABLE people SET PUBLIC`, dpsql.Options{})
	typeInto(t, eng, "table", "SELECT\n  \"Name\"\n  FROM people;\n.mode csv\n.quit\n")
	b, err := os.ReadFile(filepath.Join(dir, "dpsql", "history"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "SELECT \"Name\" FROM people;\n.mode csv\n.quit\n"; string(b) != want {
		t.Errorf("history %q, want %q", b, want)
	}
	for _, p := range []string{"p.db ε=4.5> ", "a-much-longer-name.db> ", "東京.db> "} {
		if c := continuationPrompt(displayWidth(p)); displayWidth(c) != displayWidth(p) || !strings.HasSuffix(c, "...> ") {
			t.Errorf("continuation %q under %q", c, p)
		}
	}
}

// TestDotImportOptionsAndQuotedNames: .import takes dpsql import's options,
// and dot-commands take quoted file and table names (issue 11).
func TestDotImportOptionsAndQuotedNames(t *testing.T) {
	dir, _ := shellDB(t, 3, "", dpsql.Options{})
	owner, err := dpsql.Open(filepath.Join(dir, "p.db"), dpsql.Options{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	csvPath := filepath.Join(dir, "my data.csv")
	os.WriteFile(csvPath, []byte("1;x\n2;y\n"), 0o644)
	script := filepath.Join(dir, "a script.sql")
	os.WriteFile(script, []byte(`ALTER TABLE "My Table" SET PUBLIC; SELECT c2 FROM "My Table" ORDER BY c1;`), 0o644)
	out, errs := typeInto(t, owner, "csv", strings.Join([]string{
		`.import --delimiter ';' --no-header "` + csvPath + `" "My Table"`,
		`.read '` + script + `'`,
		`.import --bogus x y`,
		`.import "unterminated`,
		".quit",
	}, "\n")+"\n")
	if !strings.Contains(out, "imported 2 rows into My Table") || !strings.Contains(out, "c2\nx\ny\n") {
		t.Errorf("screen:\n%s\nerrors:\n%s", out, errs)
	}
	if !strings.Contains(errs, "unknown option") && !strings.Contains(errs, "not defined") || !strings.Contains(errs, "unterminated") {
		t.Errorf("errors:\n%s", errs)
	}
}

// TestShellHabitsEndToEnd: \g ends a statement, \x keeps the footer with
// what the query spent, \echo and \l print, an unknown psql command says
// what to do instead, and the history file (with backslash commands in it)
// is readable by its user only.
func TestShellHabitsEndToEnd(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("HOME", config)
	_, eng := shellDB(t, 30, `CREATE PRIVACY POLICY ON people; SET BUDGET epsilon = 5`, dpsql.Options{Epsilon: 0.5})
	keys := strings.Join([]string{`SHOW TABLES \g`, `\x`, `SELECT COUNT(*) AS n FROM people;`, `\echo done here`, `\l`, `\set v 1`, `\q`}, "\n") + "\n"
	out, errs := typeInto(t, eng, "table", keys)
	for _, want := range []string{"people | private", "n = ", "(1 row; spent ε=0.5", "done here", "main: "} {
		if !strings.Contains(out, want) {
			t.Errorf("screen lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, `unknown command \set: dpsql has no psql variables`) {
		t.Errorf("stderr: %s", errs)
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		t.Fatal(err)
	}
	hist := filepath.Join(dir, "dpsql", "history")
	st, err := os.Stat(hist)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v, want 0600", st.Mode().Perm())
	}
	b, _ := os.ReadFile(hist)
	for _, want := range []string{`\x`, `\echo done here`, `\set v 1`, `SHOW TABLES;`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("history lacks %q:\n%s", want, b)
		}
	}
}

// TestCommandLineMistakesExitTwo: a bad --epsilon and a directory as --db
// are usage errors (exit 2, before anything is opened), for the shell and
// for import alike; --version prints the version and the backends.
func TestCommandLineMistakesExitTwo(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "a.csv")
	if err := os.WriteFile(csvPath, []byte("a\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--db", filepath.Join(dir, "x.db"), "--epsilon", "-1", "-c", "SHOW BUDGET"},
		{"--db", dir, "-c", "SHOW BUDGET"},
		{"import", "--db", dir, "--table", "t", csvPath},
	} {
		if _, errs, code := runCLI(t, "", args...); code != exitUsage || !strings.HasPrefix(errs, "error: ") {
			t.Errorf("%q: exit %d, %q", args, code, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.db")); err == nil {
		t.Error("a refused --epsilon created the database")
	}
	out, _, code := runCLI(t, "", "--version")
	if code != 0 || !strings.HasPrefix(out, "dpsql ") || !strings.Contains(out, "backends: SQLite, PostgreSQL") {
		t.Errorf("--version: %d %q", code, out)
	}
}

// TestProgressLineEndsOnce: an import's progress line ends with one final
// line however many passes read the file (it was printed twice), says
// "storing" between reading and the end (a DuckDB import was silent for
// half its time), and is cleared before an error.
func TestProgressLineEndsOnce(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b)
	p.update(100, 0.5)
	p.update(200, 1)
	p.update(100, 0.5) // a second pass with wider types
	p.update(200, 1)
	p.end(200)
	out := b.String()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") || strings.Count(out, "200 rows in ") != 1 || !strings.Contains(out, "storing them") {
		t.Errorf("progress output %q", out)
	}
	b.Reset()
	p = newProgress(&b)
	p.update(100, 0.5)
	p.clear()
	if !strings.HasSuffix(b.String(), "\r\033[K") {
		t.Errorf("not cleared before an error: %q", b.String())
	}
	b.Reset()
	newProgress(&b).end(5) // nothing shown (a small file): nothing to end
	if b.Len() != 0 {
		t.Errorf("%q", b.String())
	}
}
