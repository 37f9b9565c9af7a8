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
// (SET interval_columns) follow their column's name (count_lo). A query
// with * keeps dpsql's names.
func postgresNames(st *parser.SelectStmt, columns []string) []string {
	if st == nil || len(st.Items) == 0 {
		return nil
	}
	byName := map[string]string{}
	for i, it := range st.Items {
		if it.Star || i >= len(columns) {
			return nil
		}
		byName[columns[i]] = postgresName(it.Alias, it.Expr, columns[i])
	}
	out := make([]string, len(columns))
	for i, c := range columns {
		name, ok := byName[c]
		for _, suffix := range []string{"_lo", "_hi"} {
			if base, cut := strings.CutSuffix(c, suffix); !ok && cut {
				if b, found := byName[base]; found {
					name, ok = b+suffix, true
				}
			}
		}
		if !ok {
			name = c
		}
		out[i] = name
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
