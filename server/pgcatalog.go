package server

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/parser"
)

// The emulation answers the statements PostgreSQL clients send on their
// own — session settings, transaction control, version and catalog
// lookups — from dpsql's catalog (table and column names and declared
// types, never data). Anything else that names pg_catalog or
// information_schema is refused with 0A000. docs/server.md lists what is
// emulated.

// engineSettings are the SET parameters the engine itself takes (its
// settings table).
var engineSettings = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range dpsql.SettingNames() {
		m[n] = true
	}
	return m
}()

// engineShows are the SHOW statements the engine answers
// (parser.ShowKinds), lower case.
var engineShows = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range parser.ShowKinds {
		m[strings.ToLower(k)] = true
	}
	return m
}()

// serverSettings are the values SHOW reports for PostgreSQL settings.
var serverSettings = map[string]string{
	"server_version":                ServerVersion,
	"server_version_num":            "150000",
	"server_encoding":               "UTF8",
	"client_encoding":               "UTF8",
	"datestyle":                     "ISO, MDY",
	"intervalstyle":                 "postgres",
	"timezone":                      "UTC",
	"integer_datetimes":             "on",
	"standard_conforming_strings":   "on",
	"transaction_isolation":         "serializable",
	"default_transaction_read_only": "on",
	"transaction_read_only":         "on",
	"max_identifier_length":         "63",
	"max_index_keys":                "32",
	"search_path":                   "main",
	"is_superuser":                  "off",
	"lc_collate":                    "C",
	"lc_ctype":                      "C",
	"extra_float_digits":            "1",
}

var (
	reSet          = regexp.MustCompile(`(?is)^set\s+(?:session\s+|local\s+)?([a-z_][a-z0-9_.]*)\s*(?:=|\s+to\s+|\s)\s*(.*)$`)
	reSetTZ        = regexp.MustCompile(`(?is)^set\s+(?:session\s+|local\s+)?(time\s+zone|names|session\s+characteristics)\b`)
	reReset        = regexp.MustCompile(`(?is)^reset\s+([a-z_][a-z0-9_.]*)$`)
	reShow         = regexp.MustCompile(`(?is)^show\s+([a-z_][a-z0-9_.]*)$`)
	reTx           = regexp.MustCompile(`(?is)^(begin|start\s+transaction|commit|end|rollback|abort)\b`)
	reDiscard      = regexp.MustCompile(`(?is)^(discard\s+all|deallocate\s+(?:prepare\s+)?(all|"?[a-z0-9_]+"?))$`)
	reFunction     = regexp.MustCompile(`(?is)^select\s+(pg_catalog\.)?(version|current_schema|current_database|current_user|session_user|current_setting\('([a-z_]+)'\))\s*(\(\s*\))?\s*(as\s+"?\w+"?)?$`)
	reSessionUsers = regexp.MustCompile(`(?is)^select\s+((?:current_user|session_user|current_role)(?:\s*,\s*(?:current_user|session_user|current_role))*)\s*$`)
	reCatalog      = regexp.MustCompile(`(?i)\b(pg_catalog|information_schema|pg_[a-z_]+\s*\(|::\s*regclass|pg_class|pg_namespace|pg_attribute|pg_type)\b`)
)

