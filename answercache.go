package dpsql

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/dpsql/dpsql/cache"
	"github.com/dpsql/dpsql/interval"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// fromCache is the answer an identical earlier query got, if the cache
// has it and the session uses it.
func (s *Session) fromCache(ctx context.Context, key string) (*Result, bool) {
	if s.cacheOff() {
		return nil, false
	}
	a, ok := s.eng.cachedAnswer(ctx, key)
	if !ok {
		return nil, false
	}
	var notes []string
	for _, n := range a.Notes {
		if !isChargeNote(n) { // what the first answer spent; this one spends nothing
			notes = append(notes, n)
		}
	}
	notes = append(notes, fmt.Sprintf("answered from the cache: the answer released on %s (ε=%g then), nothing charged", a.Created.Format("2006-01-02 15:04:05 UTC"), a.Epsilon))
	return &Result{Columns: a.Columns, Rows: a.Rows, ErrorBounds: a.ErrorBounds, Intervals: interval.Copy(a.Intervals), Notes: notes, Cached: true}, true
}

// toCache keeps a released answer for identical later queries, if the
// tables it read are unchanged since epochs were read.
func (s *Session) toCache(ctx context.Context, key, text string, tables []string, epochs cache.Epochs, res *Result) {
	if s.cacheOff() {
		return
	}
	s.eng.keep(ctx, key, &unstored{statement: text, tables: tables, epochs: epochs, answer: &cache.Answer{Columns: res.Columns, Rows: res.Rows,
		ErrorBounds: res.ErrorBounds, Intervals: interval.Copy(res.Intervals), Notes: res.Notes, Epsilon: res.Cost.Epsilon, Delta: res.Cost.Delta, Created: time.Now().UTC()}})
}

// readTables are the tables p reads, sorted.
func readTables(p *planner.PrivateQuery) []string {
	tables := make([]string, 0, len(p.Reads))
	for t := range p.Reads {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	return tables
}

// cached reports whether a DP query would be answered from the cache.
func (s *Session) cached(ctx context.Context, st *parser.SelectStmt, p *planner.PrivateQuery) bool {
	if s.cacheOff() {
		return false
	}
	_, ok := s.eng.cachedAnswer(ctx, s.cacheKey(parser.FormatStmt(st), p))
	return ok
}

// cacheKey is the answer cache's key of a private query (its canonical
// statement) in this session: built from values only (the statement,
// the version's semantics, the query's ε and δ, the settings, the
// analyst), the text earlier versions wrote.
// Each analyst has their own cache: an answer another analyst paid for is
// not given away free (their budgets would not say what each has seen).
//
// With the policies in PostgreSQL, which other processes change, the key
// also holds the policy the plan was made under, so that no answer is
// given again under a changed policy; in a file, the owner's policy
// statements drop the answers they change (cache.Invalidate), and keys
// stay what earlier versions wrote.
func (s *Session) cacheKey(statement string, p *planner.PrivateQuery) string {
	parts := []string{semantics, "epsilon=" + cache.Float(p.Epsilon), "delta=" + cache.Float(p.Delta)}
	parts = append(parts, s.settings.cacheText()...)
	parts = append(parts, "analyst="+s.analyst)
	if _, ok := s.eng.policyKeeper(); ok {
		parts = append(parts, "policy="+p.Policy)
	}
	return cache.Key(statement, parts...)
}

// semantics names what accepted statements mean in this version of the
// engine, for the answer cache: an answer cached under another meaning
// (contribution_bounds_per_group clamped rows before version 2, and
// clamps each unit's sum since) is never served for the new one. Change
// it whenever an accepted statement's answer changes meaning.
const semantics = "dpsql-semantics-2"
