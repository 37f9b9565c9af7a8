package dpsql

import (
	"context"
	"fmt"

	"github.com/dpsql/dpsql/auth"
	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// analystStatement runs CREATE, ALTER or DROP ANALYST (owner).
func (s *Session) analystStatement(ctx context.Context, st *parser.AnalystStmt) (*Result, error) {
	if st.Op == "DROP" {
		return s.dropAnalyst(ctx, st)
	}
	var verifier *string
	if st.Password != nil {
		v, err := parser.LiteralValue(st.Password)
		pw, ok := v.(string)
		if err != nil || !ok || pw == "" {
			return nil, &Error{Pos: st.Password.Pos(), Kind: planner.ErrInvalidOption, Msg: "PASSWORD takes a non-empty string"}
		}
		ver, err := auth.NewVerifier(pw)
		if err != nil {
			return nil, err
		}
		verifier = &ver
	}
	var total *budget.Cost
	if st.Budget != nil {
		t, err := budgetOptions(st.StmtPos, st.Op+" ANALYST ... BUDGET", st.Budget)
		if err != nil {
			return nil, err
		}
		total = &t
	}
	var err error
	if st.Op == "CREATE" {
		err = budget.CreateAnalyst(ctx, s.eng.ledger, st.Name, *verifier, total)
	} else {
		err = budget.AlterAnalyst(ctx, s.eng.ledger, st.Name, verifier, total)
	}
	if err != nil {
		return nil, at(st.NamePos, err)
	}
	return &Result{Message: analystMessage(st, total)}, nil
}

// dropAnalyst is DROP ANALYST name.
func (s *Session) dropAnalyst(ctx context.Context, st *parser.AnalystStmt) (*Result, error) {
	if err := budget.DropAnalyst(ctx, s.eng.ledger, st.Name); err != nil {
		return nil, at(st.NamePos, err)
	}
	return &Result{Message: fmt.Sprintf("analyst %s dropped: they can no longer connect (sessions already open end at their next statement); their charges stay in the ledger", st.Name)}, nil
}

// analystMessage says what CREATE or ALTER ANALYST did.
func analystMessage(st *parser.AnalystStmt, total *budget.Cost) string {
	what := map[string]string{"CREATE": "created", "ALTER": "changed"}[st.Op]
	msg := fmt.Sprintf("analyst %s %s", st.Name, what)
	switch {
	case total != nil:
		msg += fmt.Sprintf(", with a budget of epsilon = %g, delta = %g (the database's total caps what all analysts spend)", total.Epsilon, total.Delta)
	case st.Op == "CREATE":
		msg += ", without a budget: their private queries are refused until ALTER ANALYST " + parser.QuoteIdent(st.Name) + " BUDGET epsilon = E"
	}
	return msg
}

// budgetOptions reads epsilon = E[, delta = D].
func budgetOptions(pos parser.Pos, what string, options []parser.Option) (budget.Cost, error) {
	total := budget.Cost{}
	seenEps := false
	for _, o := range options {
		v, err := parser.NumberValue(o.Value)
		if err != nil {
			return total, err
		}
		switch o.Name {
		case "epsilon":
			total.Epsilon, seenEps = v, true
		case "delta":
			total.Delta = v
		default:
			return total, &Error{Pos: o.NamePos, Kind: planner.ErrInvalidOption, Msg: fmt.Sprintf("unknown budget option %q (known: epsilon, delta)", o.Name)}
		}
	}
	if !seenEps {
		return total, &Error{Pos: pos, Kind: planner.ErrInvalidOption, Msg: what + " needs epsilon = E"}
	}
	return total, nil
}
