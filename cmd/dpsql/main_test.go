package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/testing/memtmp"
)

var binary string

// TestMain builds the dpsql binary once; the tests drive it as a user would,
// with their files in memory (memtmp).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dpsql-cli-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "dpsql")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := memtmp.Run(m) // the databases in memory: no disk syncs (the binary's own TMPDIR too)
	os.RemoveAll(dir)
	os.Exit(code)
}

func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// writeCSV writes a people.csv with column names that need quoting.
func writeCSV(t *testing.T, dir string, rows int) string {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("Name,Age,Capital Gain,Education-Num,Score\n")
	for i := 0; i < rows; i++ {
		score := fmt.Sprintf("%.1f", float64(i%7)/2)
		if i%5 == 0 {
			score = "" // NULL
		}
		fmt.Fprintf(&sb, "\"p, %d\",%d,%d,%d,%s\n", i, 20+i%50, (i%3)*1000, i%16, score)
	}
	path := filepath.Join(dir, "people.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestImportPolicyQueryContract(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	out, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "people", writeCSV(t, dir, 300))
	if code != 0 || out != "imported 300 rows into people\n" {
		t.Fatalf("import: code %d, out %q, err %q", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "", "--db", db, "--owner", "-c", `CREATE PRIVACY POLICY ON people;
		ALTER PRIVACY POLICY ON people SET BOUNDS "Age" (0, 100);
		ALTER PRIVACY POLICY ON people SET DOMAIN "Education-Num" (0, 1, 2, 3);
		SET BUDGET epsilon = 3`)
	if code != 0 {
		t.Fatalf("owner setup: %d %s", code, errOut)
	}
	out, errOut, code = runCLI(t, "", "--db", db, "--format", "csv", "-c",
		`SET epsilon = 1; SELECT "Education-Num" AS edu, COUNT(*) AS n, AVG("Age") AS a FROM people GROUP BY "Education-Num"`)
	if code != 0 {
		t.Fatalf("query: %d %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || lines[0] != "edu,n,a" || !strings.HasPrefix(lines[1], "0,") || !strings.HasPrefix(lines[4], "3,") {
		t.Errorf("csv output:\n%s", out)
	}
	// JSON output parses, and SHOW BUDGET reflects the spend.
	out, _, code = runCLI(t, "", "--db", db, "--format", "json", "-c", `SHOW BUDGET`)
	var rows []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 3 || rows[1]["epsilon"] != 1.0 {
		t.Errorf("SHOW BUDGET json: %q", out)
	}
	// Over budget: a clear error, exit status 5 (budget), nothing spent.
	_, errOut, code = runCLI(t, "", "--db", db, "-c", `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 2.5) COUNT(*) FROM people`)
	if code != 5 || !strings.HasPrefix(errOut, "error: 1:1: privacy budget exhausted") {
		t.Errorf("over budget: code %d, stderr %q", code, errOut)
	}
	// Analysts cannot run owner statements.
	_, errOut, code = runCLI(t, "", "--db", db, "-c", `SET BUDGET epsilon = 100`)
	if code != 1 || !strings.Contains(errOut, "owner mode") {
		t.Errorf("owner statement as analyst: code %d, stderr %q", code, errOut)
	}
	// The first error stops the run; its position is line:column of the script.
	out, errOut, code = runCLI(t, "", "--db", db, "--format", "csv", "-c", "SHOW TABLES;\nSELECT \"Name\" FROM people;\nSHOW BUDGET")
	if code != 4 /* refused as not private */ || !strings.HasPrefix(errOut, "error: 2:8: ") || strings.Contains(out, "budget") {
		t.Errorf("first error: code %d, out %q, stderr %q", code, out, errOut)
	}
}

func TestScriptsFromFileAndStdin(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	if _, e, code := runCLI(t, "", "import", writeCSV(t, dir, 50), "--db", db, "--table", "people"); code != 0 {
		t.Fatal(e)
	}
	script := filepath.Join(dir, "s.sql")
	os.WriteFile(script, []byte("-- set up\nCREATE PRIVACY POLICY\n  ON people;\nSET BUDGET epsilon = 1; -- done\n"), 0o644)
	if _, e, code := runCLI(t, "", "--db", db, "--owner", "-f", script); code != 0 {
		t.Fatalf("-f: %s", e)
	}
	out, e, code := runCLI(t, "SHOW POLICY people;\nSHOW TABLES;\n", "--db", db, "--format", "csv")
	if code != 0 || !strings.Contains(out, "privacy,,\"private, declared policy\"") || !strings.Contains(out, "people,private,declared") {
		t.Errorf("stdin script: %d %q %q", code, out, e)
	}
}

func TestImportFailuresLeaveNoTable(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	for _, tc := range []struct {
		name, content, want string
	}{
		{"ragged.csv", "a,b\n1,2\n3\n4,5\n", "line 3: wrong number of fields"},
		{"quote.csv", "a,b\n1,2\n\"x,3\n", "line 3"},
		{"bare.csv", "a,b\n1,2\nx\"y,3\n", "line 3"},
		{"empty.csv", "", "the file is empty"},
		{"dup.csv", "a,A\n1,2\n", "appears twice"},
		// a separator other than ',' gets a hint (issue 11)
		{"semi.csv", "a;b;c\n1;2;3\n", "pass --delimiter ';'"},
		{"tabs.csv", "a\tb\n1\t2\n", `pass --delimiter '\t'`},
		// invalid UTF-8 is reported with its line, in the sample or after it
		{"latin1.csv", "a,b\n1,caf\xe9\n", "line 2: field 2 is not valid UTF-8"},
		{"latin1head.csv", "a,caf\xe9\n1,2\n", "line 1: field 2 is not valid UTF-8"},
	} {
		path := filepath.Join(dir, tc.name)
		os.WriteFile(path, []byte(tc.content), 0o644)
		_, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "t", path)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: code %d, stderr %q, want %q", tc.name, code, errOut, tc.want)
		}
	}
	// A failed first import leaves no database file at all (issue 29: it
	// left an empty 77 KB database).
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a database file is left after failed imports: %v", err)
	}
	// Into an existing database, a failed import leaves no table and the
	// file in place.
	good := filepath.Join(dir, "good.csv")
	os.WriteFile(good, []byte("a\n1\n"), 0o644)
	runCLI(t, "", "import", "--db", db, "--table", "g", good)
	if _, _, code := runCLI(t, "", "import", "--db", db, "--table", "t", filepath.Join(dir, "ragged.csv")); code != 1 {
		t.Error("ragged import into an existing database succeeded")
	}
	out, _, _ := runCLI(t, "", "--db", db, "--format", "csv", "-c", "SHOW TABLES")
	if strings.TrimSpace(out) != "table,privacy,policy\ng,private,default (each row is a privacy unit)" {
		t.Errorf("tables after a failed import: %q", out)
	}
	// Importing over an existing table fails too.
	runCLI(t, "", "import", "--db", db, "--table", "t", good)
	if _, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "T", good); code != 1 || !strings.Contains(errOut, "already exists") {
		t.Errorf("re-import: %d %q", code, errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	// --help goes to stdout, as a requested answer; a bad flag is one line
	// on stderr with a hint (issue 11).
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}, {"import", "--help"}, {"demo", "--help"}} {
		out, errOut, code := runCLI(t, "", args...)
		if code != 0 || errOut != "" || !strings.Contains(out, "Usage") || !strings.Contains(out, "--db") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if out, _, _ := runCLI(t, "", "--help"); !strings.Contains(out, "dpsql import --db FILE --table NAME") {
		t.Errorf("--help does not mention import: %q", out)
	}
	for _, args := range [][]string{{"--bogus"}, {"import", "--sample", "x"}, {"demo", "--nope"}} {
		out, errOut, code := runCLI(t, "", args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "--help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if _, errOut, code := runCLI(t, "", "-c", "SHOW TABLES"); code != 2 || !strings.Contains(errOut, "--db FILE is required") {
		t.Errorf("missing --db: %d %q", code, errOut)
	}
	if _, errOut, code := runCLI(t, "", "--db", filepath.Join(t.TempDir(), "missing.db"), "-c", "SHOW TABLES"); code != 6 || !strings.Contains(errOut, "no such database") {
		t.Errorf("missing database: %d %q", code, errOut)
	}
	if _, errOut, code := runCLI(t, "", "--db", "x.db", "--format", "xml"); code != 2 || !strings.Contains(errOut, "unknown format") {
		t.Errorf("bad format: %d %q", code, errOut)
	}
}

func TestDemoRuns(t *testing.T) {
	out, errOut, code := runCLI(t, "", "demo")
	if code != 0 {
		t.Fatalf("demo: %d %s", code, errOut)
	}
	if strings.Count(out, "dpsql> SELECT") != 3 || !strings.Contains(out, "remaining") {
		t.Errorf("demo output:\n%s", out)
	}
}

func TestContinueOutputAndFileErrors(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	if _, e, code := runCLI(t, "", "import", "--db", db, "--table", "people", writeCSV(t, dir, 40)); code != 0 {
		t.Fatal(e)
	}
	script := filepath.Join(dir, "report.sql")
	os.WriteFile(script, []byte("SHOW TABLES;\n-- a bad one\nSELECT \"Name\" FROM people;\nSELECT FROM;\nSHOW POLICY people;\n"), 0o644)
	out := filepath.Join(dir, "out.csv")
	stdout, errOut, code := runCLI(t, "", "--db", db, "--format", "csv", "--continue", "--output", out, "-f", script)
	if code != 4 || stdout != "" { // the first failure's status: a refusal
		t.Errorf("code %d, stdout %q", code, stdout)
	}
	for _, want := range []string{"error: " + script + ":3:8: ", "error: " + script + ":4:8: ", "4 statements, 2 succeeded, 2 failed"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	written, _ := os.ReadFile(out)
	if !strings.Contains(string(written), "people,private") || !strings.Contains(string(written), "privacy unit") {
		t.Errorf("output file:\n%s", written)
	}
	// Without --continue the run stops at the first error.
	_, errOut, code = runCLI(t, "", "--db", db, "-f", script)
	if code != 4 || strings.Count(errOut, "error:") != 1 {
		t.Errorf("stop at first error: %d %q", code, errOut)
	}
}

func TestImportOptionsAndWidening(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	// The sample (2 rows) sees integers; later rows hold a real and a word.
	path := filepath.Join(dir, "w.csv")
	os.WriteFile(path, []byte("a;b;c\n1;2;x\n3;4;y\n5;6.5;z\n7;eight;w\n"), 0o644)
	out, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "w", "--delimiter", ";", "--sample", "2", path)
	if code != 0 || out != "imported 4 rows into w\n" {
		t.Fatalf("import: %d %q %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "a INTEGER, b TEXT (widened after the sample), c TEXT") {
		t.Errorf("type report: %q", errOut)
	}
	// Nothing was lost: the owner makes the table public and reads it back.
	runCLI(t, "", "--db", db, "--owner", "-c", "ALTER TABLE w SET PUBLIC")
	out, errOut, _ = runCLI(t, "", "--db", db, "--format", "csv", "-c", "SELECT a, b FROM w ORDER BY a")
	if out != "a,b\n1,2\n3,4\n5,6.5\n7,eight\n" {
		t.Errorf("widened table: %q %q", out, errOut)
	}
	// No header, tab-separated.
	tsv := filepath.Join(dir, "t.tsv")
	os.WriteFile(tsv, []byte("1\tx\n2\ty\n"), 0o644)
	if out, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "t", "--no-header", "--delimiter", `\t`, tsv); code != 0 || out != "imported 2 rows into t\n" || !strings.Contains(errOut, "c1 INTEGER, c2 TEXT") {
		t.Errorf("tsv: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "u", "--delimiter", "ab", tsv); code != 2 || !strings.Contains(errOut, "one character") {
		t.Errorf("bad delimiter: %d %q", code, errOut)
	}
}

// TestOutputFileKeptOnEarlyFailure: a run that fails before any statement
// (missing database, bad --format, missing script) leaves an existing
// --output file untouched (issue 11).
func TestOutputFileKeptOnEarlyFailure(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "keep.txt")
	os.WriteFile(out, []byte("precious"), 0o644)
	for _, args := range [][]string{
		{"--db", filepath.Join(dir, "missing.db"), "--output", out, "-c", "SHOW TABLES"},
		{"--db", filepath.Join(dir, "missing.db"), "--format", "xml", "--output", out, "-c", "SHOW TABLES"},
		{"--db", filepath.Join(dir, "missing.db"), "--output", out, "-f", filepath.Join(dir, "nope.sql")},
	} {
		if _, _, code := runCLI(t, "", args...); code == 0 {
			t.Errorf("%v succeeded", args)
		}
		if b, _ := os.ReadFile(out); string(b) != "precious" {
			t.Errorf("%v: output file now %q", args, b)
		}
	}
	// A statement that fails to parse (or is refused) before anything is
	// printed leaves the file as it was too (issue 29).
	db := filepath.Join(dir, "p.db")
	if _, e, code := runCLI(t, "", "import", "--db", db, "--table", "people", writeCSV(t, dir, 5)); code != 0 {
		t.Fatal(e)
	}
	for _, stmt := range []string{"SELEC 1", "SELECT * FROM people"} {
		if _, _, code := runCLI(t, "", "--db", db, "--output", out, "-c", stmt); code == 0 {
			t.Errorf("%s succeeded", stmt)
		}
		if b, _ := os.ReadFile(out); string(b) != "precious" {
			t.Errorf("%s: output file now %q", stmt, b)
		}
	}
}

// TestDatabaseAsArgumentAndScriptFromStdin: dpsql FILE takes the
// database as sqlite3 and psql do, and -f - reads the script from
// standard input (issue 29).
func TestDatabaseAsArgumentAndScriptFromStdin(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	if _, e, code := runCLI(t, "", "import", "--db", db, "--table", "people", writeCSV(t, dir, 5)); code != 0 {
		t.Fatal(e)
	}
	if out, e, code := runCLI(t, "", db, "--format", "csv", "-c", "SHOW TABLES"); code != 0 || !strings.Contains(out, "people,private") {
		t.Errorf("dpsql FILE -c: %d %q %q", code, out, e)
	}
	if out, e, code := runCLI(t, "SHOW TABLES;\nSELEC 1;\n", "--db", db, "--format", "csv", "-f", "-"); code != 3 || !strings.Contains(out, "people,private") || !strings.Contains(e, "<stdin>:2:1:") {
		t.Errorf("-f -: %d %q %q", code, out, e)
	}
	if _, e, code := runCLI(t, "", db, "other.db", "-c", "SHOW TABLES"); code != 2 || !strings.Contains(e, `unexpected argument "other.db"`) {
		t.Errorf("two databases: %d %q", code, e)
	}
}

// TestBackslashCommandsInScripts: psql's habits work in -f scripts and
// piped input as typed (issue 29): \x switches the mode, \conninfo
// shows the connection, \i reads a script, and an unknown one is an error
// that names it.
func TestBackslashCommandsInScripts(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	if _, e, code := runCLI(t, "", "import", "--db", db, "--table", "people", writeCSV(t, dir, 5)); code != 0 {
		t.Fatal(e)
	}
	inner := filepath.Join(dir, "inner.sql")
	os.WriteFile(inner, []byte("SHOW TABLES;\n"), 0o644)
	script := "\\x on\nSHOW TABLES;\n\\conninfo\n\\x off\n\\i " + inner + "\n\\bogus\n"
	out, e, code := runCLI(t, script, "--db", db, "--continue")
	for _, want := range []string{"  table = people", "database: " + db, "table  | privacy"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 || !strings.Contains(e, `unknown command \bogus`) {
		t.Errorf("unknown backslash command: %d %q", code, e)
	}
}

// TestPercentInDatabasePath: a '%' in --db is part of the file name, not a
// URI escape ("x%41.db" is not "xA.db").
func TestPercentInDatabasePath(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "x%41.db")
	if _, e, code := runCLI(t, "", "import", "--db", db, "--table", "people", writeCSV(t, dir, 5)); code != 0 {
		t.Fatal(e)
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("%s not created: %v", db, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "xA.db")); err == nil {
		t.Error("xA.db created: the path was URI-decoded")
	}
	if _, e, code := runCLI(t, "", "--db", db, "-c", "SHOW TABLES"); code != 0 {
		t.Errorf("opening %s: %s", db, e)
	}
}

// TestImportKeepsValuesAsWritten: a column is INTEGER or REAL only when
// every value is that number exactly as written; zip codes, hexadecimal,
// underscores and integers beyond int64 stay text (issue 11).
func TestImportKeepsValuesAsWritten(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	path := filepath.Join(dir, "v.csv")
	os.WriteFile(path, []byte("zip,hex,under,big,price,mixed,late\n02134,0x1p4,1_000,99999999999999999999,1.50,1,1\n00501,16,1000,1,2.25,2.5,2\n"+
		"10001,3,7,5,1e2,9007199254740993,1.5\n"), 0o644)
	out, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "v", "--sample", "2", path)
	if code != 0 {
		t.Fatalf("import: %d %q %q", code, out, errOut)
	}
	// late: sampled as INTEGER, then a real; mixed: a REAL column meeting an
	// integer beyond 2^53 becomes TEXT rather than round it.
	for _, want := range []string{"zip TEXT", "hex TEXT", "under TEXT", "big TEXT", "price REAL", "mixed TEXT", "late REAL"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("type report lacks %q: %q", want, errOut)
		}
	}
	runCLI(t, "", "--db", db, "--owner", "-c", "ALTER TABLE v SET PUBLIC")
	out, errOut, _ = runCLI(t, "", "--db", db, "--format", "csv", "-c", "SELECT zip, hex, under, big, mixed FROM v ORDER BY zip")
	if out != "zip,hex,under,big,mixed\n00501,16,1000,1,2.5\n02134,0x1p4,1_000,99999999999999999999,1\n10001,3,7,5,9007199254740993\n" {
		t.Errorf("values changed: %q %q", out, errOut)
	}
}

