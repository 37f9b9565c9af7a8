package exec

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	sqlite "modernc.org/sqlite"

	"github.com/dpsql/dpsql/autobound"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/rewrite"
)

// The bounded aggregate performs contribution bounding and the per-group
// measurements in one streaming pass, inside SQLite's scan:
//
//	dpsql_bounded(key, specs, l0, l∞, nk, unit, k1..k_nk, a1..a_m)
//
// For each privacy unit it keeps the l0 groups with the smallest keyed hash
// of (unit, group) — a uniform random choice of groups, consistent however
// often a group reappears — and, within each kept group, a uniform random
// sample of at most l∞ rows (reservoir sampling from a generator seeded by
// the per-query key). At the end it computes the measurements named in
// specs over the kept rows, per group. Memory is O(units · l0 · l∞), not
// O(rows).
//
// Why it is private: what a unit keeps depends only on its own rows and the
// key, so adding or removing a unit changes only its own ≤ l0·l∞ kept
// rows, as the cells' sensitivities assume.
//
// The result does not travel through SQLite: the aggregate returns the key
// as a handle and leaves the measurements in boundedResults, from which
// exec takes them.
func init() {
	sqlite.MustRegisterFunction(rewrite.BoundedFunction, &sqlite.FunctionImpl{
		NArgs:         -1,
		Deterministic: true,
		MakeAggregate: func(sqlite.FunctionContext) (sqlite.AggregateFunction, error) {
			return &boundedAgg{}, nil
		},
	})
}

// boundedResults holds finished measurements by query key.
var boundedResults sync.Map // int64 → *boundedResult

// boundedResult is the measurements of every group that kept a row.
type boundedResult struct {
	groups []*boundedGroup
}

type boundedGroup struct {
	keys   []any
	values []float64              // per spec (histogram specs: unused)
	hists  []*autobound.Histogram // per spec (nil unless a histogram spec)
	units  float64                // units with a kept row here
}

// takeBounded removes and returns the result stored under key.
func takeBounded(key int64) (*boundedResult, bool) {
	v, ok := boundedResults.LoadAndDelete(key)
	if !ok {
		return nil, false
	}
	return v.(*boundedResult), true
}

// value is one argument value of a kept row.
type value struct {
	f    float64
	kind uint8 // 0 NULL, 1 number, 2 text or blob (sorts above every number)
}

type keptGroup struct {
	id   string // keyString of keys
	hash uint64
	keys []any
	seen int64     // rows met in this group
	rows [][]value // at most l∞
}

type unitState struct {
	groups []*keptGroup // at most l0, by group key
}

type spec struct {
	kind   byte // n, c, s, q, u, h
	arg    int
	lo, hi float64
}

type boundedAgg struct {
	init     bool
	key      int64
	specs    []spec
	l0, lInf int
	nk       int
	rng      *rand.Rand
	units    map[string]*unitState
	err      error
}

func parseSpecs(s string) ([]spec, error) {
	var out []spec
	for _, part := range strings.Split(s, ";") {
		if part == "" {
			return nil, errors.New("empty spec")
		}
		f := strings.Split(part[1:], ":")
		sp := spec{kind: part[0]}
		var err error
		if len(f) > 0 && f[0] != "" {
			if sp.arg, err = strconv.Atoi(f[0]); err != nil {
				return nil, err
			}
		}
		if sp.kind == 's' || sp.kind == 'q' {
			if len(f) != 3 {
				return nil, fmt.Errorf("spec %q needs bounds", part)
			}
			if sp.lo, err = strconv.ParseFloat(f[1], 64); err != nil {
				return nil, err
			}
			if sp.hi, err = strconv.ParseFloat(f[2], 64); err != nil {
				return nil, err
			}
		}
		out = append(out, sp)
	}
	return out, nil
}

func toInt(v driver.Value) (int, bool) {
	i, ok := v.(int64)
	return int(i), ok
}

// keyString encodes a group's key values for map lookups.
func keyString(vals []driver.Value) string {
	var sb strings.Builder
	for _, v := range vals {
		switch v := v.(type) {
		case nil:
			sb.WriteString("n;")
		case int64:
			sb.WriteString("i" + strconv.FormatInt(v, 10) + ";")
		case float64:
			sb.WriteString("f" + strconv.FormatUint(math.Float64bits(v), 16) + ";")
		case string:
			sb.WriteString("s" + strconv.Itoa(len(v)) + ":" + v + ";")
		case []byte:
			sb.WriteString("b" + strconv.Itoa(len(v)) + ":" + string(v) + ";")
		}
	}
	return sb.String()
}

func (a *boundedAgg) Step(_ *sqlite.FunctionContext, args []driver.Value) error {
	if a.err != nil {
		return a.err
	}
	if !a.init {
		if err := a.setup(args); err != nil {
			a.err = err
			return err
		}
	}
	unit := args[5]
	if unit == nil {
		return nil // rows without a unit belong to nobody
	}
	keys := args[6 : 6+a.nk]
	ukey := keyString([]driver.Value{unit})
	st := a.units[ukey]
	if st == nil {
		st = &unitState{}
		a.units[ukey] = st
	}
	gkey := keyString(keys)
	var g *keptGroup
	for _, kg := range st.groups {
		if kg.id == gkey {
			g = kg
			break
		}
	}
	if g == nil {
		h := hashValues(append([]driver.Value{a.key, unit}, keys...))
		if len(st.groups) >= a.l0 {
			// Keep the l0 groups with the smallest hashes.
			worst := 0
			for i, kg := range st.groups {
				if kg.hash > st.groups[worst].hash {
					worst = i
				}
			}
			if h >= st.groups[worst].hash {
				return nil
			}
			st.groups = append(st.groups[:worst], st.groups[worst+1:]...)
		}
		kv := make([]any, len(keys))
		for i, k := range keys {
			if b, ok := k.([]byte); ok {
				k = string(b)
			}
			kv[i] = k
		}
		g = &keptGroup{id: gkey, hash: h, keys: kv}
		st.groups = append(st.groups, g)
	}
	row := make([]value, len(args)-6-a.nk)
	for i, v := range args[6+a.nk:] {
		switch v := v.(type) {
		case nil:
		case int64:
			row[i] = value{f: float64(v), kind: 1}
		case float64:
			row[i] = value{f: v, kind: 1}
		default:
			row[i] = value{kind: 2}
		}
	}
	g.seen++
	if len(g.rows) < a.lInf {
		g.rows = append(g.rows, row)
	} else if j := a.rng.Int64N(g.seen); j < int64(a.lInf) {
		g.rows[j] = row // reservoir sampling: every row kept with probability l∞/seen
	}
	return nil
}

