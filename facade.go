package dpsql

import (
	"context"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog"
)

// TableInfo describes a user table: names, declared types and policy,
// which are not private data.
type TableInfo struct {
	Name    string
	Public  bool
	Columns []catalog.Column
	// Policy sums up the table's privacy policy in a line, and
	// ColumnPolicies says, column by column, what it says of each (as
	// DESCRIBE does): public facts an analyst may read.
	Policy         string
	ColumnPolicies []string
}

// Tables lists the user tables (dpsql's own are hidden).
func (e *Engine) Tables(ctx context.Context) ([]TableInfo, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return nil, err
	}
	var out []TableInfo
	for _, t := range cat.Tables() {
		info := TableInfo{Name: t.Name, Public: t.Public, Columns: t.Columns, Policy: tablePolicy(t)}
		for _, c := range t.Columns {
			info.ColumnPolicies = append(info.ColumnPolicies, columnPolicy(t, c.Name))
		}
		out = append(out, info)
	}
	return out, nil
}

// Budget returns the database's budget status.
func (e *Engine) Budget(ctx context.Context) (budget.Status, error) {
	return budget.GetStatus(ctx, e.ledger)
}

// Query runs one statement on the engine's default session (see
// Session.Query).
func (e *Engine) Query(ctx context.Context, sqlText string, args ...any) (*Result, error) {
	return e.def.Query(ctx, sqlText, args...)
}

// Run runs a script on the engine's default session (see Session.Run).
func (e *Engine) Run(ctx context.Context, script string, fn func(*Result) error) error {
	return e.def.Run(ctx, script, fn)
}

// RunEach runs a script on the engine's default session (see
// Session.RunEach).
func (e *Engine) RunEach(ctx context.Context, script string, fn func(*Result, error) bool) {
	e.def.RunEach(ctx, script, fn)
}

// ExplainEach explains a script on the engine's default session (see
// Session.ExplainEach).
func (e *Engine) ExplainEach(ctx context.Context, script string, fn func(*Result, error) bool) {
	e.def.ExplainEach(ctx, script, fn)
}

// Explain explains a SELECT on the engine's default session (see
// Session.Explain).
func (e *Engine) Explain(ctx context.Context, sqlText string, args ...any) (*Result, error) {
	return e.def.Explain(ctx, sqlText, args...)
}

// Describe describes a statement on the engine's default session (see
// Session.Describe).
func (e *Engine) Describe(ctx context.Context, sqlText string) (*Description, error) {
	return e.def.Describe(ctx, sqlText)
}

// Analyst is who the default session runs as: "" (a local session).
func (e *Engine) Analyst() string { return e.def.analyst }

// Settings are the default session's settings.
func (e *Engine) Settings() Settings { return e.def.Settings() }
