package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/chzyer/readline"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/csvimport"
	"github.com/dpsql/dpsql/parser"
)

const replHelp = `Statements end with ';' and may span lines. Ctrl-C cancels the running
query (or the statement being typed); Ctrl-D quits.

.help              this text
.tables            list tables, private or public
.schema [TABLE]    columns and types
.policy [TABLE]    privacy policy: bounds and public domains
.budget            total, spent and remaining privacy budget
.mode [MODE]       output format: table, box, markdown, csv, json, line or bars (no MODE: show it)
.timer on|off      show how long each statement took
.explain on|off    show the plan of each query instead of running it (spends nothing)
.headers on|off    show column names in table and csv output (default on)
.nullvalue TEXT    how NULL is shown (default NULL; text that reads the same is shown quoted)
.output [FILE]     send results to FILE (no FILE: back to standard output)
.once FILE         send the next statement's results to FILE
.cost on|off       keep each result's cost in csv, json and line output (as --with-cost)
.intervals on|off  show each noisy value's 95% interval in table and line output (default on)
.chart [FILE]      also draw each result with a key and numeric columns as a chart with 95% error
                   bars to FILE (.svg or .png; later ones FILE-2, ...); no FILE: stop
.show              the current settings
.databases         the database file this shell has open
.print TEXT        print TEXT (psql's \echo)
.read FILE         run the statements in FILE
.edit [FILE]       edit the last statement (or FILE) in $VISUAL/$EDITOR, then run it (also \e)
.pager on|off      results taller than the terminal through $PAGER (default less -FX)
.import [OPTIONS] FILE TABLE  create TABLE from a CSV file (owner mode; options of dpsql import:
                   --no-header, --delimiter C, --sample N; quote names with spaces)
.quit              leave (also .exit)

SQL beyond SELECT: SET epsilon = E (default ε per query), SET delta = D,
SHOW BUDGET, SHOW TABLES, SHOW POLICY t, EXPLAIN SELECT ... (the plan and its
cost; spends nothing); the owner adds CREATE/ALTER PRIVACY POLICY, SET BUDGET,
SHOW LEDGER, SHOW CACHE, RESET CACHE, ALTER TABLE t SET PUBLIC and
CREATE/ALTER/DROP ANALYST, SHOW ANALYSTS (for dpsql serve). A repeated query is answered from the
cache, free.
The whole dialect: docs/dialect.md.

psql habits work too: \q, quit and exit leave; \? is .help; \d (\d+) lists the
tables and \d TABLE (or DESCRIBE TABLE) describes one; \l is .databases, \echo
is .print, \pset alone is .show; \timing toggles .timer; \x switches between
.mode line and .mode table; a line ending in \g ends the statement.
`

// shell is the interactive session: statements and meta-commands.
type shell struct {
	eng     *dpsql.Engine
	pr      *printer
	out     io.Writer
	errw    io.Writer
	name    string
	timer   bool
	explain bool
	// output is the file results go to after .output FILE (nil: out);
	// once marks a .once file, closed after the next statement.
	output *os.File
	once   bool
	// failed records that a statement or dot-command failed (batch runs
	// stop on it).
	failed bool
	// Interactive shells only: stdin is the terminal (nil in scripts), for
	// .edit's editor; last the last statement typed; pager the pager wide
	// or long results go through (nil: none), on the terminal termFd.
	stdin  io.Reader
	last   string
	pager  []string
	termFd uintptr
}

// redirect sends results to a new file (nil: back to the shell's output),
// closing the previous one.
func (s *shell) redirect(f *os.File, once bool) {
	if s.output != nil {
		s.output.Close()
	}
	s.output, s.once = f, once
	if f == nil {
		s.pr.w = s.out
	} else {
		s.pr.w = f
	}
}