// TestImportBOMHeaderOnlyAndDelimiter: a byte-order mark before a quoted
// header imports; a header-only file makes TEXT columns; an explicit
// --delimiter ',' imports a single field with ';' as one column (issue 11).
func TestImportBOMHeaderOnlyAndDelimiter(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	files := map[string]string{
		"bom.csv":  "\ufeff\"Name\",\"Age\"\n\"ann\",37\n",
		"head.csv": "a,b\n",
		"one.csv":  "x;y\n1;2\n",
	}
	for name, content := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--table", "bom", filepath.Join(dir, "bom.csv")}, "Name TEXT"},
		{[]string{"--table", "head", filepath.Join(dir, "head.csv")}, "a TEXT"},
		{[]string{"--table", "one", "--delimiter", ",", filepath.Join(dir, "one.csv")}, "x;y TEXT"},
	} {
		out, errOut, code := runCLI(t, "", append([]string{"import", "--db", db}, tc.args...)...)
		if code != 0 || !strings.Contains(errOut+out, tc.want) {
			t.Errorf("%v: exit %d, %q %q, want %q", tc.args, code, out, errOut, tc.want)
		}
	}
	out, errOut, _ := runCLI(t, "", "--db", db, "--owner", "--format", "csv", "-c", `ALTER TABLE bom SET PUBLIC; SELECT "Name", "Age" FROM bom`)
	if !strings.Contains(out, "Name,Age\nann,37\n") {
		t.Errorf("BOM table: %q %q", out, errOut)
	}
	if _, errOut, _ := runCLI(t, "", "import", "--db", db, "--table", "head2", filepath.Join(dir, "head.csv")); !strings.Contains(errOut, "b TEXT") {
		t.Errorf("header-only: %q", errOut)
	}
}

