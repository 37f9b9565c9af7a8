package parser

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// QuoteIdent quotes a name as an SQL identifier ("name", with " doubled).
func QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// QuoteString quotes s as an SQL string literal.
func QuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// Format renders an expression as SQL that SQLite accepts. Identifiers are
// always quoted and every compound sub-expression is parenthesised, so the
// output never depends on operator precedence.
func Format(e Expr) string { return FormatWith(e, nil) }

// FormatWith is Format with an override: for every node where override
// returns ok, its text replaces the node's own rendering.
func FormatWith(e Expr, override func(Expr) (string, bool)) string {
	var sb strings.Builder
	f := formatter{sb: &sb, override: override}
	f.expr(e)
	return sb.String()
}

type formatter struct {
	sb       *strings.Builder
	override func(Expr) (string, bool)
}

func (f formatter) w(s string) { f.sb.WriteString(s) }

func (f formatter) list(xs []Expr) {
	for i, x := range xs {
		if i > 0 {
			f.w(", ")
		}
		f.expr(x)
	}
}

func (f formatter) expr(e Expr) {
	if f.override != nil {
		if s, ok := f.override(e); ok {
			f.w(s)
			return
		}
	}
	switch e := e.(type) {
	case *ColumnRef:
		if e.Table != "" {
			f.w(QuoteIdent(e.Table) + ".")
		}
		f.w(QuoteIdent(e.Name))
	case *Literal:
		if e.Kind == StringLit {
			f.w(QuoteString(e.Raw))
		} else {
			f.w(e.Raw)
		}
	case *UnaryExpr:
		f.w("(" + e.Op)
		if e.Op == "NOT" {
			f.w(" ")
		}
		f.expr(e.X)
		f.w(")")
	case *BinaryExpr:
		f.w("(")
		f.expr(e.X)
		f.w(" " + e.Op + " ")
		f.expr(e.Y)
		f.w(")")
	case *CallExpr:
		f.call(e)
	case *TupleExpr:
		f.w("(")
		f.list(e.Elems)
		f.w(")")
	case *CaseExpr:
		f.caseExpr(e)
	case *CastExpr:
		f.w("CAST(")
		f.expr(e.X)
		f.w(" AS " + e.Type + ")")
	case *InExpr:
		f.w("(")
		f.expr(e.X)
		if e.Sub != nil {
			f.w(not(e.Not) + " IN ")
			f.expr(e.Sub)
			f.w(")")
			break
		}
		f.w(not(e.Not) + " IN (")
		f.list(e.List)
		f.w("))")
	case *BetweenExpr:
		f.w("(")
		f.expr(e.X)
		f.w(not(e.Not) + " BETWEEN ")
		f.expr(e.Lo)
		f.w(" AND ")
		f.expr(e.Hi)
		f.w(")")
	case *LikeExpr:
		f.w("(")
		f.expr(e.X)
		f.w(not(e.Not) + " LIKE ")
		f.expr(e.Pattern)
		f.w(")")
	case *IsNullExpr:
		f.w("(")
		f.expr(e.X)
		if e.Not {
			f.w(" IS NOT NULL)")
		} else {
			f.w(" IS NULL)")
		}
	case *ParenExpr:
		f.expr(e.X)
	case *SubqueryExpr:
		f.w("(" + FormatStmt(e.Query) + ")")
	case *Placeholder:
		if e.Value != nil {
			f.expr(e.Value)
		} else {
			f.w("$" + strconv.Itoa(e.Index))
		}
	}
}

// call prints a function call: its arguments, named ones after them,
// and its OVER clause.
func (f formatter) call(e *CallExpr) {
	f.w(e.Name + "(")
	if e.Distinct {
		f.w("DISTINCT ")
	}
	if e.Star {
		f.w("*")
	}
	f.list(e.Args)
	for i, a := range e.Named {
		if i > 0 || len(e.Args) > 0 || e.Star {
			f.w(", ")
		}
		f.w(a.Name + " => ")
		f.expr(a.Value)
	}
	f.w(")")
	w := e.Over
	if w == nil {
		return
	}
	f.w(" OVER (")
	if len(w.PartitionBy) > 0 {
		f.w("PARTITION BY ")
		f.list(w.PartitionBy)
	}
	for i, o := range w.OrderBy {
		if i == 0 {
			if len(w.PartitionBy) > 0 {
				f.w(" ")
			}
			f.w("ORDER BY ")
		} else {
			f.w(", ")
		}
		f.expr(o.Expr)
		if o.Desc {
			f.w(" DESC")
		}
	}
	f.w(")")
}

// caseExpr prints CASE [operand] WHEN ... THEN ... [ELSE ...] END.
func (f formatter) caseExpr(e *CaseExpr) {
	f.w("CASE")
	if e.Operand != nil {
		f.w(" ")
		f.expr(e.Operand)
	}
	for _, wc := range e.Whens {
		f.w(" WHEN ")
		f.expr(wc.Cond)
		f.w(" THEN ")
		f.expr(wc.Result)
	}
	if e.Else != nil {
		f.w(" ELSE ")
		f.expr(e.Else)
	}
	f.w(" END")
}

