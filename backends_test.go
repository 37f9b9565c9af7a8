package dpsql_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/knobs"
	"github.com/dpsql/dpsql/internal/testing/enginetest"
	"github.com/dpsql/dpsql/internal/testing/memtmp"
	"github.com/dpsql/dpsql/internal/testing/pgmove"
	"github.com/dpsql/dpsql/internal/testing/pgtest"
	"github.com/dpsql/dpsql/mechanism"
)

// harness is what one test runs on: the backend its database files
// move to when an engine first opens them (none: they stay SQLite files)
// and the test knobs of its engines. Every test has its own (parallel
// gives one on SQLite; runSuite one per suite test and backend), and the
// helpers that open engines take it, so tests share no switch and run in
// parallel.
type harness struct {
	pg    *pgServer    // the files' tables move into a fresh database of this server
	duck  bool         // the files' tables move into a DuckDB file beside each
	knobs *knobs.Knobs // the test knobs of the harness's engines

	mu    sync.Mutex
	moved map[string]string // database file → DSN (PostgreSQL) or state file (DuckDB)
}

// pgServer is a PostgreSQL server the suite's files move to, with the
// number of databases made in it so far (for unique names).
type pgServer struct {
	*pgtest.Server
	made atomic.Int64
}

// newHarness is a harness on the backend of pg or duck (neither: SQLite)
// with knobs of its own.
func newHarness(pg *pgServer, duck bool) *harness {
	return &harness{pg: pg, duck: duck, knobs: &knobs.Knobs{}, moved: map[string]string{}}
}

// allOnPostgres is the server every test's files move to when the whole
// package runs on PostgreSQL (DPSQL_SUITE_BACKEND=postgres; TestMain
// starts it before any test and stops it after all); nil otherwise.
var allOnPostgres *pgServer

// parallel lets t run in parallel with the package's other parallel
// tests and returns its harness: on SQLite (on PostgreSQL when the whole
// package runs there), with test knobs of its own, so a test that sets a
// knob changes only its own engines.
func parallel(t *testing.T) *harness {
	t.Parallel()
	return newHarness(allOnPostgres, false)
}

// openEngine opens the engine of a test's database file. On SQLite it is
// dpsql.OpenWithNoise (dpsql.Open for a nil noise). On PostgreSQL, the
// file's tables first move into a fresh PostgreSQL database (once per
// file: postgresOf) and the engine reads them there, with the file as
// its state file; on DuckDB, into a DuckDB file beside it (duckOf).
func (h *harness) openEngine(path string, opts dpsql.Options, noise mechanism.Noiser) (*dpsql.Engine, error) {
	return h.openEngineWith(path, opts, noise, h.knobs)
}

// openEngineWith is openEngine with the test knobs k.
func (h *harness) openEngineWith(path string, opts dpsql.Options, noise mechanism.Noiser, k *knobs.Knobs) (*dpsql.Engine, error) {
	opts = dpsql.WithKnobs(opts, k)
	if opts.Postgres == "" && opts.DuckDB == "" {
		state, err := h.duckOf(path)
		if err != nil {
			return nil, err
		}
		if state != "" {
			path, opts.DuckDB = state, path+".duckdb"
		}
	}
	if opts.Postgres == "" && opts.DuckDB == "" {
		dsn, err := h.postgresOf(path)
		if err != nil {
			return nil, err
		}
		opts.Postgres = dsn
	}
	if noise == nil {
		return dpsql.Open(path, opts)
	}
	return dpsql.OpenWithNoise(path, opts, noise)
}

// onOtherBackend reports whether the harness keeps its files' tables in
// PostgreSQL or DuckDB.
func (h *harness) onOtherBackend() bool { return h.pg != nil || h.duck }

