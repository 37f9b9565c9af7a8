package parser

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Placeholders returns the statement's parameters in source order.
func Placeholders(s Stmt) []*Placeholder {
	var out []*Placeholder
	var visit func(e Expr)
	visit = func(e Expr) {
		Walk(e, func(x Expr) bool {
			switch x := x.(type) {
			case *Placeholder:
				out = append(out, x)
			case *SubqueryExpr:
				forEachStmtExpr(x.Query, visit)
			case *InExpr:
				if x.Sub != nil {
					forEachStmtExpr(x.Sub.Query, visit)
				}
			}
			return true
		})
	}
	forEachStmtExpr(s, visit)
	return out
}

// NumParams is the number of values a statement needs: the highest
// parameter index.
func NumParams(s Stmt) int {
	n := 0
	for _, p := range Placeholders(s) {
		n = max(n, p.Index)
	}
	return n
}

// Bind sets every placeholder of s to a literal made from args[Index-1].
// Values become AST literals, never SQL text spliced into the statement.
// Accepted: nil, bool, int64 (and other integers), float64, string, []byte
// (as text) and time.Time (as RFC 3339 text).
func Bind(s Stmt, args []any) error {
	need := NumParams(s)
	if len(args) != need {
		return &Error{Pos: s.Pos(), Msg: fmt.Sprintf("the statement has %d parameters, got %d values", need, len(args))}
	}
	for _, p := range Placeholders(s) {
		lit, err := literalOf(args[p.Index-1], p.At)
		if err != nil {
			return err
		}
		p.Value = lit
	}
	return nil
}

func literalOf(v any, at Pos) (Expr, error) {
	num := func(raw string, kind LiteralKind) Expr {
		if len(raw) > 0 && raw[0] == '-' {
			return &UnaryExpr{OpPos: at, Op: "-", X: &Literal{ValuePos: at, Kind: kind, Raw: raw[1:]}}
		}
		return &Literal{ValuePos: at, Kind: kind, Raw: raw}
	}
	switch v := v.(type) {
	case nil:
		return &Literal{ValuePos: at, Kind: NullLit, Raw: "NULL"}, nil
	case bool:
		return &Literal{ValuePos: at, Kind: BoolLit, Raw: map[bool]string{true: "TRUE", false: "FALSE"}[v]}, nil
	case int64:
		return num(strconv.FormatInt(v, 10), IntLit), nil
	case int:
		return num(strconv.Itoa(v), IntLit), nil
	case int32:
		return num(strconv.FormatInt(int64(v), 10), IntLit), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, &Error{Pos: at, Msg: "a parameter cannot be NaN or infinite"}
		}
		raw := strconv.FormatFloat(v, 'g', -1, 64)
		if _, err := strconv.ParseInt(raw, 10, 64); err == nil {
			raw += ".0" // keep it a float literal
		}
		return num(raw, FloatLit), nil
	case float32:
		return literalOf(float64(v), at)
	case string:
		return &Literal{ValuePos: at, Kind: StringLit, Raw: v}, nil
	case []byte:
		return &Literal{ValuePos: at, Kind: StringLit, Raw: string(v)}, nil
	case time.Time:
		return &Literal{ValuePos: at, Kind: StringLit, Raw: v.Format(time.RFC3339Nano)}, nil
	}
	return nil, &Error{Pos: at, Msg: fmt.Sprintf("unsupported parameter type %T", v)}
}

// forEachStmtExpr calls fn for every top-level expression of a statement.
func forEachStmtExpr(s Stmt, fn func(Expr)) {
	call := func(es ...Expr) {
		for _, e := range es {
			if e != nil {
				fn(e)
			}
		}
	}
	opts := func(list []Option) {
		for _, o := range list {
			call(o.Value)
		}
	}
	switch s := s.(type) {
	case *SelectStmt:
		for _, c := range s.With {
			forEachStmtExpr(c.Query, fn)
		}
		forEachFrom(s.From, fn)
		opts(s.DPOptions)
		for _, it := range s.Items {
			call(it.Expr)
		}
		call(s.Where)
		call(s.GroupBy...)
		call(s.Having)
		for _, arm := range s.Compound {
			forEachStmtExpr(arm.Select, fn)
		}
		for _, o := range s.OrderBy {
			call(o.Expr)
		}
		call(s.Limit, s.Offset)
	case *ExplainStmt:
		forEachStmtExpr(s.Query, fn)
	case *SetStmt:
		call(s.Value)
	case *SetBudgetStmt:
		opts(s.Options)
	case *CreatePolicyStmt:
		opts(s.Options)
	case *SetBoundsStmt:
		call(s.Lo, s.Hi)
	case *SetDomainStmt:
		call(s.Values...)
	case *AnalystStmt:
		call(s.Password)
		opts(s.Budget)
	case *WatchStmt:
		opts(s.Options)
	}
}

func forEachFrom(f FromItem, fn func(Expr)) {
	switch f := f.(type) {
	case *SubqueryRef:
		forEachStmtExpr(f.Query, fn)
	case *JoinExpr:
		forEachFrom(f.Left, fn)
		forEachFrom(f.Right, fn)
		if f.On != nil {
			fn(f.On)
		}
	}
}
