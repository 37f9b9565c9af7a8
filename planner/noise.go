package planner

import (
	"math"
	"strings"

	"github.com/dpsql/dpsql/autobound"
	"github.com/dpsql/dpsql/mechanism"
)

// The query's noise. A plan is made with Laplace noise: the query's ε is
// split into pure parts (bound searches, partition selection, cells), as
// planned in build. Gaussian turns it into the same query under zCDP: the
// ρ it buys is split in the same shares, the pure parts run at the ε of
// their share of ρ and the cells get discrete Gaussian noise calibrated to
// their L2 sensitivity.

// Mechanisms a query can ask for with OPTIONS (noise = ...).
const (
	NoiseLaplace  = "laplace"
	NoiseGaussian = "gaussian"
)

// ValidNoise reports whether name is a noise option: laplace, gaussian or
// auto (any case).
func ValidNoise(name string) bool {
	switch strings.ToLower(name) {
	case NoiseLaplace, NoiseGaussian, "auto":
		return true
	}
	return false
}

// L2Sensitivity is the cell's L2 sensitivity for an L1 sensitivity l1:
// after contribution bounding one unit changes at most l0 groups, each by
// at most l1/l0, so the vector of its changes has L2 norm at most
// √l0·(l1/l0) = l1/√l0. Rounded up.
func (c *Cell) L2Sensitivity(l1 float64) float64 {
	if c.MaxGroups <= 1 {
		return l1
	}
	return math.Nextafter(l1/math.Sqrt(float64(c.MaxGroups)), math.Inf(1))
}

// setThreshold sets τ = 1 + (l0/ε)·ln(l0/(2δ)) for the selection's ε and δ.
func (s *Selection) setThreshold() {
	s.Threshold = 1 + s.Sensitivity/s.Epsilon*math.Log(s.Sensitivity/(2*s.Delta))
	if s.MinUnits > 1 {
		s.Threshold += float64(s.MinUnits - 1)
	}
}

// Parts returns the ε of each pure part of the plan, as planned: the
// bound searches, the partition selection and the cells — a cell once
// for each group its ε is spent on in sequence (Releases: the c or k
// chosen groups of a threshold or top-k query, which one unit may all
// touch), so that zCDP's ρ = Σ ε_k²/2 counts every measurement. They add
// up to at most Epsilon.
func (q *PrivateQuery) Parts() []float64 {
	out := q.SearchParts()
	for _, c := range q.Cells {
		for range q.Releases() {
			out = append(out, c.Epsilon)
		}
	}
	return out
}

// Releases is how many measurements of each cell compose in sequence: the
// c (threshold) or k (top-k) chosen groups, which may overlap; 1 for
// disjoint groups (parallel composition) and for a query whose choice
// releases no values.
func (q *PrivateQuery) Releases() int {
	switch {
	case q.Threshold != nil && q.Threshold.ValueEpsilon > 0:
		return max(1, q.Threshold.Cutoff)
	case q.TopK != nil && q.TopK.ValueEpsilon > 0:
		return max(1, q.TopK.TopK.K)
	}
	return 1
}

// SearchParts returns the ε of the bound searches and the partition
// selection: the parts that stay pure mechanisms under zCDP.
func (q *PrivateQuery) SearchParts() []float64 {
	var out []float64
	for _, s := range q.Searches {
		// autobound.Choose: the search, then two counts of what its
		// bounds clip.
		out = append(out, autobound.Parts(s.Epsilon)...)
	}
	if q.Selection != nil {
		out = append(out, q.Selection.Epsilon)
	}
	if d := q.Dropped; d != nil {
		out = append(out, d.Epsilon/3, d.Epsilon/3, d.Epsilon/3) // three counts (DroppedEstimate)
	}
	if a := q.Auto; a != nil {
		out = append(out, a.Epsilon/2, a.Epsilon/2) // two histograms (AutoContribution)
	}
	if q.Threshold != nil {
		out = append(out, q.Threshold.Sparse.Epsilon)
	}
	if q.TopK != nil {
		// Report noisy max peels k rounds, each (ε/k)-DP (as
		// mechanism.NoisyTopK draws them): k parts, which zCDP composes
		// to ε²/2k.
		k := max(1, q.TopK.TopK.K)
		for range k {
			out = append(out, q.TopK.TopK.Epsilon/float64(k))
		}
	}
	return out
}

// Gaussian returns a copy of the plan that spends rho (zCDP) in the shares
// in which the plan spends its ε: a part planned at ε_k gets
// ρ_k = ρ·ε_k/ε; a pure part (bound search, partition selection) runs at
// √(2ρ_k), which is ρ_k-zCDP, and a cell gets discrete Gaussian noise that
// is ρ_k-zCDP for its L2 sensitivity. The ρ_k add up to at most rho. It
// fails, before anything is charged, when the noise cannot be calibrated.
func (q *PrivateQuery) Gaussian(rho float64) (*PrivateQuery, error) {
	g := *q
	share := func(eps float64) float64 { return math.Nextafter(rho*(eps/q.Epsilon), 0) }
	pure := func(eps float64) float64 { return math.Nextafter(math.Sqrt(2*share(eps)), 0) }
	g.Searches = make([]*Search, len(q.Searches))
	for i, s := range q.Searches {
		c := *s
		c.Epsilon = pure(s.Epsilon)
		g.Searches[i] = &c
	}
	if q.Selection != nil {
		s := *q.Selection
		s.Epsilon = pure(s.Epsilon)
		s.setThreshold()
		g.Selection = &s
	}
	if q.Dropped != nil {
		g.Dropped = &DroppedEstimate{Epsilon: pure(q.Dropped.Epsilon)}
	}
	if q.Auto != nil {
		a := *q.Auto
		a.Epsilon = pure(a.Epsilon)
		g.Auto = &a
	}
	g.Cells = make([]*Cell, len(q.Cells))
	for i, c := range q.Cells {
		n := *c
		if c.Kind == QuantileTree {
			// The quantile tree stays pure (Laplace), at the ε whose
			// ε²/2 is its share of ρ, as bound searches do.
			n.Epsilon = pure(c.Epsilon)
			g.Cells[i] = &n
			continue
		}
		n.Gaussian, n.Rho = true, share(c.Epsilon)
		g.Cells[i] = &n
	}
	if err := g.checkNoise(); err != nil {
		return nil, err
	}
	return &g, nil
}

// NoiseSD is the standard deviation of cell i's noise for a unit L1
// sensitivity (the sensitivity of cells with chosen bounds is only known at
// run time, and the ratio of two plans' deviations does not depend on it).
func (q *PrivateQuery) NoiseSD(i int) float64 {
	c := q.Cells[i]
	if c.Gaussian {
		return mechanism.GaussianSigma(c.L2Sensitivity(1), c.Rho)
	}
	return math.Sqrt2 * mechanism.LaplaceScale(1, c.Epsilon)
}

// ErrorBound95 is the half-width of the 95% interval of the cell's noise
// when its L1 sensitivity is l1.
func (c *Cell) ErrorBound95(l1 float64) float64 {
	if c.Gaussian {
		return mechanism.GaussianErrorBound(mechanism.GaussianSigma(c.L2Sensitivity(l1), c.Rho), 0.05)
	}
	return mechanism.LaplaceErrorBound(mechanism.LaplaceScale(l1, c.Epsilon), 0.05)
}
