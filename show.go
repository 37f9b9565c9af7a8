package dpsql

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/cache"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// show runs SHOW: one handler per thing shown.
func (s *Session) show(ctx context.Context, st *parser.ShowStmt, cat *catalog.Catalog) (*Result, error) {
	switch st.What {
	case "BUDGET":
		return s.showBudget(ctx)
	case "TABLES":
		return showTables(cat), nil
	case "POLICY":
		t, ok := cat.Table(st.Table.Name)
		if !ok || catalog.IsInternalName(st.Table.Name) {
			return nil, &Error{Pos: st.Table.NamePos, Kind: planner.ErrUnknownName, Msg: fmt.Sprintf("unknown table %q", st.Table.Name)}
		}
		return policyResult(t), nil
	case "COLUMNS":
		t, ok := cat.Table(st.Table.Name)
		if !ok || catalog.IsInternalName(st.Table.Name) {
			return nil, &Error{Pos: st.Table.NamePos, Kind: planner.ErrUnknownName, Msg: fmt.Sprintf("unknown table %q", st.Table.Name)}
		}
		return columnsResult(t), nil
	case "CACHE":
		if !s.owner {
			return nil, &Error{Pos: st.ShowPos, Kind: ErrOwnerOnly, Msg: "SHOW CACHE needs owner mode (dpsql --owner): it lists the statements analysts asked"}
		}
		return s.showCache(ctx)
	case "LEDGER":
		// The analysts' statements and their costs are the owner's to read.
		if !s.owner {
			return nil, &Error{Pos: st.ShowPos, Kind: ErrOwnerOnly, Msg: "SHOW LEDGER needs owner mode (dpsql --owner); SHOW BUDGET shows what remains"}
		}
		return s.showLedger(ctx)
	case "WATCHES":
		return s.showWatches(ctx)
	case "ANALYSTS":
		if !s.owner {
			return nil, &Error{Pos: st.ShowPos, Kind: ErrOwnerOnly, Msg: "SHOW ANALYSTS needs owner mode; SHOW BUDGET shows your own budget"}
		}
		return s.showAnalysts(ctx)
	case "ALL":
		res := &Result{Columns: []string{"name", "setting", "description"}}
		for _, def := range settings { // s.mu is held: the settings are read as they are
			res.Rows = append(res.Rows, []any{def.name, def.show(s.settings), "session setting (SET " + def.name + " = ...)"})
		}
		return res, nil
	case "SETTING":
		def, ok := lookupSetting(strings.ToLower(st.Name))
		if !ok {
			return nil, &Error{Pos: st.ShowPos, Kind: planner.ErrInvalidOption, Msg: fmt.Sprintf("unknown setting %q: SHOW ALL lists them (and SHOW %s are dpsql's own)", st.Name, strings.Join(parser.ShowKinds, ", "))}
		}
		return &Result{Columns: []string{st.Name}, Rows: [][]any{{def.show(s.settings)}}}, nil
	}
	return nil, fmt.Errorf("dpsql: unknown SHOW %s", st.What)
}

