package audit

import (
	"fmt"
	"strconv"
	"strings"
)

// A regression case is a text file of sections:
//
//	-- fault: <test knob (internal/knobs) the case was found with, or none>
//	-- problem: <what the auditor reported, for the reader>
//	-- table p
//	CREATE TABLE p (...)
//	(row)
//	...
//	-- policy
//	<owner statements>
//	-- neighbour
//	<one DELETE per line>
//	-- statement
//	<the SQL, on one line>
//	-- arg <type> <value>   (one per parameter: int, float, text, bytes, bool, null)

// Case is a parsed regression case.
type Case struct {
	Fault     string
	DB        Database
	Statement Statement
}

// FormatCase renders a finding as a regression case.
func FormatCase(f Finding, fault string) string {
	var sb strings.Builder
	if fault == "" {
		fault = "none"
	}
	fmt.Fprintf(&sb, "-- fault: %s\n", fault)
	for _, p := range f.Problems {
		fmt.Fprintf(&sb, "-- problem: %s\n", strings.ReplaceAll(p, "\n", " "))
	}
	for _, t := range f.DB.Tables {
		fmt.Fprintf(&sb, "-- table %s\n%s\n", t.Name, t.Create)
		for _, r := range t.Rows {
			sb.WriteString(r + "\n")
		}
	}
	fmt.Fprintf(&sb, "-- policy\n%s\n-- neighbour\n%s\n", f.DB.Policy, strings.Join(f.DB.Neighbour, "\n"))
	fmt.Fprintf(&sb, "-- statement\n%s\n", f.Statement.SQL)
	if f.Statement.Refuse {
		sb.WriteString("-- refuse\n")
	}
	for _, a := range f.Statement.Args {
		switch v := a.(type) {
		case nil:
			sb.WriteString("-- arg null\n")
		case int64:
			fmt.Fprintf(&sb, "-- arg int %d\n", v)
		case float64:
			fmt.Fprintf(&sb, "-- arg float %s\n", strconv.FormatFloat(v, 'g', -1, 64))
		case string:
			fmt.Fprintf(&sb, "-- arg text %s\n", strconv.Quote(v))
		case []byte:
			fmt.Fprintf(&sb, "-- arg bytes %s\n", strconv.Quote(string(v)))
		case bool:
			fmt.Fprintf(&sb, "-- arg bool %t\n", v)
		}
	}
	return sb.String()
}

// ParseCase reads a regression case.
func ParseCase(text string) (Case, error) {
	var c Case
	section := ""
	var policy, stmt []string
	for n, line := range strings.Split(text, "\n") {
		bad := func(err error) (Case, error) { return c, fmt.Errorf("line %d: %w", n+1, err) }
		switch {
		case strings.HasPrefix(line, "-- fault: "):
			c.Fault = strings.TrimPrefix(line, "-- fault: ")
		case strings.HasPrefix(line, "-- problem: "):
		case strings.HasPrefix(line, "-- table "):
			section = "table"
			c.DB.Tables = append(c.DB.Tables, Table{Name: strings.TrimPrefix(line, "-- table ")})
		case line == "-- policy", line == "-- neighbour", line == "-- statement":
			section = line[3:]
		case line == "-- refuse":
			c.Statement.Refuse = true
		case strings.HasPrefix(line, "-- arg "):
			f := strings.SplitN(strings.TrimPrefix(line, "-- arg "), " ", 2)
			var v any
			var err error
			switch f[0] {
			case "null":
			case "int":
				v, err = strconv.ParseInt(f[1], 10, 64)
			case "float":
				v, err = strconv.ParseFloat(f[1], 64)
			case "text":
				v, err = strconv.Unquote(f[1])
			case "bytes":
				var s string
				s, err = strconv.Unquote(f[1])
				v = []byte(s)
			case "bool":
				v, err = strconv.ParseBool(f[1])
			default:
				err = fmt.Errorf("unknown argument type %q", f[0])
			}
			if err != nil {
				return bad(err)
			}
			c.Statement.Args = append(c.Statement.Args, v)
		case line == "":
		default:
			switch section {
			case "table":
				t := &c.DB.Tables[len(c.DB.Tables)-1]
				if t.Create == "" {
					t.Create = line
				} else {
					t.Rows = append(t.Rows, line)
				}
			case "policy":
				policy = append(policy, line)
			case "neighbour":
				c.DB.Neighbour = append(c.DB.Neighbour, line)
			case "statement":
				stmt = append(stmt, line)
			default:
				return bad(fmt.Errorf("text outside a section: %q", line))
			}
		}
	}
	c.DB.Policy = strings.Join(policy, "\n")
	c.Statement.SQL = strings.Join(stmt, "\n")
	if c.Statement.SQL == "" || len(c.DB.Tables) == 0 {
		return c, fmt.Errorf("a case needs tables and a statement")
	}
	return c, nil
}