// TestImportIntoATableNeedsTheOwner: --replace and --append change a
// private table's rows, so they are owner statements: without --owner they
// are refused and the table is as it was; with it they work.
func TestImportIntoATableNeedsTheOwner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "o.db")
	csv := filepath.Join(dir, "rows.csv")
	os.WriteFile(csv, []byte("x\n1\n2\n"), 0o644)
	if _, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "t", csv); code != 0 {
		t.Fatalf("import: %d %s", code, errOut)
	}
	for _, flag := range []string{"--append", "--replace"} {
		_, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "t", flag, csv)
		if code == 0 || !strings.Contains(errOut, "--owner") {
			t.Errorf("%s without --owner: exit %d, %q", flag, code, errOut)
		}
	}
	count := func() string {
		out, errOut, _ := runCLI(t, "", "--db", db, "--owner", "--format", "csv", "-c", "ALTER TABLE t SET PUBLIC; SELECT COUNT(*) AS n FROM t")
		return out + errOut
	}
	if got := count(); !strings.Contains(got, "n\n2\n") {
		t.Errorf("the refused imports changed the table: %q", got)
	}
	if _, errOut, code := runCLI(t, "", "import", "--db", db, "--owner", "--table", "t", "--append", csv); code != 0 {
		t.Errorf("--owner --append: %d %s", code, errOut)
	}
	if got := count(); !strings.Contains(got, "n\n4\n") {
		t.Errorf("after --owner --append: %q", got)
	}
}

