package budget

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"sync"
)

// The accountant (docs/privacy.md, "Composition across queries"). With the
// owner's total (E, D):
//
//   - D = 0 (or a PURE budget): basic composition only. A charge fits when
//     it is pure and the ε of all charges adds up to at most E.
//   - D > 0: half of D, D/2, is what partition selection may spend in all;
//     the other half converts zCDP to (ε, δ). A charge fits when the δ of
//     all charges stays within D/2 and either (basic) every charge is pure
//     and their ε adds up to at most E, or (zCDP) their ρ adds up to at
//     most ρ_T = RhoFor(E, D/2). The ledger is then (E, D)-DP: on the event
//     (of probability ≥ 1 − D/2) that no partition selection lets a lone
//     unit's group through, each path is certified by one accountant — pure
//     ε ≤ E, or ρ ≤ ρ_T, which ZCDPEpsilon turns into (E, D/2).
//   - A ledger from a version without zCDP that has already spent more
//     than D/2 of δ keeps the basic composition it was made under: pure
//     charges only, δ up to D.
//
// A Gaussian query at ε buys the share ε/E of the zCDP total: ρ = ρ_T·ε/E.
// A Laplace query records ρ = Σ ε_k²/2 over its parts, so it can fit
// either accountant.

// ledger is the budget's state in units.
type ledger struct {
	analyst      string  // "" for the database's ledger
	cap          *ledger // an analyst's: the database's ledger, which caps it
	set, pure    bool
	total, spent units
	rho          float64 // Σ ρ-units since the reset (a float of integers)
	impure       int64   // charges since the reset that are not pure
	reset        int64   // the ledger id the current reset starts after
	lastID       int64   // the ledger's last id when it was read
}

// maxRhoUnits caps the zCDP total so that the float sums of ρ-units the
// ledger compares with it are exact (integers below 2^52 add exactly, and
// any sum above it compares as above).
const maxRhoUnits = 1 << 52

// legacy: a ledger that spent more than D/2 of δ under basic composition
// before zCDP accounting existed.
func (l ledger) legacy() bool { return l.total.delta > 0 && l.spent.delta > l.total.delta/2 }

// deltaCap is the δ, in units, that partition selection may spend in all.
func (l ledger) deltaCap() int64 {
	if l.total.delta == 0 || l.legacy() {
		return l.total.delta
	}
	return l.total.delta / 2
}

// rhoTotal is the zCDP total ρ_T in units, rounded down; 0 when zCDP
// accounting does not apply.
func (l ledger) rhoTotal() int64 {
	if !l.set || l.pure || l.total.delta < 2 || l.legacy() {
		return 0
	}
	return min(rhoFor(l.total.eps, l.total.delta/2), maxRhoUnits)
}

var rhoMemo sync.Map // [2]int64{ε-units, δ-units} → ρ-units

// rhoFor is RhoFor in ledger units (rounded down), remembered: the owner's
// total changes rarely and the conversion costs a few milliseconds.
func rhoFor(epsUnits, deltaUnits int64) int64 {
	key := [2]int64{epsUnits, deltaUnits}
	if v, ok := rhoMemo.Load(key); ok {
		return v.(int64)
	}
	r := toUnits(RhoFor(fromUnits(epsUnits, 12), fromUnits(deltaUnits, 18)), RhoUnit, false)
	rhoMemo.Store(key, r)
	return r
}

// fits reports whether c can be added to the ledger — and, for an
// analyst's, to the database's too — and under which accountant ("basic
// composition" or "zCDP").
func (l ledger) fits(c Charge) (bool, string) {
	ok, why := l.fitsOwn(c)
	if !ok || l.cap == nil {
		return ok, why
	}
	capOK, capWhy := l.cap.fitsOwn(c)
	if !capOK {
		return false, ""
	}
	if capWhy != why {
		why += " of your budget, " + capWhy + " of the database's"
	}
	return true, why
}

