package exec

import (
	"cmp"
	"database/sql/driver"
	"errors"
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	sqlite "modernc.org/sqlite"

	"github.com/dpsql/dpsql/autobound"
	"github.com/dpsql/dpsql/exactsum"
	"github.com/dpsql/dpsql/measure"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/rewrite"
	"github.com/dpsql/dpsql/sqlitefn"
)

// The measurement aggregate performs contribution bounding and every
// per-group measurement in one streaming pass, inside SQLite's scan:
//
//	dpsql_measure_<slot>([unit,] k1..k_nk, a1..a_m [, w])   or
//	dpsql_measure(handle, [unit,] k1..k_nk, a1..a_m [, w])  (when no slot is free)
//
// where w, in a scan without bounding over a source that groups identical
// rows (backend/postgres), is how many rows the call stands for.
//
// Its configuration (the measurement specs, l0, l∞, nk and the random key
// of the query) is registered under the slot or handle before the scan,
// so that SQLite passes only per-row values. With l0 = 0 every row is its own unit
// (there is no unit argument) and is measured as it comes. With l0 ≥ 1,
// for each privacy unit it keeps the l0 groups with the smallest keyed hash
// of (unit, group) — a uniform random choice of groups, consistent however
// often a group reappears — and, within each kept group, a uniform random
// sample of at most l∞ rows (reservoir sampling from a generator seeded by
// the per-query key and crypto/rand). At the end it measures the kept
// rows, per group. Memory is O(units · l0 · l∞), not O(rows).
//
// Why it is private: what a unit keeps depends only on its own rows and the
// key, so adding or removing a unit changes only its own ≤ l0·l∞ kept
// rows, as the cells' sensitivities assume.
//
// Why the measurements are what the sensitivities claim (NumericClip,
// ExactSums): every argument value is first converted to a number by a
// rule that cannot fail — SQLite's own CAST(x AS REAL): integers and reals
// as they are, text and blobs by their longest numeric prefix (0 when there
// is none) — and then clipped numerically to [lo, hi], so no storage class
// passes the clip. Sums and sums of squares are accumulated exactly
// (exactsum), and centring happens on the exact totals, so the value handed
// to the noise is the exact clipped aggregate, whatever the magnitudes.
// Nothing here returns an error that depends on the data.
//
// The result does not travel through SQLite: the aggregate returns the
// handle and leaves the measurements in measuredResults, from which exec
// takes them.
func init() {
	if err := registerMeasure(sqlite.RegisterFunction); err != nil {
		panic("exec: registering the measurement aggregate: " + err.Error())
	}
}

// RegisterFunctions registers the measurement aggregate on drv, a SQLite
// driver private to one engine (an engine over PostgreSQL installs its
// mirrors' module on one); connections of the default driver have it
// already.
func RegisterFunctions(drv *sqlite.Driver) error { return registerMeasure(drv.RegisterFunction) }

// registerMeasure registers dpsql_measure and its slot functions with reg.
func registerMeasure(reg func(string, *sqlite.FunctionImpl) error) error {
	register := func(name string, slot int64) error {
		return reg(name, &sqlite.FunctionImpl{
			NArgs:         -1,
			Deterministic: true,
			VolatileArgs:  true, // Step copies whatever it keeps (keyString, keyValues)
			MakeAggregate: func(sqlite.FunctionContext) (sqlite.AggregateFunction, error) {
				return &measureAgg{slot: slot}, nil
			},
		})
	}
	if err := register(rewrite.MeasureFunction, 0); err != nil {
		return err
	}
	for i := int64(1); i <= slots; i++ {
		if err := register(slotFunction(i), i); err != nil {
			return err
		}
	}
	return nil
}

// slots is the number of measurement functions bound to a handle of their
// own (dpsql_measure_1 …): a scan that calls one passes no handle on each
// row, which saves converting one argument per row (≈ 14 ns of the ≈ 75
// ns a call into Go costs). A query holds its slot from Prepare to Close;
// when all are taken it calls MeasureFunction with its handle instead.
const slots = 64

func slotFunction(i int64) string { return rewrite.MeasureFunction + "_" + strconv.FormatInt(i, 10) }

// measureConfig is one scan's configuration, registered under its handle.
type measureConfig struct {
	key      int64 // random per query: orders each unit's groups
	fixed    bool  // test knob: no fresh randomness in the row sampling
	specs    []spec
	l0, lInf int
	nk       int
	weighted bool // the last argument is the row's multiplicity (l0 = 0 only)
	dropped  bool // measure what bounding drops (measure.Dropped)
	profile  bool // measure the units' profile instead (measure.Profile)
}

var (
	measureConfigs sync.Map // handle (int64) → *measureConfig
	handles        struct {
		sync.Mutex
		used [256]bool
	}
)

// acquireSlot returns a free slot in [1, slots], or 0 when none is free.
func acquireSlot() int64 { return acquire(1, slots) }

// acquireHandle returns a handle for one scan through MeasureFunction: a
// small integer when one is free (Go boxes those without allocating, and
// SQLite passes the handle on every row), else a random one.
func acquireHandle() int64 {
	if h := acquire(slots+1, len(handles.used)-1); h != 0 {
		return h
	}
	return int64(randomKey(false)>>1) | 1<<40
}

