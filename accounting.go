package dpsql

import (
	"fmt"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/parser"
	"github.com/dpsql/dpsql/planner"
)

// A private query at ε can run two ways (docs/privacy.md, "Choosing the
// noise"):
//
//   - Laplace: as planned, each part at its share of ε; the ledger records
//     ε (basic composition) and ρ = Σ ε_k²/2 (zCDP).
//   - Gaussian: the query buys ρ = ρ_T·ε/E, the share ε/E of the zCDP
//     total, split in the same shares; its cells get discrete Gaussian
//     noise. Only zCDP composition counts it.
//
// The engine offers the ledger both, the one with the smaller expected
// noise first (the mean over cells of the ratio of their standard
// deviations); the ledger records the first that fits. The choice depends
// on the plan and the ledger, never on the data.

// option is one way to run a query: its noise parameters and its charge.
type option struct {
	plan   *planner.PrivateQuery
	charge budget.Charge
	reused bool // paid by the same query's charge, cancelled before its answer
}

// noiseOptions returns the ways p can run, best first, and why that order.
func noiseOptions(p *planner.PrivateQuery, st budget.Status) ([]option, string, error) {
	laplace := option{plan: p, charge: budget.LaplaceCharge(p.Epsilon, p.Delta, p.Parts())}
	if p.Noise == planner.NoiseLaplace {
		if p.NoiseWhy != "" {
			return []option{laplace}, "Laplace: " + p.NoiseWhy, nil
		}
		return []option{laplace}, "Laplace: the query asks for it (noise = 'laplace')", nil
	}
	rho := st.GaussianRho(p.Epsilon)
	if rho <= 0 {
		reason := "the budget has δ = 0, so only pure ε-DP mechanisms run"
		if st.Analyst != "" {
			reason = fmt.Sprintf("analyst %s's budget has δ = 0 (ALTER ANALYST ... BUDGET epsilon = E, delta = D gives one), so only pure ε-DP mechanisms run", st.Analyst)
		}
		switch {
		case !st.Set:
			reason = "no budget is set yet"
		case st.Pure:
			reason = "the owner requires pure ε-DP (SET BUDGET ... PURE)"
		case st.Total.Delta > 0:
			reason = "this ledger spent more than half its δ before zCDP accounting, so it keeps basic composition"
		}
		if p.Noise == planner.NoiseGaussian {
			return nil, "", &planner.Error{Pos: p.Stmt.SelectPos, Kind: planner.ErrInvalidOption, Msg: "noise = 'gaussian' needs zCDP accounting, which this budget does not allow: " + reason}
		}
		return []option{laplace}, "Laplace: " + reason, nil
	}
	g, err := p.Gaussian(rho)
	if err != nil {
		if p.Noise == planner.NoiseGaussian {
			return nil, "", err
		}
		return []option{laplace}, fmt.Sprintf("Laplace: Gaussian noise at ρ=%.3g cannot be calibrated for this query", rho), nil
	}
	gaussian := option{plan: g, charge: budget.Charge{Mechanism: budget.Gaussian, Epsilon: p.Epsilon, Delta: p.Delta, Rho: rho}}
	if p.Noise == planner.NoiseGaussian {
		return []option{gaussian}, "Gaussian: the query asks for it (noise = 'gaussian')", nil
	}
	ratio := 0.0
	for i := range p.Cells {
		ratio += g.NoiseSD(i) / p.NoiseSD(i)
	}
	if n := len(p.Cells); n > 0 {
		ratio /= float64(n)
	}
	// The pure parts (bound searches, partition selection) run at
	// √(2ρ_k) under zCDP: Gaussian is preferred only when they lose no ε
	// either, so that no part of a query gets more noise than Laplace
	// would give it.
	pureLoses := false
	for i, e := range p.SearchParts() {
		pureLoses = pureLoses || g.SearchParts()[i] < e
	}
	for i, c := range p.Cells {
		// Quantile trees stay Laplace under zCDP too, at a smaller ε.
		pureLoses = pureLoses || (c.Kind == planner.QuantileTree && g.Cells[i].Epsilon < c.Epsilon)
	}
	switch {
	case ratio < 1 && !pureLoses:
		return []option{gaussian, laplace}, fmt.Sprintf("Gaussian: its noise is %.2f× Laplace's at ε=%g (ρ=%.4g, the share ε/E of the zCDP total)", ratio, p.Epsilon, rho), nil
	case ratio < 1:
		return []option{laplace, gaussian}, fmt.Sprintf("Laplace: Gaussian cells would get %.2f× Laplace's noise at ρ=%.4g (the share ε/E of the zCDP total), but the bound searches or the partition selection would get less ε", ratio, rho), nil
	}
	return []option{laplace, gaussian}, fmt.Sprintf("Laplace: Gaussian noise at ρ=%.4g (the share ε/E of the zCDP total) would be %.2f× Laplace's", rho, ratio), nil
}

// charges lists the options' charges, in order.
func charges(opts []option) []budget.Charge {
	out := make([]budget.Charge, len(opts))
	for i, o := range opts {
		out[i] = o.charge
	}
	return out
}

// errorBounds reports the 95% noise half-width of outputs that are a plain
// COUNT or SUM with declared bounds (for AVG the error is not additive and
// is left out).
func errorBounds(p *planner.PrivateQuery) map[string]float64 {
	out := map[string]float64{}
	for _, o := range p.Outputs {
		call, ok := o.Expr.(*parser.CallExpr)
		if !ok {
			continue
		}
		i, ok := p.AggOf[call]
		if !ok || p.Aggregates[i].Report {
			continue
		}
		if h, ok := p.ErrorBound95(p.Aggregates[i]); ok {
			out[o.Name] = h
		}
	}
	return out
}

// costNote describes a charge in the ledger's terms: ρ and, when zCDP
// accounting applies, its (ε, δ) equivalent at the δ the conversion uses.
func costNote(c budget.Charge, st budget.Status) string {
	s := fmt.Sprintf("%s noise; the ledger records ε=%g, δ=%g, ρ=%.6g", c.Mechanism, c.Epsilon, c.Delta, c.Rho)
	if st.RhoTotal > 0 {
		d := st.Total.Delta / 2
		s += fmt.Sprintf(" (alone, ρ=%.6g is (ε=%.4g, δ=%g)-DP; the zCDP total is ρ=%.6g)", c.Rho, budget.ZCDPEpsilon(c.Rho, d), d, st.RhoTotal)
	}
	return s
}

// budgetNote says in plain words how the ledger counts what was spent,
// with the exact accounting (zCDP's ρ, see docs/glossary.md) last.
func budgetNote(st budget.Status) string {
	switch {
	case st.Pure:
		return "pure ε budget: the ε of all queries adds up; Laplace noise only"
	case st.RhoTotal == 0:
		return "the ε of all queries adds up (with δ = 0 there is no cheaper way to count Gaussian noise)"
	}
	exact := fmt.Sprintf("exact accounting in zCDP: ρ %.6g spent of %.6g", st.RhoSpent, st.RhoTotal)
	delta := fmt.Sprintf("δ: half of the total counts Gaussian noise's cost, the other half (%g) is what GROUP BY over values not declared may spend", st.DeltaCap)
	if st.Basic {
		return fmt.Sprintf("so far only Laplace noise: the ε of all queries adds up, unless counting them as Gaussian noise is cheaper; 'remaining' is the better of the two; %s; %s", delta, exact)
	}
	return fmt.Sprintf("Gaussian noise was used: it costs less than the ε of each query added up, and 'remaining' is the ε a further query can still ask; %s; %s", delta, exact)
}
