package storesql

import "testing"

func TestTranslate(t *testing.T) {
	for _, tc := range []struct{ in, sqlite, postgres string }{
		{`SELECT a FROM _dpsql_ledger WHERE id > ? AND analyst = ?`, `SELECT a FROM _dpsql_ledger WHERE id > ? AND analyst = ?`, `SELECT a FROM dpsql.ledger WHERE id > $1 AND analyst = $2`},
		{`INSERT INTO _dpsql_bounds (table_name, lo) VALUES (?, ?) ON CONFLICT (table_name) DO UPDATE SET lo = excluded.lo`, "", `INSERT INTO dpsql.bounds (table_name, lo) VALUES ($1, $2) ON CONFLICT (table_name) DO UPDATE SET lo = excluded.lo`},
		{`DELETE FROM _dpsql_spent`, "", `DELETE FROM dpsql.spent`},
	} {
		if tc.sqlite == "" {
			tc.sqlite = tc.in
		}
		if got := Translate(false, tc.in); got != tc.sqlite {
			t.Errorf("SQLite: %q became %q", tc.in, got)
		}
		if got := Translate(true, tc.in); got != tc.postgres {
			t.Errorf("PostgreSQL: %q became %q, want %q", tc.in, got, tc.postgres)
		}
	}
}
