package exec

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/rewrite"
)

// chooseGroups keeps the groups that a threshold query's sparse vector run
// or a top-k's report noisy max chooses (planner/choose.go), comparing
// each candidate's exact aggregate in the public order of the groups'
// keys. Nothing of the comparison leaves: not the noisy values it compared
// (the chosen groups' values get fresh noise in Run), not how many
// candidates were compared past the cutoff.
func chooseGroups(sc *scanned, q *planner.PrivateQuery, rw *rewrite.Rewritten, cells []cellBounds, noise mechanism.Noiser) error {
	var cell int
	switch {
	case q.Threshold != nil:
		cell = q.Threshold.Cell
	case q.TopK != nil:
		cell = q.TopK.Cell
	default:
		return nil
	}
	// The groups in the order of their keys: with public domains the scan
	// lists them in domain order already; sorted again so that no order
	// the engine met rows in can reach the comparisons.
	order := make([]int, len(sc.keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return compareKeys(sc.keys[i], sc.keys[j]) })
	scores := make([]*big.Float, len(order))
	for i, g := range order {
		scores[i] = sc.exactCells(q, rw, g, cells, nil)[cell]
	}
	var keep []int
	observer, _ := noise.(CallObserver)
	if t := q.Threshold; t != nil {
		run, err := noise.NewSparse(t.Sparse)
		if err != nil {
			return err
		}
		for i, s := range scores {
			if len(keep) == t.Cutoff {
				break // the run is over: the rest are not compared
			}
			// Exact: a sum is rounded only to the noise grid.
			if t.Below {
				s = new(big.Float).Neg(s)
			}
			above, err := run.NextExact(s)
			if errors.Is(err, mechanism.ErrSparseDone) {
				break
			}
			if err != nil {
				return err
			}
			if above {
				keep = append(keep, order[i])
			}
		}
	} else {
		var before func(round, i int)
		if observer != nil {
			k := q.TopK.TopK
			before = func(round, i int) {
				observer.ObserveNoiseCall(NoiseCall{Choice: true, Round: round, Key: sc.keys[order[i]], Sensitivity: k.Sensitivity, Monotonic: k.Monotonic})
			}
		}
		idx, err := mechanism.NoisyTopK(scores, q.TopK.TopK, noise, before)
		if err != nil {
			return err
		}
		for _, i := range idx {
			keep = append(keep, order[i])
		}
		slices.Sort(keep) // released in the groups' order; ORDER BY sorts the fresh values
	}
	keys, values, hists, trees := sc.keys, sc.values, sc.hists, sc.trees
	sc.keys, sc.values, sc.hists, sc.trees = nil, nil, nil, nil
	for _, g := range keep {
		sc.keys, sc.values, sc.hists, sc.trees = append(sc.keys, keys[g]), append(sc.values, values[g]), append(sc.hists, hists[g]), append(sc.trees, trees[g])
	}
	return nil
}