// showBudget is SHOW BUDGET: the session's budget (an analyst's own,
// capped by the database's, or the database's).
func (s *Session) showBudget(ctx context.Context) (*Result, error) {
	st, err := s.status(ctx)
	if err != nil {
		return nil, err
	}
	if !st.Set && st.Database == nil {
		return &Result{Message: "no budget set: private queries are refused until the owner runs SET BUDGET epsilon = E[, delta = D]"}, nil
	}
	if !st.Set {
		return &Result{Message: fmt.Sprintf("analyst %s has no budget of their own: private queries are refused until the owner runs ALTER ANALYST %s BUDGET epsilon = E[, delta = D]", st.Analyst, parser.QuoteIdent(st.Analyst))}, nil
	}
	rem := st.OwnRemaining()
	// The shape stays (budget, epsilon, delta) for programs that scan
	// it; ρ is in the note.
	// What remains is shown to 6 significant digits: under zCDP it is the
	// ε-share of the ρ left, whose float reads as noise
	// (0.8500000005862498); SHOW LEDGER has the exact charges.
	res := &Result{Columns: []string{"budget", "epsilon", "delta"}, Rows: [][]any{
		{"total", st.Total.Epsilon, st.Total.Delta},
		{"spent", sig6(st.Spent.Epsilon), sig6(st.Spent.Delta)},
		{"remaining", sig6(rem.Epsilon), sig6(rem.Delta)},
	}}
	res.Notes = append(res.Notes, budgetNote(st))
	if why := st.Stuck(); why != "" {
		res.Notes = append(res.Notes, "nothing more fits: "+why)
	}
	if db := st.Database; db != nil {
		// An analyst's: the database's total caps what all spend.
		dr := db.Remaining()
		res.Rows = append(res.Rows, []any{"database remaining", sig6(dr.Epsilon), sig6(dr.Delta)})
		res.Notes = append(res.Notes, fmt.Sprintf("this is analyst %s's own budget; the database's total (ε=%g, δ=%g, shared by every analyst) caps it: a query must fit both", st.Analyst, db.Total.Epsilon, db.Total.Delta))
	}
	if eps := s.settings.Epsilon; eps > 0 {
		// In the ledger's whole units, as the charges will be counted.
		res.Notes = append(res.Notes, fmt.Sprintf("at ε = %g per query (this session's), %d more queries fit (repeats of cached answers are free)", eps, st.QueriesLeft(eps)))
	}
	return res, nil
}

// showTables is SHOW TABLES: each user table and whether it is private.
func showTables(cat *catalog.Catalog) *Result {
	res := &Result{Columns: []string{"table", "privacy", "policy"}}
	for _, t := range cat.Tables() {
		kind, pol := "private", "default (each row is a privacy unit)"
		if t.Public {
			kind, pol = "public", "none"
		} else if t.HasPolicy {
			pol = "declared"
		}
		res.Rows = append(res.Rows, []any{t.Name, kind, pol})
	}
	return res
}

// showCache is SHOW CACHE (owner): the cached answers' statements.
func (s *Session) showCache(ctx context.Context) (*Result, error) {
	entries, err := cache.List(ctx, s.eng.db)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: []string{"statement", "tables", "epsilon", "delta", "created"}}
	for _, en := range entries {
		res.Rows = append(res.Rows, []any{en.Statement, en.Tables, en.Epsilon, en.Delta, en.Created})
	}
	return res, nil
}

// showLedger is SHOW LEDGER (owner): every charge.
func (s *Session) showLedger(ctx context.Context) (*Result, error) {
	entries, err := s.Ledger(ctx)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: []string{"id", "charged", "analyst", "statement", "mechanism", "epsilon", "delta", "rho", "outcome"}}
	for _, en := range entries {
		var who any // NULL: a local session on the file
		if en.Analyst != "" {
			who = en.Analyst
		}
		outcome := "answered"
		if en.Outcome != "" {
			outcome = en.Outcome + " (the ε stays spent)"
		}
		res.Rows = append(res.Rows, []any{en.ID, en.Charged, who, en.Statement, en.Mechanism, en.Cost.Epsilon, en.Cost.Delta, en.Rho, outcome})
	}
	return res, nil
}

// Ledger is every charge since the database was made, as typed values
// (SHOW LEDGER's rows); owner sessions only.
func (s *Session) Ledger(ctx context.Context) ([]budget.Entry, error) {
	if !s.owner {
		return nil, fmt.Errorf("%w: the ledger needs owner mode; BudgetStatus has your own budget", ErrOwnerOnly)
	}
	return budget.Ledger(ctx, s.eng.ledger)
}

// Analysts is each analyst with their budget, as typed values (SHOW
// ANALYSTS' rows); owner sessions only.
func (s *Session) Analysts(ctx context.Context) ([]budget.Analyst, error) {
	if !s.owner {
		return nil, fmt.Errorf("%w: the list of analysts needs owner mode; BudgetStatus has your own budget", ErrOwnerOnly)
	}
	return budget.Analysts(ctx, s.eng.ledger)
}

