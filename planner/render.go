package planner

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/parser"
)

// The backend never sees analyst text. Every statement it runs is printed
// here from the resolved plan: tables by the catalog's canonical names under
// aliases the engine generates, columns by the resolved, quoted
// "alias"."column", and every expression in a total form (one that returns
// a value, NULL where SQLite would raise, for every input). An analyst's
// spelling of a name can therefore never make SQLite read something other
// than what the planner resolved; the authorizer (Reads) checks it again
// inside SQLite.

// MaxTextOperand is how many characters of each text operand || and
// REPLACE use: SQLite raises "string or blob too big" past its size limit,
// so without a cap a single long value could make a query fail, which
// would tell whether that value exists. With the cap a || result has at
// most 2·MaxTextOperand characters and a REPLACE result at most
// MaxTextOperand² characters, whatever the data.
const MaxTextOperand = 1024

// MaxLikePattern is the longest LIKE pattern accepted, in bytes; SQLite
// rejects patterns over 50,000 bytes at run time, and long patterns with
// many wildcards cost time that grows with the data.
const MaxLikePattern = 256

// maxLikeWildcards caps the % wildcards of one LIKE pattern: each one can
// multiply the matching work on a long value.
const maxLikeWildcards = 4

// renderer prints resolved expressions for the backend.
type renderer struct {
	// cols maps every resolved column reference (and alias reference) to
	// its SQL.
	cols map[*parser.ColumnRef]string
	// intCols marks the references to base columns of INTEGER affinity,
	// numCols those of INTEGER, REAL or NUMERIC affinity.
	intCols, numCols map[*parser.ColumnRef]bool
	// baseCols gives the stored table column of every reference to one.
	baseCols map[*parser.ColumnRef]TableColumn
	// derived gives the expression of each output of a subquery that
	// keeps its table's rows (Joined), over that table's columns;
	// derivedRefs the same for every reference to one.
	derived     map[*relCol]parser.Expr
	derivedRefs map[*parser.ColumnRef]parser.Expr
	// derivedOut gives the output position of each column of a subquery
	// that aggregates per unit (Joined.PerUnit); derivedOutRefs the same
	// for every reference to one.
	derivedOut     map[*relCol]int
	derivedOutRefs map[*parser.ColumnRef]int
	// reads collects, per table (canonical name), the columns the plan
	// resolved; "*" stands for every column of a public table.
	reads map[string]map[string]bool
	// tableRefs counts the references to stored tables the FROM clause
	// makes (a self-join makes two).
	tableRefs int
	// knobs are the planning's test switches (nil in production).
	knobs   *knobs.Knobs
	missing []*parser.ColumnRef
	// subSQL holds the SQL of each planned scalar subquery; one printed
	// without it is an internal error (unplanned), never analyst text.
	subSQL    map[*parser.SubqueryExpr]string
	unplanned []*parser.SubqueryExpr
	aliases   int
	// private: the expressions being printed are evaluated on rows of a
	// private table, so they must be total even where that changes
	// SQLite's semantics (text caps, SUM as TOTAL). Public data keeps
	// SQLite's semantics exactly; ABS is made total everywhere (it only
	// trades an error for NULL).
	private bool
}

func newRenderer(k *knobs.Knobs) *renderer {
	return &renderer{knobs: k, cols: map[*parser.ColumnRef]string{}, intCols: map[*parser.ColumnRef]bool{}, numCols: map[*parser.ColumnRef]bool{}, baseCols: map[*parser.ColumnRef]TableColumn{}, derived: map[*relCol]parser.Expr{}, derivedRefs: map[*parser.ColumnRef]parser.Expr{}, derivedOut: map[*relCol]int{}, derivedOutRefs: map[*parser.ColumnRef]int{}, reads: map[string]map[string]bool{}, subSQL: map[*parser.SubqueryExpr]string{}, private: true}
}

