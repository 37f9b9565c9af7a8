package parser

// Node is any node of the syntax tree.
type Node interface {
	// Pos is the position of the node's first token.
	Pos() Pos
}

// Expr is a scalar or aggregate expression. The set of expression kinds is
// closed: exprNode is unexported.
type Expr interface {
	Node
	exprNode()
}

// Stmt is one statement. The set of statement kinds is closed.
type Stmt interface {
	Node
	stmtNode()
}

// ---- expressions ----

// ColumnRef names a column, optionally qualified by its table.
type ColumnRef struct {
	NamePos Pos
	Table   string // "" when unqualified
	Name    string
}

// LiteralKind says which kind of constant a Literal holds.
type LiteralKind int

// Literal kinds.
const (
	IntLit LiteralKind = iota
	FloatLit
	StringLit
	NullLit
	BoolLit
)

// Literal is a constant. Raw is the number's spelling, the string's value,
// or "NULL", "TRUE", "FALSE".
type Literal struct {
	ValuePos Pos
	Kind     LiteralKind
	Raw      string
}

// UnaryExpr is -X, +X or NOT X.
type UnaryExpr struct {
	OpPos Pos
	Op    string // "-", "+", "NOT"
	X     Expr
}

// BinaryExpr is X Op Y for arithmetic, comparison, AND, OR and ||.
type BinaryExpr struct {
	X     Expr
	OpPos Pos
	Op    string // normalised: "=", "<>", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "||", "AND", "OR"
	Y     Expr
}

// NamedArg is a named argument of a call: name => value.
type NamedArg struct {
	NamePos Pos
	Name    string
	Value   Expr
}

// CallExpr is a function or aggregate call. Name is upper-cased.
type CallExpr struct {
	NamePos  Pos
	Name     string
	Distinct bool
	Star     bool // COUNT(*)
	Args     []Expr
	Named    []NamedArg
	// Over makes the call a window function (name(...) OVER (...)): for
	// public queries and queries over released results only.
	Over *WindowSpec
}

// WindowSpec is OVER ([PARTITION BY expr, ...] [ORDER BY item, ...]).
type WindowSpec struct {
	OverPos     Pos
	PartitionBy []Expr
	OrderBy     []OrderItem
}

// TupleExpr is a parenthesised list of two or more expressions, as in
// contribution_bounds_per_group => (0, 100).
type TupleExpr struct {
	Lparen Pos
	Elems  []Expr
}

// WhenClause is one WHEN cond THEN result arm of a CASE.
type WhenClause struct {
	Cond   Expr
	Result Expr
}

// CaseExpr is CASE [operand] WHEN ... THEN ... [ELSE ...] END.
type CaseExpr struct {
	CasePos Pos
	Operand Expr // nil for a searched CASE
	Whens   []WhenClause
	Else    Expr // nil when absent
}

// CastExpr is CAST(X AS Type); Type is one of INTEGER, REAL, TEXT, NUMERIC,
// or BigQuery's INT64, FLOAT64, DOUBLE, STRING, VARCHAR.
type CastExpr struct {
	CastPos Pos
	X       Expr
	Type    string
}

// InExpr is X [NOT] IN (list), or X [NOT] IN (SELECT ...) with Sub set
// (and List nil); Walk does not descend into Sub, as into any subquery.
type InExpr struct {
	X    Expr
	Not  bool
	List []Expr
	Sub  *SubqueryExpr
}

// BetweenExpr is X [NOT] BETWEEN Lo AND Hi.
type BetweenExpr struct {
	X      Expr
	Not    bool
	Lo, Hi Expr
}

// LikeExpr is X [NOT] LIKE Pattern.
type LikeExpr struct {
	X       Expr
	Not     bool
	Pattern Expr
}

// IsNullExpr is X IS [NOT] NULL.
type IsNullExpr struct {
	X   Expr
	Not bool
}

// Placeholder is a statement parameter: ? (numbered in order of
// appearance) or $N. Bind sets Value to a literal; an unbound placeholder
// cannot be planned.
type Placeholder struct {
	At    Pos
	Index int  // 1-based
	Value Expr // the bound literal, nil until bound
}

// SubqueryExpr is a scalar subquery, (SELECT ...), in an expression. It is
// planned on its own: the planner allows it only where its value is public
// (a query over public tables, or over the released result of a DP query).
// Walk does not descend into it.
type SubqueryExpr struct {
	Lparen Pos
	Query  *SelectStmt
}

