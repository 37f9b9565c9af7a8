package dpsql_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
)

// TestShowSettings: SHOW ALL lists the session's settings with their
// values, SHOW name gives one (as over the wire), and an unknown name is
// an error that points to SHOW ALL and dpsql's own SHOW statements
// (issue 51: the shell's \set advice named SHOW ALL, a syntax error there).
func TestShowSettings(t *testing.T) {
	h := parallel(t)
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 0.5})
	all := query(t, e, "SHOW ALL")
	found := false
	for _, row := range all.Rows {
		if row[0] == "epsilon" && row[1] == "0.5" {
			found = true
		}
	}
	if !found || len(all.Columns) != 3 {
		t.Errorf("SHOW ALL: %v %v", all.Columns, all.Rows)
	}
	if r := query(t, e, "SHOW epsilon"); len(r.Rows) != 1 || r.Rows[0][0] != "0.5" || r.Columns[0] != "epsilon" {
		t.Errorf("SHOW epsilon: %v %v", r.Columns, r.Rows)
	}
	if _, err := e.Query(context.Background(), "SHOW users"); err == nil || !strings.Contains(err.Error(), `unknown setting "users"`) || !strings.Contains(err.Error(), "SHOW ALL") {
		t.Errorf("SHOW users: %v", err)
	}
}

// TestDescribeTable: DESCRIBE t, DESC t and SHOW COLUMNS FROM t (DuckDB's
// and MySQL's habits) list each column with its type and what the policy
// says of it, for analysts as for the owner; an unknown table is named.
func TestDescribeTable(t *testing.T) {
	h := parallel(t)
	e := h.open(t, h.newDB(t), dpsql.Options{Epsilon: 1})
	want := "[[i INTEGER private: in aggregates only; bounds chosen privately when a SUM or AVG needs them] [x INTEGER bounds [0, 100]] [g TEXT domain of 4 values (GROUP BY without δ)] [y REAL private: in aggregates only; bounds chosen privately when a SUM or AVG needs them]]"
	for _, q := range []string{"DESCRIBE t", "DESC t", "SHOW COLUMNS FROM t", "show columns in t"} {
		r := query(t, e, q)
		if got := fmt.Sprint(r.Rows); got != want || strings.Join(r.Columns, ",") != "column,type,policy" {
			t.Errorf("%s: %v %v", q, r.Columns, got)
		}
	}
	if r := query(t, e, "DESCRIBE lookup"); !strings.Contains(fmt.Sprint(r.Rows), "public table") {
		t.Errorf("DESCRIBE of a public table: %v", r.Rows)
	}
	if _, err := e.Query(context.Background(), "DESCRIBE nosuch"); err == nil || !strings.Contains(err.Error(), `unknown table "nosuch"`) {
		t.Errorf("DESCRIBE nosuch: %v", err)
	}
}
