package main

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	_ "github.com/dpsql/dpsql"
)

func TestHandler(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	raw, _ := sql.Open("sqlite", path)
	raw.Exec(`CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3)`)
	raw.Close()
	owner, _ := sql.Open("dpsql", "file:"+path+"?role=owner")
	if _, err := owner.Exec(`SET BUDGET epsilon = 1`); err != nil {
		t.Fatal(err)
	}
	owner.Close()
	db, err := sql.Open("dpsql", "file:"+path+"?epsilon=0.5")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(newHandler(db))
	defer srv.Close()
	get := func(q string) (int, answer) {
		resp, err := http.Get(srv.URL + "/query?sql=" + url.QueryEscape(q))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a answer
		json.NewDecoder(resp.Body).Decode(&a)
		return resp.StatusCode, a
	}
	if code, a := get(`SELECT COUNT(*) AS n FROM t`); code != 200 || len(a.Rows) != 1 || a.Columns[0] != "n" {
		t.Errorf("count: %d %+v", code, a)
	}
	if code, a := get(`SELECT x FROM t`); code != 400 || a.Error == "" || len(a.Rows) != 0 {
		t.Errorf("raw column: %d %+v", code, a)
	}
	// A repeat is answered from the cache, free; a new question is charged.
	if code, a := get(`SELECT COUNT(*) AS n FROM t`); code != 200 || len(a.Rows) != 1 {
		t.Errorf("repeat: %d %+v", code, a)
	}
	get(`SELECT COUNT(*) FROM t WHERE x > 1`)
	if code, a := get(`SELECT COUNT(*) FROM t WHERE x > 2`); code != 400 {
		t.Errorf("third new query over a budget of 1 at 0.5 each: %d %+v", code, a)
	}
}