// acquire takes the first free handle in [from, to], or returns 0.
func acquire(from, to int) int64 {
	handles.Lock()
	defer handles.Unlock()
	for i := from; i <= to; i++ {
		if !handles.used[i] {
			handles.used[i] = true
			return int64(i)
		}
	}
	return 0
}

func releaseHandle(h int64) {
	handles.Lock()
	defer handles.Unlock()
	if h > 0 && h < int64(len(handles.used)) {
		handles.used[h] = false
	}
}

// measuredResults holds finished measurements by query key.
var measuredResults sync.Map // int64 → *measured

// measured is the measurements of every group that kept a row.
type measured struct {
	groups  []*measuredGroup
	dropped *measure.Dropped // what bounding dropped, when asked
	profile *measure.Profile // the units' profile, when asked
}

type measuredGroup struct {
	keys   []any
	values []*big.Float           // per spec, exact (histogram specs: nil)
	hists  []*autobound.Histogram // per spec (nil unless a histogram spec)
	trees  []map[int32]int64      // per spec: leaf counts of a quantile tree (P), nil otherwise
}

// takeMeasured removes and returns the result stored under key.
func takeMeasured(key int64) (*measured, bool) {
	v, ok := measuredResults.LoadAndDelete(key)
	if !ok {
		return nil, false
	}
	return v.(*measured), true
}

// value is one argument value of a kept row, already numeric.
type value struct {
	f     float64
	valid bool   // false: NULL
	key   string // the raw value's identity, for COUNT(DISTINCT) (d specs only)
}

// distinctKey is a value's identity under SQLite's DISTINCT: integers and
// reals that are equal are one value (1 = 1.0); text and blobs by their
// bytes, apart from numbers and from each other.
func distinctKey(v driver.Value) string {
	switch v := v.(type) {
	case int64:
		return "i" + strconv.FormatInt(v, 10)
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
			return "i" + strconv.FormatInt(int64(v), 10)
		}
		return "f" + strconv.FormatUint(math.Float64bits(v), 16)
	case string:
		return "s" + v
	case []byte:
		return "b" + string(v)
	}
	return ""
}

type keptGroup struct {
	id   string // keyString of keys
	hash uint64
	keys []any
	rng  *rand.Rand // the group's own sampling stream, made when first needed
	seen int64      // rows met in this group
	rows [][]value  // at most l∞
	// units: per spec, the unit's combined rows for per-unit specs (all
	// its rows in the group, not only the l∞ kept), nil for the others.
	units []*unitAcc
}

type unitState struct {
	groups []*keptGroup // at most l0, by group key
	// rows and others count, when the scan measures what bounding
	// drops, the unit's rows and its rows in each group it did not keep.
	rows   int64
	others map[string]int64
	// index finds a kept group by id once the unit keeps many (a unit in
	// hundreds of overlapping groups would otherwise scan them per row).
	index map[string]*keptGroup
}

// indexFrom is how many kept groups a unit has before they are indexed.
const indexFrom = 16

// find returns the unit's kept group with this id, or nil.
func (st *unitState) find(id []byte) *keptGroup {
	if st.index != nil {
		return st.index[string(id)]
	}
	for _, kg := range st.groups {
		if kg.id == string(id) {
			return kg
		}
	}
	return nil
}

// keep adds a kept group, indexing them once there are many.
func (st *unitState) keep(g *keptGroup) {
	st.groups = append(st.groups, g)
	switch {
	case st.index != nil:
		st.index[g.id] = g
	case len(st.groups) > indexFrom:
		st.index = make(map[string]*keptGroup, 2*len(st.groups))
		for _, kg := range st.groups {
			st.index[kg.id] = kg
		}
	}
}

// drop removes the i-th kept group (counted among the others when
// counting).
func (st *unitState) drop(i int, counting bool) {
	g := st.groups[i]
	if st.index != nil {
		delete(st.index, g.id)
	}
	if counting {
		if st.others == nil {
			st.others = map[string]int64{}
		}
		st.others[g.id] = g.seen
	}
	st.groups = append(st.groups[:i], st.groups[i+1:]...)
}

// dropped is the unit's part of measure.Dropped under l0 and l∞.
func (st *unitState) dropped(l0, lInf int64) (bool, int64) {
	groups, kept, most := int64(len(st.groups)+len(st.others)), int64(0), int64(0)
	count := func(n int64) {
		kept += min(n, lInf)
		most = max(most, n)
	}
	for _, g := range st.groups {
		count(g.seen)
	}
	for _, n := range st.others {
		count(n)
	}
	return measure.UnitDropped(st.rows, groups, kept, most, l0, lInf)
}

type spec struct {
	kind   measure.Kind
	arg    int
	lo, hi float64
	// For s and q: each clipped value is rounded to the fixed-point grid
	// 2^-fixed when grid is set (s: measure.FixedPoint; q:
	// measure.SquaresGrid), so that every engine sums the same integers
	// (and their squares) exactly; the bounds are on the grid, so the
	// rounded values stay within them and the sensitivity is unchanged.
	fixed int
	grid  bool
	// For S and A on a grid (measure.UnitGrid): each row's value
	// clamped to [−clamp, clamp] and rounded to 2^-fixed, summed per unit
	// as integers (for A, then over the unit's values: measure.MeanBits).
	clamp float64
}

// clipped is a value's contribution to an s or q spec's sums: clipped to
// the bounds and, with a grid, rounded to it half to even (as SQL casts a
// double to an integer).
func (sp *spec) clipped(f float64) float64 {
	c := clip(f, sp.lo, sp.hi)
	if sp.grid {
		c = math.Ldexp(math.RoundToEven(math.Ldexp(c, sp.fixed)), -sp.fixed)
	}
	return c
}

