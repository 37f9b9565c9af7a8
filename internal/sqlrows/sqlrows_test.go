package sqlrows

import (
	"database/sql"
	"reflect"
	"testing"

	_ "modernc.org/sqlite"
)

func TestValues(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT 1, 2.5, 'text', CAST('blob' AS BLOB), NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatal("no row")
	}
	got, err := Values(rows, 5)
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{int64(1), 2.5, "text", "blob", nil}; !reflect.DeepEqual(got, want) {
		t.Errorf("Values = %#v, want %#v", got, want)
	}
	if _, err := Values(rows, 4); err == nil {
		t.Error("Values with the wrong column count: no error")
	}
}
