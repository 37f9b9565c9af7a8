// Package pgaudit_test runs the sensitivity auditor (internal/testing/audit)
// with the tables in PostgreSQL: every plan's claim must hold there as on
// SQLite, for the compiled measurement and for the scans through the
// mirror. It is a package of its own so that it runs beside the other
// PostgreSQL tests (internal/testing/pgengine).
package pgaudit_test

import (
	"flag"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/audit"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testing/pgmove"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
	"github.com/dpsql/dpsql/internal/testopts"
	"github.com/dpsql/dpsql/mechanism"
)

// postgresOpener returns an audit.Opener that moves the database at path
// into PostgreSQL before opening it: its user tables are copied into a
// fresh PostgreSQL database (values converted by a fixed per-row rule, so
// the copies of D and D′ are neighbours too), its policy and budget go
// into a state file, and the engine reads the tables through their
// mirrors.
func postgresOpener(srv *pgtest.Server, n *atomic.Int64, k *knobs.Knobs, observe func(string)) audit.Opener {
	return func(path string, noise mechanism.Noiser) (audit.Engine, error) {
		state := path + ".pg-state"
		dsn, err := pgmove.Move(srv, path, state, fmt.Sprintf("audit%d", n.Add(1)))
		if err != nil {
			return nil, err
		}
		return dpsql.Open(state, dpsql.Options{Epsilon: 1, Postgres: dsn, Testing: &testopts.Options{Noise: noise, Knobs: k, PostgresStatements: observe}})
	}
}

// TestSensitivityAuditorOnPostgres runs the sensitivity auditor with the
// tables in PostgreSQL, in both of its scan modes (rows as they are, and
// identical rows grouped with their counts): every plan's claim must
// hold there as on SQLite.
func TestSensitivityAuditorOnPostgres(t *testing.T) {
	srv := pgtest.StartT(t)
	k := &knobs.Knobs{FixedRandomness: true}
	var databases atomic.Int64
	observe, take := enginetest.RecordPostgres()
	for _, mode := range []int{knobs.GroupAlways, knobs.GroupNever} {
		k.PostgresGrouping = mode
		take()
		cfg := audit.Config{Seed: *auditSeed + 100 + uint64(mode), Databases: 4, PerDatabase: 100, NearMiss: 0.15, UnstableRowIdentities: true}
		rep, err := audit.Run(postgresOpener(srv, &databases, k, observe), t.TempDir(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		rep.ReportFindings(t, 10, fmt.Sprintf("grouping mode %d: ", mode))
		grouped := 0
		for _, q := range take() {
			if strings.Contains(q, "COUNT(*) FROM") {
				grouped++
			}
		}
		t.Logf("grouping mode %d: %d statements (%d near-misses) on %d database pairs; %d grouped scans; %d scans compiled", mode, rep.Statements, rep.NearMisses, rep.Databases, grouped, k.Compiled.Load())
		if (mode == knobs.GroupAlways) != (grouped > 0) {
			t.Errorf("grouping mode %d: %d grouped scans", mode, grouped)
		}
	}
	if n := k.CompiledFailed.Load(); n > 0 {
		t.Errorf("%d compiled statements failed in PostgreSQL", n)
	}
}

// auditSeed is the seed of the auditor's runs here.
var auditSeed = flag.Uint64("audit.seed", 1, "seed of the sensitivity auditor's runs on PostgreSQL")