// fitsOwn is fits for this ledger alone.
func (l ledger) fitsOwn(c Charge) (bool, string) {
	eps, delta, rho := toUnits(c.Epsilon, EpsilonUnit, true), toUnits(c.Delta, DeltaUnit, true), toUnits(c.Rho, RhoUnit, true)
	if delta > l.deltaCap()-l.spent.delta {
		return false, ""
	}
	if c.Mechanism == Laplace && l.impure == 0 && eps <= l.total.eps-l.spent.eps {
		return true, "basic composition"
	}
	if rt := l.rhoTotal(); rt > 0 && l.rho+float64(rho) <= float64(rt) {
		return true, "zCDP"
	}
	return false, ""
}

// choose returns the first candidate that fits.
func (l ledger) choose(candidates []Charge) (int, error) {
	if l.cap != nil && !l.cap.set {
		return -1, fmt.Errorf("%w: the owner must run SET BUDGET epsilon = E[, delta = D] first", ErrNoBudget)
	}
	if !l.set {
		if l.cap != nil {
			return -1, fmt.Errorf("%w: analyst %q has no budget of their own yet (the owner gives one with ALTER ANALYST %s BUDGET epsilon = E[, delta = D])", ErrNoBudget, l.analyst, l.analyst)
		}
		return -1, fmt.Errorf("%w: the owner must run SET BUDGET epsilon = E[, delta = D] first", ErrNoBudget)
	}
	for i, c := range candidates {
		if ok, _ := l.fits(c); ok {
			return i, nil
		}
	}
	c := candidates[0]
	whose, s := "", l.status()
	if l.cap != nil {
		whose = " of your budget"
		if ok, _ := l.fitsOwn(c); ok {
			// The analyst's own budget would admit it; the database's not.
			whose, s = " of the database's total budget (shared by every analyst)", l.cap.status()
		}
	}
	rem, t := s.OwnRemaining(), s.Total
	// Remainders are shown to 6 significant digits: the ledger counts in
	// whole units, and the float of a difference of units reads as noise
	// (0.8500000005862498).
	return -1, fmt.Errorf("%w: the query needs ε=%g, δ=%g but only ε=%.6g, δ=%.6g remain%s of ε=%g, δ=%g%s",
		ErrBudgetExhausted, c.Epsilon, c.Delta, rem.Epsilon, rem.Delta, whose, t.Epsilon, t.Delta, l.stuckWhy())
}

// stuckWhy explains a budget that nothing fits although its ε is not
// spent: a Gaussian query was charged (so its spending is tracked in
// zCDP, not by adding ε), and the total's δ is now 0, which gives zCDP
// nothing to spend. It is "" otherwise.
func (l ledger) stuckWhy() string {
	if l.impure == 0 || l.rhoTotal() > 0 {
		return ""
	}
	return " (queries with Gaussian noise were charged to this budget, so its spending is accounted in zCDP, which needs a total δ > 0; with δ = 0 nothing more fits: the owner can SET BUDGET again with delta > 0, or RESET BUDGET to start a new budget)"
}

// Stuck says why nothing fits a budget whose ε is not all spent (a
// Gaussian query was charged, and the total's δ is now 0), with what the
// owner can do; "" when that is not so.
func (s Status) Stuck() string {
	return strings.TrimSuffix(strings.TrimPrefix(s.l.stuckWhy(), " ("), ")")
}

func (l ledger) status() Status {
	s := Status{Analyst: l.analyst, Set: l.set, Pure: l.pure, Total: l.total.cost(), Spent: l.spent.cost(),
		Basic: l.impure == 0, RhoSpent: l.rho * RhoUnit, l: l}
	if l.cap != nil {
		db := l.cap.status()
		s.Database = &db
	}
	s.DeltaCap = fromUnits(l.deltaCap(), 18)
	if rt := l.rhoTotal(); rt > 0 {
		s.RhoTotal = fromUnits(rt, 13)
	}
	return s
}

// Status is the budget's state: the database's, or one analyst's.
type Status struct {
	// Analyst is whose budget this is ("": the database's). An analyst's
	// Status has the database's, which caps it, in Database.
	Analyst  string
	Database *Status
	Set      bool // the owner has set a total
	Pure     bool // the owner requires pure ε-DP (SET BUDGET ... PURE)
	Total    Cost
	// Spent adds up, since the last reset, the ε the queries asked for and
	// the δ their partition selections spent.
	Spent Cost
	// Basic: every charge since the reset is pure, so basic composition
	// still counts ε.
	Basic bool
	// RhoTotal is the ρ that zCDP accounting allows in all (0: basic
	// composition only), RhoSpent the ρ of the charges since the reset.
	RhoTotal, RhoSpent float64
	// DeltaCap is the δ partition selection may spend in all: D/2 when
	// zCDP accounting applies, D otherwise.
	DeltaCap float64

	l ledger
}