// TestErrorsShowWhere: errors echo the statement's line with a caret under
// the position, as psql does, in -c and -f runs and in the shell; errors of
// a script carry its file name, also from the shell's .read (issue 11).
func TestErrorsShowWhere(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	csvPath := writeCSV(t, dir, 20)
	if _, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "people", csvPath); code != 0 {
		t.Fatal(errOut)
	}
	script := filepath.Join(dir, "bad.sql")
	os.WriteFile(script, []byte("SHOW TABLES;\nSELECT\n\tAVG(\"Age\" FROM people;\n"), 0o644)
	want := "error: " + script + ":3:12: expected ')', found \"FROM\"\nLINE 3:  AVG(\"Age\" FROM people;\n                   ^\n"
	if _, errOut, _ := runCLI(t, "", "--db", db, "-f", script); errOut != want {
		t.Errorf("-f:\n%s\nwant\n%s", errOut, want)
	}
	want = "error: 1:8: unknown column \"nope\" in table \"people\"\nLINE 1: SELECT nope FROM people\n               ^\n"
	if _, errOut, _ := runCLI(t, "", "--db", db, "-c", "SELECT nope FROM people"); errOut != want {
		t.Errorf("-c:\n%q\nwant\n%q", errOut, want)
	}
	long := "SELECT " + strings.Repeat("1 + ", 60) + "nope FROM people"
	_, errOut, _ := runCLI(t, "", "--db", db, "-c", long)
	lines := strings.Split(errOut, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[1], "LINE 1: ...") || len(lines[1]) > 120 ||
		strings.Index(lines[2], "^") != strings.Index(lines[1], "nope") {
		t.Errorf("a long line is not cut around the position:\n%s", errOut)
	}
	_, errOut, _ = runCLI(t, ".read "+script+"\n.quit\n", "--db", db)
	if !strings.Contains(errOut, "error: "+script+":3:12:") || !strings.Contains(errOut, "LINE 3:") {
		t.Errorf(".read:\n%s", errOut)
	}
}