// sameAsTheReference is what a statistical test checks on PostgreSQL and
// DuckDB, in place of sampling the noise again: for each database, q's
// answer without noise is the same whether the engine measures it where
// the table lives (compiled for DuckDB, pushed to PostgreSQL) or in the
// reference evaluator reading the same rows (knobs.ReferenceOnly). The
// noise, the ε shares and the release are the same code on every
// backend, and were sampled on SQLite; what a backend adds is how the
// exact measurement is computed. Equal measurements on both neighbours
// give equal output distributions, so this has the sampling test's power
// for a backend's faults (more: a deterministic difference of any size
// fails it, where sampling sees only differences larger than its noise).
func (h *harness) sameAsTheReference(t *testing.T, q string, paths ...string) {
	t.Helper()
	answer := func(path string, k *knobs.Knobs) string {
		e, err := h.openEngineWith(path, dpsql.Options{Epsilon: 1, NoCache: true, Owner: true}, dpsql.ZeroNoise(), k)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if _, err := e.Query(context.Background(), `RESET BUDGET`); err != nil { // each run as the first
			t.Fatal(err)
		}
		res, err := e.Query(context.Background(), q)
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprint(res.Rows)
	}
	for _, path := range paths {
		// Fixed randomness: contribution bounding samples the same rows
		// in both runs. The native run uses the harness's own knobs (the
		// DuckDB suite counts its compiled scans there).
		h.knobs.FixedRandomness = true
		native := answer(path, h.knobs)
		reference := answer(path, &knobs.Knobs{FixedRandomness: true, ReferenceOnly: true})
		if native != reference {
			t.Errorf("%s on %s: %s where the reference evaluator gives %s", q, filepath.Base(path), native, reference)
		}
	}
}

// postgresOf returns the DSN that the file's tables live in: "" on
// SQLite.
func (h *harness) postgresOf(path string) (string, error) {
	if h.pg == nil {
		return "", nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if dsn, ok := h.moved[path]; ok {
		return dsn, nil
	}
	dsn, err := pgmove.Move(h.pg.Server, path, path, fmt.Sprintf("suite%d", h.pg.made.Add(1)))
	if err != nil {
		return "", fmt.Errorf("moving %s to PostgreSQL: %w", path, err)
	}
	h.moved[path] = dsn
	return dsn, nil
}

// movedFiles is how many database files the harness has moved.
func (h *harness) movedFiles() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.moved)
}

// TestEngineSuiteOnPostgres runs the engine suite's tests again with
// every table in PostgreSQL: exact answers with zero noise, refusals,
// budget, units, joins, subqueries, automatic bounds, the hardening
// tests and the empirical neighbour tests. Each test builds its SQLite
// file as on SQLite; its first engine open moves the tables.
func TestEngineSuiteOnPostgres(t *testing.T) {
	if postgresRun() {
		t.Skip("the whole package runs on PostgreSQL (DPSQL_SUITE_BACKEND=postgres)")
	}
	parallel(t)
	srv := &pgServer{Server: pgtest.StartT(t)}
	runs := runSuite(t, "PostgreSQL", notOnPostgres, func() *harness { return newHarness(srv, false) })
	checkCompiled(t, "PostgreSQL", runs)
}

// checkCompiled logs how many of the suite's private scans ran compiled
// on the backend (where), and why the rest did not; it fails the test
// when a compiled statement failed in the engine (the reference then
// measured it: a printed expression that is not total) or when fewer
// than 50 scans compiled.
func checkCompiled(t *testing.T, where string, runs []*harness) {
	var compiled, failed, reference int64
	reasons := map[string]int64{}
	for _, run := range runs {
		compiled += run.knobs.Compiled.Load()
		failed += run.knobs.CompiledFailed.Load()
		for why, n := range run.knobs.NotCompiled() {
			reasons[why] += n
			reference += n
		}
	}
	t.Logf("%d of %d private scans ran compiled in %s (%.0f%%); the rest, by reason:", compiled, compiled+reference, where, 100*float64(compiled)/float64(max(compiled+reference, 1)))
	enginetest.LogByCount(t, reasons)
	if failed > 0 {
		t.Errorf("%d compiled statements failed in %s (the reference evaluator measured them instead)", failed, where)
	}
	if compiled < 50 {
		t.Errorf("only %d scans of the suite ran compiled in %s", compiled, where)
	}
}