// emulate answers a statement the engine does not know but clients send;
// ok is false for everything else.
func (c *conn) emulate(text string) (a *answer, err error, ok bool) {
	q := strings.TrimSpace(strings.Join(strings.Fields(stripComments(text)), " "))
	q = strings.TrimSpace(strings.TrimSuffix(q, ";"))
	lower := strings.ToLower(q)
	one := func(col string, v any) *answer {
		t := dpsql.TypeText
		if _, isBool := v.(bool); isBool {
			t = typeBool
		}
		return &answer{desc: &description{columns: []string{col}, types: []string{t}}, rows: [][]any{{v}}, tag: "SELECT"}
	}
	if m := reSet.FindStringSubmatch(q); m != nil && !strings.EqualFold(m[1], "budget") {
		return c.emulateSet(strings.ToLower(m[1]), m[2])
	}
	if reSetTZ.MatchString(q) {
		return &answer{tag: "SET"}, nil, true
	}
	if m := reReset.FindStringSubmatch(q); m != nil {
		return c.emulateReset(strings.ToLower(m[1]))
	}
	if m := reShow.FindStringSubmatch(q); m != nil {
		return c.emulateShow(m[1])
	}
	if m := reTx.FindStringSubmatch(q); m != nil {
		word := strings.ToUpper(strings.Fields(m[1])[0])
		tag := map[string]string{"BEGIN": "BEGIN", "START": "START TRANSACTION", "COMMIT": "COMMIT", "END": "COMMIT", "ROLLBACK": "ROLLBACK", "ABORT": "ROLLBACK"}[word]
		a := &answer{tag: tag}
		if word == "ROLLBACK" || word == "ABORT" {
			a.notices = []string{"dpsql has no transactions: every statement took effect when it ran, and a private query's cost was committed before its answer; ROLLBACK undoes nothing"}
		}
		return a, nil, true
	}
	if m := reDiscard.FindStringSubmatch(q); m != nil {
		if strings.HasPrefix(lower, "discard") {
			return &answer{tag: "DISCARD ALL"}, nil, true
		}
		name := strings.Trim(m[2], `"`)
		if strings.EqualFold(name, "all") {
			c.stmts = map[string]*prepared{}
		} else {
			delete(c.stmts, name)
		}
		return &answer{tag: "DEALLOCATE"}, nil, true
	}
	if m := reFunction.FindStringSubmatch(q); m != nil {
		fn := strings.ToLower(m[2])
		switch {
		case fn == "version":
			return one("version", "PostgreSQL "+ServerVersion+": dpsql, a differentially private SQL engine; only private aggregates and public tables are answered"), nil, true
		case fn == "current_schema":
			return one("current_schema", "main"), nil, true
		case fn == "current_database":
			return one("current_database", "dpsql"), nil, true
		case fn == "current_user" || fn == "session_user":
			return one(fn, c.user), nil, true
		case m[3] != "":
			if v, ok := serverSettings[strings.ToLower(m[3])]; ok {
				return one("current_setting", v), nil, true
			}
		}
	}
	if a, err, ok := c.catalogQuery(q, lower); ok {
		return a, err, true
	}
	if m := reSessionUsers.FindStringSubmatch(q); m != nil {
		a := &answer{tag: "SELECT", desc: &description{}}
		var row []any
		for _, w := range strings.Split(m[1], ",") {
			a.desc.columns = append(a.desc.columns, strings.ToLower(strings.TrimSpace(w)))
			a.desc.types = append(a.desc.types, dpsql.TypeText)
			row = append(row, c.user)
		}
		a.rows = [][]any{row}
		return a, nil, true
	}
	if reCatalog.MatchString(q) {
		a, err := c.catalogSQL(q)
		return a, err, true
	}
	return nil, nil, false
}

// emulateSet answers SET name = value for a client setting (accepted,
// ignored) and statement_timeout; the engine's own settings are not
// emulated (ok false: the engine runs them).
func (c *conn) emulateSet(name, value string) (*answer, error, bool) {
	if name == "statement_timeout" {
		if err := c.setStatementTimeout(value); err != nil {
			return nil, err, true
		}
		return &answer{tag: "SET"}, nil, true
	}
	if !engineSettings[name] {
		return &answer{tag: "SET"}, nil, true
	}
	return nil, nil, false
}

