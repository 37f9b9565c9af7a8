package dpsql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/cache"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/internal/storesql"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// ownerStatement dispatches an owner statement (policies, budget,
// analysts, cache) to its handler.
func (s *Session) ownerStatement(ctx context.Context, stmt parser.Stmt, cat *catalog.Catalog) (*Result, error) {
	switch st := stmt.(type) {
	case *parser.AnalystStmt:
		return s.analystStatement(ctx, st)
	case *parser.ResetCacheStmt:
		return s.resetCache(ctx)
	case *parser.ResetBudgetStmt:
		return s.resetBudget(ctx)
	case *parser.SetBudgetStmt:
		return s.setBudget(ctx, st)
	case *parser.CreatePolicyStmt:
		return s.policyStatement(ctx, stmt, func(on storesql.On) (string, error) { return createPolicy(ctx, on, cat, st) })
	case *parser.DropPolicyStmt:
		return s.policyStatement(ctx, stmt, func(on storesql.On) (string, error) {
			return "privacy policy dropped on " + st.Table.Name + " (the table stays private)", atPos(st, cat.DropPolicy(ctx, on, st.Table.Name))
		})
	case *parser.SetPublicStmt:
		if st.Private {
			return s.policyStatement(ctx, stmt, func(on storesql.On) (string, error) {
				return st.Table.Name + " is private: each row is a privacy unit until a policy says otherwise (CREATE PRIVACY POLICY)", atPos(st, cat.SetPrivate(ctx, on, st.Table.Name))
			})
		}
		return s.policyStatement(ctx, stmt, func(on storesql.On) (string, error) {
			msg := st.Table.Name + " is public: it is queried without noise"
			if t, ok := cat.Table(st.Table.Name); ok && !t.Public {
				msg += droppedPolicy(t)
			}
			return msg, atPos(st, cat.SetPublic(ctx, on, st.Table.Name))
		})
	case *parser.SetBoundsStmt:
		return s.policyStatement(ctx, stmt, func(on storesql.On) (string, error) { return setBounds(ctx, on, cat, st) })
	case *parser.DropTableStmt:
		return s.dropTable(ctx, st, cat)
	case *parser.SetDomainStmt:
		return s.policyStatement(ctx, stmt, func(on storesql.On) (string, error) { return setDomain(ctx, on, cat, st) })
	}
	return nil, fmt.Errorf("dpsql: unknown statement %T", stmt)
}

// resetCache is RESET CACHE.
func (s *Session) resetCache(ctx context.Context) (*Result, error) {
	n, err := cache.Reset(ctx, s.eng.db)
	if err != nil {
		return nil, err
	}
	return &Result{Message: fmt.Sprintf("cache reset: %d cached answers dropped; identical queries are charged again", n)}, nil
}

// resetBudget is RESET BUDGET.
func (s *Session) resetBudget(ctx context.Context) (*Result, error) {
	if err := budget.Reset(ctx, s.eng.ledger); err != nil {
		return nil, err
	}
	return &Result{Message: "budget reset: nothing counts as spent; the ledger keeps every charge"}, nil
}

// setBudget is SET BUDGET epsilon = E[, delta = D] [PURE].
func (s *Session) setBudget(ctx context.Context, st *parser.SetBudgetStmt) (*Result, error) {
	total, err := budgetOptions(st.SetPos, "SET BUDGET", st.Options)
	if err != nil {
		return nil, err
	}
	if err := budget.SetTotal(ctx, s.eng.ledger, total, st.Pure); err != nil {
		return nil, at(st.SetPos, err)
	}
	msg := fmt.Sprintf("budget set: epsilon = %g, delta = %g", total.Epsilon, total.Delta)
	switch {
	case st.Pure:
		msg += "; pure ε-DP: only pure mechanisms run (Laplace, sparse vector), composed by basic composition"
	case total.Delta > 0:
		status, err := budget.GetStatus(ctx, s.eng.ledger)
		if err != nil {
			return nil, err
		}
		if status.RhoTotal > 0 {
			msg += fmt.Sprintf("; partition selection may spend δ = %g in all, and zCDP accounting allows ρ = %.6g in all (the other δ/2 converts it)", status.DeltaCap, status.RhoTotal)
		}
	}
	return &Result{Message: msg, Notes: budgetWarnings(total)}, nil
}

