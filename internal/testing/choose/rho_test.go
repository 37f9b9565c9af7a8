package choose_test

import (
	"context"
	"math"
	"math/big"
	"sync"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/internal/testopts"
	"github.com/dpsql/dpsql/mechanism"
)

// rhoRecorder adds no noise and records each mechanism a query runs, from
// the calls themselves: a Laplace draw at ε for a value of a chosen group
// is ε-DP and composes with the other chosen groups' in sequence; a cell's
// draws over disjoint groups are ε-DP together (parallel composition, the
// cell's sensitivity covering a unit's l0 groups), as are partition
// selection's; a sparse vector run at ε is ε-DP; one round of report noisy
// max (every candidate's draw at the round's ε) is ε-DP; a discrete
// Gaussian draw is ρ-zCDP. Their zCDP composition (ε ↦ ε²/2) is
// what the ledger must record.
type rhoRecorder struct {
	zero    mechanism.Noiser
	mu      sync.Mutex
	pending *exec.NoiseCall
	pure    []float64       // ε of each mechanism composed in sequence
	rounds  map[int]float64 // report noisy max: round → its ε
	cells   map[int]float64 // a cell over disjoint groups: cell → its ε (parallel composition: once)
	sel     float64         // partition selection's ε (disjoint groups: once)
	rho     float64         // Gaussian draws' ρ
}

func newRhoRecorder() *rhoRecorder {
	return &rhoRecorder{zero: testopts.ZeroNoise(), rounds: map[int]float64{}, cells: map[int]float64{}}
}

func (r *rhoRecorder) ObserveNoiseCall(c exec.NoiseCall) { r.mu.Lock(); r.pending = &c; r.mu.Unlock() }

func (r *rhoRecorder) note(eps float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch p := r.pending; {
	case p == nil || p.Composed > 0 || p.Dropped || p.Clip:
		// Values of chosen groups, the counts of what bounding dropped
		// and of clipped values: each in sequence.
		r.pure = append(r.pure, eps)
	case p.Choice:
		r.rounds[p.Round] = eps
	case p.Selection:
		r.sel = eps
	default:
		r.cells[p.Cell] = eps
	}
	r.pending = nil
}

func (r *rhoRecorder) AddLaplace(v, l1, eps float64) (float64, error) {
	r.note(eps)
	return r.zero.AddLaplace(v, l1, eps)
}

func (r *rhoRecorder) AddLaplaceExact(v *big.Float, l1, eps float64) (float64, error) {
	r.note(eps)
	return r.zero.AddLaplaceExact(v, l1, eps)
}

func (r *rhoRecorder) AddGaussianExact(v *big.Float, l2, rho float64) (float64, error) {
	r.mu.Lock()
	r.rho += rho
	r.pending = nil
	r.mu.Unlock()
	return r.zero.AddGaussianExact(v, l2, rho)
}

func (r *rhoRecorder) NewSparse(opts mechanism.SparseOptions) (mechanism.Thresholder, error) {
	r.mu.Lock()
	r.pure = append(r.pure, opts.Epsilon)
	r.mu.Unlock()
	return r.zero.NewSparse(opts)
}

// composed is the zCDP ρ of everything recorded.
func (r *rhoRecorder) composed() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	rho := r.rho
	for _, e := range r.pure {
		rho += e * e / 2
	}
	for _, e := range r.rounds {
		rho += e * e / 2
	}
	for _, e := range r.cells {
		rho += e * e / 2
	}
	rho += r.sel * r.sel / 2
	return rho
}

// TestRecordedRhoIsTheMechanismsComposition: for threshold queries
// releasing values (c = 1, 2, 5), top-k (k = 2, 3) and plain grouped
// queries, the ρ the ledger records (the answer's Rho) is the zCDP
// composition of the mechanisms the query ran, derived from the noise
// calls (rhoRecorder), not from the planner's parts. Each query releases
// its full c or k groups, so the two must agree; before, the ledger
// counted a released value's ε once however many groups it was spent on
// (c = 5 at ε = 1: 0.13 recorded, 0.15 spent).
func TestRecordedRhoIsTheMechanismsComposition(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, 0)
	from := ` FROM people JOIN ranges AS r ON age >= r.lo AND age < r.hi GROUP BY r.lo, r.hi`
	for _, q := range []string{
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_groups_above = 1) r.lo, r.hi, COUNT(*)` + from + ` HAVING COUNT(*) > 100`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_groups_above = 2) r.lo, r.hi, COUNT(*)` + from + ` HAVING COUNT(*) > 100`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, max_groups_above = 5) r.lo, r.hi, COUNT(*), SUM(age)` + from + ` HAVING COUNT(*) > 100`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) product, COUNT(*) AS n FROM purchases GROUP BY product ORDER BY n DESC LIMIT 2`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1) product, COUNT(*) AS n FROM purchases GROUP BY product ORDER BY n DESC LIMIT 3`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, noise = 'laplace') product, COUNT(*) FROM purchases GROUP BY product`,
		`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, noise = 'laplace') COUNT(*), AVG(age) FROM people`,
	} {
		rec := newRhoRecorder()
		e := f.open(t, rec, dpsql.Options{})
		res, err := e.Query(context.Background(), q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		want := rec.composed()
		if want == 0 || math.Abs(res.Rho-want) > 1e-9*want {
			t.Errorf("%s: the ledger records ρ=%.10g, the mechanisms run compose to ρ=%.10g (%d rows released)", q, res.Rho, want, len(res.Rows))
		}
	}
}

// TestThresholdQueriesFitTheZCDPTotal: under SET BUDGET epsilon = 1,
// delta = 1e-6, threshold queries releasing 5 groups' counts at ε = 0.1
// cost ρ = 0.1²·(3·(0.05/3)² + 0.475² + 5·0.095²)/2 ≈ 0.001358 each
// (what bounding dropped, the choice, the values), and the ledger admits
// exactly the 16 that fit (once it counted 0.0013 each and admitted 17;
// before the estimate of what bounding dropped, 0.0015 each, 15).
func TestThresholdQueriesFitTheZCDPTotal(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 4, 0)
	owner, err := dpsql.Open(f.path, dpsql.Options{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Query(context.Background(), "SET BUDGET epsilon = 1, delta = 1e-6"); err != nil {
		t.Fatal(err)
	}
	owner.Close()
	e := f.open(t, testopts.ZeroNoise(), dpsql.Options{})
	admitted := 0
	for range 40 {
		_, err := e.Query(context.Background(), `SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1, max_groups_above = 5) r.lo, r.hi, COUNT(*)
			FROM people JOIN ranges AS r ON age >= r.lo AND age < r.hi GROUP BY r.lo, r.hi HAVING COUNT(*) > 100`)
		if err != nil {
			break
		}
		admitted++
	}
	if admitted != 16 {
		t.Errorf("the ledger admitted %d threshold queries, 16 fit", admitted)
	}
}
