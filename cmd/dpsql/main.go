// Command dpsql is the differentially private SQL shell: a REPL, a batch
// runner for SQL scripts and one-shot statements, a CSV importer and a demo.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chzyer/readline"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/demo"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

const usage = `dpsql: a differentially private SQL engine over SQLite (the tables may live in PostgreSQL or DuckDB).

Usage:
  dpsql --db FILE [--owner] [--format table|box|markdown|csv|json|jsonl|line|bars] [--epsilon E] [--continue] [--output FILE] [--chart FILE.svg|png] [-c "STMT; ..." | -f SCRIPT]
  dpsql FILE [options]           (the database as the first argument, as sqlite3 and psql take it)
  dpsql import --db FILE --table NAME [--no-header] [--delimiter C] [--sample N] CSVFILE
  dpsql demo [--db FILE | --csv FILE]
  dpsql serve --db FILE [--listen ADDR] [--tls-cert FILE --tls-key FILE] [...]
  dpsql --version                (the version, and which backends this build has)

With the tables in PostgreSQL, dpsql, import and serve take --db postgres://USER@HOST:PORT/DBNAME
and optionally --state FILE, the SQLite file that keeps dpsql's mirrors of that
database's tables and its answer cache (default: one per user, host, port and
database in the user's cache directory, ~/.cache/dpsql on Linux); the policies,
budget, ledger and analysts live in PostgreSQL itself (schema dpsql,
docs/backends.md).

With the tables in a DuckDB file (a build with cgo, the default where a C
compiler is present), dpsql, import and serve take --db FILE.duckdb (or
duckdb:PATH); import reads CSV (checked as for SQLite) and Parquet files. The
policies, budget, ledger and answer cache live in the state file FILE.duckdb.dpsql
beside it (--state FILE to choose another), and private queries run as one
DuckDB statement each where they can (docs/backends.md).

With -c the statements are run in order; with -f they are read from SCRIPT
(-- comments and multi-line statements allowed); with neither, an interactive
shell starts when standard input is a terminal (readline, history in the user
config directory, tab completion, .help for its dot-commands), and statements
are read from standard input otherwise. Each result is printed in the chosen
format. The first failing statement's error is printed to stderr as
"error: LINE:COL: message" (with -f: "error: SCRIPT:LINE:COL: message"), then
the statement's line with a caret under the position, and
stops the run; with --continue the run goes on, a summary follows, and the exit
status is the first failure's. Exit statuses: 0 success, 1 a failing statement
(unknown name, invalid option, owner mode needed, ...), 2 bad arguments, 3 a
syntax error, 4 a query refused as not private (or not supported), 5 no
budget, budget exhausted or no epsilon, 6 a database or file that cannot be
opened, read or written, 7 interrupted or timed out.

Analysts (the default) may run SELECT, EXPLAIN, SET (epsilon,
bounds_epsilon_fraction, show_bounds), SHOW BUDGET, SHOW TABLES and SHOW
POLICY. --owner also allows CREATE/ALTER/DROP PRIVACY POLICY, ALTER TABLE
... SET PUBLIC, SET BUDGET, CREATE/ALTER/DROP ANALYST and SHOW ANALYSTS.
docs/dialect.md lists the accepted SQL.

Subcommands:
  import   create table NAME from a CSV file (an owner action; see dpsql import --help)
  demo     build a demo database from generated data, run three example
           private queries, then open the shell if stdin is a terminal
  serve    serve the database to analysts over the PostgreSQL wire protocol
           (psql, drivers, BI tools), each with a budget of their own; see
           dpsql serve --help

Options:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(args) > 0 {
		switch args[0] {
		case "import":
			return runImport(ctx, args[1:], stdout, stderr)
		case "demo":
			return runDemo(ctx, args[1:], stdin, stdout, stderr)
		case "serve":
			return runServe(ctx, args[1:], stdout, stderr)
		case "help":
			args = []string{"--help"}
		case "--version", "-version", "version", "-V":
			fmt.Fprintln(stdout, versionLine())
			return exitOK
		}
	}
	fs := flag.NewFlagSet("dpsql", flag.ContinueOnError)
	f := defineShellFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	var pos []string
	if code, done := parseFlags(fs, "dpsql", func() (err error) { pos, err = parseInterleaved(fs, args); return err }, stdout, stderr); done {
		return code
	}
	script, charts, code, ok := f.check(pos, stdin, stderr)
	if !ok {
		return code
	}
	engOpts := dpsql.Options{Owner: *f.owner, Epsilon: *f.eps, NoCache: *f.noCache, Notify: noteTo(stderr)}
	path, err := stateFile(*f.db, *f.state, &engOpts)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 2
	}
	eng, err := dpsql.Open(path, engOpts)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return exitIO // the database cannot be opened (missing, not a dpsql database, in use, no DuckDB in this build)
	}
	defer eng.Close()
	out := stdout
	if *f.output != "" {
		// Opened at the first write: a run that prints nothing (a script
		// that fails to parse, a refused first statement) leaves an
		// existing file as it was.
		lazy := &lazyFile{path: *f.output}
		defer func() {
			if err := lazy.Close(); err != nil {
				fmt.Fprintln(stderr, "error:", err)
				code = 1
			}
		}()
		out = lazy
	}
	pr, _ := newPrinter(*f.format, out)
	pr.withCost = *f.withCost
	pr.noIntervals = *f.noIntervals
	pr.charts = charts
	b := batch{eng: eng, pr: pr, stderr: stderr, cont: *f.cont}
	switch {
	case *f.command != "":
		return b.run(ctx, *f.command, "")
	case *f.file == "-":
		return b.run(ctx, string(script), "<stdin>")
	case *f.file != "":
		return b.run(ctx, string(script), *f.file)
	}
	if file, ok := stdin.(*os.File); ok && readline.IsTerminal(int(file.Fd())) {
		return repl(eng, pr, file, stdout, stderr)
	}
	src, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return b.run(ctx, string(src), "")
}

// shellFlags are the shell's options (dpsql --help).
type shellFlags struct {
	db, state, format, command, file, chartPath, output *string
	owner, cont, withCost, noCache, noIntervals         *bool
	eps                                                 *float64
}

func defineShellFlags(fs *flag.FlagSet) *shellFlags {
	f := &shellFlags{}
	f.db = fs.String("db", "", "database `FILE`, or a PostgreSQL database postgres://USER@HOST:PORT/DBNAME (with --state) (required)")
	f.state = fs.String("state", "", "with a PostgreSQL --db: the SQLite `FILE` that keeps its table mirrors and answer cache (default: one in ~/.cache/dpsql; policies, budget and ledger live in PostgreSQL, schema dpsql)")
	f.owner = fs.Bool("owner", false, "owner mode: allow policy and budget statements")
	f.format = fs.String("format", "table", "output `format`: table, box, markdown, csv, json, line or bars (each numeric column as horizontal bars with the values' 95% intervals); json prints JSON lines, one document per result (jsonl names it so)")
	f.command = fs.String("c", "", "run the `statements` and exit")
	f.file = fs.String("f", "", "run the statements of `SCRIPT` and exit (- reads them from standard input)")
	f.eps = fs.Float64("epsilon", 0, "default ε per query for this session (same as SET epsilon)")
	f.cont = fs.Bool("continue", false, "go on after a failing statement and print a summary at the end (exit status: the first failure's)")
	f.withCost = fs.Bool("with-cost", false, "keep each result's cost in csv, json and line output: csv gains COLUMN_lo95 and COLUMN_hi95 (each noisy value's 95% interval) and the columns dpsql_epsilon, dpsql_delta, dpsql_error95(COLUMN) and dpsql_notes; json writes {\"rows\": [...], \"epsilon\", \"delta\", \"error_bounds_95\", \"noise_confidence_intervals\", \"notes\"} per result (the intervals row by row, column by column, null where a value has none); line adds the footer")
	f.noCache = fs.Bool("no-cache", false, "answer every private query afresh, with new noise and a new charge, instead of giving a repeat the answer released before, free (as SET cache = off)")
	f.noIntervals = fs.Bool("no-intervals", false, "show noisy values without their 95% intervals in table and line output (shown by default, e.g. 38.6 ± 0.4)")
	f.chartPath = fs.String("chart", "", "also draw each private answer (its noisy values, by its keys) as a chart with 95% error bars, to the image `FILE` (.svg or .png; later results to FILE-2, FILE-3, ...)")
	f.output = fs.String("output", "", "write results to `FILE` instead of standard output (opened only once the options, the script and the database have been checked)")
	return f
}

// check checks the options and the positional database argument, reads
// the -f script and prepares the --chart file: everything is checked
// before --output is opened, so that a run that fails early leaves an
// existing output file as it was. ok false: exit with code.
func (f *shellFlags) check(pos []string, stdin io.Reader, stderr io.Writer) (script []byte, charts *chartFile, code int, ok bool) {
	fail := func(code int, err any) ([]byte, *chartFile, int, bool) {
		fmt.Fprintln(stderr, "error:", err)
		return nil, nil, code, false
	}
	// dpsql FILE: the database as a positional argument.
	if len(pos) > 0 && *f.db == "" {
		*f.db, pos = pos[0], pos[1:]
	}
	if len(pos) > 0 {
		return fail(2, fmt.Sprintf("unexpected argument %q (see dpsql --help)", pos[0]))
	}
	if *f.db == "" {
		return fail(2, "--db FILE is required (or try: dpsql demo)")
	}
	if _, err := newPrinter(*f.format, io.Discard); err != nil {
		return fail(2, err)
	}
	if *f.chartPath != "" {
		c, err := newChartFile(*f.chartPath, func(path string) { fmt.Fprintln(stderr, "chart written to "+path) })
		if err != nil {
			return fail(2, err)
		}
		c.skipped = func(why string) { fmt.Fprintln(stderr, "note: "+why) }
		charts = c
	}
	if *f.command != "" && *f.file != "" {
		return fail(2, "use either -c or -f, not both")
	}
	if *f.file == "-" {
		src, err := io.ReadAll(stdin)
		if err != nil {
			return fail(1, err)
		}
		script = src
	} else if *f.file != "" {
		src, err := os.ReadFile(*f.file)
		if err != nil {
			return fail(exitIO, err)
		}
		script = src
	}
	if *f.eps != 0 && !planner.ValidEpsilon(*f.eps) {
		return fail(exitUsage, fmt.Sprintf("--epsilon: %s, got %v", planner.EpsilonRange, *f.eps))
	}
	if err := notADirectory(*f.db); err != nil {
		return fail(exitUsage, err)
	}
	return script, charts, 0, true
}

// batch runs scripts: it stops at the first error, or with cont goes on
// and prints a summary.
type batch struct {
	eng    *dpsql.Engine
	pr     *printer
	stderr io.Writer
	cont   bool
}

// positioned is an error that knows its line and column in the script.
type positioned interface{ Position() (line, col int) }

// errorText renders an error, prefixed by the script's file name when the
// error has a position ("report.sql:3:8: message").
func errorText(err error, file string) string {
	var p positioned
	if file != "" && errors.As(err, &p) {
		if line, _ := p.Position(); line > 0 {
			return file + ":" + err.Error()
		}
	}
	return err.Error()
}

// caret shows where a positioned error is, as psql does: the statement's
// line and a caret under the column ("LINE 3: ..." then "^"). A long line
// is cut to a window around the column. "" when err has no position.
func caret(script string, err error) string {
	var p positioned
	if !errors.As(err, &p) {
		return ""
	}
	line, col := p.Position()
	lines := strings.Split(script, "\n")
	if line < 1 || line > len(lines) || col < 1 {
		return ""
	}
	text := []rune(strings.ReplaceAll(strings.TrimRight(lines[line-1], "\r"), "\t", " "))
	col = min(col, len(text)+1)
	const before, width = 40, 100
	start, prefix := 0, ""
	if len(text) > width && col > before {
		start, prefix = col-before, "..."
	}
	end, suffix := len(text), ""
	if end-start > width {
		end, suffix = start+width, "..."
	}
	head := fmt.Sprintf("LINE %d: %s", line, prefix)
	out := head + string(text[start:end]) + suffix + "\n" + strings.Repeat(" ", utf8.RuneCountInString(head)+col-1-start) + "^\n"
	if hint := dpsql.Hint(err); hint != "" {
		out += "HINT:  " + hint + "\n" // as psql prints a server's hint
	}
	return out
}

// segment is a run of SQL or one dot-command line of a script; line is
// where it starts.
type segment struct {
	text string
	dot  bool
	line int
}

// splitDotCommands cuts a script into SQL and dot-command lines: a line
// that starts with '.' outside a statement is a dot-command, as in sqlite3
// scripts, and one that starts with '\' a psql habit (psqlHabit). SQL segments are padded with the newlines before them, so that
// positions in errors stay the script's own.
func splitDotCommands(script string) []segment {
	var out []segment
	var pending strings.Builder
	start := 1
	lines := strings.SplitAfter(script, "\n")
	for i, ln := range lines {
		if trimmed := strings.TrimLeft(ln, " \t"); (strings.HasPrefix(trimmed, ".") || strings.HasPrefix(trimmed, `\`)) && (parser.Blank(pending.String()) || parser.Complete(pending.String())) {
			if !parser.Blank(pending.String()) {
				out = append(out, segment{text: strings.Repeat("\n", start-1) + pending.String(), line: start})
			}
			out = append(out, segment{text: strings.TrimSpace(ln), dot: true, line: i + 1})
			pending.Reset()
			start = i + 2
			continue
		}
		pending.WriteString(ln)
	}
	if !parser.Blank(pending.String()) {
		out = append(out, segment{text: strings.Repeat("\n", start-1) + pending.String(), line: start})
	}
	return out
}

func (b batch) run(ctx context.Context, script, file string) int {
	ran, failed, code := 0, 0, exitOK
	sh := &shell{eng: b.eng, pr: b.pr, out: b.pr.w, errw: b.stderr, name: filepath.Base(b.eng.Path())}
	for _, seg := range splitDotCommands(script) {
		stop := false
		if seg.dot {
			ran++
			sh.failed = false
			text := seg.text
			if strings.HasPrefix(text, `\`) { // psql's habits work in scripts as typed
				meta, _ := psqlHabit(text)
				if meta == "" {
					sh.fail("%s", unknownHabit(text))
					failed++
					if code == exitOK {
						code = exitError
					}
					if !b.cont {
						break
					}
					continue
				}
				text = meta
			}
			quit := sh.meta(ctx, text)
			if sh.failed {
				failed++
				if code == exitOK {
					code = exitError
				}
				stop = !b.cont || ctx.Err() != nil
			}
			if quit || stop {
				break
			}
			continue
		}
		b.eng.RunEach(ctx, seg.text, func(res *dpsql.Result, err error) bool {
			ran++
			if err == nil {
				err = b.pr.print(res)
			}
			if err != nil {
				failed++
				if code == exitOK {
					code = exitCode(err)
				}
				fmt.Fprintln(b.stderr, "error:", errorText(err, file))
				fmt.Fprint(b.stderr, caret(seg.text, err))
			}
			stop = err != nil && (!b.cont || ctx.Err() != nil)
			return !stop
		})
		if stop {
			break
		}
	}
	sh.redirect(nil, false)
	if b.cont {
		fmt.Fprintf(b.stderr, "%d statements, %d succeeded, %d failed\n", ran, ran-failed, failed)
	}
	return code
}

// parseInterleaved parses flags that may come before or after positional
// arguments, returning the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// flagGiven reports whether the flag was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// parseFlags runs parse with the flag package's own messages silenced.
// --help prints the usage to stdout (exit 0, as for any program asked for
// help); a bad flag prints one line with a hint on stderr (exit 2). done is
// true when the command must end with code.
func parseFlags(fs *flag.FlagSet, name string, parse func() error, stdout, stderr io.Writer) (code int, done bool) {
	fs.SetOutput(io.Discard)
	err := parse()
	switch {
	case err == nil:
		fs.SetOutput(stderr)
		return 0, false
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return 0, true
	default:
		msg := strings.Replace(err.Error(), "flag provided but not defined", "unknown option", 1)
		fmt.Fprintf(stderr, "error: %s (see %s --help)\n", msg, name)
		return 2, true
	}
}

// importFlags registers the options of an import (shared by dpsql import
// and the shell's .import) and returns the function that reads them once
// the flags are parsed.
func importFlags(fs *flag.FlagSet) func() (csvimport.Options, error) {
	hdr := fs.Bool("header", true, "the first row holds the column names (--header=false or --no-header: name them c1, c2, ...)")
	noHeader := fs.Bool("no-header", false, "the first row is data")
	delim := fs.String("delimiter", ",", "field separator: one character, or \\t for tab")
	sample := fs.Int("sample", 10000, "how many rows type inference looks at")
	return func() (csvimport.Options, error) {
		opts := csvimport.Options{NoHeader: *noHeader || !*hdr, SampleRows: *sample}
		d := *delim
		if d == `\t` {
			d = "\t"
		}
		r := []rune(d)
		if len(r) != 1 || r[0] == '"' || r[0] == '\r' || r[0] == '\n' {
			return opts, fmt.Errorf("--delimiter must be one character other than a quote or newline, got %q", *delim)
		}
		if flagGiven(fs, "delimiter") {
			opts.Delimiter = r[0] // else the importer may suggest one
		}
		return opts, nil
	}
}

func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dpsql import", flag.ContinueOnError)
	db := fs.String("db", "", "database `FILE` (created if missing), or postgres://USER@HOST:PORT/DBNAME (with --state): the table is created there and loaded with COPY")
	state := fs.String("state", "", "with a PostgreSQL --db: the SQLite `FILE` that keeps its table mirrors and answer cache (created if missing; default: one in ~/.cache/dpsql)")
	table := fs.String("table", "", "`NAME` of the new table (of the existing one with --replace or --append)")
	replace := fs.Bool("replace", false, "replace the rows of the existing table NAME with the file's (its policy stays; the cached answers that read it are dropped)")
	appendRows := fs.Bool("append", false, "add the file's rows to the existing table NAME (same columns, in order, of the same types; the cached answers that read it are dropped)")
	owner := fs.Bool("owner", false, "owner mode, needed by --replace and --append (they change a private table)")
	importOptions := importFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), importUsage)
		fs.PrintDefaults()
	}
	var pos []string
	if code, done := parseFlags(fs, "dpsql import", func() (err error) { pos, err = parseInterleaved(fs, args); return err }, stdout, stderr); done {
		return code
	}
	if *db == "" || *table == "" || len(pos) != 1 {
		fmt.Fprintln(stderr, "error: usage: dpsql import --db FILE --table NAME CSVFILE")
		return 2
	}
	opts, err := importOptions()
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 2
	}
	mode := dpsql.ImportCreate
	switch {
	case *replace && *appendRows:
		fmt.Fprintln(stderr, "error: --replace and --append exclude each other")
		return 2
	case *replace:
		mode = dpsql.ImportReplace
	case *appendRows:
		mode = dpsql.ImportAppend
	}
	var prog *progress
	if f, ok := stderr.(*os.File); ok && readline.IsTerminal(int(f.Fd())) {
		prog = newProgress(stderr)
		opts.Progress = prog.update
	}
	// A new table is private until the owner declares otherwise; changing
	// an existing one's rows is the owner's alone.
	engOpts := dpsql.Options{Owner: mode == dpsql.ImportCreate || *owner, Notify: noteTo(stderr)}
	if !engOpts.Owner {
		fmt.Fprintln(stderr, "error: --replace and --append change the rows of a private table: they are owner statements (add --owner)")
		return 2
	}
	if err := notADirectory(*db); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return exitUsage
	}
	path, err := stateFile(*db, *state, &engOpts)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 2
	}
	// A file this import creates is removed again when the import fails:
	// a failed first import leaves nothing behind.
	removeCreated := newFilesRemover(path, engOpts.DuckDB)
	eng, err := dpsql.Open(path, engOpts)
	if err != nil {
		removeCreated()
		fmt.Fprintln(stderr, "error:", err)
		return exitIO // as for the shell: the database cannot be opened or created
	}
	n, cols, err := eng.ImportInto(ctx, *table, pos[0], opts, mode)
	if prog != nil {
		if err != nil {
			prog.clear()
		} else {
			prog.end(n)
		}
	}
	if err != nil {
		eng.Close()
		removeCreated()
		fmt.Fprintf(stderr, "error: import %s: %v\n", pos[0], err)
		return exitCode(err)
	}
	defer eng.Close()
	reportImport(stdout, stderr, mode, *table, n, cols)
	return 0
}

// importUsage is dpsql import --help's text before its options.
const importUsage = `Usage: dpsql import --db FILE --table NAME [--owner --replace | --owner --append] [--no-header] [--delimiter C] [--sample N] CSVFILE
       dpsql import --db postgres://... [--state FILE] --table NAME [...] CSVFILE

