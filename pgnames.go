package dpsql

import (
	"strings"

	"github.com/dpsql/dpsql/parser"
)

// postgresNames names a SELECT's result columns as PostgreSQL names them,
// for clients of the wire server (psql's \gset, ORMs that read columns by
// name): an alias as written, a column by its name, a function or
// aggregate call by its function's name in lower case (count, avg), a
// CAST by what it casts, anything else ?column?. The interval columns
// (SET interval_columns, marked in interval) follow their column's name
// (count_lo). A query with * keeps dpsql's names.
func postgresNames(st *parser.SelectStmt, columns []string, interval []bool) []string {
	if st == nil || len(st.Items) == 0 {
		return nil
	}
	out := make([]string, len(columns))
	item, base := 0, ""
	for i, c := range columns {
		if i < len(interval) && interval[i] && c == FewRowsColumn {
			out[i] = c
			continue
		}
		if i < len(interval) && interval[i] {
			suffix := "_hi"
			if strings.HasSuffix(c, "_lo") {
				suffix = "_lo"
			}
			out[i] = base + suffix
			continue
		}
		if item >= len(st.Items) || st.Items[item].Star {
			return nil
		}
		base = postgresName(st.Items[item].Alias, st.Items[item].Expr, c)
		out[i] = base
		item++
	}
	return out
}

// postgresName is one item's PostgreSQL name.
func postgresName(alias string, e parser.Expr, dpsqlName string) string {
	if alias != "" {
		return alias
	}
	for {
		switch x := e.(type) {
		case *parser.ParenExpr:
			e = x.X
			continue
		case *parser.CastExpr:
			e = x.X
			continue
		case *parser.ColumnRef:
			return x.Name
		case *parser.CallExpr:
			return strings.ToLower(x.Name)
		case *parser.CaseExpr:
			return "case"
		}
		return "?column?"
	}
}