// onTheirOwn is why the suite's two row-evaluation totality tests do not
// run again on a backend: what they evaluate row by row is SQLite's
// (the reference evaluator, the same on every backend), and what a
// backend evaluates — the compiled forms — has totality tests of its own
// over adversarial values of every type (internal/testing/totality on
// DuckDB, internal/testing/pgcompiled on PostgreSQL), which keeps this
// package within its time.
const onTheirOwn = "its row evaluation is SQLite's; the compiled forms' totality is tested in internal/testing/totality and internal/testing/pgcompiled"

// plannedOnly is why a suite test that reads only EXPLAIN's noise and
// error bounds does not run again on a backend: the mechanism, the
// accounting and the bounds are chosen by the planner before any backend
// is asked, and EXPLAIN reads no row.
const plannedOnly = "it compares EXPLAIN's planned noise only, which no backend takes part in"

// notOnPostgres are the suite's tests that do not run again on
// PostgreSQL, and why.
var notOnPostgres = map[string]string{
	"TestEveryFunctionAndOperatorIsTotal": onTheirOwn,
	"TestRowEvaluationIsTotal":            onTheirOwn,
	"TestSingleQueryNeverNoisier":         plannedOnly,
}

// runSuite runs the engine suite's tests (but those in skip, with the
// reason) in parallel, each with a harness of its own made by
// newHarness, and returns their harnesses once all have ended.
func runSuite(t *testing.T, where string, skip map[string]string, newHarness func() *harness) []*harness {
	var (
		mu   sync.Mutex
		runs []*harness
	)
	t.Run("suite", func(t *testing.T) {
		for _, test := range engineSuite {
			t.Run(test.name, func(t *testing.T) {
				if why, ok := skip[test.name]; ok {
					t.Skip(why)
				}
				t.Parallel()
				h := newHarness()
				mu.Lock()
				runs = append(runs, h)
				mu.Unlock()
				test.run(t, h)
				if h.movedFiles() == 0 && !t.Failed() {
					t.Errorf("%s opened no database on %s", test.name, where)
				}
			})
		}
	})
	return runs
}

// TestMain runs the whole package with its tables in PostgreSQL when
// DPSQL_SUITE_BACKEND=postgres (a server started for the run): tests of
// SQLite files themselves fail there (10 of 108 on 2026-11-24), which is
// what the variable is for — finding out which tests carry over.
func TestMain(m *testing.M) {
	// Most of the package's time is spent waiting (the ledger's fsync,
	// PostgreSQL's round trips, DuckDB's threads), not computing: more
	// tests run at once than there are cores, unless -parallel says.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(8, 4*runtime.GOMAXPROCS(0))))
	}
	if postgresRun() {
		srv, err := pgtest.Start(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		allOnPostgres = &pgServer{Server: srv}
		code := memtmp.Run(m)
		srv.Stop()
		os.Exit(code)
	}
	// The files in memory: no disk syncs (memtmp).
	os.Exit(memtmp.Run(m))
}