// TestDotCommandsInScripts: dot-commands work in -c, -f and piped scripts
// (a line starting with '.' outside a statement); a failing one stops the
// run like a failing statement, and positions after one stay the file's
// own (issue 11).
func TestDotCommandsInScripts(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	csvPath := writeCSV(t, dir, 20)
	if _, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "people", csvPath); code != 0 {
		t.Fatal(errOut)
	}
	if out, errOut, code := runCLI(t, "", "--db", db, "-c", ".mode csv\nSELECT 1 AS a, 'x;y' AS b;\n.headers off\nSELECT 2;"); code != 0 || out != "a,b\n1,x;y\n\n2\n" {
		t.Errorf("-c: %d %q %q", code, out, errOut)
	}
	script := filepath.Join(dir, "s.sql")
	os.WriteFile(script, []byte("-- report\n.mode line\nSELECT 3 AS n;\n.bogus\nSELECT 4;\n"), 0o644)
	out, errOut, code := runCLI(t, "", "--db", db, "-f", script)
	if code != 1 || out != "n = 3\n" || !strings.Contains(errOut, "unknown command .bogus") {
		t.Errorf("-f stops at a failing dot-command: %d %q %q", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "", "--db", db, "--continue", "-f", script)
	if code != 1 || !strings.Contains(out, "4 = 4") || !strings.Contains(errOut, "4 statements, 3 succeeded, 1 failed") {
		t.Errorf("--continue: %d %q %q", code, out, errOut)
	}
	os.WriteFile(script, []byte(".mode csv\nSELECT 1;\n.headers off\n\nSELECT nope FROM people;\n"), 0o644)
	if _, errOut, _ := runCLI(t, "", "--db", db, "-f", script); !strings.Contains(errOut, script+":5:8: unknown column") || !strings.Contains(errOut, "LINE 5: SELECT nope") {
		t.Errorf("positions after dot-commands: %q", errOut)
	}
	// a '.' inside a statement is not a command
	if out, errOut, code := runCLI(t, "SELECT\n.5 AS half;\n", "--db", db, "--format", "csv"); code != 0 || out != "half\n0.5\n" {
		t.Errorf("'.5' continuing a statement: %d %q %q", code, out, errOut)
	}
}