// ParenExpr is (X).
type ParenExpr struct {
	Lparen Pos
	X      Expr
}

func (e *ColumnRef) Pos() Pos    { return e.NamePos }
func (e *Literal) Pos() Pos      { return e.ValuePos }
func (e *UnaryExpr) Pos() Pos    { return e.OpPos }
func (e *BinaryExpr) Pos() Pos   { return e.X.Pos() }
func (e *CallExpr) Pos() Pos     { return e.NamePos }
func (e *TupleExpr) Pos() Pos    { return e.Lparen }
func (e *CaseExpr) Pos() Pos     { return e.CasePos }
func (e *CastExpr) Pos() Pos     { return e.CastPos }
func (e *InExpr) Pos() Pos       { return e.X.Pos() }
func (e *BetweenExpr) Pos() Pos  { return e.X.Pos() }
func (e *LikeExpr) Pos() Pos     { return e.X.Pos() }
func (e *IsNullExpr) Pos() Pos   { return e.X.Pos() }
func (e *ParenExpr) Pos() Pos    { return e.Lparen }
func (e *SubqueryExpr) Pos() Pos { return e.Lparen }
func (e *Placeholder) Pos() Pos  { return e.At }

func (*ColumnRef) exprNode()    {}
func (*Literal) exprNode()      {}
func (*UnaryExpr) exprNode()    {}
func (*BinaryExpr) exprNode()   {}
func (*CallExpr) exprNode()     {}
func (*TupleExpr) exprNode()    {}
func (*CaseExpr) exprNode()     {}
func (*CastExpr) exprNode()     {}
func (*InExpr) exprNode()       {}
func (*BetweenExpr) exprNode()  {}
func (*LikeExpr) exprNode()     {}
func (*IsNullExpr) exprNode()   {}
func (*ParenExpr) exprNode()    {}
func (*SubqueryExpr) exprNode() {}
func (*Placeholder) exprNode()  {}

// ---- statements ----

// Option is name = value inside OPTIONS (...) or SET BUDGET.
type Option struct {
	NamePos Pos
	Name    string // lower-cased
	Value   Expr
}

// SelectItem is one entry of the select list.
type SelectItem struct {
	Star  bool // SELECT *
	Expr  Expr // nil when Star
	Alias string
	At    Pos
}

// OrderItem is one ORDER BY key.
type OrderItem struct {
	Expr Expr
	Desc bool
}

// TableRef names a table (in FROM, with an optional alias).
type TableRef struct {
	NamePos Pos
	Name    string
	Alias   string
}

// FromItem is a relation in FROM: *TableRef, *SubqueryRef or *JoinExpr.
type FromItem interface {
	Node
	fromNode()
}

// SubqueryRef is (SELECT ...) AS alias in FROM.
type SubqueryRef struct {
	Lparen Pos
	Query  *SelectStmt
	Alias  string
}

// JoinExpr is Left [INNER|LEFT|RIGHT] JOIN Right ON On, or USING (Using).
type JoinExpr struct {
	Left    FromItem
	JoinPos Pos
	// Kind is "" for an inner join, "LEFT" or "RIGHT" for an outer one.
	Kind  string
	Right FromItem
	On    Expr // nil with USING
	// Using lists the columns of JOIN ... USING (a, b): each equates the
	// left side's column with the right side's of that name.
	Using    []string
	UsingPos []Pos
}

// CTE is one name AS (SELECT ...) of a WITH clause.
type CTE struct {
	NamePos Pos
	Name    string
	Query   *SelectStmt
}

func (t *TableRef) Pos() Pos    { return t.NamePos }
func (t *SubqueryRef) Pos() Pos { return t.Lparen }
func (t *JoinExpr) Pos() Pos    { return t.Left.Pos() }

func (*TableRef) fromNode()    {}
func (*SubqueryRef) fromNode() {}
func (*JoinExpr) fromNode()    {}

// SelectStmt is a query, optionally WITH DIFFERENTIAL_PRIVACY OPTIONS (...).
type SelectStmt struct {
	WithPos   Pos // position of WITH, when With is not empty
	With      []CTE
	SelectPos Pos
	DP        bool
	DPOptions []Option
	Distinct  bool // SELECT DISTINCT
	Items     []SelectItem
	From      FromItem // nil for SELECT without FROM
	Where     Expr
	GroupBy   []Expr
	Having    Expr
	// Compound lists the arms after the first of a compound query (SELECT
	// ... UNION ALL SELECT ...). The statement's own select list, FROM,
	// WHERE, GROUP BY and HAVING are the first arm; its ORDER BY, LIMIT
	// and OFFSET then apply to the whole compound, as in SQLite.
	Compound []CompoundArm
	OrderBy  []OrderItem
	Limit    Expr
	Offset   Expr
}