// perUnit reports whether a spec measures one combined value per unit
// and group (rewrite's cellSpec: contribution_bounds_per_group).
func (sp *spec) perUnit() bool {
	switch sp.kind {
	case measure.UnitSum, measure.UnitMean, measure.UnitRows, measure.UnitValues, measure.UnitsWithValue:
		return true
	}
	return false
}

// unitAcc combines one unit's rows in one group for a per-unit spec:
// the exact sum of its non-NULL values (infinities apart, so that the
// exact sum stays finite) or, for a sum on a grid, of their integers; and
// how many rows or values it met.
type unitAcc struct {
	sum        exactsum.Acc
	terms      int128
	n          int64
	pinf, ninf bool
}

// int128 is a two's-complement 128-bit integer: a unit's sum of 64-bit
// terms (measure.UnitGrid).
type int128 struct {
	hi int64
	lo uint64
}

func (a *int128) add(t int64) {
	var carry uint64
	a.lo, carry = bits.Add64(a.lo, uint64(t), 0)
	a.hi += t>>63 + int64(carry)
}

// clip returns a clipped to [lo, hi].
func (a int128) clip(lo, hi int64) int64 {
	switch {
	case a.less(lo):
		return lo
	case !a.less(hi + 1):
		return hi
	}
	return int64(a.lo)
}

// big is a as a big.Int.
func (a int128) big() *big.Int {
	b := new(big.Int).Lsh(big.NewInt(a.hi), 64)
	return b.Add(b, new(big.Int).SetUint64(a.lo))
}

// less reports whether a < x.
func (a int128) less(x int64) bool {
	if xh := x >> 63; a.hi != xh {
		return a.hi < xh
	}
	return a.lo < uint64(x)
}

// add takes one row's value into the unit's accumulator.
func (u *unitAcc) add(sp *spec, v value) {
	switch {
	case sp.kind == measure.UnitRows:
		u.n++
	case !v.valid:
	case sp.kind == measure.UnitValues || sp.kind == measure.UnitsWithValue:
		u.n++
	case sp.grid: // S and A on their grid
		u.n++
		c := clip(v.f, -sp.clamp, sp.clamp)
		u.terms.add(int64(math.RoundToEven(math.Ldexp(c, sp.fixed))))
	default: // S, A
		u.n++
		switch {
		case math.IsInf(v.f, 1):
			u.pinf = true
		case math.IsInf(v.f, -1):
			u.ninf = true
		default:
			u.sum.Add(v.f)
		}
	}
}

// combined is the unit's one value for the group, clipped to the spec's
// bounds; ok is false when the unit contributes nothing (no non-NULL
// value to sum or average). It depends only on the unit's own rows in the
// group, never on their order: the sum is exact, and a +∞ (−∞) among
// the values makes it +∞ (−∞), both together leave the finite sum.
func (u *unitAcc) combined(sp *spec) (float64, bool) {
	switch sp.kind {
	case measure.UnitRows, measure.UnitValues:
		return clip(float64(u.n), sp.lo, sp.hi), true
	case measure.UnitsWithValue:
		return 1, u.n > 0
	}
	if u.n == 0 {
		return 0, false
	}
	if sp.grid {
		lo, hi := int64(math.Ldexp(sp.lo, sp.fixed)), int64(math.Ldexp(sp.hi, sp.fixed))
		if sp.kind == measure.UnitMean {
			// The sum clipped to n times the bounds, then over n on the
			// finer grid (below 2^53: a double holds it).
			s, n := u.terms.big(), big.NewInt(u.n)
			if l := new(big.Int).Mul(n, big.NewInt(lo)); s.Cmp(l) < 0 {
				s = l
			} else if h := new(big.Int).Mul(n, big.NewInt(hi)); s.Cmp(h) > 0 {
				s = h
			}
			s.Quo(s.Lsh(s, measure.MeanBits), n)
			return math.Ldexp(float64(s.Int64()), -sp.fixed-measure.MeanBits), true
		}
		return math.Ldexp(float64(u.terms.clip(lo, hi)), -sp.fixed), true
	}
	switch {
	case u.pinf && !u.ninf:
		return sp.hi, true
	case u.ninf && !u.pinf:
		return sp.lo, true
	}
	x := u.sum.Big()
	if sp.kind == measure.UnitMean {
		x = new(big.Float).SetPrec(4096).Quo(x, new(big.Float).SetInt64(u.n))
	}
	f, _ := x.Float64() // rounded once, from the exact value: order-free
	return clip(f, sp.lo, sp.hi), true
}

// groupAcc accumulates one group's measurements.
type groupAcc struct {
	keys     []any
	distinct []map[string]struct{} // per spec: the distinct values (d)
	trees    []map[int32]int64     // per spec: quantile tree leaf counts (P)
	n        []int64               // per spec: rows (n), values (c, s, q), units (u)
	sum      []exactsum.Acc        // s, q: Σ clip(x)
	sq       []exactsum.Acc        // q: Σ clip(x)²
	hists    []*autobound.Histogram
}

