// Package audit is the sensitivity auditor: it generates statements over
// everything the dialect accepts (gen.go), neighbouring databases with
// adversarial contents (db.go), and checks each plan's privacy claim by
// running the real planner, rewrite and backend on both databases with a
// zero-noise source that records every exact value handed to the noise
// (this file). Failures shrink to small cases (minimize.go) kept under
// testdata/audit. docs/privacy.md ("The sensitivity auditor") says what it
// checks and what it cannot.
package audit

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strings"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/exec"
	"github.com/dpsql/dpsql/mechanism"
)

// Engine is what the auditor runs statements on: a dpsql engine opened on
// one database with a Noiser of this package.
type Engine interface {
	Query(ctx context.Context, q string, args ...any) (*dpsql.Result, error)
	Close() error
}

// Opener opens an engine on path whose noise comes from n (tests wire it
// to dpsql's test-only OpenWithNoise).
type Opener func(path string, n mechanism.Noiser) (Engine, error)

// call is one Laplace call of a run: what it was for, the exact value, and
// the mechanism's parameters.
type call struct {
	exec.NoiseCall
	key   string
	value *big.Float
	sens  float64 // L1 sensitivity (Laplace) or L2 sensitivity (Gaussian)
	eps   float64 // Laplace
	rho   float64 // Gaussian
}

// search is one sparse vector run of a bound search.
type search struct {
	opts    mechanism.SparseOptions
	queries []*big.Float // exact
	answers []bool
}

// record is everything one run handed to the noise.
type record struct {
	calls    []call
	searches []*search
	problems []string // calls the auditor could not place
}

// Noiser adds no noise and records every call. With a replay record set,
// it makes the data-dependent choices of the recorded run instead of its
// own (which groups partition selection releases, what the bound searches
// answer), so that the two runs are compared on the same released choices:
// the cells of a pair are conditioned on equal outputs of the mechanisms
// before them, as the composition argument is.
type Noiser struct {
	rec     *record
	replay  *record
	pending *exec.NoiseCall
}

func (n *Noiser) start(replay *record) *record {
	n.rec, n.replay, n.pending = &record{}, replay, nil
	return n.rec
}

// ObserveNoiseCall implements exec.CallObserver.
func (n *Noiser) ObserveNoiseCall(c exec.NoiseCall) { n.pending = &c }

// AddLaplace records a call no observer announced (none is expected).
func (n *Noiser) AddLaplace(v, sens, eps float64) (float64, error) {
	return n.AddLaplaceExact(new(big.Float).SetFloat64(v), sens, eps)
}

// AddLaplaceExact records the exact value and returns it (or, for
// partition selection in a replay, the recorded run's decision).
func (n *Noiser) AddLaplaceExact(v *big.Float, sens, eps float64) (float64, error) {
	c, ok := n.record(v, call{sens: sens, eps: eps})
	f, _ := v.Float64()
	if ok && c.Choice && n.replay != nil {
		// Report noisy max in a replay: the recorded run's choice of
		// this round wins (the largest recorded score, the first on
		// ties, as the noiseless run chose).
		var best *call
		for i := range n.replay.calls {
			r := &n.replay.calls[i]
			if r.Choice && r.Round == c.Round && (best == nil || r.value.Cmp(best.value) > 0) {
				best = r
			}
		}
		if best != nil && best.key == c.key {
			return math.MaxFloat64, nil
		}
		return -math.MaxFloat64, nil
	}
	if ok && c.Profile && n.replay != nil {
		// The profile in a replay: the recorded run's bins, so that both
		// runs choose the same AUTO bounds (their cells are compared
		// under the same bounds, conditioned on the choice, as the
		// composition argument is).
		for _, r := range n.replay.calls {
			if r.Profile && r.Round == c.Round && r.Cell == c.Cell {
				rf, _ := r.value.Float64()
				return rf, nil
			}
		}
		n.rec.problems = append(n.rec.problems, "a profile bin the recorded run did not draw")
	}
	if !ok || !c.Selection || n.replay == nil {
		return f, nil
	}
	step := math.Max(1, math.Abs(c.Threshold))
	for _, r := range n.replay.calls {
		if r.Selection && r.key == c.key {
			if rf, _ := r.value.Float64(); rf > r.Threshold {
				return c.Threshold + step, nil
			}
			break
		}
	}
	return c.Threshold - step, nil // not released on the recorded side
}