// alias returns a fresh table alias. Analysts cannot name anything with the
// reserved prefix (catalog.IsInternalName), so it never collides.
func (rn *renderer) alias() string {
	rn.aliases++
	return fmt.Sprintf("%st%d", catalog.InternalPrefix, rn.aliases-1)
}

func (rn *renderer) read(table, column string) {
	m := rn.reads[table]
	if m == nil {
		m = map[string]bool{}
		rn.reads[table] = m
	}
	m[column] = true
}

// sql renders e; extra, when set, overrides nodes first (post-processing
// replaces aggregates and keys with result columns).
func (rn *renderer) sql(e parser.Expr, extra func(parser.Expr) (string, bool)) string {
	var override func(parser.Expr) (string, bool)
	override = func(x parser.Expr) (string, bool) {
		if extra != nil {
			if s, ok := extra(x); ok {
				return s, true
			}
		}
		sub := func(y parser.Expr) string { return parser.FormatWith(y, override) }
		switch x := x.(type) {
		case *parser.ColumnRef:
			if s, ok := rn.cols[x]; ok {
				return s, true
			}
			rn.missing = append(rn.missing, x)
			return "NULL", true
		case *parser.SubqueryExpr:
			if s, ok := rn.subSQL[x]; ok {
				return s, true
			}
			rn.unplanned = append(rn.unplanned, x)
			return "NULL", true
		case *parser.BinaryExpr:
			if x.Op == "||" && rn.private {
				return "(" + capText(sub(x.X)) + " || " + capText(sub(x.Y)) + ")", true
			}
		case *parser.CastExpr:
			switch x.Type {
			case "FLOAT64", "DOUBLE":
				return "CAST(" + sub(x.X) + " AS REAL)", true
			case "STRING", "VARCHAR":
				return "CAST(" + sub(x.X) + " AS TEXT)", true
			case "INT64":
				// BigQuery rounds a real half away from zero (SQLite's ROUND
				// does too) where SQLite's CAST truncates; integers and text
				// convert as SQLite converts them.
				v := sub(x.X)
				return "(CASE WHEN typeof(" + v + ") = 'real' THEN CAST(ROUND(" + v + ") AS INTEGER) ELSE CAST(" + v + " AS INTEGER) END)", true
			}
		case *parser.CallExpr:
			switch {
			case x.Name == "ABS" && len(x.Args) == 1 && !(rn.knobs != nil && rn.knobs.BareAbs):
				// ABS raises "integer overflow" on −2^63 only; NULLIF turns
				// that one value into NULL and evaluates the argument once.
				return "ABS(NULLIF(" + sub(x.Args[0]) + ", -9223372036854775807 - 1))", true
			case (x.Name == "JSON_EXTRACT" || x.Name == "JSON_VALUE") && len(x.Args) == 2:
				// json_extract raises on text that is not JSON; json_valid
				// never does (checkTotal makes the path a valid constant).
				doc := sub(x.Args[0])
				return "(CASE WHEN json_valid(" + doc + ") THEN json_extract(" + doc + ", " + sub(x.Args[1]) + ") END)", true
			case x.Name == "RAND" && len(x.Args) == 0:
				// 53 random bits of SQLite's RANDOM() over 2^53: uniform in
				// [0, 1); the mask keeps it non-negative (ABS would raise
				// on −2^63).
				return "((RANDOM() >> 11) & 9007199254740991) / 9007199254740992.0", true
			case (x.Name == "IF" || x.Name == "IIF") && len(x.Args) == 3:
				return "(CASE WHEN " + sub(x.Args[0]) + " THEN " + sub(x.Args[1]) + " ELSE " + sub(x.Args[2]) + " END)", true
			case x.Name == "REPLACE" && len(x.Args) == 3 && rn.private:
				return "REPLACE(" + capText(sub(x.Args[0])) + ", " + sub(x.Args[1]) + ", " + capText(sub(x.Args[2])) + ")", true
			case x.Name == "SUM" && len(x.Args) == 1 && !x.Distinct && parser.IsAggregate(x) && rn.private:
				// SQLite's SUM raises on integer overflow; TOTAL never does.
				a := sub(x.Args[0])
				return "(CASE WHEN COUNT(" + a + ") = 0 THEN NULL ELSE TOTAL(" + a + ") END)", true
			}
		}
		return "", false
	}
	return parser.FormatWith(e, override)
}