// explainChoice adds EXPLAIN's rows for a threshold or top-k choice, or
// the note on why ORDER BY ... LIMIT reads the noisy histogram.
func explainChoice(q *planner.PrivateQuery, add func(step, detail string)) {
	const beta = 0.05
	values := func(eps float64, m int, what string) string {
		if eps == 0 {
			return "the select list releases only the groups' keys: no value is measured, and all of ε chooses"
		}
		return fmt.Sprintf("the values of the released groups are measured again with fresh noise (never the noisy value the comparison used): ε=%.6g for the values, ε/%d per released %s, shared among its %d noisy cell(s) (the released groups overlap, so they compose sequentially)",
			eps, m, what, len(q.Cells))
	}
	if t := q.Threshold; t != nil {
		s := t.Sparse
		eps1, eps2 := mechanism.SparseSplit(s.Epsilon, s.Cutoff, s.Monotonic)
		mono := "general queries"
		if s.Monotonic {
			mono = "monotonic queries (a unit only adds)"
		}
		add("threshold", fmt.Sprintf("HAVING %s with max_groups_above = %d: the sparse vector technique (Lyu, Su & Li 2017, Algorithm 1; Dwork & Roth, Algorithm 2) compares each of the %d candidate groups, in the order of their keys, with the threshold %g; each group is one query of sensitivity %g (one unit's contribution to one group, however many groups it falls in), %s; threshold noise Laplace scale %.4g (ε₁=%.4g), query noise Laplace scale %.4g (ε₂=%.4g); the run stops after %d groups above; ε=%.6g for choosing, whatever the number of candidates",
			t.Text, t.Cutoff, t.Candidates, t.Threshold, s.Sensitivity, mono, s.Sensitivity/eps1, eps1, mechanism.SparseQueryScale(s), eps2, t.Cutoff, s.Epsilon))
		alpha := mechanism.SparseMargin(s, t.Candidates, beta)
		released, missed := fmt.Sprintf("≥ %.6g", t.Threshold-alpha), fmt.Sprintf("≥ %.6g", t.Threshold+alpha)
		if t.Below {
			released, missed = fmt.Sprintf("≤ %.6g", t.Threshold+alpha), fmt.Sprintf("≤ %.6g", t.Threshold-alpha)
		}
		add("threshold accuracy", fmt.Sprintf("with 95%% probability every released group has %s %s and no group with %s %s is missed before the run stops at the %d released (margin α = %.4g, Dwork & Roth Theorem 3.24's form, by the union bound over the threshold and %d query noises)",
			aggText(q, t.Aggregate), released, aggText(q, t.Aggregate), missed, t.Cutoff, alpha, t.Candidates))
		add("threshold values", values(t.ValueEpsilon, t.Cutoff, "group"))
	}
	if t := q.TopK; t != nil {
		k := t.TopK
		mono := "general scores: noise 2Δk/ε"
		if k.Monotonic {
			mono = "monotonic scores (a unit only adds): noise Δk/ε"
		}
		rnm := mechanism.TopKMargin(k, t.Candidates, beta)
		hist := mechanism.HistogramTopMargin(t.HistogramScale/q.Epsilon, t.Candidates, beta)
		add("top-k", fmt.Sprintf("%s: report noisy max, peeled (Dwork & Roth Claim 3.9, k rounds at ε/k): each of %d rounds adds fresh Laplace noise of scale %.4g to the exact %s of every group not yet chosen and takes the largest (%s, Δ=%g: one unit's change to one group); ε=%.6g for choosing. A noisy histogram would need noise of scale %.4g on every group (one unit changes up to %d groups)",
			t.Text, k.K, mechanism.TopKScale(k), aggText(q, t.Aggregate), mono, k.Sensitivity, k.Epsilon, t.HistogramScale/q.Epsilon, q.Groups()))
		add("top-k accuracy", fmt.Sprintf("with 95%% probability the j-th group chosen has %s at least the j-th largest minus %.4g (the histogram's top k: minus %.4g)", aggText(q, t.Aggregate), rnm, hist))
		add("top-k values", values(t.ValueEpsilon, k.K, "group"))
	}
	if q.TopKNote != "" {
		add("top-k", q.TopKNote)
	}
	if w := q.Watch; w != nil {
		add("watch", fmt.Sprintf("%s is compared with watch %s's noisy threshold (the sparse vector technique across queries): the answer is only \"above\" or \"below\"; its sensitivity %g is within the watch's bound; it costs nothing (the watch was paid for when it opened), and an \"above\" counts toward the watch's cutoff",
			aggText(q, w.Aggregate), parser.QuoteIdent(w.Name), q.Cells[w.Cell].L1Sensitivity))
	}
}

func aggText(q *planner.PrivateQuery, i int) string { return q.Aggregates[i].Text }

// choiceGroups is EXPLAIN's groups row for a chosen query.
func choiceGroups(q *planner.PrivateQuery, names []string) string {
	what := "the sparse vector technique's groups above the threshold"
	if q.TopK != nil {
		what = "the k groups report noisy max chooses"
	}
	return fmt.Sprintf("GROUP BY %s: %d candidate groups from public values; released: only %s", strings.Join(names, " × "), q.Groups(), what)
}

// composed is how many chosen groups a cell's ε is spent on in sequence
// (NoiseCall.Composed): c or k, or 0 for disjoint groups.
func composed(q *planner.PrivateQuery) int {
	switch {
	case q.Threshold != nil:
		return q.Threshold.Cutoff
	case q.TopK != nil:
		return q.TopK.TopK.K
	}
	return 0
}

// ExactCell runs the scan and returns the exact value of cell of the
// query's one group (a query to a threshold watch: the caller compares it
// under the watch's noise). Nothing else of the scan is kept.
func (p *Prepared) ExactCell(ctx context.Context, cell int) (*big.Float, error) {
	sc, err := p.runScan(ctx)
	if err != nil {
		return nil, err
	}
	if len(sc.keys) != 1 {
		return nil, fmt.Errorf("exec: a query to a watch measured %d groups, not 1", len(sc.keys))
	}
	cells := make([]cellBounds, len(p.q.Cells))
	for i, c := range p.q.Cells {
		cells[i] = cellBounds{lo: c.Lo, hi: c.Hi, sens: c.L1Sensitivity}
	}
	return sc.exactCells(p.q, p.rw, 0, cells, nil)[cell], nil
}
