package parser

// AnalystCompletions are the dialect's words and phrases an analyst's
// editor offers as completions (the shell, the web console).
var AnalystCompletions = []string{
	"SELECT", "FROM", "WHERE", "GROUP BY", "HAVING", "ORDER BY", "LIMIT", "AS", "AND", "OR", "NOT",
	"COUNT(", "SUM(", "AVG(", "VAR_POP(", "STDDEV_POP(", "ROUND(", "CASE", "WHEN", "THEN", "ELSE", "END",
	"EXPLAIN", "SHOW BUDGET", "SHOW TABLES", "SHOW POLICY", "SET epsilon =", "SET delta =", "SET show_bounds =",
	"SET bounds_epsilon_fraction =", "WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon =",
	"contribution_bounds_per_group =>", "contribution_bounds_per_row =>", "DESC", "ASC",
}

// OwnerCompletions are the owner's statements, offered in owner mode.
var OwnerCompletions = []string{
	"CREATE PRIVACY POLICY ON", "ALTER PRIVACY POLICY ON", "SET BOUNDS", "SET DOMAIN", "SET BUDGET epsilon =",
	"SHOW LEDGER", "SHOW CACHE", "RESET CACHE", "DROP PRIVACY POLICY ON",
}