type measureAgg struct {
	slot     int64 // > 0: called as slotFunction(slot), without a handle argument
	init     bool
	handle   int64
	key      int64
	specs    []spec
	l0, lInf int
	nk       int
	weighted bool // the last argument is the row's multiplicity
	dropped  bool // measure what bounding drops (measure.Dropped)
	profile  bool // only count each unit's rows per group (measure.Profile)
	first    int  // index of the first key argument
	perUnit  bool // some spec is per unit (S, A, R, K, C)
	// distinctArgs marks the arguments a d spec counts the distinct
	// values of: only their rows' raw values are kept.
	distinctArgs map[int]bool
	seed         [32]byte // of the row sampling; each group's stream mixes in its hash
	// units are the units of the current run (unitRun): the rows come
	// sorted by unit, and each run is flushed to the groups when it ends.
	units  map[string]*unitState
	run    unitRun
	inRun  bool
	groups map[string]*groupAcc
	// prof and droppedAcc add up the flushed units' profile and what
	// bounding dropped from them, when asked; profRows is reused.
	prof       *measure.Profile
	profRows   []int64
	droppedAcc *measure.Dropped
	order      []*groupAcc
	only       *groupAcc   // the group of a scan without keys
	byIndex    []*groupAcc // groups of a single small integer key
	unitBuf    []byte      // the current row's unit key (appendKey), reused
	groupBuf   []byte      // the current row's group key, reused
	err        error
}

// specsOf takes the plan's measurements, with each float sum's grid.
func specsOf(plan []measure.Spec) []spec {
	out := make([]spec, len(plan))
	for i, p := range plan {
		out[i] = spec{kind: p.Kind, arg: p.Arg, lo: p.Lo, hi: p.Hi}
		switch p.Kind {
		case measure.Sum:
			out[i].fixed, out[i].grid = measure.FixedPoint(p.Lo, p.Hi)
		case measure.Squares:
			out[i].fixed, out[i].grid = measure.SquaresGrid(p.Lo, p.Hi)
		case measure.UnitSum, measure.UnitMean:
			out[i].fixed, out[i].clamp, out[i].grid = measure.UnitGrid(p.Lo, p.Hi)
		}
	}
	return out
}

// keyString encodes a group's key values for map lookups.
func keyString(vals []driver.Value) string { return string(appendKeys(nil, vals...)) }

// appendKeys appends keyString's encoding of vals to dst: per value its
// type, and its digits, bits or length-prefixed bytes, so that two lists
// of values encode alike exactly when they are equal value by value (and
// type by type). The bounded scan builds each row's unit and group keys
// in reused buffers with it, and allocates a key only for a new unit or
// group.
func appendKeys(dst []byte, vals ...driver.Value) []byte {
	for _, v := range vals {
		switch v := v.(type) {
		case nil:
			dst = append(dst, "n;"...)
		case int64:
			dst = append(dst, 'i')
			dst = strconv.AppendInt(dst, v, 10)
			dst = append(dst, ';')
		case float64:
			dst = append(dst, 'f')
			dst = strconv.AppendUint(dst, math.Float64bits(v), 16)
			dst = append(dst, ';')
		case string:
			dst = append(dst, 's')
			dst = strconv.AppendInt(dst, int64(len(v)), 10)
			dst = append(dst, ':')
			dst = append(dst, v...)
			dst = append(dst, ';')
		case []byte:
			dst = append(dst, 'b')
			dst = strconv.AppendInt(dst, int64(len(v)), 10)
			dst = append(dst, ':')
			dst = append(dst, v...)
			dst = append(dst, ';')
		}
	}
	return dst
}

// Numeric converts a value to a number as SQLite's CAST(x AS REAL) does,
// by a rule that cannot fail: NULL stays NULL (ok false); integers and
// reals are themselves; text and blobs give their longest prefix that is a
// decimal number (after leading spaces), or 0 when there is none. A prefix
// too large for float64 gives ±Inf, which clipping maps to a bound.
func Numeric(v driver.Value) (float64, bool) {
	switch v := v.(type) {
	case nil:
		return 0, false
	case int64:
		return float64(v), true
	case float64:
		if math.IsNaN(v) {
			return 0, false
		}
		return v, true
	case string:
		return numericPrefix(v), true
	case []byte:
		return numericPrefix(string(v)), true
	}
	return 0, false
}

func numericPrefix(s string) float64 {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v') {
		i++
	}
	start := i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0
	}
	end := i
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		k := j
		for k < len(s) && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k > j {
			end = k
		}
	}
	f, err := strconv.ParseFloat(s[start:end], 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0 // cannot happen for this grammar; never fail
	}
	return f
}

// clip clips x to [lo, hi]; ±Inf land on the bounds.
func clip(x, lo, hi float64) float64 {
	if x > hi {
		return hi
	}
	if x < lo {
		return lo
	}
	return x
}