// AddGaussianExact records the exact value and returns it.
func (n *Noiser) AddGaussianExact(v *big.Float, sens, rho float64) (float64, error) {
	if c, ok := n.record(v, call{sens: sens, rho: rho}); ok && c.Selection {
		n.rec.problems = append(n.rec.problems, "partition selection with Gaussian noise")
	}
	f, _ := v.Float64()
	return f, nil
}

// record completes c with the announced call and the exact value and
// records it; ok is false (and a problem recorded) when no call was
// announced.
func (n *Noiser) record(v *big.Float, c call) (call, bool) {
	if n.pending == nil {
		n.rec.problems = append(n.rec.problems, "a noise call that Run did not announce")
		return c, false
	}
	c.NoiseCall, c.key, c.value = *n.pending, keyID(n.pending.Key), new(big.Float).SetPrec(4096).Set(v)
	n.pending = nil
	n.rec.calls = append(n.rec.calls, c)
	return c, true
}

// NewSparse starts a recorded sparse vector run; in a replay it answers as
// the recorded run did.
func (n *Noiser) NewSparse(opts mechanism.SparseOptions) (mechanism.Thresholder, error) {
	s := &search{opts: opts}
	i := len(n.rec.searches)
	n.rec.searches = append(n.rec.searches, s)
	var replay *search
	if n.replay != nil {
		if i < len(n.replay.searches) {
			replay = n.replay.searches[i]
		} else {
			n.rec.problems = append(n.rec.problems, "a bound search the recorded run did not make")
		}
	}
	return &thresholder{s: s, replay: replay, left: opts.Cutoff}, nil
}

type thresholder struct {
	s      *search
	replay *search
	left   int
}

func (t *thresholder) Next(q float64) (bool, error) {
	return t.NextExact(new(big.Float).SetFloat64(q))
}

func (t *thresholder) NextExact(q *big.Float) (bool, error) {
	if t.left == 0 {
		return false, mechanism.ErrSparseDone
	}
	i := len(t.s.queries)
	t.s.queries = append(t.s.queries, new(big.Float).SetPrec(4096).Set(q))
	above := q.Cmp(big.NewFloat(t.s.opts.Threshold)) >= 0
	if t.replay != nil {
		above = i < len(t.replay.answers) && t.replay.answers[i]
	}
	t.s.answers = append(t.s.answers, above)
	if above {
		t.left--
	}
	return above, nil
}

func keyID(key []any) string { return fmt.Sprintf("%#v", key) }

// outcome is one run of a statement.
type outcome struct {
	res *dpsql.Result
	err error
	rec *record
}

// Pair is a statement runner on neighbouring databases D and D′.
type Pair struct {
	D, D2   Engine
	nD, nD2 *Noiser
}

// OpenPair opens engines on D and D′.
func OpenPair(open Opener, d, d2 string) (*Pair, error) {
	p := &Pair{nD: &Noiser{}, nD2: &Noiser{}}
	var err error
	if p.D, err = open(d, p.nD); err != nil {
		return nil, err
	}
	if p.D2, err = open(d2, p.nD2); err != nil {
		p.D.Close()
		return nil, err
	}
	return p, nil
}

// Close closes both engines.
func (p *Pair) Close() {
	p.D.Close()
	p.D2.Close()
}

// Check runs st on D and, replaying D's choices, on D′, then the other
// way round, and returns what the checks found (nothing when the plan's
// claim holds).
func (p *Pair) Check(st Statement) []string {
	ctx := context.Background()
	run := func(e Engine, n *Noiser, replay *record) outcome {
		rec := n.start(replay)
		res, err := e.Query(ctx, st.SQL, st.Args...)
		return outcome{res, err, rec}
	}
	var found []string
	if len(st.Args) == 0 {
		// A plan reads no data: EXPLAIN says the same on both databases.
		ea, errA := p.D.Query(ctx, "EXPLAIN "+st.SQL)
		eb, errB := p.D2.Query(ctx, "EXPLAIN "+st.SQL)
		if fmt.Sprint(errA) != fmt.Sprint(errB) || (errA == nil && fmt.Sprint(ea.Rows) != fmt.Sprint(eb.Rows)) {
			found = append(found, fmt.Sprintf("EXPLAIN depends on the data: %v / %v", errA, errB))
		}
	}
	a := run(p.D, p.nD, nil)
	b := run(p.D2, p.nD2, a.rec)
	found = append(found, compare(st, a, b, "D", "D′")...)
	if len(found) > 0 || a.err != nil {
		return found
	}
	b = run(p.D2, p.nD2, nil)
	a = run(p.D, p.nD, b.rec)
	return compare(st, b, a, "D′", "D")
}