func not(b bool) string {
	if b {
		return " NOT"
	}
	return ""
}

// FormatStmt renders a statement in canonical form (used by golden tests and
// by the ledger to record what was charged).
func FormatStmt(s Stmt) string {
	var sb strings.Builder
	opts := func(list []Option) { formatOptions(&sb, list) }
	switch s := s.(type) {
	case *SelectStmt:
		if len(s.With) > 0 {
			sb.WriteString("WITH ")
			for i, c := range s.With {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(QuoteIdent(c.Name) + " AS (" + FormatStmt(c.Query) + ")")
			}
			sb.WriteString(" ")
		}
		sb.WriteString("SELECT ")
		formatCore(&sb, s)
		for _, arm := range s.Compound {
			sb.WriteString(" " + arm.Op + " SELECT ")
			formatCore(&sb, arm.Select)
		}
		if len(s.OrderBy) > 0 {
			sb.WriteString(" ORDER BY ")
			for i, o := range s.OrderBy {
				if i > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString(Format(o.Expr))
				if o.Desc {
					sb.WriteString(" DESC")
				}
			}
		}
		if s.Limit != nil {
			sb.WriteString(" LIMIT " + Format(s.Limit))
			if s.Offset != nil {
				sb.WriteString(" OFFSET " + Format(s.Offset))
			}
		}
	case *ExplainStmt:
		sb.WriteString("EXPLAIN " + FormatStmt(s.Query))
	case *SetStmt:
		sb.WriteString("SET " + s.Name + " = " + Format(s.Value))
	case *ResetBudgetStmt:
		sb.WriteString("RESET BUDGET")
	case *ResetCacheStmt:
		sb.WriteString("RESET CACHE")
	case *SetBudgetStmt:
		sb.WriteString("SET BUDGET ")
		opts(s.Options)
		if s.Pure {
			sb.WriteString(" PURE")
		}
	case *ShowStmt:
		if s.What == "SETTING" {
			sb.WriteString("SHOW " + QuoteIdent(s.Name))
			break
		}
		sb.WriteString("SHOW " + s.What)
		if s.What == "COLUMNS" {
			sb.WriteString(" FROM")
		}
		if s.Table != nil {
			sb.WriteString(" " + QuoteIdent(s.Table.Name))
		}
	case *CreatePolicyStmt:
		sb.WriteString("CREATE PRIVACY POLICY ON " + QuoteIdent(s.Table.Name))
		if len(s.Options) > 0 {
			sb.WriteString(" OPTIONS (")
			opts(s.Options)
			sb.WriteString(")")
		}
	case *SetBoundsStmt:
		sb.WriteString("ALTER PRIVACY POLICY ON " + QuoteIdent(s.Table.Name) + " SET BOUNDS " +
			QuoteIdent(s.Column.Name) + " (" + Format(s.Lo) + ", " + Format(s.Hi) + ")")
	case *SetDomainStmt:
		sb.WriteString("ALTER PRIVACY POLICY ON " + QuoteIdent(s.Table.Name) + " SET DOMAIN " + QuoteIdent(s.Column.Name) + " (")
		for i, v := range s.Values {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(Format(v))
		}
		sb.WriteString(")")
	case *SetPublicStmt:
		if s.Private {
			sb.WriteString("ALTER TABLE " + QuoteIdent(s.Table.Name) + " SET PRIVATE")
			break
		}
		sb.WriteString("ALTER TABLE " + QuoteIdent(s.Table.Name) + " SET PUBLIC")
	case *DropPolicyStmt:
		sb.WriteString("DROP PRIVACY POLICY ON " + QuoteIdent(s.Table.Name))
	case *DropTableStmt:
		sb.WriteString("DROP TABLE ")
		if s.IfExists {
			sb.WriteString("IF EXISTS ")
		}
		sb.WriteString(QuoteIdent(s.Table.Name))
	case *WatchStmt:
		sb.WriteString(s.Op + " WATCH " + QuoteIdent(s.Name))
		if s.Options != nil {
			sb.WriteString(" OPTIONS ")
			sb.WriteString("(")
			opts(s.Options)
			sb.WriteString(")")
		}
	case *AnalystStmt:
		// The password is never printed: formatted statements reach logs.
		sb.WriteString(s.Op + " ANALYST " + QuoteIdent(s.Name))
		if s.Password != nil {
			sb.WriteString(" PASSWORD '********'")
		}
		if s.Budget != nil {
			sb.WriteString(" BUDGET ")
			opts(s.Budget)
		}
	}
	return sb.String()
}