func (a *measureAgg) Step(_ *sqlite.FunctionContext, args []driver.Value) error {
	if a.err != nil {
		return a.err
	}
	if !a.init {
		if err := a.setup(args); err != nil {
			a.err = err
			return err
		}
	}
	keys := args[a.first : a.first+a.nk]
	vals := args[a.first+a.nk:]
	if a.l0 == 0 {
		w := int64(1)
		if a.weighted {
			var ok bool
			vals = vals[:len(vals)-1]
			if w, ok = args[len(args)-1].(int64); !ok || w < 1 {
				return nil // not reached: the source gives every row a count ≥ 1
			}
		}
		g := a.only
		if len(keys) > 0 || g == nil {
			g = a.group(keys)
		}
		if w == 1 {
			g.addValues(a.specs, vals)
		} else {
			g.addWeighted(a.specs, vals, w)
		}
		return nil
	}
	unit := args[a.first-1]
	if unit == nil {
		return nil // rows without a unit belong to nobody
	}
	st, err := a.unitOf(unit)
	if err != nil {
		a.err = err
		return err
	}
	a.groupBuf = appendKeys(a.groupBuf[:0], keys...)
	st.rows++
	g := st.find(a.groupBuf)
	if a.profile {
		// Every group, counted: no row kept.
		if g == nil {
			g = &keptGroup{id: string(a.groupBuf)}
			st.keep(g)
		}
		g.seen++
		return nil
	}
	if g == nil {
		if n, ok := st.others[string(a.groupBuf)]; ok {
			st.others[string(a.groupBuf)] = n + 1 // a group the unit does not keep
			return nil
		}
		h := sqlitefn.HashValues(append([]driver.Value{a.key, unit}, keys...))
		if len(st.groups) >= a.l0 {
			// Keep the l0 groups with the smallest hashes.
			worst := 0
			for i, kg := range st.groups {
				if kg.hash > st.groups[worst].hash {
					worst = i
				}
			}
			if h >= st.groups[worst].hash {
				if a.dropped {
					if st.others == nil {
						st.others = map[string]int64{}
					}
					st.others[string(a.groupBuf)] = 1
				}
				return nil
			}
			st.drop(worst, a.dropped)
		}
		g = &keptGroup{id: string(a.groupBuf), hash: h, keys: keyValues(keys)}
		st.keep(g)
	}
	row := make([]value, len(vals))
	for i, v := range vals {
		f, ok := Numeric(v)
		row[i] = value{f: f, valid: ok}
		if ok && a.distinctArgs[i] {
			row[i].key = distinctKey(v) // a copy: the argument is volatile
		}
	}
	if a.perUnit {
		if g.units == nil {
			g.units = make([]*unitAcc, len(a.specs))
			for i := range a.specs {
				if a.specs[i].perUnit() {
					g.units[i] = &unitAcc{}
				}
			}
		}
		for i := range a.specs {
			if u := g.units[i]; u != nil {
				var v value
				if sp := &a.specs[i]; sp.kind != measure.UnitRows {
					v = row[sp.arg]
				}
				u.add(&a.specs[i], v)
			}
		}
	}
	g.seen++
	if len(g.rows) < a.lInf {
		g.rows = append(g.rows, row)
	} else if j := a.groupRand(g).Int64N(g.seen); j < int64(a.lInf) {
		g.rows[j] = row // reservoir sampling: every row kept with probability l∞/seen
	}
	return nil
}

// keyValues copies key values out of SQLite's memory (the arguments are
// volatile).
func keyValues(keys []driver.Value) []any {
	kv := make([]any, len(keys))
	for i, k := range keys {
		switch v := k.(type) {
		case []byte:
			k = string(v)
		case string:
			k = strings.Clone(v)
		}
		kv[i] = k
	}
	return kv
}

// group returns the accumulator of a key tuple, creating it. The common
// shapes skip the map: no keys, and one small integer key (a position in
// a public domain).
func (a *measureAgg) group(keys []driver.Value) *groupAcc {
	switch len(keys) {
	case 0:
		if a.only == nil {
			a.only = a.newGroup("", nil)
		}
		return a.only
	case 1:
		if i, ok := keys[0].(int64); ok && i >= 0 && i < 1<<12 {
			for int(i) >= len(a.byIndex) {
				a.byIndex = append(a.byIndex, nil)
			}
			if g := a.byIndex[i]; g != nil {
				return g
			}
			id := keyString(keys)
			g := a.groups[id]
			if g == nil {
				g = a.newGroup(id, keyValues(keys))
			}
			a.byIndex[i] = g
			return g
		}
	}
	id := keyString(keys)
	if g := a.groups[id]; g != nil {
		return g
	}
	return a.newGroup(id, keyValues(keys))
}

func (a *measureAgg) newGroup(id string, keys []any) *groupAcc {
	g := &groupAcc{keys: keys, n: make([]int64, len(a.specs)),
		sum: make([]exactsum.Acc, len(a.specs)), sq: make([]exactsum.Acc, len(a.specs)),
		hists: make([]*autobound.Histogram, len(a.specs))}
	for i, sp := range a.specs {
		if sp.kind == measure.Histogram || sp.kind == measure.HistogramSquares {
			g.hists[i] = &autobound.Histogram{}
		}
		if sp.kind == measure.Distinct {
			if g.distinct == nil {
				g.distinct = make([]map[string]struct{}, len(a.specs))
			}
			g.distinct[i] = map[string]struct{}{}
		}
		if sp.kind == measure.Quantiles || sp.kind == measure.QuantileBuckets {
			if g.trees == nil {
				g.trees = make([]map[int32]int64, len(a.specs))
			}
			g.trees[i] = map[int32]int64{}
		}
	}
	a.groups[id] = g
	a.order = append(a.order, g)
	return g
}

