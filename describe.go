package dpsql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// Column types Describe reports ("" when the type is not known before the
// statement runs).
const (
	TypeInteger = "INTEGER"
	TypeReal    = "REAL"
	TypeText    = "TEXT"
)

// Description is what a statement will return, known before it runs.
type Description struct {
	Params  int      // how many parameters ($N or ?) it takes
	Columns []string // nil: the statement returns no rows
	Types   []string // per column: TypeInteger, TypeReal, TypeText or ""
	// PostgresColumns names a SELECT's columns as PostgreSQL would
	// (Result.PostgresColumns); nil keeps Columns.
	PostgresColumns []string
	// intervalCols marks the interval columns (SET interval_columns).
	intervalCols []bool
}

// Describe says what a statement will return without charging anything:
// the planner types a private query's outputs (COUNT an integer, other
// aggregates reals, keys as their column is declared); a public query,
// EXPLAIN and SHOW, which are free, run once with every parameter set to
// 1 and are typed by their values. A PostgreSQL-wire server needs this
// for the extended protocol, whose Describe comes before Bind.
func (s *Session) Describe(ctx context.Context, sqlText string) (*Description, error) {
	stmt, err := parser.ParseStatement(sqlText)
	if err != nil {
		return nil, syntaxError(err)
	}
	d := &Description{Params: parser.NumParams(stmt)}
	args := make([]any, d.Params)
	for i := range args {
		args[i] = int64(1)
	}
	if err := parser.Bind(stmt, args); err != nil {
		return nil, syntaxError(parser.ErrorList{err.(*parser.Error)})
	}
	switch st := stmt.(type) {
	case *parser.SelectStmt:
		d, err := s.describeSelect(ctx, st, d)
		if err == nil {
			d.PostgresColumns = postgresNames(st, d.Columns, d.intervalCols)
		}
		return d, err
	case *parser.ExplainStmt, *parser.ShowStmt:
		res, err := s.run(ctx, stmt)
		if err != nil {
			return nil, err
		}
		d.Columns, d.Types = res.Columns, valueTypes(res)
	}
	return d, nil
}

// describeSelect types a SELECT's outputs without running a private one.
func (s *Session) describeSelect(ctx context.Context, st *parser.SelectStmt, d *Description) (*Description, error) {
	e := s.eng
	cat, err := e.catalog(ctx)
	set := s.Settings().planner()
	if err != nil {
		return nil, err
	}
	in := e.planInputs()
	plan, err := planner.PlanSelect(st, cat, set, in)
	if errors.Is(err, planner.ErrNoEpsilon) {
		set.Epsilon = 1 // describing spends nothing; the shape does not depend on ε
		plan, err = planner.PlanSelect(st, cat, set, in)
	}
	if err != nil {
		// SQL over released results: the outer query's names, typed when
		// it runs.
		if set.Epsilon == 0 {
			set.Epsilon = 1
		}
		comp, cerr := planner.PlanComposite(st, cat, set, in)
		if cerr != nil {
			return nil, cerr
		}
		if comp == nil {
			return nil, err
		}
		return e.describeComposite(ctx, comp, cat, set, d)
	}
	switch p := plan.(type) {
	case *planner.PublicQuery:
		r, err := exec.Public(ctx, e.db, p)
		if err != nil {
			return nil, err
		}
		res := &Result{Columns: r.Columns, Rows: r.Rows}
		d.Columns, d.Types = res.Columns, valueTypes(res)
	case *planner.PrivateQuery:
		has := intervalOutputs(p)
		for j, o := range p.Outputs {
			d.Columns = append(d.Columns, o.Name)
			d.Types = append(d.Types, outputType(p, cat, o.Expr, 0))
			d.intervalCols = append(d.intervalCols, false)
			if s.Settings().IntervalColumns && has[j] {
				d.Columns = append(d.Columns, o.Name+"_lo", o.Name+"_hi")
				d.Types = append(d.Types, TypeReal, TypeReal)
				d.intervalCols = append(d.intervalCols, true, true)
			}
		}
		if s.Settings().IntervalColumns && slices.Contains(has, true) {
			d.Columns = append(d.Columns, FewRowsColumn)
			d.Types = append(d.Types, TypeText)
			d.intervalCols = append(d.intervalCols, true)
		}
	}
	return d, nil
}

