package catalog

import (
	"context"
	"database/sql"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dpsql/dpsql/internal/storesql"
	_ "modernc.org/sqlite"
)

// TestLoadOnASchemaIsLoad: the catalog built on a schema read before
// (LoadSchema, LoadOn: what the engine keeps between statements) is
// the one Load reads, field for field — public tables, units, bounds and
// domains, columns in order — and a kept schema is never changed by the
// catalogs built on it; a change of schema changes its version.
func TestLoadOnASchemaIsLoad(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := Init(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE visits (uid INTEGER, region TEXT, cost REAL);
		CREATE TABLE regions (region TEXT, name TEXT);
		INSERT INTO _dpsql_tables (table_name, public, has_policy, unit_column, max_groups, max_rows) VALUES ('visits', 0, 1, 'uid', 2, 3), ('regions', 1, 0, NULL, 1, 1);
		INSERT INTO _dpsql_bounds VALUES ('visits', 'cost', 0, 100);
		INSERT INTO _dpsql_domains VALUES ('visits', 'region', 0, 'north'), ('visits', 'region', 1, 'south')`); err != nil {
		t.Fatal(err)
	}
	policies := storesql.On{R: db}
	want, err := Load(ctx, db, policies)
	if err != nil {
		t.Fatal(err)
	}
	s, keep, err := LoadSchema(ctx, db)
	if err != nil || !keep {
		t.Fatalf("LoadSchema: %v, keep %v", err, keep)
	}
	got, err := LoadOn(ctx, s, policies)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadOn:\n%+v\nLoad:\n%+v", got.tables, want.tables)
	}
	if v, ok := want.Table("visits"); !ok || v.Unit.Column != "uid" || len(v.Domains["region"]) != 2 || v.Bounds["cost"].Hi != 100 {
		t.Errorf("the policies were not read: %+v", v)
	}
	// Changing a catalog built on the schema leaves the schema as it was.
	got.tables[0].Columns[0].Name = "changed"
	got.tables[0].Public = true
	again, err := LoadOn(ctx, s, policies)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, want) {
		t.Errorf("a catalog's change reached the kept schema:\n%+v", again.tables)
	}
	if _, err := db.ExecContext(ctx, `ALTER TABLE visits ADD COLUMN day TEXT`); err != nil {
		t.Fatal(err)
	}
	if v, err := SchemaVersion(ctx, db); err != nil || v == s.Version {
		t.Errorf("schema version after ALTER TABLE: %d (was %d), %v", v, s.Version, err)
	}
}
