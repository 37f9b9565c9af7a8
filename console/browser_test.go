package console_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/dpsql/dpsql"
)

// chromium finds a headless-capable Chromium; without one the browser
// test skips, and fails when DPSQL_REQUIRE_CHROMIUM is set (CI installs
// Debian's chromium and sets it).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("DPSQL_REQUIRE_CHROMIUM") != "" {
		t.Fatal("DPSQL_REQUIRE_CHROMIUM is set but no chromium is installed (Debian: apt-get install chromium)")
	}
	t.Skip("no chromium: the browser test needs Debian's chromium")
	return ""
}

// TestBrowser drives a real headless Chromium through the console: log-in
// (a wrong password first), completion, a grouped query drawn with error
// bars (and the CSV its download saves), a refused query's message, the budget running out, the history,
// Cancel on a slow statement, and log-out. Each step's screenshot goes to $DPSQL_SCREENSHOTS (kept out
// of the repository; docs/images/console.png is the grouped query's, made
// with DPSQL_SCREENSHOTS=/tmp/shots go test ./console -run Browser) or to
// the test's temporary directory. The assertions read the DOM: values,
// intervals and budget numbers, not pixels.
func TestBrowser(t *testing.T) {
	exe := chromium(t)
	t.Parallel()
	h := newHarness(t, dpsql.Options{NoCache: true}, nil)
	shots := os.Getenv("DPSQL_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	type step = chromedp.Action[chromedp.Void]
	shot := func(name string) step {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, strings.ReplaceAll(name, " ", "-")+".png"), png, 0o644)
		})
	}
	run := func(what string, steps ...step) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	get := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		s, err := chromedp.Run(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return strings.TrimSpace(s)
	}
	text := func(sel string) string {
		t.Helper()
		return get("read "+sel, chromedp.Text(chromedp.CSS(sel)))
	}
	poll := func(expr string) step {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(10*time.Second))(ctx, tg)
			return err
		})
	}
	// setValue sets a field's value in the page (chromedp's SetValue
	// refuses the empty string).
	setValue := func(id, v string) step {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			js, _ := json.Marshal(v)
			_, err := chromedp.Evaluate[bool](`(document.getElementById("`+id+`").value = `+string(js)+`, true)`)(ctx, tg)
			return err
		})
	}
	setSQL := func(sql, eps string) step {
		return chromedp.Steps(setValue("sql", sql), setValue("epsilon", eps), setValue("target-error", ""))
	}

	// Log-in: a wrong password is refused with a message, then the right one.
	run("open the page", chromedp.Navigate(h.srv.URL+"/"), chromedp.WaitVisible(chromedp.ID("login-view")), shot("01 login"))
	run("wrong password",
		chromedp.SendKeys(chromedp.ID("login-user"), "alice"),
		chromedp.SendKeys(chromedp.ID("login-password"), "not-it"),
		chromedp.Click(chromedp.ID("login-button")),
		chromedp.WaitVisible(chromedp.CSS("#login-error:not(:empty)")))
	if got := text("#login-error"); got != "wrong analyst name or password" {
		t.Errorf("wrong password says %q", got)
	}
	run("log in",
		chromedp.SendKeys(chromedp.ID("login-password"), "wonderland"),
		chromedp.Click(chromedp.ID("login-button")),
		chromedp.WaitVisible(chromedp.ID("work-view")),
		chromedp.WaitVisible(chromedp.CSS("#budget-own-total:not(:empty)")))
	if got := text("#who"); got != "analyst alice" {
		t.Errorf("logged in as %q", got)
	}

	// Completion: "SEL" offers SELECT, Tab takes it; "vis" offers the table.
	run("complete a keyword",
		setValue("sql", ""),
		chromedp.SendKeys(chromedp.ID("sql"), "SEL"),
		chromedp.WaitVisible(chromedp.CSS("#completions li.active")))
	if got := text("#completions li.active"); got != "SELECT" {
		t.Errorf("the first completion of SEL is %q", got)
	}
	run("take it", chromedp.SendKeys(chromedp.ID("sql"), "\t"))
	sql, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("sql").value`))
	if err != nil {
		t.Fatal(err)
	}
	if sql != "SELECT " {
		t.Errorf("after Tab the editor holds %q", sql)
	}
	run("complete a table", chromedp.SendKeys(chromedp.ID("sql"), "COUNT(*) FROM vis"),
		chromedp.WaitVisible(chromedp.CSS("#completions li.active")))
	if got := text("#completions li.active"); got != "visits" {
		t.Errorf("the completion of vis is %q", got)
	}
	// Enter is a new line while the list shows: "AS n⏎" stays "AS n"
	// (issue 51: it became "AS NOT"); after an arrow key, Enter takes the
	// completion chosen.
	run("Enter after an alias",
		setValue("sql", ""),
		chromedp.SendKeys(chromedp.ID("sql"), "SELECT COUNT(*) AS n"),
		chromedp.WaitVisible(chromedp.CSS("#completions li.active")),
		chromedp.SendKeys(chromedp.ID("sql"), "\r"))
	if sql, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("sql").value`)); err != nil || sql != "SELECT COUNT(*) AS n\n" {
		t.Errorf("after Enter the editor holds %q (%v), want the alias kept and a new line", sql, err)
	}
	run("Enter after an arrow",
		setValue("sql", ""),
		chromedp.SendKeys(chromedp.ID("sql"), "SEL"),
		chromedp.WaitVisible(chromedp.CSS("#completions li.active")),
		chromedp.SendKeys(chromedp.ID("sql"), kb.ArrowDown+kb.ArrowUp+"\r"))
	if sql, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("sql").value`)); err != nil || sql != "SELECT " {
		t.Errorf("after an arrow and Enter the editor holds %q (%v), want the completion taken", sql, err)
	}

	// A grouped query: a table with intervals and a chart with error bars.
	run("grouped query",
		setSQL("SELECT dept, COUNT(*) AS n, AVG(age) AS mean_age FROM visits GROUP BY dept", "0.2"),
		chromedp.Click(chromedp.ID("run")),
		chromedp.WaitVisible(chromedp.CSS(`#chart[data-kind="bars"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#chart-image[src^="data:image/svg+xml"]`)),
		shot("02 grouped query"))
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#result-table tbody td")).map(td => td.textContent + "|" + (td.dataset.lo || "") + "|" + (td.dataset.hi || ""))`))
	if err != nil {
		t.Fatal(err)
	}
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.ID("chart"), "data-whiskers"))
	if err != nil {
		t.Fatal(err)
	}
	whiskers := attr.Value
	if len(cells) != 12 {
		t.Fatalf("the table has %d cells, want 4 rows of 3: %v", len(cells), cells)
	}
	for r := 0; r < 4; r++ {
		for c := 1; c < 3; c++ {
			parts := strings.Split(cells[3*r+c], "|")
			if !(strings.Contains(parts[0], "±") || strings.Contains(parts[0], "[")) || parts[1] == "" || parts[2] == "" {
				t.Errorf("row %d column %d shows %q without its interval", r, c, cells[3*r+c])
			}
		}
	}
	// What Download CSV saves: the released values with their intervals'
	// ends, the same as the table shows.
	csvText, err := chromedp.Run(ctx, chromedp.Evaluate[string](`toCSV(state.released)`))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csvText), "\n")
	if len(lines) != 5 || lines[0] != "dept,n,n_lo95,n_hi95,mean_age,mean_age_lo95,mean_age_hi95" {
		t.Errorf("CSV (a key has no interval columns):\n%s", csvText)
	} else {
		for r, line := range lines[1:] {
			f := strings.Split(line, ",")
			lo, hi := strings.Split(cells[3*r+1], "|")[1], strings.Split(cells[3*r+1], "|")[2]
			if len(f) != 7 || f[2] != lo || f[3] != hi {
				t.Errorf("CSV row %d %q, want the count's interval [%s, %s] as the table has it", r, line, lo, hi)
			}
		}
	}
	// CSV as shown: each value as the table shows it.
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`toCSV(state.released, true)`))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(shown), "\n"); len(lines) != 5 || lines[0] != "dept,n,mean_age" ||
		lines[1] != strings.Split(cells[0], "|")[0]+","+strings.Split(cells[1], "|")[0]+","+strings.Split(cells[2], "|")[0] {
		t.Errorf("CSV as shown:\n%s\nwant the table's text %q", shown, cells[:3])
	}
	if whiskers != "8" {
		t.Errorf("the chart draws %s error bars, want 8 (4 groups × 2 aggregates)", whiskers)
	}
	if got := text("#budget-own-spent"); got != "0.2" {
		t.Errorf("spent shows %q, want 0.2", got)
	}
	if got := text("#budget-own-remaining"); got != "0.8" {
		t.Errorf("remaining shows %q, want 0.8", got)
	}
	if got := text("#queries-left"); got != "4" {
		t.Errorf("queries left at ε 0.2 shows %q, want 4", got)
	}

	// A reload keeps the editor's text and the last answer; the explorer
	// lists the tables with their policies.
	run("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("work-view")),
		chromedp.WaitVisible(chromedp.CSS(`#chart[data-kind="bars"]`)),
		poll(`document.querySelectorAll("#explorer summary").length === 2`))
	if sql, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("sql").value`)); err != nil || !strings.HasPrefix(sql, "SELECT dept, COUNT(*)") {
		t.Errorf("after a reload the editor holds %q (%v)", sql, err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#result-table tbody td").length`)); err != nil || n != 12 {
		t.Errorf("after a reload the answer has %d cells (%v), want the 12 it had", n, err)
	}
	explorer, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#explorer summary, #explorer li")).map(e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(explorer, "|"); !strings.Contains(got, "visits private; each row is a privacy unit") || !strings.Contains(got, "age INTEGER — bounds [0, 100]") {
		t.Errorf("the explorer shows %q", explorer)
	}

	// A refused query: its message, nothing spent.
	run("refused query",
		setSQL("SELECT age FROM visits", "0.2"),
		chromedp.Click(chromedp.ID("run")),
		chromedp.WaitVisible(chromedp.CSS("#error:not(:empty)")),
		shot("03 refused query"))
	if got := text("#error"); !strings.Contains(got, "can only appear inside an aggregate") {
		t.Errorf("the refusal says %q", got)
	}
	if got := text("#budget-own-spent"); got != "0.2" {
		t.Errorf("after the refusal spent shows %q", got)
	}

	// An empty ε field is said, not filled with the last ε (issue 51):
	// nothing is sent, nothing spent.
	run("empty ε",
		setSQL("SELECT COUNT(*) FROM visits", ""),
		chromedp.Click(chromedp.ID("run")),
		chromedp.WaitVisible(chromedp.CSS("#error:not(:empty)")))
	if got := text("#error"); !strings.Contains(got, "ε per query is empty") {
		t.Errorf("an empty ε field says %q", got)
	}
	if got := text("#budget-own-spent"); got != "0.2" {
		t.Errorf("after the empty ε spent shows %q", got)
	}

	// The budget runs out: 0.2 + 0.5 fits, the next 0.5 does not.
	run("spend", setSQL("SELECT COUNT(*) FROM visits WHERE age > 50", "0.5"), chromedp.Click(chromedp.ID("run")),
		poll(`document.getElementById("budget-own-spent").textContent === "0.7"`))
	run("over budget",
		setSQL("SELECT COUNT(*) FROM visits WHERE age > 60", "0.5"),
		chromedp.Click(chromedp.ID("run")),
		chromedp.WaitVisible(chromedp.CSS("#error:not(:empty)")),
		shot("04 budget exhausted"))
	if got := text("#error"); !strings.Contains(got, "budget") {
		t.Errorf("over budget says %q", got)
	}
	if got := text("#budget-own-remaining"); got != "0.3" {
		t.Errorf("remaining shows %q, want 0.3", got)
	}
	run("history", poll(`document.querySelectorAll("#history li").length === 4`))
	history, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#history li")).map(li => li.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != 4 || !strings.HasSuffix(history[0], "failed") || !strings.HasSuffix(history[1], "ε 0.5") || !strings.HasSuffix(history[3], "ε 0.2") {
		t.Errorf("history: %q", history)
	}

	// Cancel: a statement that would scan for minutes stops when Cancel
	// is pressed, the page says so, and it ran once (a browser re-sends
	// a request answered 408 on a kept-alive connection: the cancelled
	// statement used to run again, the page staying "running…").
	run("slow query", setSQL(slowPrivate, "0.1"), chromedp.Click(chromedp.ID("run")),
		poll(`document.getElementById("status").textContent === "running…"`))
	for deadline := time.Now().Add(20 * time.Second); h.spent(t, "alice") < 0.8 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // until it is charged and scanning
	}
	run("cancel", chromedp.Click(chromedp.ID("cancel")),
		chromedp.WaitVisible(chromedp.CSS("#error:not(:empty)")),
		poll(`document.getElementById("status").textContent === ""`),
		poll(`document.querySelectorAll("#history li").length === 5`),
		shot("05 cancelled"))
	if got := text("#error"); !strings.Contains(got, "cancelled at your request") || !strings.Contains(got, "charged") {
		t.Errorf("the cancelled statement says %q", got)
	}
	time.Sleep(time.Second) // a re-sent request would be running (and in the history) by now
	history, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#history li")).map(li => li.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	running, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("status").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != 5 || !strings.HasSuffix(history[0], "failed") || running != "" {
		t.Errorf("after Cancel the page shows %q and the history %q: the statement ran again", running, history)
	}

	// A history entry goes back into the editor.
	run("recall", chromedp.Click(chromedp.CSS("#history li:nth-child(3)")),
		poll(`document.getElementById("sql").value === "SELECT COUNT(*) FROM visits WHERE age > 50"`))

	// Several statements: each answered in order, the error of the one
	// that stops the run said under the editor.
	run("several statements",
		setSQL("SHOW BUDGET; SHOW TABLES;\nSELECT age FROM visits", "0.1"),
		chromedp.Click(chromedp.ID("run")),
		chromedp.WaitVisible(chromedp.CSS("#error:not(:empty)")),
		poll(`document.querySelectorAll("#earlier .answer").length === 1`),
		shot("06 several statements"))
	if got := text("#error"); !strings.HasPrefix(got, "statement 3 of 3: ") {
		t.Errorf("the third statement's error says %q", got)
	}
	if got := text("#earlier .statement"); got != "SHOW BUDGET" {
		t.Errorf("the first answer is headed %q", got)
	}
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("chart").hidden`)); err != nil || !hidden {
		t.Errorf("SHOW TABLES is drawn as a chart (%v)", err)
	}

	// Log-out: back to the log-in form, and a reload stays there.
	run("log out", chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("login-view")),
		chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("login-view")), shot("07 logged out"))
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("work-view").hidden`))
	if err != nil {
		t.Fatal(err)
	}
	if !hidden {
		t.Error("after log-out the work view is shown")
	}
	if got := h.spent(t, "alice"); math.Abs(got-0.8) > 1e-9 {
		t.Errorf("the ledger says alice spent %v, want 0.8 (0.7, and the cancelled statement's 0.1 once)", got)
	}
}