// CompoundArm is one UNION [ALL], INTERSECT or EXCEPT arm of a compound
// query. Its Select has no WITH, ORDER BY, LIMIT or OFFSET.
type CompoundArm struct {
	OpPos  Pos
	Op     string // "UNION ALL", "UNION", "INTERSECT" or "EXCEPT"
	Select *SelectStmt
}

// ExplainStmt is EXPLAIN <select>.
type ExplainStmt struct {
	ExplainPos Pos
	Query      *SelectStmt
}

// SetStmt is SET name = value: a session parameter such as epsilon.
type SetStmt struct {
	SetPos Pos
	Name   string // lower-cased
	Value  Expr
}

// ResetBudgetStmt is RESET BUDGET (owner): what was spent so far no longer
// counts against the total; the ledger keeps every charge.
type ResetBudgetStmt struct {
	ResetPos Pos
}

// ResetCacheStmt is RESET CACHE (owner): every cached answer is dropped;
// the next identical query is charged and answered afresh.
type ResetCacheStmt struct {
	ResetPos Pos
}

// SetBudgetStmt is SET BUDGET epsilon = E[, delta = D] [PURE] (owner).
type SetBudgetStmt struct {
	SetPos  Pos
	Options []Option
	// Pure: the owner requires pure ε-DP (δ = 0, no Gaussian noise).
	Pure bool
}

// ShowStmt is SHOW BUDGET, TABLES, POLICY t, LEDGER, CACHE, ANALYSTS or
// WATCHES.
type ShowStmt struct {
	ShowPos Pos
	What    string // a ShowKinds entry, "ALL" (the session's settings) or "SETTING" (SHOW name)
	Table   *TableRef
	Name    string // SHOW name: the setting's name
}

// CreatePolicyStmt is CREATE PRIVACY POLICY ON t [OPTIONS (...)] (owner).
type CreatePolicyStmt struct {
	CreatePos Pos
	Table     *TableRef
	Options   []Option
}

// SetBoundsStmt is ALTER PRIVACY POLICY ON t SET BOUNDS col (lo, hi) (owner).
type SetBoundsStmt struct {
	AlterPos Pos
	Table    *TableRef
	Column   *ColumnRef
	Lo, Hi   Expr
}

// SetDomainStmt is ALTER PRIVACY POLICY ON t SET DOMAIN col (v, ...) (owner).
type SetDomainStmt struct {
	AlterPos Pos
	Table    *TableRef
	Column   *ColumnRef
	Values   []Expr
}

// SetPublicStmt is ALTER TABLE t SET PUBLIC, or with Private ALTER
// TABLE t SET PRIVATE (owner).
type SetPublicStmt struct {
	AlterPos Pos
	Table    *TableRef
	Private  bool
}

// DropPolicyStmt is DROP PRIVACY POLICY ON t (owner).
type DropPolicyStmt struct {
	DropPos Pos
	Table   *TableRef
}

// DropTableStmt is DROP TABLE [IF EXISTS] t (owner): the table, its
// policy and its cached answers go.
type DropTableStmt struct {
	DropPos  Pos
	Table    *TableRef
	IfExists bool
}

// AnalystStmt is CREATE ANALYST name PASSWORD 'p' [BUDGET epsilon = E[,
// delta = D]], ALTER ANALYST name [PASSWORD 'p'] [BUDGET ...] or DROP
// ANALYST name (owner): the users a dpsql server lets in.
type AnalystStmt struct {
	StmtPos  Pos
	Op       string // "CREATE", "ALTER" or "DROP"
	NamePos  Pos
	Name     string // as written (quoted names keep their case)
	Password Expr   // a string; nil when not given
	Budget   []Option
}

// WatchStmt is CREATE WATCH name OPTIONS (threshold = T, sensitivity = S,
// max_above = C, epsilon = E [, monotonic = TRUE]) or DROP WATCH name: an
// analyst's threshold watch (the sparse vector technique across queries).
type WatchStmt struct {
	StmtPos Pos
	Op      string // "CREATE" or "DROP"
	NamePos Pos
	Name    string // as written (quoted names keep their case)
	Options []Option
}