// TestMachineReadableOutput: json writes one JSON value per result, one per
// line (NDJSON); csv separates result sets with an empty line; --with-cost
// keeps each result's ε, δ and noise bounds in csv, json and line output
// (issue 11).
func TestMachineReadableOutput(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	csvPath := writeCSV(t, dir, 50)
	if _, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "people", csvPath); code != 0 {
		t.Fatal(errOut)
	}
	runCLI(t, "", "--db", db, "--owner", "-c", "SET BUDGET epsilon = 10")
	script := `SELECT COUNT(*) AS n FROM people; SET epsilon = 0.5; SELECT 'x' AS a, 2 AS b;`
	out, errOut, code := runCLI(t, "", "--db", db, "--epsilon", "0.25", "--format", "json", "-c", script)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("json: %d %q %q", code, out, errOut)
	}
	for _, l := range lines {
		var v []map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil || len(v) != 1 {
			t.Errorf("json line %q: %v", l, err)
		}
	}
	resetCache := func() { runCLI(t, "", "--db", db, "--owner", "-c", "RESET CACHE") } // each run below answers afresh
	resetCache()
	out, _, _ = runCLI(t, "", "--db", db, "--epsilon", "0.25", "--format", "json", "--with-cost", "-c", script)
	var first struct {
		Rows        []map[string]any   `json:"rows"`
		Epsilon     float64            `json:"epsilon"`
		Delta       float64            `json:"delta"`
		ErrorBounds map[string]float64 `json:"error_bounds_95"`
	}
	if err := json.Unmarshal([]byte(strings.Split(out, "\n")[0]), &first); err != nil || first.Epsilon != 0.25 || first.ErrorBounds["n"] <= 0 || len(first.Rows) != 1 {
		t.Errorf("json --with-cost: %q %v", out, err)
	}
	// A value computed from clipped values says so, with the bounds.
	if _, errOut, code := runCLI(t, "", "--db", db, "--owner", "-c", `CREATE PRIVACY POLICY ON people; ALTER PRIVACY POLICY ON people SET BOUNDS "Age" (0, 60)`); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, _ = runCLI(t, "", "--db", db, "--epsilon", "0.25", "--format", "json", "--with-cost", "-c", `SELECT AVG("Age") AS a, COUNT(*) AS n FROM people`)
	var clipped struct {
		Intervals [][]map[string]any `json:"noise_confidence_intervals"`
	}
	if err := json.Unmarshal([]byte(out), &clipped); err != nil || len(clipped.Intervals) != 1 || len(clipped.Intervals[0]) != 2 ||
		fmt.Sprint(clipped.Intervals[0][0]["clipped_to"]) != "[0 60]" || clipped.Intervals[0][1]["clipped_to"] != nil {
		t.Errorf("json --with-cost: clipping flags %q %q %v", out, errOut, err)
	}
	resetCache()
	out, _, _ = runCLI(t, "", "--db", db, "--epsilon", "0.25", "--format", "csv", "--with-cost", "-c", script)
	sets := strings.Split(out, "\n\n")
	if len(sets) != 2 || !strings.HasPrefix(sets[0], "n,n_lo95,n_hi95,dpsql_epsilon,dpsql_delta,dpsql_error95(n)\n") || !strings.HasSuffix(sets[0], ",0.25,0,11.982929094215965") ||
		sets[1] != "a,b,dpsql_epsilon,dpsql_delta\nx,2,0,0\n" {
		t.Errorf("csv --with-cost: %q", out)
	}
	// Bounds chosen privately from 50 rows at ε = 0.25 cannot find the
	// data: the csv row carries the warning with the share clipped.
	out, errOut, _ = runCLI(t, "", "--db", db, "--epsilon", "0.25", "--format", "csv", "--with-cost", "-c", `SELECT SUM("Age" + 0) AS s FROM people`)
	if !strings.HasPrefix(out, "s,s_lo95,s_hi95,dpsql_epsilon,dpsql_delta,dpsql_notes\n") || !strings.Contains(out, "warning: the bounds of") || !strings.Contains(out, "of its values lie beyond them") {
		t.Errorf("csv --with-cost drops the clipping warning or the interval: %q %q", out, errOut)
	}
	// AVG's interval, with bounds declared or chosen, comes row by row,
	// beside the value it qualifies (issue 51).
	out, errOut, _ = runCLI(t, "", "--db", db, "--epsilon", "0.25", "--format", "csv", "--with-cost", "-c", `SELECT AVG("Age") AS a FROM people`)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 2 || strings.Join(rows[0][:3], ",") != "a,a_lo95,a_hi95" {
		t.Fatalf("csv --with-cost AVG: %q %q %v", out, errOut, err)
	}
	a, _ := strconv.ParseFloat(rows[1][0], 64)
	lo, _ := strconv.ParseFloat(rows[1][1], 64)
	hi, _ := strconv.ParseFloat(rows[1][2], 64)
	if !(lo <= a && a <= hi && lo < hi) {
		t.Errorf("csv --with-cost AVG: %v not in [%v, %v]", a, lo, hi)
	}
	resetCache()
	out, _, _ = runCLI(t, "", "--db", db, "--epsilon", "0.25", "--format", "line", "--with-cost", "-c", "SELECT COUNT(*) AS n FROM people")
	if !strings.Contains(out, "(1 row; spent ε=0.25; 95% noise bound: n ±12)") {
		t.Errorf("line --with-cost: %q", out)
	}
}