func (a *boundedAgg) setup(args []driver.Value) error {
	if len(args) < 6 {
		return errors.New("dpsql_bounded: too few arguments")
	}
	key, ok := args[0].(int64)
	specText, ok2 := args[1].(string)
	l0, ok3 := toInt(args[2])
	lInf, ok4 := toInt(args[3])
	nk, ok5 := toInt(args[4])
	if !ok || !ok2 || !ok3 || !ok4 || !ok5 || l0 < 1 || lInf < 1 || nk < 0 || len(args) < 6+nk {
		return errors.New("dpsql_bounded: bad arguments")
	}
	specs, err := parseSpecs(specText)
	if err != nil {
		return fmt.Errorf("dpsql_bounded: %w", err)
	}
	a.init, a.key, a.specs, a.l0, a.lInf, a.nk = true, key, specs, l0, lInf, nk
	a.rng = rand.New(rand.NewChaCha8(seedFrom(key)))
	a.units = map[string]*unitState{}
	return nil
}

// seedFrom stretches the query key and fresh crypto randomness into a
// ChaCha8 seed: the reservoir choices are unpredictable even to someone who
// learns the key.
func seedFrom(key int64) [32]byte {
	var seed [32]byte
	src := mechanism.CryptoSource()
	for i := 0; i < 4; i++ {
		x := src.Uint64()
		if i == 0 {
			x ^= uint64(key)
		}
		for b := 0; b < 8; b++ {
			seed[i*8+b] = byte(x >> (8 * b))
		}
	}
	return seed
}

func (a *boundedAgg) WindowInverse(*sqlite.FunctionContext, []driver.Value) error {
	return errors.New("dpsql_bounded is not a window function")
}

// WindowValue computes the measurements and stores them under the key.
func (a *boundedAgg) WindowValue(*sqlite.FunctionContext) (driver.Value, error) {
	if a.err != nil {
		return nil, a.err
	}
	if !a.init {
		return nil, nil // no rows: exec treats a missing result as empty
	}
	res := &boundedResult{}
	index := map[string]*boundedGroup{}
	for _, st := range a.units {
		for _, kg := range st.groups {
			k := kg.id
			bg := index[k]
			if bg == nil {
				bg = &boundedGroup{keys: kg.keys, values: make([]float64, len(a.specs)), hists: make([]*autobound.Histogram, len(a.specs))}
				for i, sp := range a.specs {
					if sp.kind == 'h' {
						bg.hists[i] = &autobound.Histogram{}
					}
				}
				index[k] = bg
				res.groups = append(res.groups, bg)
			}
			bg.units++
			for i, sp := range a.specs {
				switch sp.kind {
				case 'n':
					bg.values[i] += float64(len(kg.rows))
				case 'u':
					bg.values[i]++
				default:
					for _, row := range kg.rows {
						v := row[sp.arg]
						if v.kind == 0 {
							continue
						}
						switch sp.kind {
						case 'c':
							bg.values[i]++
						case 's':
							bg.values[i] += clipValue(v, sp.lo, sp.hi)
						case 'q':
							d := clipValue(v, sp.lo, sp.hi) - (sp.lo/2 + sp.hi/2)
							bg.values[i] += d * d
						case 'h':
							if v.kind == 2 {
								bg.hists[i].AddAbove()
							} else {
								bg.hists[i].Add(v.f)
							}
						}
					}
				}
			}
		}
	}
	boundedResults.Store(a.key, res)
	return a.key, nil
}

// clipValue clips as the SQL CASE does: text sorts above every number.
func clipValue(v value, lo, hi float64) float64 {
	if v.kind == 2 || v.f > hi {
		return hi
	}
	if v.f < lo {
		return lo
	}
	return v.f
}

func (a *boundedAgg) Final(*sqlite.FunctionContext) {}

// hashValues is the keyed hash of dpsql_hash.
func hashValues(args []driver.Value) uint64 {
	h := uint64(14695981039346656037)
	mix := func(b byte) { h = (h ^ uint64(b)) * 1099511628211 }
	mix64 := func(x uint64) {
		for i := 0; i < 8; i++ {
			mix(byte(x >> (8 * i)))
		}
	}
	for _, a := range args {
		switch v := a.(type) {
		case nil:
			mix(0)
		case int64:
			mix(1)
			mix64(uint64(v))
		case float64:
			mix(2)
			mix64(math.Float64bits(v))
		case string:
			mix(3)
			for i := 0; i < len(v); i++ {
				mix(v[i])
			}
			mix64(uint64(len(v)))
		case []byte:
			mix(4)
			for _, c := range v {
				mix(c)
			}
			mix64(uint64(len(v)))
		}
	}
	h += 0x9e3779b97f4a7c15
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9
	h = (h ^ (h >> 27)) * 0x94d049bb133111eb
	return h ^ (h >> 31)
}