// emulateReset answers RESET name (RESET ALL resets client settings
// only); RESET BUDGET and RESET CACHE are the engine's.
func (c *conn) emulateReset(name string) (*answer, error, bool) {
	switch name {
	case "budget", "cache":
		return nil, nil, false
	case "all":
		return &answer{tag: "RESET", notices: []string{"RESET ALL resets client settings only; SET epsilon and the other dpsql settings keep their values (RESET epsilon resets one)"}}, nil, true
	case "statement_timeout":
		c.mu.Lock()
		c.statementTimeout = 0
		c.mu.Unlock()
		return &answer{tag: "RESET"}, nil, true
	}
	if engineSettings[name] {
		res, err := c.sess.ResetSetting(name)
		if err != nil {
			return nil, err, true
		}
		return &answer{tag: "RESET", notices: []string{res.Message}}, nil, true
	}
	return &answer{tag: "RESET"}, nil, true
}

// emulateShow answers SHOW name: a dpsql setting, ALL, the connection's
// statement_timeout and application_name, or a PostgreSQL setting;
// dpsql's own SHOW statements are the engine's (ok false).
func (c *conn) emulateShow(raw string) (*answer, error, bool) {
	name := strings.ToLower(raw)
	one := func(v any) *answer {
		return &answer{desc: &description{columns: []string{name}, types: []string{dpsql.TypeText}}, rows: [][]any{{v}}, tag: "SHOW"}
	}
	switch v, isSetting := c.sess.Setting(name); {
	case engineShows[name]:
		return nil, nil, false
	case isSetting: // a dpsql setting: SHOW epsilon
		return one(v), nil, true
	case name == "all":
		return c.showAll(), nil, true
	case name == "statement_timeout":
		v := "0"
		if d := c.timeout(); d > 0 {
			v = fmt.Sprintf("%dms", d.Milliseconds())
		}
		return one(v), nil, true
	case name == "application_name":
		return one(c.params["application_name"]), nil, true
	}
	v, known := serverSettings[name]
	if !known {
		return nil, &wireError{code: "42704", msg: fmt.Sprintf("unrecognized configuration parameter %q (dpsql's own: SHOW %s; SHOW POLICY takes a table)", raw, strings.Join(parser.ShowKinds, ", "))}, true
	}
	return one(v), nil, true
}

// tables lists the user tables, by name.
func (c *conn) tables() ([]dpsql.TableInfo, error) {
	ts, err := c.sess.Tables(context.Background())
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts, err
}

// Object ids of the emulated catalog: a table's oid is tableOID plus its
// place in the name order.
const tableOID = 16384

var (
	rePsqlPattern = regexp.MustCompile(`(?i)c\.relname operator\(pg_catalog\.~\) '((?:[^']|'')*)'`)
	rePsqlOID     = regexp.MustCompile(`(?i)c\.oid = '(\d+)'`)
	reAttrOID     = regexp.MustCompile(`(?i)a\.attrelid = '(\d+)'`)
)