// TestWideningDoesNotGrowTheFile: an import whose last row widens a column
// leaves a database file no larger than the same import without it (the
// first pass is rolled back, not kept beside the second; issue 11).
func TestWideningDoesNotGrowTheFile(t *testing.T) {
	dir := t.TempDir()
	var sb strings.Builder
	sb.WriteString("a,b,c\n")
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&sb, "%d,%d,name%d\n", i, 3*i, i)
	}
	plain := sb.String()
	size := func(name, content string) int64 {
		csvPath := filepath.Join(dir, name+".csv")
		os.WriteFile(csvPath, []byte(content), 0o644)
		db := filepath.Join(dir, name+".db")
		if _, errOut, code := runCLI(t, "", "import", "--db", db, "--table", "t", csvPath); code != 0 {
			t.Fatal(errOut)
		}
		var total int64
		for _, suffix := range []string{"", "-wal", "-journal"} {
			if st, err := os.Stat(db + suffix); err == nil {
				total += st.Size()
			}
		}
		return total
	}
	a, b := size("plain", plain), size("widened", plain+"1.5,2,x\n")
	if b > a*11/10 {
		t.Errorf("widened import takes %d bytes, the plain one %d", b, a)
	}
}

// TestExitStatusesByKind: each kind of failure has its own exit status.
func TestExitStatusesByKind(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	if _, e, code := runCLI(t, "", "import", "--db", db, "--table", "people", writeCSV(t, dir, 40)); code != 0 {
		t.Fatal(e)
	}
	if _, e, code := runCLI(t, "", "--db", db, "--owner", "-c", "CREATE PRIVACY POLICY ON people"); code != 0 {
		t.Fatal(e)
	}
	for _, c := range []struct {
		script string
		code   int
	}{
		{"SHOW TABLES", 0},
		{"SHOW 42", 3},
		{"SHOW NOTHING", 1}, // an unknown setting, as SET NOTHING = 1 (PostgreSQL: unrecognized configuration parameter)
		{"SELECT FROM", 3},
		{`SELECT "Name" FROM people`, 4},
		{"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) COUNT(*) FROM people", 5}, // no budget set
		{"SELECT COUNT(*) FROM nowhere", 1},
		{"SET BUDGET epsilon = 1", 1}, // owner mode needed
	} {
		if _, e, code := runCLI(t, "", "--db", db, "-c", c.script); code != c.code {
			t.Errorf("%s: exit %d, want %d (%s)", c.script, code, c.code, e)
		}
	}
	if _, _, code := runCLI(t, "", "--db", db, "-f", filepath.Join(dir, "missing.sql")); code != 6 {
		t.Errorf("missing script: exit %d, want 6", code)
	}
}