// addValues measures one row's argument values into the group (a scan
// without bounding: no row is kept, so the values are converted here).
func (g *groupAcc) addValues(specs []spec, vals []driver.Value) {
	for i := range specs {
		sp := &specs[i]
		if sp.kind == measure.Rows || sp.kind == measure.Units { // without bounding each row is a unit
			g.n[i]++
			continue
		}
		if sp.kind == measure.Distinct {
			if v := vals[sp.arg]; v != nil {
				if _, ok := Numeric(v); ok {
					g.distinct[i][distinctKey(v)] = struct{}{}
				}
			}
			continue
		}
		if sp.perUnit() {
			// The row is its unit's only row in the group.
			var u unitAcc
			var v value
			if sp.kind != measure.UnitRows {
				v.f, v.valid = Numeric(vals[sp.arg])
			}
			u.add(sp, v)
			g.addUnit(i, sp, &u)
			continue
		}
		if f, ok := Numeric(vals[sp.arg]); ok {
			g.addNumber(i, sp, f)
		}
	}
}

// addWeighted measures w identical rows at once (w ≥ 2; a scan without
// bounding over a source that counted them): exactly what w calls of
// addValues would measure. Counts add w; exact sums add w·x exactly
// (exactsum.AddScaled, exact for any finite x); histograms and quantile
// trees count w; a distinct value is one value however often it occurs.
func (g *groupAcc) addWeighted(specs []spec, vals []driver.Value, w int64) {
	for i := range specs {
		sp := &specs[i]
		switch {
		case sp.kind == measure.Rows || sp.kind == measure.Units:
			g.n[i] += w
		case sp.kind == measure.Distinct:
			if v := vals[sp.arg]; v != nil {
				if _, ok := Numeric(v); ok {
					g.distinct[i][distinctKey(v)] = struct{}{}
				}
			}
		case sp.perUnit():
			// Each of the w rows is its unit's only row in the group.
			var u unitAcc
			var v value
			if sp.kind != measure.UnitRows {
				v.f, v.valid = Numeric(vals[sp.arg])
			}
			u.add(sp, v)
			if c, ok := u.combined(sp); ok {
				g.n[i] += w
				if sp.kind != measure.UnitsWithValue {
					g.sum[i].AddScaled(c, w)
				}
			}
		default:
			if f, ok := Numeric(vals[sp.arg]); ok {
				g.addNumbers(i, sp, f, w)
			}
		}
	}
}

// addNumbers adds w copies of one non-NULL argument value to measurement
// i: the weighted addNumber.
func (g *groupAcc) addNumbers(i int, sp *spec, f float64, w int64) {
	switch sp.kind {
	case measure.Values:
		g.n[i] += w
	case measure.Sum:
		g.n[i] += w
		g.sum[i].AddScaled(sp.clipped(f), w)
	case measure.Squares:
		c := sp.clipped(f)
		g.n[i] += w
		g.sum[i].AddScaled(c, w)
		p := c * c // c² = p + e exactly (exactsum.AddSquare)
		g.sq[i].AddScaled(p, w)
		g.sq[i].AddScaled(math.FMA(c, c, -p), w)
	case measure.Quantiles:
		g.n[i] += w
		g.trees[i][QuantileLeaf(clip(f, sp.lo, sp.hi), sp.lo, sp.hi)] += w
	case measure.QuantileBuckets:
		g.n[i] += w
		g.trees[i][QuantileBucket(f)] += w
	case measure.Histogram:
		g.hists[i].AddN(f, w)
	case measure.HistogramSquares:
		g.hists[i].AddSquaredN(f, w)
	}
}

// addUnit adds one unit's combined value to per-unit measurement i.
func (g *groupAcc) addUnit(i int, sp *spec, u *unitAcc) {
	v, ok := u.combined(sp)
	if !ok {
		return
	}
	g.n[i]++
	if sp.kind != measure.UnitsWithValue {
		g.sum[i].Add(v)
	}
}

// addRow measures one kept row (its values already converted) into the
// group; units are counted per unit in WindowValue.
func (g *groupAcc) addRow(specs []spec, row []value) {
	for i := range specs {
		sp := &specs[i]
		switch {
		case sp.kind == measure.Rows:
			g.n[i]++
		case sp.kind == measure.Distinct:
			if v := row[sp.arg]; v.valid {
				g.distinct[i][v.key] = struct{}{}
			}
		case sp.kind == measure.Units, sp.perUnit(): // per unit: from the unit's accumulators
		default:
			if v := row[sp.arg]; v.valid {
				g.addNumber(i, sp, v.f)
			}
		}
	}
}

// addNumber adds one non-NULL argument value to measurement i.
func (g *groupAcc) addNumber(i int, sp *spec, f float64) {
	switch sp.kind {
	case measure.Values:
		g.n[i]++
	case measure.Sum:
		g.n[i]++
		g.sum[i].Add(sp.clipped(f))
	case measure.Squares:
		c := sp.clipped(f)
		g.n[i]++
		g.sum[i].Add(c)
		g.sq[i].AddSquare(c)
	case measure.Quantiles:
		g.n[i]++
		g.trees[i][QuantileLeaf(clip(f, sp.lo, sp.hi), sp.lo, sp.hi)]++
	case measure.QuantileBuckets:
		g.n[i]++
		g.trees[i][QuantileBucket(f)]++
	case measure.Histogram:
		g.hists[i].Add(f)
	case measure.HistogramSquares:
		g.hists[i].AddSquared(f)
	}
}