// engineSuite is what TestEngineSuiteOnPostgres runs on PostgreSQL. Left
// out: tests of the SQLite file itself (its ledger tables, locks,
// read-only files, the native scan, the authorizer on raw connections),
// tests that write to the data through SQLite after the first open, the
// sensitivity auditor (TestSensitivityAuditorOnPostgres runs it there),
// and the long accuracy and zCDP workload tests, which do not depend on
// the backend. DPSQL_SUITE_BACKEND=postgres runs everything there.
var engineSuite = []struct {
	name string
	run  func(*testing.T, *harness)
}{
	// exact answers, refusals, budget and the answer cache
	{"TestExactAnswersWithoutNoise", testExactAnswersWithoutNoise},
	{"TestSetPrivateAgain", testSetPrivateAgain},
	{"TestSessionsKeepTheirSettings", testSessionsKeepTheirSettings},
	{"TestIntervalsReachEveryClient", testIntervalsReachEveryClient},
	{"TestAvgClippedAndColumnNames", testAvgClippedAndColumnNames},
	{"TestVarianceAndStddevExact", testVarianceAndStddevExact},
	{"TestRefusalsSpendNothing", testRefusalsSpendNothing},
	{"TestNoBudgetNoEpsilon", testNoBudgetNoEpsilon},
	{"TestRealNoiseIsAdded", testRealNoiseIsAdded},
	{"TestAdult", testAdult},
	{"TestBoundingKeepsGroupsAndRowsEvenly", testBoundingKeepsGroupsAndRowsEvenly},
	{"TestDroppedShareIsExact", testDroppedShareIsExact},
	{"TestDroppedShareOfChosenGroups", testDroppedShareOfChosenGroups},
	{"TestAutoContributionBounds", testAutoContributionBounds},
	{"TestRerunningCreatePolicySaysWhatChanged", testRerunningCreatePolicySaysWhatChanged},
	{"TestCancelledImportSaysNothingWasImported", testCancelledImportSaysNothingWasImported},
	{"TestShowLedgerIsTheOwners", testShowLedgerIsTheOwners},
	{"TestRepeatedQueriesAreFree", testRepeatedQueriesAreFree},
	{"TestShowBudgetSaysHowManyQueriesFit", testShowBudgetSaysHowManyQueriesFit},
	{"TestConcurrentRepeatsShareOneAnswer", testConcurrentRepeatsShareOneAnswer},
	// the database/sql driver
	{"TestDriverQueriesThroughDatabaseSQL", testDriverQueriesThroughDatabaseSQL},
	{"TestDriverErrors", testDriverErrors},
	{"TestBoundParameterIsALiteral", testBoundParameterIsALiteral},
	{"TestDriverSetEpsilonIsPerConnection", testDriverSetEpsilonIsPerConnection},
	// privacy units, partition selection, joins and subqueries
	{"TestContributionBoundingExact", testContributionBoundingExact},
	{"TestGroupBoundingLimitsUnits", testGroupBoundingLimitsUnits},
	{"TestPartitionSelectionWithoutNoise", testPartitionSelectionWithoutNoise},
	{"TestPartitionSelectionReleasesARareGroupRarely", testPartitionSelectionReleasesARareGroupRarely},
	{"TestJoinsAndSubqueriesExact", testJoinsAndSubqueriesExact},
	{"TestGroupByUnitIsRefused", testGroupByUnitIsRefused},
	{"TestUnitNeighboursEmpirically", testUnitNeighboursEmpirically},
	// per-unit bounds and COUNT(DISTINCT)
	{"TestBigQueryContributionBounds", testBigQueryContributionBounds},
	{"TestPerUnitBoundsSensitivity", testPerUnitBoundsSensitivity},
	{"TestCountDistinctValues", testCountDistinctValues},
	{"TestPerUnitBoundsNeighboursEmpirically", testPerUnitBoundsNeighboursEmpirically},
	// SQL over released results, public groups, subqueries
	{"TestSQLOverReleasedResults", testSQLOverReleasedResults},
	{"TestSQLOverReleasedResultsRefusals", testSQLOverReleasedResultsRefusals},
	{"TestPublicGroups", testPublicGroups},
	{"TestSubqueriesInDPQueries", testSubqueriesInDPQueries},
	// peers' spellings, sessions, delta
	{"TestJoinUsing", testJoinUsing},
	{"TestStarInSubqueries", testStarInSubqueries},
	{"TestMainSchemaQualifiedNames", testMainSchemaQualifiedNames},
	{"TestSessionDelta", testSessionDelta},
	{"TestDeltaOne", testDeltaOne},
	{"TestUnboundedContributionsRefused", testUnboundedContributionsRefused},
	{"TestMinPrivacyUnitsPerGroup", testMinPrivacyUnitsPerGroup},
	{"TestPeersSpellings", testPeersSpellings},
	// expression group keys
	{"TestExpressionGroupKeys", testExpressionGroupKeys},
	{"TestExpressionKeysDropValuesOutsideTheBins", testExpressionKeysDropValuesOutsideTheBins},
	{"TestExpressionKeysRefused", testExpressionKeysRefused},
	// automatic bounds and quantiles
	{"TestAutoBoundsWithoutNoise", testAutoBoundsWithoutNoise},
	{"TestAutoBoundsAccuracy", testAutoBoundsAccuracy},
	{"TestPercentilesWithoutNoise", testPercentilesWithoutNoise},
	{"TestApproxQuantiles", testApproxQuantiles},
	{"TestPercentileNeighboursEmpirically", testPercentileNeighboursEmpirically},
	// accounting
	{"TestSingleQueryNeverNoisier", testSingleQueryNeverNoisier},
	{"TestPureBudgetAndRecordedRho", testPureBudgetAndRecordedRho},
	// hardening, totality and the empirical neighbour tests
	{"TestNamesResolveAsSQLiteDoes", testNamesResolveAsSQLiteDoes},
	{"TestRowEvaluationIsTotal", testRowEvaluationIsTotal},
	{"TestExactValuesFarFromZero", testExactValuesFarFromZero},
	{"TestUnitByProvenance", testUnitByProvenance},
	{"TestClippingIsNumeric", testClippingIsNumeric},
	{"TestParametersCheckedBeforeTheCharge", testParametersCheckedBeforeTheCharge},
	{"TestConcurrentQueriesKeepTheirMeasurements", testConcurrentQueriesKeepTheirMeasurements},
	{"TestRefusalsAreTheSameOnNeighbours", testRefusalsAreTheSameOnNeighbours},
	{"TestPublicQueriesKeepSQLiteSemantics", testPublicQueriesKeepSQLiteSemantics},
	{"TestPublicQueriesMatchSQLite", testPublicQueriesMatchSQLite},
	{"TestNeighbourSensitivityProperty", testNeighbourSensitivityProperty},
	{"TestCancelledQuerySaysWhatWasCharged", testCancelledQuerySaysWhatWasCharged},
	{"TestEveryFunctionAndOperatorIsTotal", testEveryFunctionAndOperatorIsTotal},
	{"TestAuditRegressionCases", testAuditRegressionCases},
}