func (s *SelectStmt) Pos() Pos {
	if len(s.With) > 0 {
		return s.WithPos
	}
	return s.SelectPos
}
func (s *ExplainStmt) Pos() Pos      { return s.ExplainPos }
func (s *SetStmt) Pos() Pos          { return s.SetPos }
func (s *SetBudgetStmt) Pos() Pos    { return s.SetPos }
func (s *ResetBudgetStmt) Pos() Pos  { return s.ResetPos }
func (s *ResetCacheStmt) Pos() Pos   { return s.ResetPos }
func (s *ShowStmt) Pos() Pos         { return s.ShowPos }
func (s *CreatePolicyStmt) Pos() Pos { return s.CreatePos }
func (s *SetBoundsStmt) Pos() Pos    { return s.AlterPos }
func (s *SetDomainStmt) Pos() Pos    { return s.AlterPos }
func (s *SetPublicStmt) Pos() Pos    { return s.AlterPos }
func (s *DropPolicyStmt) Pos() Pos   { return s.DropPos }
func (s *DropTableStmt) Pos() Pos    { return s.DropPos }
func (s *AnalystStmt) Pos() Pos      { return s.StmtPos }
func (s *WatchStmt) Pos() Pos        { return s.StmtPos }

func (*SelectStmt) stmtNode()       {}
func (*ExplainStmt) stmtNode()      {}
func (*SetStmt) stmtNode()          {}
func (*SetBudgetStmt) stmtNode()    {}
func (*ResetBudgetStmt) stmtNode()  {}
func (*ResetCacheStmt) stmtNode()   {}
func (*ShowStmt) stmtNode()         {}
func (*CreatePolicyStmt) stmtNode() {}
func (*SetBoundsStmt) stmtNode()    {}
func (*SetDomainStmt) stmtNode()    {}
func (*SetPublicStmt) stmtNode()    {}
func (*DropPolicyStmt) stmtNode()   {}
func (*DropTableStmt) stmtNode()    {}
func (*AnalystStmt) stmtNode()      {}
func (*WatchStmt) stmtNode()        {}

// IsOwnerStmt reports whether s needs owner mode.
func IsOwnerStmt(s Stmt) bool {
	switch s.(type) {
	case *SetBudgetStmt, *ResetBudgetStmt, *ResetCacheStmt, *CreatePolicyStmt, *SetBoundsStmt, *SetDomainStmt, *SetPublicStmt, *DropPolicyStmt, *DropTableStmt, *AnalystStmt:
		return true
	}
	return false
}

// Walk calls fn for e and, while fn returns true, for each sub-expression in
// source order.
func Walk(e Expr, fn func(Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	switch e := e.(type) {
	case *UnaryExpr:
		Walk(e.X, fn)
	case *BinaryExpr:
		Walk(e.X, fn)
		Walk(e.Y, fn)
	case *CallExpr:
		for _, a := range e.Args {
			Walk(a, fn)
		}
		for _, a := range e.Named {
			Walk(a.Value, fn)
		}
		if e.Over != nil {
			for _, x := range e.Over.PartitionBy {
				Walk(x, fn)
			}
			for _, o := range e.Over.OrderBy {
				Walk(o.Expr, fn)
			}
		}
	case *TupleExpr:
		for _, x := range e.Elems {
			Walk(x, fn)
		}
	case *CaseExpr:
		Walk(e.Operand, fn)
		for _, w := range e.Whens {
			Walk(w.Cond, fn)
			Walk(w.Result, fn)
		}
		Walk(e.Else, fn)
	case *CastExpr:
		Walk(e.X, fn)
	case *InExpr:
		Walk(e.X, fn)
		for _, x := range e.List {
			Walk(x, fn)
		}
	case *BetweenExpr:
		Walk(e.X, fn)
		Walk(e.Lo, fn)
		Walk(e.Hi, fn)
	case *LikeExpr:
		Walk(e.X, fn)
		Walk(e.Pattern, fn)
	case *IsNullExpr:
		Walk(e.X, fn)
	case *ParenExpr:
		Walk(e.X, fn)
	case *Placeholder:
		Walk(e.Value, fn)
	}
}

// Unparen is e without the parentheses around it.
func Unparen(e Expr) Expr {
	for {
		p, ok := e.(*ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}