// compare checks a run on X (a, recorded) against a run on its neighbour Y
// (b, replaying a's choices).
func compare(st Statement, a, b outcome, x, y string) []string {
	c := &comparison{x: x, y: y}
	if c.outcomes(st, a, b) {
		return c.out
	}
	for _, pr := range append(a.rec.problems, b.rec.problems...) {
		c.bad("%s", pr)
	}
	// (5) the cost does not depend on the data.
	if a.res.Cost != b.res.Cost || a.res.Mechanism != b.res.Mechanism || a.res.Rho != b.res.Rho {
		c.bad("charges depend on the data: %s %+v %s ρ=%g, %s %+v %s ρ=%g", x, a.res.Cost, a.res.Mechanism, a.res.Rho, y, b.res.Cost, b.res.Mechanism, b.res.Rho)
	}
	claimed := c.searches(a, b)
	ma, mb := c.index(a.rec), c.index(b.rec)
	t := c.cells(ma, mb)
	c.loss(a, b, t, claimed, ma, mb)
	return c.out
}

// comparison collects what a comparison of two runs found.
type comparison struct {
	out  []string
	x, y string // the databases' names
}

func (c *comparison) bad(format string, args ...any) {
	c.out = append(c.out, fmt.Sprintf(format, args...))
}

// outcomes checks (1): the statement runs on X exactly when it runs on
// Y, failing alike; done reports that nothing more can be compared.
func (c *comparison) outcomes(st Statement, a, b outcome) (done bool) {
	switch {
	case (a.err == nil) != (b.err == nil):
		c.bad("runs on one database only: %s: %v; %s: %v", c.x, a.err, c.y, b.err)
	case a.err != nil && a.err.Error() != b.err.Error():
		c.bad("fails differently: %s: %v; %s: %v", c.x, a.err, c.y, b.err)
	case a.err != nil:
		if !st.Refuse {
			c.bad("%s: %v", refusedValid, a.err)
		}
		if len(a.rec.calls)+len(a.rec.searches) > 0 {
			c.bad("refused after %d noise calls: %v", len(a.rec.calls)+len(a.rec.searches), a.err)
		}
	case st.Refuse:
		c.bad("answered a statement it must refuse")
	default:
		return false
	}
	return true
}

// searches checks (4): the bound searches see count differences within
// their sensitivity. It returns the ε they claim.
func (c *comparison) searches(a, b outcome) (claimed float64) {
	if len(a.rec.searches) != len(b.rec.searches) {
		c.bad("%d bound searches on %s, %d on %s", len(a.rec.searches), c.x, len(b.rec.searches), c.y)
	}
	for i := 0; i < min(len(a.rec.searches), len(b.rec.searches)); i++ {
		sa, sb := a.rec.searches[i], b.rec.searches[i]
		claimed += sa.opts.Epsilon
		if sa.opts != sb.opts {
			c.bad("bound search %d: parameters depend on the data: %+v vs %+v", i, sa.opts, sb.opts)
		}
		if len(sa.queries) != len(sb.queries) {
			c.bad("bound search %d asks %d queries on %s, %d on %s with the same answers", i, len(sa.queries), c.x, len(sb.queries), c.y)
		}
		up, down := false, false
		for j := 0; j < min(len(sa.queries), len(sb.queries)); j++ {
			d := new(big.Float).SetPrec(4096).Sub(sa.queries[j], sb.queries[j])
			up, down = up || d.Sign() > 0, down || d.Sign() < 0
			if d.Abs(d).Cmp(big.NewFloat(sa.opts.Sensitivity)) > 0 {
				c.bad("bound search %d, query %d moves by %s between neighbours, sensitivity %g", i, j, d.Text('g', 17), sa.opts.Sensitivity)
				break
			}
		}
		if sa.opts.Monotonic && up && down {
			c.bad("bound search %d is declared monotonic, but its queries move both ways", i)
		}
	}
	return claimed
}

