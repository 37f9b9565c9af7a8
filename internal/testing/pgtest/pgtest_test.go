package pgtest

import (
	"context"
	"testing"
)

// TestStartQueryStop: a server starts in a temporary directory, answers
// over its socket, and stops.
func TestStartQueryStop(t *testing.T) {
	s := StartT(t)
	db, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(context.Background(), `SELECT current_setting('server_version_num')`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v < "150000" {
		t.Errorf("server version %s", v)
	}
}