// showAnalysts is SHOW ANALYSTS (owner): each analyst and their budget.
func (s *Session) showAnalysts(ctx context.Context) (*Result, error) {
	list, err := s.Analysts(ctx)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: []string{"analyst", "epsilon", "delta", "spent epsilon", "spent delta", "remaining epsilon", "remaining delta", "created"}}
	for _, a := range list {
		row := []any{a.Name, nil, nil, a.Status.Spent.Epsilon, a.Status.Spent.Delta, nil, nil, a.Created}
		if a.Status.Set {
			rem := a.Status.OwnRemaining()
			row[1], row[2], row[5], row[6] = a.Status.Total.Epsilon, a.Status.Total.Delta, rem.Epsilon, rem.Delta
		}
		res.Rows = append(res.Rows, row)
	}
	res.Notes = append(res.Notes, "an analyst without epsilon has no budget: their private queries are refused; the database's total caps what all analysts spend together")
	return res, nil
}

// columnsResult is DESCRIBE t (SHOW COLUMNS FROM t): each column, its
// type, and what the policy says of it — public facts, as SHOW POLICY.
func columnsResult(t *catalog.Table) *Result {
	res := &Result{Columns: []string{"column", "type", "policy"}}
	for _, c := range t.Columns {
		res.Rows = append(res.Rows, []any{c.Name, c.Type, columnPolicy(t, c.Name)})
	}
	return res
}

// columnPolicy says what t's policy says of one column (DESCRIBE's policy
// column, the console's explorer).
func columnPolicy(t *catalog.Table, name string) string {
	var says []string
	switch {
	case t.Public:
		says = append(says, "public table")
	case catalog.SameName(name, t.Unit.Column):
		says = append(says, "privacy unit")
	}
	if b, ok := t.Bounds[name]; ok {
		says = append(says, fmt.Sprintf("bounds [%g, %g]", b.Lo, b.Hi))
	}
	if d, ok := t.Domains[name]; ok {
		says = append(says, fmt.Sprintf("domain of %d values (GROUP BY without δ)", len(d)))
	}
	if len(says) == 0 && !t.Public {
		says = append(says, "private: in aggregates only; bounds chosen privately when a SUM or AVG needs them")
	}
	return strings.Join(says, "; ")
}

// tablePolicy sums up t's policy in a line: public, or private with its
// unit and contribution bounds.
func tablePolicy(t *catalog.Table) string {
	switch {
	case t.Public:
		return "public: queried without noise"
	case t.Unit.Column == "":
		return "private; each row is a privacy unit"
	default:
		return fmt.Sprintf("private; privacy unit %s: at most %s groups, %s rows per group", t.Unit.Column, catalog.BoundText(t.Unit.MaxGroups), catalog.BoundText(t.Unit.MaxRows))
	}
}

// policyResult is SHOW POLICY t.
func policyResult(t *catalog.Table) *Result {
	res := &Result{Columns: []string{"setting", "column", "value"}}
	add := func(a, b, c string) { res.Rows = append(res.Rows, []any{a, b, c}) }
	switch {
	case t.Public:
		add("privacy", "", "public: queried without noise")
		return res
	case t.HasPolicy:
		add("privacy", "", "private, declared policy")
	default:
		add("privacy", "", "private, default policy")
	}
	if t.Unit.Column == "" {
		add("privacy unit", "", "each row")
	} else {
		add("privacy unit", t.Unit.Column, "all rows with the same value")
		add("max_groups_contributed", "", catalog.BoundText(t.Unit.MaxGroups))
		add("max_rows_contributed", "", catalog.BoundText(t.Unit.MaxRows))
	}
	if t.Unit.BoundsWarnings == catalog.BoundsWarningsError {
		add("bounds_warnings", "", "error: answers whose privately chosen bounds warn are refused (after the charge)")
	}
	for _, c := range catalog.SortedColumns(t.Bounds) {
		b := t.Bounds[c]
		add("bounds", c, fmt.Sprintf("[%g, %g]", b.Lo, b.Hi))
	}
	for _, c := range catalog.SortedColumns(t.Domains) {
		var vals []string
		for _, v := range t.Domains[c] {
			vals = append(vals, parser.SQLLiteral(v))
		}
		add("domain", c, fmt.Sprintf("%d values: %s", len(vals), strings.Join(vals, ", ")))
	}
	return res
}

// sig6 rounds a budget figure to 6 significant digits.
func sig6(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return v
}