// prompt shows the database, the ε each query spends (the session's)
// and the ε left in the budget, apart — "adult.db [ε 0.5/query, 8.4
// left]> " — and marks the owner: "adult.db (owner) [...]# ".
func (s *shell) prompt(ctx context.Context) string {
	name, end := s.name, "> "
	if s.eng.Owner() {
		name, end = name+" (owner)", "# "
	}
	per := "no ε/query set"
	if eps := s.eng.Settings().Epsilon; eps > 0 {
		per = "ε " + strconv.FormatFloat(eps, 'g', 4, 64) + "/query"
	}
	st, err := s.eng.Budget(ctx)
	if err != nil || !st.Set {
		return fmt.Sprintf("%s [%s, no budget]%s", name, per, end)
	}
	return fmt.Sprintf("%s [%s, %s left]%s", name, per, strconv.FormatFloat(st.Remaining().Epsilon, 'g', 4, 64), end)
}

// paged runs what was typed with its results through the pager when they
// do not fit the terminal (and .output is not redirecting them).
func (s *shell) paged(ctx context.Context, text string) {
	if s.pager == nil || s.output != nil {
		s.statement(ctx, text)
		return
	}
	var buf bytes.Buffer
	s.pr.w = &buf
	s.statement(ctx, text)
	s.pr.w = s.out
	s.page(buf.Bytes())
}

// pagerSwitch is .pager on|off: results taller than the terminal through
// $PAGER (less -FX by default) in the interactive shell.
func (s *shell) pagerSwitch(_ context.Context, cmd string, args []string) bool {
	a, ok := s.one(cmd, args)
	if !ok {
		return false
	}
	v, err := onOff(a)
	switch {
	case err != nil:
		s.fail("%s: %v", cmd, err)
	case !v:
		s.pager = nil
	case s.termFd == 0:
		s.fail("%s: the output is not a terminal", cmd)
	default:
		if s.pager = pagerCommand(); s.pager == nil {
			s.fail("%s: no pager (set PAGER, or install less)", cmd)
		}
	}
	return false
}

// statement runs the statements of text; errors are printed and the shell
// goes on.
func (s *shell) statement(ctx context.Context, text string) { s.script(ctx, text, "") }

// script runs the statements of text, read from file ("" for what was
// typed): errors carry the file name, and a caret under the position.
func (s *shell) script(ctx context.Context, text, file string) {
	run := s.eng.RunEach
	if s.explain {
		run = s.eng.ExplainEach // decided per parsed statement, not on the text
	}
	start := time.Now()
	run(ctx, text, func(res *dpsql.Result, err error) bool {
		if err == nil {
			err = s.pr.print(res)
		}
		if err != nil {
			fmt.Fprintln(s.errw, "error:", errorText(err, file))
			fmt.Fprint(s.errw, caret(text, err))
			s.failed = true
		}
		return err == nil
	})
	if s.timer {
		fmt.Fprintf(s.out, "time: %.1f ms\n", float64(time.Since(start).Microseconds())/1000)
	}
	if s.once {
		s.redirect(nil, false)
	}
}