// catalogQuery answers the catalog queries of psql 15's \dt, \d and \l
// (recognised by their text), from the table names and declared column
// types of dpsql's catalog.
func (c *conn) catalogQuery(q, lower string) (*answer, error, bool) {
	text := func(cols ...string) *description {
		d := &description{columns: cols}
		for range cols {
			d.types = append(d.types, dpsql.TypeText)
		}
		return d
	}
	switch {
	case strings.Contains(lower, "from pg_catalog.pg_database d"):
		// \l, \l+ (which adds Size, Tablespace and Description): the
		// columns psql names, in its order.
		var cols []string
		for _, m := range reColumnAlias.FindAllStringSubmatch(q, -1) {
			cols = append(cols, m[1])
		}
		a := &answer{desc: text(cols...), tag: "SELECT"}
		row := make([]any, len(cols))
		for i, col := range cols {
			row[i] = map[string]any{"Name": "dpsql", "Owner": "owner", "Encoding": "UTF8", "Collate": "C", "Ctype": "C",
				"Locale Provider": "libc", "Tablespace": "pg_default"}[col]
		}
		a.rows = [][]any{row}
		return a, nil, true
	case strings.Contains(lower, `as "schema"`) && strings.Contains(lower, "from pg_catalog.pg_class c") && strings.Contains(lower, "c.relkind in ("):
		// \dt, \d: the relation list.
		ts, err := c.matchingTables(q)
		if err != nil {
			return nil, err, true
		}
		// The columns psql names (\dt+ adds Persistence, Access method,
		// Size and Description; \di a Table), in its order; rows only when
		// the relation kinds asked for include tables ('r'), not for \dv,
		// \di, \ds or \dm.
		var cols []string
		for _, m := range reColumnAlias.FindAllStringSubmatch(q, -1) {
			cols = append(cols, m[1])
		}
		a := &answer{desc: text(cols...), tag: "SELECT"}
		if m := reRelkinds.FindStringSubmatch(lower); m != nil && strings.Contains(m[1], "'r'") {
			for _, t := range ts {
				row := make([]any, len(cols))
				for i, col := range cols {
					row[i] = map[string]any{"Schema": "main", "Name": t.Name, "Type": "table", "Owner": "owner",
						"Persistence": "permanent", "Access method": "heap", "Size": "", "Description": nil, "Table": nil}[col]
				}
				a.rows = append(a.rows, row)
			}
		}
		return a, nil, true
	case strings.HasPrefix(lower, "select c.oid, n.nspname, c.relname from pg_catalog.pg_class c"):
		// \d NAME, step 1: which tables match.
		ts, err := c.matchingTables(q)
		if err != nil {
			return nil, err, true
		}
		a := &answer{desc: text("oid", "nspname", "relname"), tag: "SELECT"}
		for _, t := range ts {
			a.rows = append(a.rows, []any{fmt.Sprint(t.oid), "main", t.Name})
		}
		return a, nil, true
	case strings.HasPrefix(lower, "select c.relchecks, c.relkind, c.relhasindex"):
		// \d NAME, step 2: the table's properties.
		a := &answer{desc: text("relchecks", "relkind", "relhasindex", "relhasrules", "relhastriggers", "relrowsecurity", "relforcerowsecurity", "relhasoids", "relispartition", "?column?", "reltablespace", "reloftype", "relpersistence", "relreplident", "amname"), tag: "SELECT"}
		for i := 2; i <= 8; i++ {
			a.desc.types[i] = typeBool
		}
		if m := rePsqlOID.FindStringSubmatch(q); m != nil {
			if t, err := c.tableByOID(m[1]); err != nil {
				return nil, err, true
			} else if t != nil {
				a.rows = [][]any{{"0", "r", false, false, false, false, false, false, false, "", "0", "", "p", "d", "heap"}}
			}
		}
		return a, nil, true
	case strings.HasPrefix(lower, "select a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod)") && reAttrOID.MatchString(q):
		// \d NAME, step 3: the columns and their declared types; \d+ asks
		// for more columns (storage, compression, statistics target,
		// description), each present only when named: psql reads them by
		// position, so the answer has exactly the columns asked for.
		return c.attributes(q, lower)
	case reJDBCNone.MatchString(lower):
		// pgjdbc's getPrimaryKeys, getIndexInfo, getImportedKeys,
		// getExportedKeys, getCrossReference, getFunctions and
		// getProcedures (DBeaver calls them opening a table): a dpsql
		// table has no keys or indexes and analysts no functions to list,
		// so each answers no rows, with the columns it names.
		return &answer{desc: text(selectNames(q)...), tag: "SELECT"}, nil, true
	case strings.HasPrefix(lower, "select typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, pg_type.oid from pg_catalog.pg_type"):
		// pgjdbc's type cache (getTypeInfo reads it): the emulated types.
		a := &answer{desc: text("is_array", "typtype", "typname", "oid"), tag: "SELECT"}
		a.desc.types[0], a.desc.types[3] = typeBool, dpsql.TypeInteger
		for _, t := range pgTypes {
			a.rows = append(a.rows, []any{false, "b", t.name, t.oid})
		}
		return a, nil, true
	case reTableFollowUp.MatchString(q):
		// \d NAME, the rest: policies, statistics, publications, inherited
		// tables, triggers... — a dpsql table has none.
		return &answer{desc: text("none"), tag: "SELECT"}, nil, true
	}
	return nil, nil, false
}