// index keys a run's noise calls by cell and group.
func (c *comparison) index(r *record) map[cellKey]call {
	m := map[cellKey]call{}
	for _, cl := range r.calls {
		k := cellKey{sel: cl.Selection, key: cl.key, cell: cl.Cell}
		if cl.Selection {
			k.cell = -1
		}
		if cl.Choice {
			k = cellKey{choice: true, key: cl.key, cell: -1, round: cl.Round}
		}
		if cl.Clip {
			k = cellKey{clip: true, cell: cl.Cell, round: cl.Round}
		}
		if cl.Dropped {
			k = cellKey{clip: true, cell: -1, round: cl.Round} // what bounding dropped: counts as the clipped ones are
		}
		if cl.Profile {
			k = cellKey{profile: true, cell: cl.Cell, round: cl.Round}
		}
		if _, dup := m[k]; dup {
			c.bad("two noise calls for the same cell %+v", k)
		}
		m[k] = cl
	}
	return m
}

// tally is what the cells of two runs spend between them.
type tally struct {
	selected bool
	loss     *big.Float // Laplace cells: Σ ε·|Δ|/sensitivity
	// Gaussian cells: the ρ the pair spends, Σ ρ_cell·(Δ/Δ₂)², against the
	// ρ the cells claim and the charge records.
	rhoLoss          *big.Float
	cellRho, cellEps map[int]float64
	selEps, oneSided float64
	// choiceEps is report noisy max's ε per round; choiceUp/Down record
	// the directions its scores moved in.
	choiceEps          map[int]float64
	choiceUp, choiceDn bool
	choiceMonotonic    bool
	// clipEps is what the bound searches' counts of clipped values spend
	// (checked within their sensitivity in cells).
	clipEps, clipRho float64
	// profileEps, profileL1 and profileSens are, per histogram of the
	// profile that chooses AUTO contribution bounds, its ε, the L1
	// distance of its bins between the runs and its L1 sensitivity.
	profileEps  map[int]float64
	profileL1   map[int]*big.Float
	profileSens map[int]float64
}