// describeComposite types a query over released results by running its
// outer query once on one made-up row per DP part, each value of the type
// the part's output will have (1, 1.0 or 'a'): public data only, nothing
// charged. Columns an empty result leaves untyped are TEXT.
func (e *Engine) describeComposite(ctx context.Context, c *planner.Composite, cat *catalog.Catalog, set planner.Settings, d *Description) (*Description, error) {
	in := e.planInputs()
	in.Released = map[*parser.SelectStmt]*planner.Released{}
	for _, p := range c.Parts {
		r := &planner.Released{Rows: [][]any{nil}}
		for _, o := range p.Plan.Outputs {
			r.Columns = append(r.Columns, o.Name)
			var v any = "a"
			switch outputType(p.Plan, cat, o.Expr, 0) {
			case TypeInteger:
				v = int64(1)
			case TypeReal:
				v = 1.0
			}
			r.Rows[0] = append(r.Rows[0], v)
		}
		in.Released[p.Key] = r
	}
	plan, err := planner.PlanSelect(c.Stmt, cat, set, in)
	if err != nil {
		return nil, err
	}
	if p, ok := plan.(*planner.PrivateQuery); ok {
		for _, o := range p.Outputs {
			d.Columns = append(d.Columns, o.Name)
			d.Types = append(d.Types, outputType(p, cat, o.Expr, 0))
		}
		return d, nil
	}
	outer, ok := plan.(*planner.PublicQuery)
	if !ok {
		return nil, fmt.Errorf("dpsql: the outer query planned as %T", plan)
	}
	r, err := exec.Public(ctx, e.db, outer)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: r.Columns, Rows: r.Rows}
	d.Columns, d.Types = res.Columns, valueTypes(res)
	return d, nil
}

// Types types each column of the result by its values, as valueTypes.
func (r *Result) Types() []string { return valueTypes(r) }

// valueTypes types each column by its values: INTEGER if every non-NULL
// value is an integer, REAL if they are numbers, TEXT otherwise or when
// all are NULL.
func valueTypes(r *Result) []string {
	types := make([]string, len(r.Columns))
	for j := range r.Columns {
		t := ""
		for _, row := range r.Rows {
			switch row[j].(type) {
			case int64:
				if t == "" {
					t = TypeInteger
				}
			case float64:
				if t == "" || t == TypeInteger {
					t = TypeReal
				}
			case nil:
			default:
				t = TypeText
			}
		}
		if t == "" {
			t = TypeText
		}
		types[j] = t
	}
	return types
}

// outputType is the type of a private query's output expression, "" when
// it cannot be told before the query runs.
func outputType(p *planner.PrivateQuery, cat *catalog.Catalog, x parser.Expr, depth int) string {
	if depth > 50 {
		return ""
	}
	rec := func(y parser.Expr) string { return outputType(p, cat, y, depth+1) }
	if k, ok := p.KeyExprOf[x]; ok {
		return keyType(p, cat, p.Keys[k])
	}
	switch x := x.(type) {
	case *parser.ParenExpr:
		return rec(x.X)
	case *parser.CallExpr:
		if i, ok := p.AggOf[x]; ok {
			if p.Aggregates[i].Kind == planner.AggCount {
				return TypeInteger
			}
			return TypeReal
		}
	case *parser.ColumnRef:
		if i, ok := p.AliasOf[x]; ok {
			return rec(p.Outputs[i].Expr)
		}
		if k, ok := p.KeyOf[x]; ok {
			return keyType(p, cat, p.Keys[k])
		}
	case *parser.Literal:
		switch v, _ := parser.LiteralValue(x); v.(type) {
		case int64, bool:
			return TypeInteger
		case float64:
			return TypeReal
		case string:
			return TypeText
		}
	case *parser.CastExpr:
		return castType(x.Type)
	case *parser.UnaryExpr:
		if x.Op == "NOT" {
			return TypeInteger
		}
		return rec(x.X)
	case *parser.BinaryExpr:
		switch x.Op {
		case "=", "<>", "<", "<=", ">", ">=", "AND", "OR":
			return TypeInteger
		case "||":
			return TypeText
		}
		a, b := rec(x.X), rec(x.Y)
		switch {
		case a == TypeInteger && b == TypeInteger:
			return TypeInteger
		case (a == TypeInteger || a == TypeReal) && (b == TypeInteger || b == TypeReal):
			return TypeReal
		}
	}
	return ""
}

// keyType is a GROUP BY key's type: its public domain's, or its column's
// declared type.
func keyType(p *planner.PrivateQuery, cat *catalog.Catalog, k planner.GroupKey) string {
	if k.Domain != nil {
		return valueTypes(&Result{Columns: []string{k.Column}, Rows: func() [][]any {
			rows := make([][]any, len(k.Domain))
			for i, v := range k.Domain {
				rows[i] = []any{v}
			}
			return rows
		}()})[0]
	}
	if k.Expr != nil {
		return "" // computed by partition selection: typed by its values
	}
	for table := range p.Reads {
		if t, ok := cat.Table(table); ok {
			if c, ok := t.Column(k.Column); ok {
				return castType(c.Type)
			}
		}
	}
	return ""
}

// ColumnType maps a declared column type (or a CAST's type name) to
// TypeInteger, TypeReal, TypeText or "", by SQLite's affinity rules.
func ColumnType(declared string) string { return castType(declared) }

// castType maps a declared or CAST type name to a Describe type, by
// SQLite's affinity rules.
func castType(name string) string {
	n := strings.ToUpper(name)
	switch {
	case strings.Contains(n, "INT"):
		return TypeInteger
	case strings.Contains(n, "CHAR"), strings.Contains(n, "TEXT"), strings.Contains(n, "CLOB"), n == "STRING":
		return TypeText
	case strings.Contains(n, "REAL"), strings.Contains(n, "FLOA"), strings.Contains(n, "DOUB"):
		return TypeReal
	}
	return ""
}