// driverDSN is the driver's DSN for a test's database file with query
// ("" or "?k=v&..."): on PostgreSQL (openEngine) it also names the
// database the file's tables moved to.
func (h *harness) driverDSN(t *testing.T, path, query string) string {
	t.Helper()
	if state, err := h.duckOf(path); err != nil {
		t.Fatal(err)
	} else if state != "" {
		sep := "?"
		if query != "" {
			sep = "&"
		}
		return "file:" + state + query + sep + "duckdb=" + url.QueryEscape(path+".duckdb")
	}
	dsn, err := h.postgresOf(path)
	if err != nil {
		t.Fatal(err)
	}
	if dsn == "" {
		return "file:" + path + query
	}
	sep := "?"
	if query != "" {
		sep = "&"
	}
	return "file:" + path + query + sep + "postgres=" + url.QueryEscape(dsn)
}

// execData runs stmt (SQL that SQLite and PostgreSQL read alike) on a
// test's data: in the file, or in PostgreSQL once its tables moved there.
func (h *harness) execData(t *testing.T, path, stmt string) {
	t.Helper()
	dsn, err := h.postgresOf(path)
	if err != nil {
		t.Fatal(err)
	}
	if dsn != "" {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		return
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// postgresRun reports whether the whole package runs on PostgreSQL.
func postgresRun() bool { return os.Getenv("DPSQL_SUITE_BACKEND") == "postgres" }
