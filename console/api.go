package console

import (
	"context"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/access"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/chart"
	"github.com/dpsql/dpsql/parser"
)

//go:embed static
var static embed.FS

func (c *Console) page(w http.ResponseWriter, _ *http.Request) {
	b, err := static.ReadFile("static/index.html")
	if err != nil {
		http.Error(w, "the console's page is missing from this build", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b)
}

func (c *Console) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := static.ReadFile("static/" + name)
	if err != nil || name == "index.html" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
	_, _ = w.Write(b)
}

// Answer is what /api/query and /api/explain return: the answer of the
// statement sent, or of the last of several.
type Answer struct {
	Part
	Budget *BudgetView `json:"budget,omitempty"`
	// Parts, when several statements were sent, are their answers in
	// order (the last is the Answer's own), and Error what stopped the
	// run at the statement after the last answered one.
	Parts []Part `json:"parts,omitempty"`
	Error string `json:"error,omitempty"`
}

// Part is one statement's answer.
type Part struct {
	Statement string          `json:"statement"`
	Released  *dpsql.Released `json:"released"`
	Chart     ChartView       `json:"chart"`
}

// ChartView is an answer's chart: its kind (bars, line, or table when the
// shape has none), how many error bars it draws, and the SVG image as a
// data: URL (shown in an img element: nothing in it runs).
type ChartView struct {
	Kind     chart.Kind `json:"kind"`
	Whiskers int        `json:"whiskers"`
	Image    string     `json:"image,omitempty"`
}

// queryRequest is a statement to run, with the accuracy asked for: an ε
// per query, or a 95% target error instead (the session's SET epsilon
// and SET target_error; OPTIONS in the statement win over both).
type queryRequest struct {
	SQL         string   `json:"sql"`
	Epsilon     *float64 `json:"epsilon,omitempty"`
	TargetError *float64 `json:"target_error,omitempty"`
}

func (c *Console) query(w http.ResponseWriter, r *http.Request, s *session) {
	c.statement(w, r, s, false)
}

func (c *Console) explain(w http.ResponseWriter, r *http.Request, s *session) {
	c.statement(w, r, s, true)
}

// statement runs one statement (or EXPLAIN of it) in the session and
// writes its answer.
func (c *Console) statement(w http.ResponseWriter, r *http.Request, s *session, explain bool) {
	var req queryRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if strings.TrimSpace(req.SQL) == "" {
		writeError(w, &apiError{http.StatusBadRequest, "no statement: write a query first"})
		return
	}
	// The answer is written after the session is free again, so that a
	// client's next request never finds it busy with this one.
	ans, err := c.answer(r, s, req, explain)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// answer runs the statements sent, in order, one run at a time in a
// session, each recorded in the session's history. A statement's error
// ends the run: the first's is the request's error, a later one's comes
// with the answers before it (they were charged and released).
func (c *Console) answer(r *http.Request, s *session, req queryRequest, explain bool) (*Answer, error) {
	if !s.run.TryLock() {
		return nil, &apiError{http.StatusConflict, "a statement is already running in this session (cancel it, or wait)"}
	}
	defer s.run.Unlock()
	if err := applyAccuracy(r.Context(), s.db, req); err != nil {
		return nil, err
	}
	texts := parser.Split(req.SQL)
	if len(texts) == 0 {
		texts = []string{req.SQL} // comments only: the engine says so
	}
	ans := &Answer{}
	for i, text := range texts {
		part, err := c.part(r, s, text, explain)
		if err != nil && i == 0 {
			return nil, err
		}
		if err != nil {
			ans.Error = fmt.Sprintf("statement %d of %d: %s", i+1, len(texts), err)
			if i+1 < len(texts) {
				ans.Error += " (the statements after it did not run)"
			}
			break
		}
		ans.Parts = append(ans.Parts, *part)
	}
	ans.Part = ans.Parts[len(ans.Parts)-1]
	if len(texts) == 1 {
		ans.Parts = nil
	}
	if b, err := budgetOf(r.Context(), s); err == nil {
		ans.Budget = b
	}
	return ans, nil
}

// part runs one statement and records it in the history.
func (c *Console) part(r *http.Request, s *session, text string, explain bool) (*Part, error) {
	st := access.Statement{Who: s.analyst, Remote: r.RemoteAddr, Via: "console", Text: text, Timeout: c.cfg.StatementTimeout, Track: s.track}
	entry := HistoryEntry{Statement: text, At: c.cfg.Now().UTC(), Explain: explain}
	res, err := access.Run(r.Context(), c.log, st, func(ctx context.Context) (*dpsql.Result, error) {
		if explain {
			return s.db.Explain(ctx, text)
		}
		return s.db.Query(ctx, text)
	}, nil)
	var stopped *access.Cancelled
	if errors.As(err, &stopped) {
		// The engine's message says whether the query's ε was charged
		// before it stopped. Not 408: browsers re-send a request answered
		// 408 on a kept-alive connection (Chromium does), which ran the
		// cancelled statement again.
		err = &apiError{http.StatusConflict, "cancelled at your request: " + stopped.Err.Error()}
		if stopped.Timeout > 0 {
			err = &apiError{http.StatusGatewayTimeout, fmt.Sprintf("cancelled: it ran past the statement timeout (%s): %s", stopped.Timeout, stopped.Err.Error())}
		}
	}
	if err != nil {
		entry.Error = err.Error()
		s.record(entry)
		return nil, err
	}
	entry.Epsilon, entry.Delta, entry.Cached = res.Cost.Epsilon, res.Cost.Delta, res.Cached
	s.record(entry)
	p := &Part{Statement: text, Released: res.Released(), Chart: ChartView{Kind: chart.None}}
	if !explain {
		if spec := chart.FromResult(res); spec.Kind != chart.None {
			if img, err := chart.Render(spec, chart.SVG, 760); err == nil {
				p.Chart = ChartView{Kind: spec.Kind, Whiskers: spec.Whiskers(), Image: "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(img)}
			}
		}
	}
	return p, nil
}

// applyAccuracy sets the session's ε or target error from the request:
// a target error turns the ε off for the query, none turns the target
// off.
func applyAccuracy(ctx context.Context, db *dpsql.Session, req queryRequest) error {
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	target := "0"
	if req.TargetError != nil {
		target = num(*req.TargetError)
	}
	if _, err := db.Query(ctx, "SET target_error = "+target); err != nil {
		return &apiError{http.StatusBadRequest, "target error: " + err.Error()}
	}
	if req.Epsilon != nil && req.TargetError == nil {
		if _, err := db.Query(ctx, "SET epsilon = "+num(*req.Epsilon)); err != nil {
			return &apiError{http.StatusBadRequest, "ε: " + err.Error()}
		}
	}
	return nil
}

// maxHistory is how many statements a session's history keeps.
const maxHistory = 200

func (s *session) record(e HistoryEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = append(s.history, e)
	if len(s.history) > maxHistory {
		s.history = s.history[len(s.history)-maxHistory:]
	}
}

func (c *Console) historyOf(w http.ResponseWriter, _ *http.Request, s *session) {
	s.mu.Lock()
	h := append([]HistoryEntry{}, s.history...)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"history": h})
}