func onOff(arg string) (bool, error) {
	switch strings.ToLower(arg) {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("expected on or off, got %q", arg)
}

// meta runs a dot-command; it reports whether the shell should quit.
func (s *shell) meta(ctx context.Context, line string) (quit bool) {
	fields, err := splitArgs(line)
	if err != nil {
		s.fail("%v", err)
		return false
	}
	cmd, args := fields[0], fields[1:]
	for _, dc := range dotCommands {
		for _, name := range dc.names {
			if name == cmd {
				return dc.run(s, ctx, cmd, args)
			}
		}
	}
	s.fail("unknown command %s (try .help)", cmd)
	return false
}

// fail reports a command's error and marks the session as failed.
func (s *shell) fail(format string, a ...any) {
	fmt.Fprintf(s.errw, "error: "+format+"\n", a...)
	s.failed = true
}

// one is a command's single argument (ok false, reported, otherwise).
func (s *shell) one(cmd string, args []string) (string, bool) {
	if len(args) != 1 {
		s.fail("%s takes one argument (see .help)", cmd)
		return "", false
	}
	return args[0], true
}

// dotCommand is one of the shell's dot-commands: its names and what it
// does (quit: end the shell).
type dotCommand struct {
	names []string
	run   func(s *shell, ctx context.Context, cmd string, args []string) (quit bool)
}

// dotCommands is the table of dot-commands (.help lists them for users).
var dotCommands = []dotCommand{
	{[]string{".quit", ".exit"}, func(*shell, context.Context, string, []string) bool { return true }},
	{[]string{".help"}, func(s *shell, _ context.Context, _ string, _ []string) bool {
		fmt.Fprint(s.out, replHelp)
		return false
	}},
	{[]string{".tables"}, func(s *shell, ctx context.Context, _ string, _ []string) bool {
		s.statement(ctx, "SHOW TABLES")
		return false
	}},
	{[]string{".budget"}, func(s *shell, ctx context.Context, _ string, _ []string) bool {
		s.statement(ctx, "SHOW BUDGET")
		return false
	}},
	{[]string{".schema"}, (*shell).schemaCommand},
	{[]string{".policy"}, (*shell).policyCommand},
	{[]string{".mode"}, (*shell).modeCommand},
	{[]string{".timer", ".explain"}, (*shell).toggleCommand},
	{[]string{".headers", ".cost", ".intervals"}, (*shell).printerSwitch},
	{[]string{".nullvalue"}, func(s *shell, _ context.Context, cmd string, args []string) bool {
		if a, ok := s.one(cmd, args); ok {
			s.pr.null, s.pr.nullSet = a, true
		}
		return false
	}},
	{[]string{".output", ".once"}, (*shell).outputCommand},
	{[]string{".chart"}, func(s *shell, _ context.Context, _ string, args []string) bool {
		if len(args) == 0 {
			s.pr.charts = nil
			return false
		}
		c, err := newChartFile(args[0], func(path string) { fmt.Fprintln(s.errw, "chart written to "+path) })
		if err != nil {
			s.fail("%v", err)
			return false
		}
		c.skipped = func(why string) { fmt.Fprintln(s.errw, "note: "+why) }
		s.pr.charts = c
		return false
	}},
	{[]string{".show"}, func(s *shell, _ context.Context, _ string, _ []string) bool { s.showSettings(); return false }},
	{[]string{".read"}, (*shell).readCommand},
	{[]string{".edit"}, (*shell).editCommand},
	{[]string{".pager"}, (*shell).pagerSwitch},
	{[]string{".import"}, (*shell).importCommand},
	{[]string{".databases"}, func(s *shell, _ context.Context, _ string, _ []string) bool {
		fmt.Fprintf(s.out, "main: %s\n", s.eng.Path()) // one database per shell (psql's \l)
		return false
	}},
	{[]string{".print"}, func(s *shell, _ context.Context, _ string, args []string) bool {
		fmt.Fprintln(s.out, strings.Join(args, " ")) // sqlite3's .print, psql's \echo
		return false
	}},
}

// schemaCommand is .schema [TABLE]: the tables' columns and privacy.
func (s *shell) schemaCommand(ctx context.Context, _ string, args []string) bool {
	tables, err := s.eng.Tables(ctx)
	if err != nil {
		s.fail("%v", err)
		return false
	}
	found := false
	for _, t := range tables {
		if len(args) > 0 && !strings.EqualFold(t.Name, args[0]) {
			continue
		}
		found = true
		kind := "private"
		if t.Public {
			kind = "public"
		}
		var cols []string
		for _, c := range t.Columns {
			cols = append(cols, fmt.Sprintf("  %q %s", c.Name, c.Type))
		}
		fmt.Fprintf(s.out, "-- %s\nTABLE %q (\n%s\n);\n", kind, t.Name, strings.Join(cols, ",\n"))
	}
	if len(args) > 0 && !found {
		s.fail("unknown table %q", args[0])
	}
	return false
}

// policyCommand is .policy [TABLE]: SHOW POLICY of one table or of each.
func (s *shell) policyCommand(ctx context.Context, _ string, args []string) bool {
	if len(args) > 0 {
		s.statement(ctx, "SHOW POLICY "+quoteName(args[0]))
		return false
	}
	tables, err := s.eng.Tables(ctx)
	if err != nil {
		s.fail("%v", err)
	}
	for _, t := range tables {
		fmt.Fprintf(s.out, "%s:\n", t.Name)
		s.statement(ctx, "SHOW POLICY "+quoteName(t.Name))
	}
	return false
}

// modeCommand is .mode [MODE] (and \x, as toggle-line).
func (s *shell) modeCommand(_ context.Context, cmd string, args []string) bool {
	if len(args) == 0 {
		fmt.Fprintf(s.out, "mode %s\n", s.pr.format)
		return false
	}
	m, ok := s.one(cmd, args)
	if !ok {
		return false
	}
	if m == "toggle-line" { // \x
		m = map[bool]string{true: "table", false: "line"}[s.pr.format == "line"]
		fmt.Fprintf(s.out, "mode %s\n", m)
	}
	if _, err := newPrinter(m, s.out); err != nil {
		s.fail("%v", err)
	} else {
		s.pr.format = m
	}
	return false
}

// toggleCommand is .timer and .explain on|off (and \timing, as toggle).
func (s *shell) toggleCommand(_ context.Context, cmd string, args []string) bool {
	a, ok := s.one(cmd, args)
	if !ok {
		return false
	}
	if a == "toggle" { // \timing
		a = map[bool]string{true: "off", false: "on"}[s.timer]
		fmt.Fprintf(s.out, "timer %s\n", a)
	}
	v, err := onOff(a)
	switch {
	case err != nil:
		s.fail("%s: %v", cmd, err)
	case cmd == ".timer":
		s.timer = v
	default:
		s.explain = v
	}
	return false
}

// printerSwitch is .headers, .cost and .intervals on|off.
func (s *shell) printerSwitch(_ context.Context, cmd string, args []string) bool {
	a, ok := s.one(cmd, args)
	if !ok {
		return false
	}
	v, err := onOff(a)
	switch {
	case err != nil:
		s.fail("%s: %v", cmd, err)
	case cmd == ".headers":
		s.pr.noHeaders = !v
	case cmd == ".intervals":
		s.pr.noIntervals = !v
	default:
		s.pr.withCost = v
	}
	return false
}

// outputCommand is .output [FILE] and .once FILE.
func (s *shell) outputCommand(_ context.Context, cmd string, args []string) bool {
	if len(args) == 0 && cmd == ".output" {
		s.redirect(nil, false)
		return false
	}
	name, ok := s.one(cmd, args)
	if !ok {
		return false
	}
	f, err := os.Create(name)
	if err != nil {
		s.fail("%v", err)
		return false
	}
	s.redirect(f, cmd == ".once")
	return false
}

// showSettings is .show: the shell's settings.
func (s *shell) showSettings() {
	out := "stdout"
	if s.output != nil {
		out = s.output.Name()
		if s.once {
			out += " (once)"
		}
	}
	on := map[bool]string{true: "on", false: "off"}
	fmt.Fprintf(s.out, "database: %s\n    role: %s\n    mode: %s\n headers: %s\nnullvalue: %q\n    cost: %s\n  output: %s\n   timer: %s\n explain: %s\n",
		s.eng.Path(), map[bool]string{true: "owner", false: "analyst"}[s.eng.Owner()], s.pr.format, on[!s.pr.noHeaders], s.pr.null, on[s.pr.withCost], out, on[s.timer], on[s.explain])
}

// readCommand is .read FILE: runs a script (Ctrl-C stops it).
func (s *shell) readCommand(ctx context.Context, cmd string, args []string) bool {
	f, ok := s.one(cmd, args)
	if !ok {
		return false
	}
	src, err := os.ReadFile(f)
	if err != nil {
		s.fail("%v", err)
		return false
	}
	runCancellable(ctx, func(qctx context.Context) { s.script(qctx, string(src), f) })
	return false
}

// importCommand is .import [options] FILE TABLE.
func (s *shell) importCommand(ctx context.Context, _ string, args []string) bool {
	fs := flag.NewFlagSet(".import", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	options := importFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err == nil && len(pos) != 2 {
		err = errors.New("takes FILE TABLE")
	}
	var opts csvimport.Options
	if err == nil {
		opts, err = options()
	}
	if err != nil {
		s.fail(".import: %v (usage: .import [--no-header] [--delimiter C] [--sample N] FILE TABLE; quote names with spaces)", err)
		return false
	}
	n, _, err := s.eng.ImportCSV(ctx, pos[1], pos[0], opts)
	if err != nil {
		s.fail("import %s: %v", pos[0], err)
		return false
	}
	fmt.Fprintf(s.out, "imported %d rows into %s\n", n, pos[1])
	return false
}

func quoteName(n string) string { return `"` + strings.ReplaceAll(n, `"`, `""`) + `"` }

// completionKeywords are what the shell completes: every statement's
// words (owner statements too: the shell says so when they are refused).
var completionKeywords = append(append([]string(nil), parser.AnalystCompletions...), parser.OwnerCompletions...)

// completer completes keywords, meta-commands, and table and column names
// (quoted when they need it).
type completer struct {
	s   *shell
	ctx context.Context
}

func (c completer) Do(line []rune, pos int) ([][]rune, int) {
	start := pos
	if q := openQuote(line[:pos]); q >= 0 {
		start = q // inside a quoted name, spaces belong to it: "Capital G
	} else {
		for start > 0 && (unicode.IsLetter(line[start-1]) || unicode.IsDigit(line[start-1]) || strings.ContainsRune(`_.-`, line[start-1])) {
			start--
		}
	}
	prefix := string(line[start:pos])
	if before := strings.TrimSpace(string(line[:start])); strings.EqualFold(before, ".mode") {
		return completeFrom(modeNames, prefix)
	}
	if prefix == "" {
		return nil, 0
	}
	cands := append([]string(nil), completionKeywords...)
	for _, dc := range dotCommands {
		cands = append(cands, dc.names...)
	}
	if tables, err := c.s.eng.Tables(c.ctx); err == nil {
		for _, t := range tables {
			cands = append(cands, nameCandidates(t.Name)...)
			for _, col := range t.Columns {
				cands = append(cands, nameCandidates(col.Name)...)
			}
		}
	}
	sort.Strings(cands)
	var out [][]rune
	seen := map[string]bool{}
	for _, k := range cands {
		if seen[k] || len(k) < len(prefix) || !strings.EqualFold(k[:len(prefix)], prefix) {
			continue
		}
		seen[k] = true
		rest := k[len(prefix):]
		if isKeyword[k] && prefix == strings.ToLower(prefix) {
			rest = strings.ToLower(rest) // keywords in the case the user types them
		}
		out = append(out, []rune(rest))
	}
	return out, len([]rune(prefix))
}

// isKeyword marks the completion candidates that are keywords (not names).
var isKeyword = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range completionKeywords {
		m[k] = true
	}
	return m
}()

// openQuote returns the position of a double quote that opens a name not
// yet closed before the end of line (outside strings), or -1.
func openQuote(line []rune) int {
	open, inString := -1, false
	for i, r := range line {
		switch {
		case r == '\'' && open < 0:
			inString = !inString
		case r == '"' && !inString:
			if open < 0 {
				open = i
			} else {
				open = -1
			}
		}
	}
	return open
}

// identifier quotes a name unless it is a plain lower-case word.
// nameCandidates are the ways a table or column name completes: as
// identifier prints it (quoted when it is not lower case), and, when it
// can stand unquoted (letters, digits and _; dpsql matches names without
// regard to case), bare, so that GROUP BY E<Tab> gives Education.
func nameCandidates(n string) []string {
	out := []string{identifier(n)}
	if out[0] != n && plainName(n) && !isKeyword[strings.ToUpper(n)] {
		out = append(out, n)
	}
	return out
}

// plainName reports whether n can be written without quotes.
func plainName(n string) bool {
	for i, r := range n {
		if !(r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			return false
		}
	}
	return n != ""
}

// modeNames are the output modes .mode takes.
var modeNames = []string{"bars", "box", "csv", "json", "jsonl", "line", "markdown", "table"}

// completeFrom completes prefix from a fixed list.
func completeFrom(list []string, prefix string) ([][]rune, int) {
	var out [][]rune
	for _, m := range list {
		if strings.HasPrefix(m, strings.ToLower(prefix)) {
			out = append(out, []rune(m[len(prefix):]))
		}
	}
	return out, len([]rune(prefix))
}

func identifier(n string) string {
	for i, r := range n {
		if !(r == '_' || unicode.IsLower(r) || (i > 0 && unicode.IsDigit(r))) {
			return quoteName(n)
		}
	}
	return n
}

// repl reads statements with readline until Ctrl-D or .quit. Ctrl-C while
// a statement runs cancels that statement only.
func repl(eng *dpsql.Engine, pr *printer, stdin io.ReadCloser, stdout, stderr io.Writer) int {
	ctx := context.Background()
	s := &shell{eng: eng, pr: pr, out: stdout, errw: stderr, name: filepath.Base(eng.Path()), stdin: stdin, pager: pagerCommand()}
	pr.interactive = true
	if f, ok := stdout.(*os.File); ok && readline.IsTerminal(int(f.Fd())) {
		s.termFd = f.Fd()
	} else {
		s.pager = nil // not a terminal: nothing to page
	}
	history := ""
	if dir, err := os.UserConfigDir(); err == nil {
		if os.MkdirAll(filepath.Join(dir, "dpsql"), 0o700) == nil {
			history = filepath.Join(dir, "dpsql", "history")
			privateHistory(history)
		}
	}
	rl, err := readline.NewEx(&readline.Config{
		Prompt: s.prompt(ctx), HistoryFile: history, InterruptPrompt: "^C", EOFPrompt: "",
		AutoComplete: completer{s: s, ctx: ctx}, Stdin: stdin, Stdout: stdout, Stderr: stderr,
		DisableAutoSaveHistory: true, // whole statements are saved, not their lines
	})
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	defer rl.Close()
	fmt.Fprintln(stdout, "dpsql: differentially private SQL. Statements end with ';'. .help for help, Ctrl-D to quit.")
	var buf strings.Builder
	width := 0 // of the main prompt, which the continuation prompt lines up with
	for {
		if buf.Len() == 0 {
			p := s.prompt(ctx)
			width = displayWidth(p)
			rl.SetPrompt(p)
		} else {
			rl.SetPrompt(continuationPrompt(width))
		}
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			buf.Reset()
			continue
		}
		if err != nil { // io.EOF: Ctrl-D
			if strings.TrimSpace(buf.String()) != "" {
				fmt.Fprintln(stderr, "error: the last statement was incomplete (it did not end with ';') and did not run")
			}
			return 0
		}
		if buf.Len() == 0 {
			if meta, ok := psqlHabit(strings.TrimSpace(line)); ok {
				rl.SaveHistory(strings.TrimSpace(line)) // as typed, so that Up recalls it
				if meta == "" {
					fmt.Fprintf(stderr, "error: %s\n", unknownHabit(strings.TrimSpace(line)))
					continue
				}
				if s.meta(ctx, meta) {
					return 0
				}
				continue
			}
		}
		if buf.Len() == 0 && strings.HasPrefix(strings.TrimSpace(line), ".") {
			rl.SaveHistory(strings.TrimSpace(line))
			if s.meta(ctx, strings.TrimSpace(line)) {
				return 0
			}
			continue
		}
		buf.WriteString(endWithG(line))
		buf.WriteString("\n")
		if !parser.Complete(buf.String()) { // as sqlite3_complete: not a ';' inside a string or comment
			continue
		}
		rl.SaveHistory(historyEntry(buf.String()))
		s.last = buf.String()
		runCancellable(ctx, func(qctx context.Context) { s.paged(qctx, buf.String()) })
		buf.Reset()
	}
}