// droppedPolicy says what of a private table's policy SET PUBLIC removes
// (a later SET PRIVATE starts again from one unit per row).
func droppedPolicy(t *catalog.Table) string {
	var parts []string
	if t.Unit.Column != "" {
		parts = append(parts, fmt.Sprintf("privacy unit %s", parser.QuoteIdent(t.Unit.Column)))
	}
	if t.HasPolicy && (t.Unit.MaxGroups != 1 || t.Unit.MaxRows != 1) {
		parts = append(parts, fmt.Sprintf("contribution bounds %s groups, %s rows", catalog.BoundText(t.Unit.MaxGroups), catalog.BoundText(t.Unit.MaxRows)))
	}
	for _, c := range catalog.SortedColumns(t.Bounds) {
		b := t.Bounds[c]
		parts = append(parts, fmt.Sprintf("bounds of %s [%g, %g]", parser.QuoteIdent(c), b.Lo, b.Hi))
	}
	for _, c := range catalog.SortedColumns(t.Domains) {
		parts = append(parts, fmt.Sprintf("domain of %s (%d values)", parser.QuoteIdent(c), len(t.Domains[c])))
	}
	if !t.HasPolicy && len(parts) == 0 {
		return ""
	}
	if len(parts) == 0 {
		return "; its privacy policy is removed (ALTER TABLE ... SET PRIVATE makes each row a unit again)"
	}
	return "; its privacy policy is removed: " + strings.Join(parts, ", ") + " (ALTER TABLE ... SET PRIVATE makes each row a unit again; CREATE PRIVACY POLICY declares them anew)"
}

// budgetWarnings are what an owner should hear about a total that
// protects little: set, but said plainly.
func budgetWarnings(total budget.Cost) []string {
	var out []string
	if total.Epsilon > 20 {
		out = append(out, fmt.Sprintf("warning: a total of ε = %g protects little: the answers may tell, about any one unit, up to e^%g times more than without it; published statistics rarely use a total above 10", total.Epsilon, total.Epsilon))
	}
	if total.Delta > 1e-4 {
		out = append(out, fmt.Sprintf("warning: δ = %g is the chance that a query's guarantee fails outright (it could reveal a unit); keep δ well below 1 / the number of units, e.g. 1e-6", total.Delta))
	}
	return out
}

// policyStatement runs one policy change (write: it writes the policy
// and returns the message) in a transaction of the file, and with the
// policies in PostgreSQL in one of PostgreSQL's too, committed after the
// file's (which drops the table's cached answers: were PostgreSQL's
// commit to fail, they would only be asked afresh).
func (s *Session) policyStatement(ctx context.Context, stmt parser.Stmt, write func(storesql.On) (string, error)) (res *Result, err error) {
	tx, err := s.eng.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	policies := storesql.On{R: tx}
	if k, ok := s.eng.policyKeeper(); ok {
		db, postgres := k.PolicyStore()
		var ptx *sql.Tx
		if ptx, err = db.BeginTx(ctx, nil); err != nil {
			return nil, err
		}
		defer ptx.Rollback()
		policies = storesql.On{R: ptx, Postgres: postgres}
		defer func() {
			if err == nil {
				if err = ptx.Commit(); err != nil {
					res = nil
				}
			}
		}()
	}
	msg, err := write(policies)
	if err != nil {
		return nil, err
	}
	// A table whose policy changed answers differently: its cached answers go.
	if err := cache.Invalidate(ctx, tx, changedTable(stmt)); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return &Result{Message: msg}, nil
}

// createPolicy is CREATE PRIVACY POLICY ON t [OPTIONS (...)].
func createPolicy(ctx context.Context, on storesql.On, cat *catalog.Catalog, st *parser.CreatePolicyStmt) (string, error) {
	u, err := unitOptions(st.Options)
	if err != nil {
		return "", err
	}
	var msg string
	if t, ok := cat.Table(st.Table.Name); ok {
		if col, ok := t.Column(u.Column); ok {
			u.Column = col.Name // as the catalog will store it
		}
		msg = policyChange(t, u)
	}
	return msg, atPos(st, cat.CreatePolicy(ctx, on, st.Table.Name, u))
}