func (a *measureAgg) setup(args []driver.Value) error {
	h, first := a.slot, 0
	if h == 0 {
		var ok bool
		if len(args) == 0 {
			return errors.New("dpsql_measure: no handle")
		}
		if h, ok = args[0].(int64); !ok {
			return errors.New("dpsql_measure: bad handle")
		}
		first = 1
	}
	v, ok := measureConfigs.Load(h)
	if !ok {
		return errors.New("dpsql_measure: no configuration for the handle")
	}
	cfg := v.(*measureConfig)
	a.first = first
	if cfg.l0 > 0 {
		a.first++ // the unit
	}
	if cfg.weighted && cfg.l0 != 0 {
		return errors.New("dpsql_measure: weights need a scan without bounding")
	}
	nw := 0 // the weight argument
	if cfg.weighted {
		nw = 1
	}
	if len(args) < a.first+cfg.nk+nw {
		return errors.New("dpsql_measure: too few arguments")
	}
	for _, sp := range cfg.specs {
		if sp.kind != measure.Rows && sp.kind != measure.Units && sp.kind != measure.UnitRows && (sp.arg < 0 || a.first+cfg.nk+sp.arg >= len(args)-nw) {
			return errors.New("dpsql_measure: spec argument out of range")
		}
	}
	a.init, a.handle, a.key, a.specs, a.l0, a.lInf, a.nk, a.weighted = true, h, cfg.key, cfg.specs, cfg.l0, cfg.lInf, cfg.nk, cfg.weighted
	a.dropped = cfg.dropped && cfg.l0 > 0
	a.profile = cfg.profile && cfg.l0 > 0
	a.distinctArgs = map[int]bool{}
	for i := range a.specs {
		a.perUnit = a.perUnit || a.specs[i].perUnit()
		if a.specs[i].kind == measure.Distinct {
			a.distinctArgs[a.specs[i].arg] = true
		}
	}
	a.seed = seedFrom(cfg.key, cfg.fixed)
	a.units = map[string]*unitState{}
	a.groups = map[string]*groupAcc{}
	if a.profile {
		a.prof = measure.NewProfile()
	}
	if a.dropped {
		a.droppedAcc = &measure.Dropped{Share: new(big.Int)}
	}
	return nil
}

// groupRand returns the sampling stream of a unit's kept group: ChaCha8
// seeded by the scan's seed mixed with the group's keyed hash of (unit,
// keys). Each (unit, group) draws from a stream of its own, so what one
// unit keeps does not depend on how many draws other units made before it:
// the rows kept for the other units are the same whether or not a given
// unit is in the database (the coupling the sensitivity auditor relies on).
func (a *measureAgg) groupRand(g *keptGroup) *rand.Rand {
	if g.rng == nil {
		s := a.seed
		for b := 0; b < 8; b++ {
			s[b] ^= byte(g.hash >> (8 * b))
		}
		g.rng = rand.New(rand.NewChaCha8(s))
	}
	return g.rng
}

// seedFrom stretches the query key and fresh crypto randomness into a
// ChaCha8 seed: the reservoir choices are unpredictable even to someone who
// learns the key. With fixed (a test knob) the seed is the key alone.
func seedFrom(key int64, fixed bool) [32]byte {
	var seed [32]byte
	src := mechanism.CryptoSource()
	for i := 0; i < 4; i++ {
		x := src.Uint64()
		if fixed {
			x = 0
		}
		if i == 0 {
			x ^= uint64(key)
		}
		for b := 0; b < 8; b++ {
			seed[i*8+b] = byte(x >> (8 * b))
		}
	}
	return seed
}

func (a *measureAgg) WindowInverse(*sqlite.FunctionContext, []driver.Value) error {
	return errors.New("dpsql_measure is not a window function")
}

// WindowValue computes the measurements and stores them under the key.
func (a *measureAgg) WindowValue(*sqlite.FunctionContext) (driver.Value, error) {
	if a.err != nil {
		return nil, a.err
	}
	if !a.init {
		return nil, nil // no rows: exec treats a missing result as empty
	}
	a.flushUnits()
	if a.profile {
		measuredResults.Store(a.handle, &measured{profile: a.prof})
		return a.handle, nil
	}
	res := &measured{}
	for _, g := range a.order {
		res.groups = append(res.groups, g.measured(a.specs))
	}
	res.dropped = a.droppedAcc
	measuredResults.Store(a.handle, res)
	return a.handle, nil
}

// flushUnits adds the units met so far (those of the current run) to the
// groups' measurements, the profile and what bounding dropped, and
// forgets them: the scan's rows come in the order of their units
// (rewrite.Rewritten.ScanWith), so a unit whose run has ended never comes
// back, and the state held is that of one run of units, not of the table.
func (a *measureAgg) flushUnits() {
	for _, st := range a.units {
		a.flushUnit(st)
	}
	clear(a.units)
}

// flushUnit adds one unit's kept rows to its groups' measurements (or
// its groups to the profile), and its part of what bounding dropped.
func (a *measureAgg) flushUnit(st *unitState) {
	if a.profile {
		a.profRows = a.profRows[:0]
		for _, kg := range st.groups {
			a.profRows = append(a.profRows, kg.seen)
		}
		a.prof.AddUnit(a.profRows)
		return
	}
	for _, kg := range st.groups {
		g := a.groups[kg.id]
		if g == nil {
			g = a.newGroup(kg.id, kg.keys)
		}
		for _, row := range kg.rows {
			g.addRow(a.specs, row)
		}
		for i, sp := range a.specs {
			if sp.kind == measure.Units {
				g.n[i]++
			}
			if kg.units != nil && kg.units[i] != nil {
				g.addUnit(i, &a.specs[i], kg.units[i])
			}
		}
	}
	if a.dropped {
		a.droppedAcc.Add(st.dropped(int64(a.l0), int64(a.lInf)))
	}
}