Creates table NAME from CSVFILE in one streaming pass. The header row gives the
column names verbatim. Column types (INTEGER, REAL, TEXT) are inferred from the
first --sample rows. A column is INTEGER or REAL only if every value is that
number exactly as written (02134, 0x10, 1_000 or 99999999999999999999 stay
TEXT); when a later value does not fit, the file is read a second time with the
wider types (INTEGER to REAL, or to TEXT), so no value is lost or changed.
Empty fields become NULL; in a one-column file a blank line is an empty field
(as in sqlite3 and DuckDB); in a wider file blank lines at the end are ignored
and one before a row is an error. A malformed file fails with its line number and
leaves no table behind. The new table is private until the owner says
otherwise. On a terminal a progress line shows rows, rows/s and the time left.

With --replace or --append (owner statements: they need --owner, as the
shell's policy statements do) the table must exist (in a database file): the
file is read and checked into a scratch table first, then the table's rows are
replaced or added to in one transaction, which also drops the cached answers
that read the table; on any error the table is as it was. --append needs the
table's columns, in order, of the same types (INTEGER into REAL is fine);
--replace needs every column the table's policy names, and numbers in every
column the policy bounds.

Options:
`

// newFilesRemover returns what removes the database file at path (and
// its journals) and the DuckDB file duck, each only if it does not exist
// yet: an import that fails leaves nothing it created.
func newFilesRemover(path, duck string) func() {
	missing := func(p string) bool {
		_, err := os.Stat(p)
		return p != "" && os.IsNotExist(err)
	}
	created, duckCreated := missing(path), missing(duck)
	return func() {
		if created {
			for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
				os.Remove(path + suffix)
			}
		}
		if duckCreated {
			os.Remove(duck)
			os.Remove(duck + ".wal")
		}
	}
}

// reportImport says what an import did: the rows, and each column's type
// (stderr: what a script reads from stdout is the count).
func reportImport(stdout, stderr io.Writer, mode dpsql.ImportMode, table string, n int64, cols []csvimport.Column) {
	switch mode {
	case dpsql.ImportReplace:
		fmt.Fprintf(stdout, "replaced the rows of %s with %d rows\n", table, n)
	case dpsql.ImportAppend:
		fmt.Fprintf(stdout, "appended %d rows to %s\n", n, table)
	default:
		fmt.Fprintf(stdout, "imported %d rows into %s\n", n, table)
	}
	var types []string
	for _, c := range cols {
		t := c.Name + " " + c.Type
		if c.Widened {
			t += " (widened after the sample)"
		}
		types = append(types, t)
	}
	fmt.Fprintf(stderr, "columns: %s\n", strings.Join(types, ", "))
}

// versionLine is what dpsql --version prints: the module's version (or
// the commit it was built from), Go's, and the backends built in.
func versionLine() string {
	version, commit := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				commit = " " + s.Value[:12]
			}
			if s.Key == "vcs.modified" && s.Value == "true" && commit != "" {
				commit += "+changes"
			}
		}
	}
	backends := "SQLite, PostgreSQL"
	if dpsql.HasDuckDB() {
		backends += ", DuckDB"
	} else {
		backends += " (no DuckDB: built without cgo)"
	}
	return fmt.Sprintf("dpsql %s%s (%s, %s/%s); backends: %s", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, backends)
}

// notADirectory refuses a --db that names a directory (a usage mistake,
// exit status 2, the same for every command).
func notADirectory(db string) error {
	if st, err := os.Stat(db); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory: --db takes a database file (such as %s)", db, filepath.Join(db, "data.db"))
	}
	return nil
}

// stateFile turns --db and --state into the engine's file: --db itself,
// or, for a PostgreSQL --db, the --state file (and opts.Postgres), or for
// a DuckDB --db (data.duckdb, duckdb:PATH) the --state file or
// DuckDBStateFile (and opts.DuckDB).
func stateFile(db, state string, opts *dpsql.Options) (string, error) {
	if dpsql.IsDuckDBPath(db) {
		opts.DuckDB = dpsql.DuckDBFile(db)
		if state == "" {
			return dpsql.DuckDBStateFile(opts.DuckDB), nil
		}
		return state, nil
	}
	if dpsql.IsPostgresDSN(db) {
		opts.Postgres = db
		if state == "" {
			path, err := dpsql.DefaultStateFile(db)
			if _, serr := os.Stat(path); err == nil && serr != nil && opts.Notify != nil {
				opts.Notify("dpsql keeps this database's table mirrors and answer cache in " + path + " (--state FILE to choose another)")
			}
			return path, err
		}
		return state, nil
	}
	if state != "" {
		return "", errors.New("--state goes with a PostgreSQL or DuckDB --db (postgres://..., data.duckdb); with a database FILE, the file keeps everything")
	}
	return db, nil
}

// noteTo prints the engine's notes on w, one per line.
func noteTo(w io.Writer) func(string) { return func(n string) { fmt.Fprintln(w, "note:", n) } }

// progress redraws one terminal line while an import runs: rows, rate and
// time left while the file is read; when it has been read (the callback's
// fraction 1, once per pass), "storing" until the import ends; then one
// final line (end) with the whole time, or the line cleared before an
// error (clear), so that no message lands on it.
type progress struct {
	w     io.Writer
	start time.Time
	shown bool
}

func newProgress(w io.Writer) *progress { return &progress{w: w, start: time.Now()} }

// update is csvimport.Options.Progress.
func (p *progress) update(rows int64, frac float64) {
	el := time.Since(p.start).Seconds()
	rate := float64(rows) / math.Max(el, 1e-9)
	p.shown = true
	if frac >= 1 {
		fmt.Fprintf(p.w, "\r\033[K%d rows read in %.1fs (%.0f rows/s); storing them...", rows, el, rate)
		return
	}
	eta := "?"
	if frac > 0 {
		eta = (time.Duration(el*(1-frac)/frac) * time.Second).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r\033[K%d rows, %.0f rows/s, %3.0f%%, about %s left", rows, rate, 100*frac, eta)
}

// end replaces the line with the import's outcome.
func (p *progress) end(rows int64) {
	if p.shown {
		fmt.Fprintf(p.w, "\r\033[K%d rows in %.1fs\n", rows, time.Since(p.start).Seconds())
	}
}

// clear removes the line (before an error message).
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func runDemo(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dpsql demo", flag.ContinueOnError)
	db := fs.String("db", "", "where to build the demo database (default: a temporary file, removed on exit)")
	csvOut := fs.String("csv", "", "write the demo's synthetic patients to `FILE` as CSV (a new file) and stop: a data set to import as your own")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: dpsql demo [--db FILE]\n       dpsql demo --csv FILE\n\nBuilds a demo database of %d synthetic patients with a privacy policy and a budget of ε=10,\nruns three example private queries, and opens the shell when stdin is a terminal.\nWith --csv, writes the same patients as a CSV file instead.\n\nOptions:\n", demo.Rows)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, "dpsql demo", func() error { return fs.Parse(args) }, stdout, stderr); done {
		return code
	}
	if *csvOut != "" {
		if *db != "" {
			fmt.Fprintln(stderr, "error: use either --db or --csv, not both")
			return 2
		}
		return writeDemoCSV(*csvOut, stdout, stderr)
	}
	path := *db
	if path == "" {
		dir, err := os.MkdirTemp("", "dpsql-demo-")
		if err != nil {
			fmt.Fprintln(stderr, "error:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "demo.db")
	} else if _, err := os.Stat(path); err == nil {
		fmt.Fprintf(stderr, "error: %s already exists; give a new path to build the demo in\n", path)
		return 1
	}
	if err := demo.Generate(ctx, path); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	owner, err := dpsql.Open(path, dpsql.Options{Owner: true})
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	err = owner.Run(ctx, demo.Setup, func(*dpsql.Result) error { return nil })
	owner.Close()
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	eng, err := dpsql.Open(path, dpsql.Options{Epsilon: 0.5})
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	defer eng.Close()
	pr, _ := newPrinter("table", stdout)
	fmt.Fprintf(stdout, "Demo database: %d synthetic patients in table \"patients\" (%s).\n", demo.Rows, path)
	fmt.Fprintln(stdout, "Policy: each row is a privacy unit; bounds on age, income, visits; public domains for region and diagnosis; budget ε=10.")
	fmt.Fprintln(stdout, "Session default: SET epsilon = 0.5 per query. Every answer below is differentially private.")
	for _, q := range demo.Queries {
		fmt.Fprintf(stdout, "\ndpsql> %s;\n", q)
		if code := (batch{eng: eng, pr: pr, stderr: stderr}).run(ctx, q, ""); code != 0 {
			return code
		}
	}
	fmt.Fprintf(stdout, "\ndpsql> SHOW BUDGET;\n")
	if code := (batch{eng: eng, pr: pr, stderr: stderr}).run(ctx, "SHOW BUDGET", ""); code != 0 {
		return code
	}
	fmt.Fprintf(stdout, "\nTo serve a demo database to analysts over the PostgreSQL protocol (psql, drivers, BI tools):\n"+
		"  dpsql demo --db demo.db < /dev/null\n"+
		"  dpsql --db demo.db --owner -c \"CREATE ANALYST alice PASSWORD 'change me' BUDGET epsilon = 2\"\n"+
		"  dpsql serve --db demo.db        # then: psql \"host=127.0.0.1 port=5433 user=alice\"\n")
	if f, ok := stdin.(*os.File); ok && readline.IsTerminal(int(f.Fd())) {
		fmt.Fprintln(stdout, "\nNow it is your turn (analyst mode; try EXPLAIN SELECT ..., .schema, .help; Ctrl-D quits).")
		return repl(eng, pr, f, stdout, stderr)
	}
	return 0
}

// lazyFile creates its file at the first write.
type lazyFile struct {
	path string
	f    *os.File
	err  error
}

func (l *lazyFile) Write(p []byte) (int, error) {
	if l.f == nil && l.err == nil {
		l.f, l.err = os.Create(l.path)
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.f.Write(p)
}

// Close closes the file if it was created, and reports a failed create.
func (l *lazyFile) Close() error {
	if l.f != nil {
		return l.f.Close()
	}
	return l.err
}

// writeDemoCSV writes the demo's patients to a new CSV file (an existing
// file is left alone), all or nothing.
func writeDemoCSV(path string, stdout, stderr io.Writer) int {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	if err := demo.WriteCSV(f); err != nil {
		f.Close()
		os.Remove(path)
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %d synthetic patients to %s (columns: %s)\n", demo.Rows, path, strings.Join(demo.Columns, ", "))
	return 0
}