func capText(s string) string {
	return fmt.Sprintf("SUBSTR(%s, 1, %d)", s, MaxTextOperand)
}

// err reports a column reference that was rendered without having been
// resolved: an internal invariant, never data-dependent.
func (rn *renderer) err() error {
	if len(rn.unplanned) > 0 {
		return errorf(rn.unplanned[0].Lparen, ErrUnsupported, "internal error: a subquery was not planned")
	}
	if len(rn.missing) == 0 {
		return nil
	}
	c := rn.missing[0]
	return errorf(c.NamePos, ErrUnknownName, "internal error: column %q was not resolved", c.Name)
}

// jsonPath is the JSON path grammar JSON_EXTRACT accepts: steps SQLite
// never rejects.
var jsonPath = regexp.MustCompile(`^\$(\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]{1,9}\])*$`)

// jsonPathError refuses a JSON_EXTRACT whose path is not a constant in
// the jsonPath grammar: SQLite would raise on it, only when some row
// reaches it.
func jsonPathError(x parser.Expr) error {
	if c, ok := x.(*parser.CallExpr); ok && (c.Name == "JSON_EXTRACT" || c.Name == "JSON_VALUE") && len(c.Args) == 2 {
		if v, err := parser.LiteralValue(c.Args[1]); err != nil || !jsonPath.MatchString(fmt.Sprint(v)) {
			return errorf(c.Args[1].Pos(), ErrUnsupported, "%s takes a constant path such as '$.result.value' ($ then .name or [n] steps)", c.Name)
		}
	}
	return nil
}

// checkJSONPaths runs jsonPathError on a public statement's expressions.
func checkJSONPaths(stmt *parser.SelectStmt) error {
	var err error
	forEachExpr(stmt, func(e parser.Expr) {
		parser.Walk(e, func(x parser.Expr) bool {
			if err == nil {
				err = jsonPathError(x)
			}
			return err == nil
		})
	})
	return err
}

// checkTotal refuses, before anything runs, the expressions whose run-time
// behaviour SQLite could make depend on the data: a LIKE pattern must be a
// constant string of at most MaxLikePattern bytes with few wildcards.
func checkTotal(e parser.Expr) error {
	var err error
	parser.Walk(e, func(x parser.Expr) bool {
		if err != nil {
			return false
		}
		if jerr := jsonPathError(x); jerr != nil {
			err = jerr
			return false
		}
		l, ok := x.(*parser.LikeExpr)
		if !ok {
			return true
		}
		v, lerr := parser.LiteralValue(l.Pattern)
		s, isString := v.(string)
		switch {
		case lerr != nil || !isString:
			err = errorf(l.Pattern.Pos(), ErrUnsupported, "a LIKE pattern must be a constant string")
		case len(s) > MaxLikePattern:
			err = errorf(l.Pattern.Pos(), ErrUnsupported, "a LIKE pattern may have at most %d bytes", MaxLikePattern)
		case strings.Count(s, "%") > maxLikeWildcards:
			err = errorf(l.Pattern.Pos(), ErrUnsupported, "a LIKE pattern may have at most %d %% wildcards", maxLikeWildcards)
		}
		return err == nil
	})
	return err
}

// checkStmtTotal runs checkTotal on every expression of a statement,
// its WITH queries and its subqueries.
func checkStmtTotal(s *parser.SelectStmt) error {
	var err error
	check := func(e parser.Expr) {
		if err == nil {
			err = checkTotal(e)
		}
	}
	forEachSelect(s, func(q *parser.SelectStmt) {
		forEachStmtExpr(q, false, check)
		for _, o := range q.DPOptions {
			check(o.Value)
		}
	})
	return err
}