// unitOf moves the scan to unit (nextUnit) and returns its state.
func (a *measureAgg) unitOf(unit driver.Value) (*unitState, error) {
	if err := a.nextUnit(unit); err != nil {
		return nil, err
	}
	a.unitBuf = appendKeys(a.unitBuf[:0], unit)
	st := a.units[string(a.unitBuf)] // a lookup: no copy of the key
	if st == nil {
		st = &unitState{}
		a.units[string(a.unitBuf)] = st
	}
	return st, nil
}

// unitRun is what the scan's order knows of a unit: its class (numbers,
// text, blobs, in SQLite's order) and its value as a float64 (numbers)
// or its bytes (text, blobs, compared as BINARY orders them). Units that
// SQLite orders as equal (1 and 1.0, 0.0 and -0.0) share a run; the
// float64 of a number is monotone in SQLite's order, so a run, once
// ended, never comes back.
type unitRun struct {
	class byte
	num   float64
	bytes string
}

// runOf is unit's run (bytes not copied: compare before keeping it).
func runOf(unit driver.Value) unitRun {
	switch v := unit.(type) {
	case int64:
		return unitRun{class: 1, num: float64(v)}
	case float64:
		return unitRun{class: 1, num: v}
	case string:
		return unitRun{class: 2, bytes: v}
	case []byte:
		return unitRun{class: 3, bytes: string(v)}
	}
	return unitRun{}
}

// compareRuns orders two runs as the scan's ORDER BY does.
func compareRuns(x, y unitRun) int {
	switch {
	case x.class != y.class:
		return int(x.class) - int(y.class)
	case x.class == 1:
		return cmp.Compare(x.num, y.num)
	}
	return strings.Compare(x.bytes, y.bytes)
}

// nextUnit moves the scan to the run of unit, flushing the units of the
// run it leaves. A unit before the current run means the rows are not
// in the order of their units (never, under SQLite's ORDER BY): the scan
// fails rather than measure a unit twice.
func (a *measureAgg) nextUnit(unit driver.Value) error {
	r := runOf(unit)
	if a.inRun {
		c := compareRuns(r, a.run)
		if c == 0 {
			return nil
		}
		if c < 0 {
			return errors.New("dpsql_measure: the rows are not in the order of their units")
		}
		a.flushUnits()
	}
	r.bytes = strings.Clone(r.bytes) // the argument is volatile
	a.run, a.inRun = r, true
	return nil
}

// measured is the group's measurement of each spec.
func (g *groupAcc) measured(specs []spec) *measuredGroup {
	mg := &measuredGroup{keys: g.keys, values: make([]*big.Float, len(specs)), hists: g.hists, trees: g.trees}
	for i, sp := range specs {
		switch sp.kind {
		case measure.Histogram, measure.HistogramSquares:
		case measure.Sum, measure.UnitSum, measure.UnitMean, measure.UnitRows, measure.UnitValues:
			mg.values[i] = g.sum[i].Big()
		case measure.Distinct:
			mg.values[i] = new(big.Float).SetInt64(int64(len(g.distinct[i])))
		case measure.Squares:
			mg.values[i] = exactsum.CentredSquares(g.sum[i].Big(), g.sq[i].Big(), g.n[i], planner.Midpoint(sp.lo, sp.hi))
		default:
			mg.values[i] = new(big.Float).SetInt64(g.n[i])
		}
	}
	return mg
}

// fromCompiled turns a compiled measurement's groups into the scan's
// measurements. The detail specs are measured here from each group's
// distinct values and their row counts, as weighted rows are.
func fromCompiled(st *measure.Measured, specs []spec) *measured {
	pos := map[int]int{} // plan argument → position in a detail tuple
	for j, a := range st.Detail {
		pos[a] = j
	}
	var dspecs []spec
	var at []int // dspecs[k] is specs[at[k]]
	for i, sp := range specs {
		if st.DetailSpec[i] {
			sp.arg = pos[sp.arg]
			dspecs = append(dspecs, sp)
			at = append(at, i)
		}
	}
	res := &measured{dropped: st.Dropped, profile: st.Profile}
	for _, g := range st.Groups {
		mg := &measuredGroup{keys: g.Keys, values: g.Values}
		if len(dspecs) > 0 {
			a := &measureAgg{specs: dspecs, groups: map[string]*groupAcc{}}
			acc := a.newGroup("", g.Keys)
			for r, row := range g.Details {
				vals := make([]driver.Value, len(row))
				for j, v := range row {
					vals[j] = v
				}
				if w := g.Weights[r]; w == 1 {
					acc.addValues(dspecs, vals)
				} else if w > 1 {
					acc.addWeighted(dspecs, vals, w)
				}
			}
			dm := acc.measured(dspecs)
			mg.hists = make([]*autobound.Histogram, len(specs))
			mg.trees = make([]map[int32]int64, len(specs))
			for k, i := range at {
				mg.values[i], mg.hists[i] = dm.values[k], dm.hists[k]
				if dm.trees != nil {
					mg.trees[i] = dm.trees[k]
				}
			}
		}
		res.groups = append(res.groups, mg)
	}
	return res
}

func (a *measureAgg) Final(*sqlite.FunctionContext) {}