// unitOptions reads CREATE PRIVACY POLICY's OPTIONS.
func unitOptions(options []parser.Option) (catalog.Unit, error) {
	u := catalog.Unit{MaxGroups: 1, MaxRows: 1}
	for _, o := range options {
		bad := &Error{Pos: o.Value.Pos(), Kind: planner.ErrInvalidOption}
		switch o.Name {
		case "privacy_unit_column":
			c, ok := o.Value.(*parser.ColumnRef)
			if !ok || c.Table != "" {
				if v, err := parser.LiteralValue(o.Value); err == nil {
					if name, ok := v.(string); ok {
						u.Column = name
						continue
					}
				}
				bad.Msg = "privacy_unit_column takes a column name"
				return u, bad
			}
			u.Column = c.Name
		case "max_groups_contributed", "max_rows_contributed":
			v, err := parser.LiteralValue(o.Value)
			n, ok := v.(int64)
			if planner.IsAuto(o.Value) {
				n, ok, err = catalog.AutoBound, true, nil
			} else if err != nil || !ok || n < 1 {
				bad.Msg = o.Name + " takes a positive integer, or AUTO (chosen privately for each query)"
				return u, bad
			}
			if o.Name == "max_groups_contributed" {
				u.MaxGroups = n
			} else {
				u.MaxRows = n
			}
		case "bounds_warnings":
			v, err := parser.LiteralValue(o.Value)
			s, ok := v.(string)
			if err != nil || !ok || (!strings.EqualFold(s, "note") && !strings.EqualFold(s, "error")) {
				bad.Msg = "bounds_warnings is 'note' (answers whose privately chosen bounds may clip much of the data carry a warning; the default) or 'error' (they are refused, after the charge)"
				return u, bad
			}
			u.BoundsWarnings = catalog.BoundsWarningsNote
			if strings.EqualFold(s, "error") {
				u.BoundsWarnings = catalog.BoundsWarningsError
			}
		default:
			return u, &Error{Pos: o.NamePos, Kind: planner.ErrInvalidOption, Msg: fmt.Sprintf("unknown policy option %q (known: privacy_unit_column, max_groups_contributed, max_rows_contributed, bounds_warnings)", o.Name)}
		}
	}
	return u, nil
}

// setBounds is ALTER PRIVACY POLICY ON t SET BOUNDS c (lo, hi).
func setBounds(ctx context.Context, on storesql.On, cat *catalog.Catalog, st *parser.SetBoundsStmt) (string, error) {
	lo, err := parser.NumberValue(st.Lo)
	if err != nil {
		return "", err
	}
	hi, err := parser.NumberValue(st.Hi)
	if err != nil {
		return "", err
	}
	if err := cat.SetBounds(ctx, on, st.Table.Name, st.Column.Name, catalog.Bounds{Lo: lo, Hi: hi}); err != nil {
		return "", atPos(st, err)
	}
	msg := fmt.Sprintf("bounds of %s set to [%g, %g]", st.Column.Name, lo, hi)
	if t, ok := cat.Table(st.Table.Name); ok {
		if col, ok := t.Column(st.Column.Name); ok && catalog.Textual(col.Type) {
			// Allowed (a date stored as text reads as its year), but rarely meant.
			msg += fmt.Sprintf("\nwarning: column %s is %s: a SUM or AVG of it reads each text as a number (CAST AS REAL: a date gives its year, most other text 0)", col.Name, col.Type)
		}
	}
	return msg, nil
}

// setDomain is ALTER PRIVACY POLICY ON t SET DOMAIN c (v, ...).
func setDomain(ctx context.Context, on storesql.On, cat *catalog.Catalog, st *parser.SetDomainStmt) (string, error) {
	vals := make([]any, len(st.Values))
	for i, v := range st.Values {
		x, err := parser.LiteralValue(v)
		if err != nil {
			return "", err
		}
		if x == nil {
			return "", &Error{Pos: v.Pos(), Kind: planner.ErrInvalidOption, Msg: "a domain cannot contain NULL"}
		}
		if b, ok := x.(bool); ok {
			x = map[bool]int64{false: 0, true: 1}[b]
		}
		vals[i] = x
	}
	if err := cat.SetDomain(ctx, on, st.Table.Name, st.Column.Name, vals); err != nil {
		return "", atPos(st, err)
	}
	return fmt.Sprintf("domain of %s set (%d values)", st.Column.Name, len(vals)), nil
}