// privateHistory makes the history file readable by its user only (the
// statements typed name tables and values): created 0600 before readline
// opens it (readline would create it 0644 under the usual umask), and an
// older one tightened.
func privateHistory(path string) {
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
		f.Close()
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		os.Chmod(path, 0o600)
	}
}

// endWithG turns psql's \g at the end of a line into the ';' that ends a
// statement.
func endWithG(line string) string {
	t := strings.TrimRight(line, " \t")
	if strings.HasSuffix(t, `\g`) && !strings.HasSuffix(t, `\\g`) {
		return strings.TrimRight(strings.TrimSuffix(t, `\g`), " \t") + ";"
	}
	return line
}

// splitArgs splits a dot-command line into words; '...' and "..." quote a
// word with spaces (a doubled quote inside stands for itself).
func splitArgs(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\'' || r == '"':
			inWord = true
			closed := false
			for i++; i < len(rs); i++ {
				if rs[i] == r {
					if i+1 < len(rs) && rs[i+1] == r {
						cur.WriteRune(r)
						i++
						continue
					}
					closed = true
					break
				}
				cur.WriteRune(rs[i])
			}
			if !closed {
				return nil, fmt.Errorf("unterminated %c in %q", r, line)
			}
		case unicode.IsSpace(r):
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			inWord = true
			cur.WriteRune(r)
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// continuationPrompt is "...> " right-aligned under a main prompt of the
// given display width, so that continued lines start where the first did.
func continuationPrompt(width int) string {
	return strings.Repeat(" ", max(0, width-5)) + "...> "
}

// historyEntry is a statement as history keeps it: one entry for the whole
// statement, its lines joined (history files hold one line per entry), so
// that Up recalls all of it. Passwords (CREATE/ALTER ANALYST) are not
// kept: the history file is plain text in the user's home.
func historyEntry(stmt string) string {
	lines := strings.Split(strings.TrimSpace(parser.RedactPasswords(stmt)), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, " ")
}

// psqlHabit maps what psql and sqlite3 users type out of habit to the
// shell's dot-command: \q, quit and exit quit; \? and \h are .help; \d and
// \dt list the tables, \d NAME describes one; \timing toggles .timer; \x
// switches between .mode line and .mode table (\x on|off|auto sets it); \i
// FILE is .read, \o [FILE] is .output, \conninfo is .show. ok is false
// when the line is not such a habit; meta is "" for an unknown backslash
// command. Scripts (-f, piped input) take them too.
// habitHints says what to do instead of a psql command the shell does not
// take, beyond the generic hint.
var habitHints = map[string]string{
	`\set`:   "dpsql has no psql variables; SET name = value changes dpsql's settings (SHOW ALL lists them)",
	`\unset`: "dpsql has no psql variables; RESET name restores a setting",
	`\df`:    "dpsql has no user functions; docs/dialect.md lists the functions queries may call",
	`\du`:    "analysts are listed by SHOW ANALYSTS (owner mode)",
	`\dn`:    "dpsql has one schema, main; .tables lists its tables",
	`\c`:     "a shell opens one database; leave (\\q) and run dpsql --db FILE",
	`\copy`:  "to load a CSV file use .import FILE TABLE (owner) or dpsql import",
	`\g`:     "end the statement with ';' (or \\g on the same line)",
}

// unknownHabit is the error for a backslash command the shell does not take.
func unknownHabit(line string) string {
	cmd := strings.Fields(line)[0]
	msg := fmt.Sprintf("unknown command %s: the shell's commands start with '.' (.help lists them)", cmd)
	if h, ok := habitHints[strings.ToLower(cmd)]; ok {
		msg = fmt.Sprintf("unknown command %s: %s", cmd, h)
	}
	return msg
}

// psetFormats maps psql's \pset format values to dpsql's modes.
var psetFormats = map[string]string{"aligned": "table", "wrapped": "table", "csv": "csv", "json": "json", "markdown": "markdown", "asciidoc": "", "html": "", "latex": "", "troff-ms": "", "unaligned": ""}

// psetHabit maps psql's \pset settings that have a dot-command: format,
// expanded, tuples_only, null; another one is an error that names it
// (an empty meta).
func psetHabit(args []string) (meta string, ok bool) {
	if len(args) < 2 {
		return "", true
	}
	v := strings.Trim(strings.Join(args[1:], " "), `'"`)
	switch strings.ToLower(args[0]) {
	case "format":
		if m := psetFormats[strings.ToLower(v)]; m != "" {
			return ".mode " + m, true
		}
	case "expanded", "x":
		return psqlHabit(`\x ` + v)
	case "tuples_only", "t":
		switch strings.ToLower(v) {
		case "on", "true":
			return ".headers off", true
		case "off", "false":
			return ".headers on", true
		}
	case "null":
		return ".nullvalue " + v, true
	case "pager":
		switch strings.ToLower(v) {
		case "on", "always", "true":
			return ".pager on", true
		case "off", "false":
			return ".pager off", true
		}
	}
	return "", true
}

func psqlHabit(line string) (meta string, ok bool) {
	word := strings.TrimSuffix(line, ";")
	fields := strings.Fields(word)
	if len(fields) == 0 {
		return "", false
	}
	switch strings.ToLower(fields[0]) {
	case `\q`, "quit", "exit":
		if len(fields) == 1 {
			return ".quit", true
		}
	case `\?`, `\h`, "help":
		if len(fields) == 1 || fields[0][0] == '\\' {
			return ".help", true
		}
	case `\d`, `\dt`, `\d+`, `\dt+`:
		if len(fields) == 1 {
			return ".tables", true
		}
		return ".schema " + strings.Join(fields[1:], " "), true
	case "describe", "desc": // DuckDB's, MySQL's and BigQuery users' DESCRIBE t
		if len(fields) == 2 {
			return ".schema " + fields[1], true
		}
		return "", false
	case `\l`, `\l+`, `\list`:
		if len(fields) == 1 {
			return ".databases", true
		}
	case `\echo`:
		return strings.TrimRight(".print "+strings.Join(fields[1:], " "), " "), true
	case `\timing`:
		return ".timer toggle", true
	case `\x`:
		if len(fields) == 1 {
			return ".mode toggle-line", true
		}
		switch strings.ToLower(fields[1]) {
		case "on":
			return ".mode line", true
		case "off", "auto": // auto: dpsql's tables are narrow enough for table mode
			return ".mode table", true
		}
	case `\i`, `\ir`:
		return ".read " + strings.Join(fields[1:], " "), true
	case `\o`:
		return strings.TrimSpace(".output " + strings.Join(fields[1:], " ")), true
	case `\conninfo`:
		if len(fields) == 1 {
			return ".show", true
		}
	case `\pset`:
		if len(fields) == 1 {
			return ".show", true
		}
		return psetHabit(fields[1:])
	case `\e`, `\edit`:
		return strings.TrimSpace(".edit " + strings.Join(fields[1:], " ")), true
	case `\t`:
		if len(fields) == 2 {
			return psetHabit([]string{"tuples_only", fields[1]})
		}
	}
	if strings.HasPrefix(fields[0], `\`) {
		return "", true
	}
	return "", false
}

// runCancellable runs fn with a context that Ctrl-C (SIGINT) cancels.
func runCancellable(ctx context.Context, fn func(context.Context)) {
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
			cancel()
		case <-done:
		}
	}()
	fn(qctx)
	close(done)
}