// Remaining is what a next query can still ask for: the larger of the ε
// basic composition leaves (while it applies) and the ε share of the ρ that
// zCDP leaves; and the δ partition selection may still spend. For an
// analyst it is the smaller of what their budget and the database's leave.
func (s Status) Remaining() Cost {
	r := s.OwnRemaining()
	if s.Database != nil {
		d := s.Database.OwnRemaining()
		r = Cost{Epsilon: math.Min(r.Epsilon, d.Epsilon), Delta: math.Min(r.Delta, d.Delta)}
	}
	return r
}

// OwnRemaining is Remaining of this budget alone (for an analyst: without
// the database's cap).
func (s Status) OwnRemaining() Cost {
	eps := 0.0
	if s.Basic {
		eps = math.Max(0, s.Total.Epsilon-s.Spent.Epsilon)
	}
	if s.RhoTotal > 0 {
		eps = math.Max(eps, s.Total.Epsilon*math.Max(0, s.RhoTotal-s.RhoSpent)/s.RhoTotal)
	}
	return Cost{Epsilon: eps, Delta: math.Max(0, s.DeltaCap-s.Spent.Delta)}
}

// GaussianRho is the ρ a Gaussian query asking for ε buys: its share ε/E
// of the zCDP total, rounded down to whole units, so that queries whose ε
// add up to E fit exactly; 0 when zCDP accounting does not apply. For an
// analyst it is the smaller of the shares of their budget and of the
// database's, so that the one ρ recorded in both fits both.
func (s Status) GaussianRho(epsilon float64) float64 {
	r := s.ownGaussianRho(epsilon)
	if s.Database != nil {
		r = math.Min(r, s.Database.ownGaussianRho(epsilon))
	}
	return r
}

func (s Status) ownGaussianRho(epsilon float64) float64 {
	rt := s.l.rhoTotal()
	if rt <= 0 || s.l.total.eps <= 0 {
		return 0
	}
	share := new(big.Int).Mul(big.NewInt(rt), big.NewInt(toUnits(epsilon, EpsilonUnit, true)))
	share.Quo(share, big.NewInt(s.l.total.eps))
	if !share.IsInt64() {
		return math.Inf(1)
	}
	return fromUnits(share.Int64(), 13)
}

// Choose is what ChargeFirst would choose now among the candidates, and
// under which accountant, without charging (for EXPLAIN).
func (s Status) Choose(candidates []Charge) (int, string, error) {
	i, err := s.l.choose(candidates)
	if err != nil {
		return -1, "", err
	}
	_, why := s.l.fits(candidates[i])
	return i, why, nil
}

// QueriesLeft is how many more queries asking for ε each would fit now:
// by basic composition (Laplace queries of one part) while it applies, or
// by zCDP (Gaussian queries), whichever allows more; for an analyst, within
// both their budget and the database's.
func (s Status) QueriesLeft(epsilon float64) int64 {
	// The ρ one query records: a Gaussian one's when both budgets allow
	// Gaussian noise, else a Laplace one's, ε²/2 (an analyst's pure budget
	// has no ρ of its own: the database is asked about that ρ, not 0).
	rho := s.GaussianRho(epsilon)
	if rho == 0 {
		rho = RhoOfPure(epsilon)
	}
	n := s.ownQueriesLeft(epsilon, rho)
	if s.Database != nil {
		n = min(n, s.Database.ownQueriesLeft(epsilon, rho))
	}
	return n
}

func (s Status) ownQueriesLeft(epsilon, rho float64) int64 {
	n := int64(0)
	if s.Basic {
		n = Fits(math.Max(0, s.Total.Epsilon-s.Spent.Epsilon), epsilon)
	}
	if rt := s.l.rhoTotal(); rt > 0 {
		if each := toUnits(rho, RhoUnit, true); each > 0 {
			n = max(n, int64(math.Max(0, float64(rt)-s.l.rho))/each)
		}
	}
	return n
}