// atPos reports a catalog's error at the statement's position (nil stays nil).
func atPos(stmt parser.Stmt, err error) error {
	if err == nil {
		return nil
	}
	return at(stmt.Pos(), err)
}

// dropTable is DROP TABLE [IF EXISTS] t: the table of the file, its
// policy and its cached answers go, in one transaction. The ledger keeps
// the charges of the queries that read it.
func (s *Session) dropTable(ctx context.Context, st *parser.DropTableStmt, cat *catalog.Catalog) (*Result, error) {
	if _, ok := cat.Table(st.Table.Name); !ok || catalog.IsInternalName(st.Table.Name) {
		if st.IfExists {
			return &Result{Message: fmt.Sprintf("no table %s: nothing dropped", st.Table.Name)}, nil
		}
		return nil, &Error{Pos: st.Table.NamePos, Kind: ErrUnknownName, Msg: fmt.Sprintf("unknown table %q", st.Table.Name)}
	}
	if _, ok := s.eng.policyKeeper(); ok {
		return nil, &Error{Pos: st.DropPos, Kind: ErrUnsupported, Msg: "the tables live in " + s.eng.be.Where() + ": drop the table there (its mirror and policy go at the owner's next open)"}
	}
	return s.policyStatement(ctx, st, func(on storesql.On) (string, error) {
		if err := cat.DropTable(ctx, on, st.Table.Name); err != nil {
			return "", atPos(st, err)
		}
		return fmt.Sprintf("table %s dropped, with its policy and cached answers (the ledger keeps the charges of the queries that read it)", st.Table.Name), nil
	})
}

// changedTable is the table an owner statement changes the policy of, or "".
func changedTable(stmt parser.Stmt) string {
	switch s := stmt.(type) {
	case *parser.CreatePolicyStmt:
		return s.Table.Name
	case *parser.DropPolicyStmt:
		return s.Table.Name
	case *parser.SetPublicStmt:
		return s.Table.Name
	case *parser.SetBoundsStmt:
		return s.Table.Name
	case *parser.SetDomainStmt:
		return s.Table.Name
	case *parser.DropTableStmt:
		return s.Table.Name
	}
	return ""
}

// policyChange says what CREATE PRIVACY POLICY does to t's policy: creates
// it, changes which settings (old → new), or changes nothing.
func policyChange(t *catalog.Table, u catalog.Unit) string {
	unit := func(c string) string {
		if c == "" {
			return "none (each row is a unit)"
		}
		return c
	}
	warnings := func(w string) string {
		if w == catalog.BoundsWarningsNote {
			return "note"
		}
		return w
	}
	now := fmt.Sprintf("privacy_unit_column = %s, max_groups_contributed = %s, max_rows_contributed = %s", unit(u.Column), catalog.BoundText(u.MaxGroups), catalog.BoundText(u.MaxRows))
	if u.BoundsWarnings != catalog.BoundsWarningsNote {
		now += ", bounds_warnings = '" + warnings(u.BoundsWarnings) + "'"
	}
	switch {
	case t.Public:
		return "privacy policy created on " + t.Name + " (" + now + "); the table is private again"
	case !t.HasPolicy:
		return "privacy policy created on " + t.Name + " (" + now + ")"
	}
	var changes []string
	if t.Unit.Column != u.Column {
		changes = append(changes, fmt.Sprintf("privacy_unit_column %s → %s", unit(t.Unit.Column), unit(u.Column)))
	}
	if t.Unit.MaxGroups != u.MaxGroups {
		changes = append(changes, fmt.Sprintf("max_groups_contributed %s → %s", catalog.BoundText(t.Unit.MaxGroups), catalog.BoundText(u.MaxGroups)))
	}
	if t.Unit.MaxRows != u.MaxRows {
		changes = append(changes, fmt.Sprintf("max_rows_contributed %s → %s", catalog.BoundText(t.Unit.MaxRows), catalog.BoundText(u.MaxRows)))
	}
	if t.Unit.BoundsWarnings != u.BoundsWarnings {
		changes = append(changes, fmt.Sprintf("bounds_warnings %s → %s", warnings(t.Unit.BoundsWarnings), warnings(u.BoundsWarnings)))
	}
	if len(changes) == 0 {
		return "privacy policy on " + t.Name + " unchanged (" + now + ")"
	}
	return "privacy policy on " + t.Name + " changed: " + strings.Join(changes, ", ") + " (bounds and domains kept)"
}