// cells checks (2) and (3): cells and partition selection, aligned by
// group key.
func (c *comparison) cells(ma, mb map[cellKey]call) *tally {
	t := &tally{loss: new(big.Float).SetPrec(4096), rhoLoss: new(big.Float).SetPrec(4096), cellRho: map[int]float64{}, cellEps: map[int]float64{}, choiceEps: map[int]float64{},
		profileEps: map[int]float64{}, profileL1: map[int]*big.Float{}, profileSens: map[int]float64{}}
	var keys []cellKey
	for k := range ma {
		keys = append(keys, k)
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	for _, k := range keys {
		ca, okA := ma[k]
		cb, okB := mb[k]
		cl := ca
		if !okA {
			cl = cb
		}
		if k.choice {
			// (5) report noisy max: every candidate is compared on both
			// sides, and its score moves by at most the l∞ sensitivity
			// the round's noise is calibrated to (in one direction when
			// declared monotonic). Each round is then ε-DP by its own
			// argument, as a bound search is.
			t.choiceEps[k.round] = cl.eps
			t.choiceMonotonic = cl.Monotonic
			if okA != okB {
				c.bad("report noisy max compares candidate %s in round %d on one database only", k.key, k.round)
				continue
			}
			if ca.sens != cb.sens || ca.eps != cb.eps {
				c.bad("report noisy max, candidate %s: noise parameters depend on the data", k.key)
				continue
			}
			d := new(big.Float).SetPrec(4096).Sub(ca.value, cb.value)
			t.choiceUp, t.choiceDn = t.choiceUp || d.Sign() > 0, t.choiceDn || d.Sign() < 0
			if d.Abs(d).Cmp(new(big.Float).SetFloat64(ca.Sensitivity)) > 0 {
				c.bad("report noisy max, candidate %s: its score moves by %s between neighbours, sensitivity %g", k.key, d.Text('g', 6), ca.Sensitivity)
			}
			continue
		}
		if k.profile {
			t.profileEps[k.round] = cl.eps
			c.profileBin(t, k, ca, cb, okA && okB)
			continue
		}
		if k.clip {
			// The counts of a bound search's clipped values, and of what
			// bounding dropped (cell -1): Laplace counts made on both
			// sides, each moving by at most its sensitivity, ε-DP each
			// (sequential composition).
			t.clipEps += cl.eps
			t.clipRho += cl.eps * cl.eps / 2
			what := fmt.Sprintf("bound search %d's count %d", k.cell, k.round)
			if k.cell < 0 {
				what = fmt.Sprintf("count %d of what bounding dropped", k.round)
			}
			if okA != okB || ca.sens != cb.sens || ca.eps != cb.eps {
				c.bad("%s: made on one side only, or its noise parameters depend on the data", what)
				continue
			}
			d := new(big.Float).SetPrec(4096).Sub(ca.value, cb.value)
			if d.Abs(d).Cmp(new(big.Float).SetFloat64(ca.sens)) > 0 {
				c.bad("%s moves by %s between neighbours, sensitivity %g", what, d.Text('g', 8), ca.sens)
			}
			continue
		}
		if k.sel {
			t.selected = true
			t.selEps = cl.eps
		} else if cl.rho == 0 {
			// A chosen query's cells are spent on each of the (at
			// most Composed) chosen groups in sequence.
			t.cellEps[k.cell] = cl.eps * float64(max(1, cl.Composed))
		}
		if okA != okB {
			c.oneSide(k, cl, okA, ma, t)
			continue
		}
		if ca.sens != cb.sens || ca.eps != cb.eps || ca.rho != cb.rho {
			c.bad("cell %+v: noise parameters depend on the data: sensitivity %g/%g, ε %g/%g, ρ %g/%g", k, ca.sens, cb.sens, ca.eps, cb.eps, ca.rho, cb.rho)
			continue
		}
		d := new(big.Float).SetPrec(4096).Sub(ca.value, cb.value)
		if ca.rho > 0 {
			t.cellRho[k.cell] = ca.rho
			d.Quo(d, new(big.Float).SetPrec(4096).SetFloat64(ca.sens))
			d.Mul(d, d)
			d.Mul(d, new(big.Float).SetPrec(4096).SetFloat64(ca.rho))
			t.rhoLoss.Add(t.rhoLoss, d)
			continue
		}
		d.Abs(d)
		d.Mul(d, new(big.Float).SetPrec(4096).SetFloat64(ca.eps))
		d.Quo(d, new(big.Float).SetPrec(4096).SetFloat64(ca.sens))
		t.loss.Add(t.loss, d)
	}
	for h, l1 := range t.profileL1 {
		if l1.Cmp(new(big.Float).SetFloat64(t.profileSens[h])) > 0 {
			c.bad("profile histogram %d moves by %s in L1 between neighbours, sensitivity %g", h, l1.Text('g', 8), t.profileSens[h])
		}
	}
	for _, e := range t.profileEps {
		t.clipEps += e
		t.clipRho += e * e / 2
	}
	return t
}

// profileBin accounts for a bin of the profile's histogram k.round: each
// histogram is one Laplace mechanism of L1 sensitivity (its bins add up,
// checked after the cells), ε-DP once.
func (c *comparison) profileBin(t *tally, k cellKey, ca, cb call, both bool) {
	if !both || ca.sens != cb.sens || ca.eps != cb.eps {
		c.bad("bin %d of profile histogram %d: made on one side only, or its noise parameters depend on the data", k.cell, k.round)
		return
	}
	d := new(big.Float).SetPrec(4096).Sub(ca.value, cb.value)
	if t.profileL1[k.round] == nil {
		t.profileL1[k.round], t.profileSens[k.round] = new(big.Float).SetPrec(4096), ca.sens
	}
	t.profileL1[k.round].Add(t.profileL1[k.round], d.Abs(d))
}

// oneSide accounts for a noise call made on one database only.
func (c *comparison) oneSide(k cellKey, cl call, onX bool, ma map[cellKey]call, t *tally) {
	if !k.sel {
		// a released group present on one side only: allowed when
		// partition selection released it (accounted to δ below).
		if _, s := ma[cellKey{sel: true, key: k.key, cell: -1}]; !s {
			c.bad("group %s released on %s only, without partition selection", k.key, map[bool]string{true: c.x, false: c.y}[onX])
		}
		return
	}
	// (3) a candidate group on one side only: the probability that its
	// noisy unit count passes the threshold counts against δ.
	u, _ := cl.value.Float64()
	b := cl.sens / cl.eps
	if u >= cl.Threshold {
		t.oneSided += 1
	} else {
		t.oneSided += 0.5 * math.Exp(-(cl.Threshold-u)/b)
	}
}

// loss checks the privacy loss between the runs against what the plan
// claims and the query charges.
func (c *comparison) loss(a, b outcome, t *tally, claimed float64, ma, mb map[cellKey]call) {
	searchEps, searchRho := 0.0, 0.0
	for i := 0; i < min(len(a.rec.searches), len(b.rec.searches)); i++ {
		e := a.rec.searches[i].opts.Epsilon // the search is private by its own argument, checked above
		searchEps, searchRho = searchEps+e, searchRho+e*e/2
	}
	for _, e := range t.choiceEps {
		searchEps, searchRho = searchEps+e, searchRho+e*e/2
		claimed += e
	}
	searchEps, searchRho = searchEps+t.clipEps, searchRho+t.clipRho
	claimed += t.clipEps
	if t.choiceMonotonic && t.choiceUp && t.choiceDn {
		c.bad("report noisy max's scores are declared monotonic but move both ways")
	}
	if len(t.cellRho) > 0 {
		// Gaussian cells, pure searches and selection: in ρ, ε²/2 for the
		// pure parts.
		claimedRho := searchRho + t.selEps*t.selEps/2
		for _, r := range t.cellRho {
			claimedRho += r
		}
		if claimedRho > a.res.Rho*(1+1e-9) {
			c.bad("the mechanisms spend ρ = %g but the query charges ρ = %g", claimedRho, a.res.Rho)
		}
		if len(t.cellEps) > 0 {
			c.bad("a query mixes Laplace and Gaussian cells")
		}
		lossF, _ := t.rhoLoss.Float64()
		lossF += searchRho + t.selEps*t.selEps/2
		if lossF > claimedRho*(1+1e-9) {
			c.bad("privacy loss ρ = %.6g between neighbours exceeds the ρ %.6g the plan claims%s", lossF, claimedRho, cellDetail(ma, mb))
		}
	} else {
		for _, e := range t.cellEps {
			claimed += e
		}
		claimed += t.selEps
		if claimed > a.res.Cost.Epsilon*(1+1e-9) {
			c.bad("the mechanisms spend ε = %g but the query charges %g", claimed, a.res.Cost.Epsilon)
		}
		lossF, _ := t.loss.Float64()
		lossF += searchEps
		if lossF > claimed*(1+1e-9) {
			c.bad("privacy loss %.6g between neighbours exceeds the ε %.6g the plan claims%s", lossF, claimed, cellDetail(ma, mb))
		}
	}
	if t.selected && t.oneSided > a.res.Cost.Delta*(1+1e-9) {
		c.bad("groups of one side only are released with probability %.3g, more than δ = %g", t.oneSided, a.res.Cost.Delta)
	}
	if !t.selected && t.oneSided > 0 {
		c.bad("groups differ between neighbours without partition selection")
	}
}

// cellKey identifies a noise call across runs: a cell of a group, or the
// group's partition selection (cell −1).
type cellKey struct {
	sel  bool
	key  string
	cell int
	// choice: report noisy max's draw for candidate key in round round.
	choice bool
	round  int
	// clip: count round (0: beyond the bounds, 1: all) of bound search
	// cell's values.
	clip bool
	// profile: bin cell of histogram round of the profile that chooses
	// AUTO contribution bounds.
	profile bool
}

// cellDetail lists the cells that moved by more than their sensitivity,
// for the report.
func cellDetail(ma, mb map[cellKey]call) string {
	var sb strings.Builder
	for k, ca := range ma {
		cb, ok := mb[k]
		if !ok {
			continue
		}
		d := new(big.Float).SetPrec(4096).Sub(ca.value, cb.value)
		d.Abs(d)
		if d.Cmp(new(big.Float).SetFloat64(ca.sens)) > 0 {
			fmt.Fprintf(&sb, "; cell %d of group %s moves by %s, sensitivity %g (%s vs %s)", k.cell, k.key,
				d.Text('g', 8), ca.sens, ca.value.Text('g', 20), cb.value.Text('g', 20))
		}
	}
	return sb.String()
}