// reColumnAlias finds the column names psql gives its listing columns
// (as "Name"), and reRelkinds the relation kinds a listing asks for.
var (
	reColumnAlias = regexp.MustCompile(`(?i)\bas\s+"([^"]+)"`)
	reRelkinds    = regexp.MustCompile(`c\.relkind in \(([^)]*)\)`)
)

// reJDBCNone matches pgjdbc's metadata queries about keys, indexes and
// functions: the select list names a JDBC column of theirs and the query
// reads the catalog table that has none in dpsql.
var reJDBCNone = regexp.MustCompile(`(?s)^select .*\bas (?:pk_name|index_name|fk_name|function_cat|procedure_cat)\b.*\bpg_catalog\.(?:pg_index|pg_constraint|pg_proc)\b`)

// selectNames are the names of a SELECT's outputs, from its top-level
// select list: an item's alias (folded to lower case unless quoted), or
// else the last name of a column reference.
func selectNames(q string) []string {
	var items []string
	depth, start := 0, len("select ")
	for i := start; i < len(q); i++ {
		switch c := q[i]; {
		case c == '\'' || c == '"':
			if j := strings.IndexByte(q[i+1:], c); j >= 0 {
				i += j + 1
			}
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && c == ',':
			items = append(items, q[start:i])
			start = i + 1
		case depth == 0 && (c == ' ') && strings.HasPrefix(strings.ToLower(q[i:]), " from "):
			items = append(items, q[start:i])
			return itemNames(items)
		}
	}
	return itemNames(append(items, q[start:]))
}

var reItemAlias = regexp.MustCompile(`(?is)\bas\s+("(?:[^"]|"")+"|[a-z_][a-z0-9_]*)\s*$`)

func itemNames(items []string) []string {
	names := make([]string, len(items))
	for k, it := range items {
		it = strings.TrimSpace(it)
		if m := reItemAlias.FindStringSubmatch(it); m != nil {
			it = m[1]
		} else if dot := strings.LastIndexByte(it, '.'); dot >= 0 {
			it = it[dot+1:]
		}
		if strings.HasPrefix(it, `"`) {
			names[k] = strings.ReplaceAll(strings.Trim(it, `"`), `""`, `"`)
		} else {
			names[k] = strings.ToLower(it)
		}
	}
	return names
}

// reTableFollowUp matches the queries psql's \d sends after the columns,
// about the objects attached to the table: it has none of them.
var reTableFollowUp = regexp.MustCompile(`(?is)^select .*from pg_catalog\.(pg_policy|pg_statistic_ext|pg_publication|pg_inherits|pg_trigger|pg_index|pg_constraint|pg_class c, pg_catalog\.pg_inherits|pg_rewrite)\b.*'1638\d+'`)

// pgTypeName is how psql shows a declared column type.
func pgTypeName(declared string) string {
	switch dpsql.ColumnType(declared) {
	case dpsql.TypeInteger:
		return "bigint"
	case dpsql.TypeReal:
		return "double precision"
	case dpsql.TypeText:
		return "text"
	}
	return strings.ToLower(declared)
}

// oidTable is a table with its emulated oid.
type oidTable struct {
	dpsql.TableInfo
	oid int
}