// formatCore prints a SELECT's core after the keyword SELECT: DP options,
// DISTINCT, the select list, FROM, WHERE, GROUP BY and HAVING.
func formatCore(sb *strings.Builder, s *SelectStmt) {
	if s.DP {
		sb.WriteString("WITH DIFFERENTIAL_PRIVACY ")
		if len(s.DPOptions) > 0 {
			sb.WriteString("OPTIONS (")
			formatOptions(sb, s.DPOptions)
			sb.WriteString(") ")
		}
	}
	if s.Distinct {
		sb.WriteString("DISTINCT ")
	}
	for i, it := range s.Items {
		if i > 0 {
			sb.WriteString(", ")
		}
		if it.Star {
			sb.WriteString("*")
			continue
		}
		sb.WriteString(Format(it.Expr))
		if it.Alias != "" {
			sb.WriteString(" AS " + QuoteIdent(it.Alias))
		}
	}
	if s.From != nil {
		sb.WriteString(" FROM " + FormatFrom(s.From))
	}
	if s.Where != nil {
		sb.WriteString(" WHERE " + Format(s.Where))
	}
	if len(s.GroupBy) > 0 {
		sb.WriteString(" GROUP BY ")
		for i, g := range s.GroupBy {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(Format(g))
		}
	}
	if s.Having != nil {
		sb.WriteString(" HAVING " + Format(s.Having))
	}
}

func formatOptions(sb *strings.Builder, list []Option) {
	for i, o := range list {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(o.Name + " = " + Format(o.Value))
	}
}

// LiteralValue evaluates a constant: a literal, optionally signed. It returns
// int64, float64, string, bool or nil (for NULL).
func LiteralValue(e Expr) (any, error) {
	switch e := e.(type) {
	case *ParenExpr:
		return LiteralValue(e.X)
	case *Placeholder:
		if e.Value == nil {
			return nil, &Error{Pos: e.At, Msg: fmt.Sprintf("parameter $%d has no value", e.Index)}
		}
		return LiteralValue(e.Value)
	case *UnaryExpr:
		if e.Op == "NOT" {
			break
		}
		v, err := LiteralValue(e.X)
		if err != nil {
			return nil, err
		}
		switch v := v.(type) {
		case int64:
			if e.Op == "-" {
				return -v, nil
			}
			return v, nil
		case float64:
			if e.Op == "-" {
				return -v, nil
			}
			return v, nil
		}
		return nil, &Error{Pos: e.OpPos, Msg: "expected a number after " + e.Op}
	case *Literal:
		switch e.Kind {
		case IntLit:
			if i, err := strconv.ParseInt(e.Raw, 10, 64); err == nil {
				return i, nil
			}
			f, err := strconv.ParseFloat(e.Raw, 64)
			if err != nil {
				return nil, &Error{Pos: e.ValuePos, Msg: "number out of range: " + e.Raw}
			}
			return f, nil
		case FloatLit:
			f, err := strconv.ParseFloat(e.Raw, 64)
			if err != nil || math.IsInf(f, 0) {
				return nil, &Error{Pos: e.ValuePos, Msg: "number out of range: " + e.Raw}
			}
			return f, nil
		case StringLit:
			return e.Raw, nil
		case BoolLit:
			return e.Raw == "TRUE", nil
		case NullLit:
			return nil, nil
		}
	}
	return nil, &Error{Pos: e.Pos(), Msg: "expected a constant, found " + Format(e)}
}

// NumberValue evaluates a constant number as float64.
func NumberValue(e Expr) (float64, error) {
	v, err := LiteralValue(e)
	if err != nil {
		return 0, err
	}
	switch v := v.(type) {
	case int64:
		return float64(v), nil
	case float64:
		return v, nil
	}
	return 0, &Error{Pos: e.Pos(), Msg: "expected a number, found " + Format(e)}
}

// FormatFrom renders a FROM clause.
func FormatFrom(f FromItem) string {
	switch f := f.(type) {
	case *TableRef:
		if f.Alias != "" {
			return QuoteIdent(f.Name) + " AS " + QuoteIdent(f.Alias)
		}
		return QuoteIdent(f.Name)
	case *SubqueryRef:
		return "(" + FormatStmt(f.Query) + ") AS " + QuoteIdent(f.Alias)
	case *JoinExpr:
		join := " JOIN "
		if f.Kind != "" {
			join = " " + f.Kind + " JOIN "
		}
		if f.On == nil {
			cols := make([]string, len(f.Using))
			for i, c := range f.Using {
				cols[i] = QuoteIdent(c)
			}
			return FormatFrom(f.Left) + join + FormatFrom(f.Right) + " USING (" + strings.Join(cols, ", ") + ")"
		}
		return FormatFrom(f.Left) + join + FormatFrom(f.Right) + " ON " + Format(f.On)
	}
	return ""
}

// SQLLiteral prints a value (of the kinds SQLite returns, or a bool) as a
// SQL literal that SQLite reads back as the same value and type: a REAL
// keeps a decimal point, infinities overflow to ±Inf, NaN is NULL.
func SQLLiteral(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case float64:
		switch {
		case math.IsNaN(v):
			return "NULL"
		case math.IsInf(v, 1):
			return "9e999"
		case math.IsInf(v, -1):
			return "-9e999"
		}
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0" // stays REAL
		}
		return s
	case bool:
		if v {
			return "1"
		}
		return "0"
	case string:
		if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
			// A NUL would end the statement's text early: as bytes.
			return fmt.Sprintf("CAST(X'%X' AS TEXT)", v)
		}
		return QuoteString(v)
	case []byte:
		return fmt.Sprintf("X'%X'", v)
	}
	return QuoteString(fmt.Sprint(v))
}