// Amounts are one budget's numbers.
type Amounts struct {
	TotalEpsilon     float64 `json:"total_epsilon"`
	SpentEpsilon     float64 `json:"spent_epsilon"`
	RemainingEpsilon float64 `json:"remaining_epsilon"`
	TotalDelta       float64 `json:"total_delta"`
	SpentDelta       float64 `json:"spent_delta"`
	RemainingDelta   float64 `json:"remaining_delta"`
}

// BudgetView is an analyst's budget: their own, and the database's that
// caps it, and how many more queries fit at the session's ε.
type BudgetView struct {
	Analyst string `json:"analyst"`
	// Set: the owner gave the analyst a budget (else Message says what
	// is missing).
	Set         bool     `json:"set"`
	Own         *Amounts `json:"own,omitempty"`
	Database    *Amounts `json:"database,omitempty"`
	AtEpsilon   float64  `json:"at_epsilon,omitempty"`
	QueriesLeft *int64   `json:"queries_left,omitempty"`
	Message     string   `json:"message,omitempty"`
}

func amounts(st budget.Status) *Amounts {
	rem := st.OwnRemaining()
	return &Amounts{TotalEpsilon: st.Total.Epsilon, SpentEpsilon: st.Spent.Epsilon, RemainingEpsilon: rem.Epsilon,
		TotalDelta: st.Total.Delta, SpentDelta: st.Spent.Delta, RemainingDelta: rem.Delta}
}

func budgetOf(ctx context.Context, s *session) (*BudgetView, error) {
	st, err := s.db.BudgetStatus(ctx)
	if err != nil {
		return nil, err
	}
	v := &BudgetView{Analyst: s.analyst, Set: st.Set}
	if st.Database != nil {
		v.Database = amounts(*st.Database)
	}
	if !st.Set {
		v.Message = "you have no budget yet: the owner gives one with ALTER ANALYST " + parser.QuoteIdent(s.analyst) + " BUDGET epsilon = E"
		return v, nil
	}
	v.Own = amounts(st)
	if eps := s.db.Settings().Epsilon; eps > 0 {
		n := st.QueriesLeft(eps)
		v.AtEpsilon, v.QueriesLeft = eps, &n
	}
	return v, nil
}

func (c *Console) budget(w http.ResponseWriter, r *http.Request, s *session) {
	v, err := budgetOf(r.Context(), s)
	if err != nil {
		writeError(w, &apiError{http.StatusInternalServerError, err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// schema lists the tables and columns, and the words the editor
// completes.
func (c *Console) schema(w http.ResponseWriter, r *http.Request, s *session) {
	tables, err := s.db.Tables(r.Context())
	if err != nil {
		writeError(w, &apiError{http.StatusInternalServerError, err.Error()})
		return
	}
	type column struct {
		Name   string `json:"name"`
		Type   string `json:"type"`
		Policy string `json:"policy"`
	}
	type table struct {
		Name    string   `json:"name"`
		Public  bool     `json:"public"`
		Policy  string   `json:"policy"`
		Columns []column `json:"columns"`
	}
	out := struct {
		Tables   []table  `json:"tables"`
		Keywords []string `json:"keywords"`
	}{Tables: []table{}, Keywords: parser.AnalystCompletions}
	for _, t := range tables {
		tb := table{Name: t.Name, Public: t.Public, Policy: t.Policy, Columns: []column{}}
		for j, col := range t.Columns {
			tb.Columns = append(tb.Columns, column{Name: col.Name, Type: col.Type, Policy: t.ColumnPolicies[j]})
		}
		out.Tables = append(out.Tables, tb)
	}
	writeJSON(w, http.StatusOK, out)
}
