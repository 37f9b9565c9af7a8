package dpsql_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
)

// TestShowSettings: SHOW ALL lists the session's settings with their
// values, SHOW name gives one (as over the wire), and an unknown name is
// an error that points to SHOW ALL and dpsql's own SHOW statements
// (issue 51: the shell's \set advice named SHOW ALL, a syntax error there).
func TestShowSettings(t *testing.T) {
	parallel(t)
	e := open(t, newDB(t), dpsql.Options{Epsilon: 0.5})
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