// matchingTables lists the tables whose names match the query's psql
// name pattern (all tables without one).
func (c *conn) matchingTables(q string) ([]oidTable, error) {
	ts, err := c.tables()
	if err != nil {
		return nil, err
	}
	var re *regexp.Regexp
	if m := rePsqlPattern.FindStringSubmatch(q); m != nil {
		if re, err = regexp.Compile(strings.ReplaceAll(m[1], "''", "'")); err != nil {
			return nil, &wireError{code: "2201B", msg: "invalid name pattern: " + err.Error()}
		}
	}
	var out []oidTable
	for i, t := range ts {
		if re == nil || re.MatchString(t.Name) {
			out = append(out, oidTable{t, tableOID + i})
		}
	}
	return out, nil
}

// tableByOID finds the table an emulated oid names.
func (c *conn) tableByOID(oid string) (*oidTable, error) {
	ts, err := c.matchingTables("")
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if fmt.Sprint(t.oid) == oid {
			return &t, nil
		}
	}
	return nil, nil
}

// verboseAttributes are the columns psql 15's \d+ adds to its column
// query, in its order: how each is recognised in the query text, its
// name, and its value for a column of a given declared type.
var verboseAttributes = []struct {
	marker, name string
	value        func(declaredType string) any
}{
	{"a.attstorage", "attstorage", func(t string) any {
		if pgTypeName(t) == "text" {
			return "x" // extended, as PostgreSQL stores text
		}
		return "p" // plain
	}},
	{"a.attcompression", "attcompression", func(string) any { return "" }},
	{"attstattarget", "attstattarget", func(string) any { return nil }},
	{"pg_catalog.col_description(", "col_description", func(string) any { return nil }},
}

// attributes answers psql's column query for \d and \d+.
func (c *conn) attributes(q, lower string) (*answer, error, bool) {
	cols := []string{"attname", "format_type", "pg_get_expr", "attnotnull", "attcollation", "attidentity", "attgenerated"}
	var extra []int
	for i, v := range verboseAttributes {
		if strings.Contains(lower, v.marker) {
			cols = append(cols, v.name)
			extra = append(extra, i)
		}
	}
	a := &answer{desc: &description{columns: cols, types: make([]string, len(cols))}, tag: "SELECT"}
	for i := range a.desc.types {
		a.desc.types[i] = dpsql.TypeText
	}
	a.desc.types[3] = typeBool
	m := reAttrOID.FindStringSubmatch(q)
	if m == nil {
		return a, nil, true
	}
	t, err := c.tableByOID(m[1])
	if err != nil || t == nil {
		return a, err, true
	}
	for _, col := range t.Columns {
		row := []any{col.Name, pgTypeName(col.Type), nil, false, nil, "", ""}
		for _, i := range extra {
			row = append(row, verboseAttributes[i].value(col.Type))
		}
		a.rows = append(a.rows, row)
	}
	return a, nil, true
}

// showAll is SHOW ALL: the session's dpsql settings, then the PostgreSQL
// settings the server reports, as PostgreSQL lists them (name, setting,
// description).
func (c *conn) showAll() *answer {
	a := &answer{desc: &description{columns: []string{"name", "setting", "description"}, types: []string{dpsql.TypeText, dpsql.TypeText, dpsql.TypeText}}, tag: "SHOW"}
	for _, n := range dpsql.SettingNames() {
		v, _ := c.sess.Setting(n)
		a.rows = append(a.rows, []any{n, v, "dpsql session setting (SET " + n + " = ...)"})
	}
	names := make([]string, 0, len(serverSettings))
	for n := range serverSettings {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := serverSettings[n]
		if n == "statement_timeout" {
			continue
		}
		a.rows = append(a.rows, []any{n, v, "reported for clients; dpsql does not use it"})
	}
	timeout := "0"
	if d := c.timeout(); d > 0 {
		timeout = fmt.Sprintf("%dms", d.Milliseconds())
	}
	a.rows = append(a.rows, []any{"statement_timeout", timeout, "cancels a statement running longer (SET statement_timeout)"})
	return a
}
