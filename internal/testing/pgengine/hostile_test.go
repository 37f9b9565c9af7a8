package pgengine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
)

// shadowOperators plants, in the schema public, an operator that raises
// for every operator pg_catalog defines on the types dpsql reads
// (comparisons, arithmetic, text matching and concatenation; prefix
// minus), with the same name and argument types.
const shadowOperators = `DO $$
DECLARE r record; i int := 0; fn text;
BEGIN
FOR r IN SELECT o.oprname, o.oprleft, o.oprright, o.oprresult FROM pg_catalog.pg_operator o
  WHERE o.oprnamespace = 'pg_catalog'::regnamespace
  AND o.oprname IN ('=', '<>', '<', '<=', '>', '>=', '+', '-', '*', '/', '%', '~', '~~', '||')
  AND (o.oprleft = 0 OR o.oprleft IN ('int8'::regtype, 'int4'::regtype, 'int2'::regtype, 'float8'::regtype, 'float4'::regtype, 'text'::regtype, 'numeric'::regtype, 'bool'::regtype))
  AND o.oprright IN ('int8'::regtype, 'int4'::regtype, 'int2'::regtype, 'float8'::regtype, 'float4'::regtype, 'text'::regtype, 'numeric'::regtype, 'bool'::regtype)
LOOP
  i := i + 1;
  fn := 'public.shadow_' || i;
  IF r.oprleft = 0 THEN
    EXECUTE format('CREATE FUNCTION %s(%s) RETURNS %s LANGUAGE plpgsql AS $f$BEGIN RAISE EXCEPTION ''a shadow operator ran''; END$f$', fn, r.oprright::regtype, r.oprresult::regtype);
    EXECUTE format('CREATE OPERATOR public.%s (RIGHTARG = %s, FUNCTION = %s)', r.oprname, r.oprright::regtype, fn);
  ELSE
    EXECUTE format('CREATE FUNCTION %s(%s, %s) RETURNS %s LANGUAGE plpgsql AS $f$BEGIN RAISE EXCEPTION ''a shadow operator ran''; END$f$', fn, r.oprleft::regtype, r.oprright::regtype, r.oprresult::regtype);
    EXECUTE format('CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %s)', r.oprname, r.oprleft::regtype, r.oprright::regtype, fn);
  END IF;
END LOOP;
IF i < 100 THEN RAISE EXCEPTION 'only % operators shadowed', i; END IF;
END $$;
ALTER ROLE dpsql SET search_path = public, pg_catalog;`

// TestPostgresShadowOperatorsNeverRun: with an operator that raises in
// place of every built-in operator dpsql may print (the review's attack
// had a wrong <=(int8, int4) bypass contribution bounding), and the
// role's search path listing their schema before pg_catalog, every query
// of the backends' comparison answers as on SQLite, on the compiled path
// and through the mirror, and no compiled statement fails (a failure is
// the query's error; before, it fell back silently to the mirror).
func TestPostgresShadowOperatorsNeverRun(t *testing.T) {
	parallel(t)
	h := newHarness(t)
	h.knobs.FixedRandomness = true
	defer func() { h.knobs.FixedRandomness, h.knobs.PostgresGrouping = false, 0 }()
	native, _, srv := h.bothBackends()
	pgExec(t, srv.DSN(), shadowOperators)
	pg := h.open(filepath.Join(t.TempDir(), "shadow.dpsql"), dpsql.Options{Owner: true, Epsilon: 1, Postgres: srv.DSN()})
	mustRun(t, pg, bothPolicy)
	failed := h.knobs.CompiledFailed.Load()
	for _, grouping := range []int{knobs.GroupAlways, knobs.GroupNever} {
		h.knobs.PostgresGrouping = grouping
		sameAnswers(t, native, pg, grouping == knobs.GroupAlways)
	}
	if n := h.knobs.CompiledFailed.Load() - failed; n > 0 {
		t.Errorf("%d compiled statements failed", n)
	}
}

// TestPostgresEncodingIsNoOracle: text reaches dpsql without a conversion
// in flight. A UTF8 database whose settings ask for client_encoding
// LATIN1, with one unit's text outside LATIN1 ('€'), answers every query
// that sends that text (partition selection's keys on the compiled path,
// the mirror's rows, a join's copy) exactly as the database without that
// unit does: no error on either. A WIN1252 database (whose conversion to
// UTF8 fails on 0x81) is refused when it is opened, with a message that
// names the encoding, before anything is read.
func TestPostgresEncodingIsNoOracle(t *testing.T) {
	parallel(t)
	h := newHarness(t)
	srv := pgtest.StartT(t)
	ctx := context.Background()
	engines := map[string]*dpsql.Engine{}
	for _, name := range []string{"with_euro", "without_euro"} {
		dsn, err := srv.CreateDatabase(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		setup := `ALTER DATABASE ` + name + ` SET client_encoding = 'LATIN1';
			CREATE TABLE people (uid int8, region text, age int4);
			INSERT INTO people SELECT i, 'r' || (i % 3), 20 + i % 50 FROM generate_series(1, 300) i;
			CREATE TABLE regions (region text, label text);
			INSERT INTO regions VALUES ('r0', 'zero'), ('r1', 'one'), ('€', 'euro');`
		if name == "with_euro" {
			setup += `INSERT INTO people VALUES (7000, '€', 37);`
		}
		pgExec(t, dsn, setup)
		e := h.open(filepath.Join(t.TempDir(), name+".dpsql"), dpsql.Options{Owner: true, Epsilon: 1, NoCache: true, Postgres: dsn})
		mustRun(t, e, `CREATE PRIVACY POLICY ON people OPTIONS (privacy_unit_column = uid, max_groups_contributed = 1, max_rows_contributed = 1);
			ALTER TABLE regions SET PUBLIC;
			SET BUDGET epsilon = 1000, delta = 1e-3`)
		engines[name] = e
	}
	queries := []string{
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, delta = 1e-5) region, COUNT(*) FROM people WHERE age = 37 GROUP BY region`,
		`SELECT COUNT(*) FROM people WHERE region = '€' OR age = 37`,
		`SELECT COUNT(*) FROM people p JOIN regions r ON p.region = r.region WHERE r.label = 'euro'`,
	}
	defer func() { h.knobs.PostgresGrouping = 0 }()
	for _, grouping := range []int{knobs.GroupAlways, knobs.GroupNever} {
		h.knobs.PostgresGrouping = grouping
		for _, q := range queries {
			for name, e := range engines {
				if _, err := e.Query(ctx, q); err != nil {
					t.Errorf("grouping %d, %s: %s: %v", grouping, name, q, err)
				}
			}
		}
	}
	// A WIN1252 database: refused up front.
	dsn, err := srv.CreateDatabase(ctx, "template_w") // a connection to create from
	if err != nil {
		t.Fatal(err)
	}
	pgExec(t, dsn, `CREATE DATABASE w1252 ENCODING 'WIN1252' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`)
	w1252 := strings.Replace(dsn, "dbname=template_w", "dbname=w1252", 1)
	_, err = dpsql.Open(filepath.Join(t.TempDir(), "w.dpsql"), dpsql.Options{Owner: true, Postgres: w1252})
	if !errors.Is(err, postgres.ErrEncoding) || !strings.Contains(fmt.Sprint(err), "WIN1252") {
		t.Errorf("opening a WIN1252 database: %v, want an error naming its encoding", err)
	}
}
