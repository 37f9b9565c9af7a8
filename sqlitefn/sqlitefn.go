// Package sqlitefn holds the few Go functions that the SQLite dialect of
// the compiled measurement (measuresql.SQLite) calls, and the keyed hash
// (HashValues) the reference evaluator (exec) shares with it, where SQLite has no
// exact, total primitive of its own: a keyed hash of any values, exact
// sums beyond 64 bits (SQLite's SUM raises on overflow, and its integer
// arithmetic turns to doubles), rounding half to even, and RE2 matching.
//
// Every function is total: whatever values a table holds, none returns an
// error, so whether a compiled statement succeeds never depends on the
// rows (the backend invariant, docs/privacy.md). A wide integer travels
// between them as SQLite's 64-bit INTEGER when it fits and as its decimal
// TEXT when it does not; each function reads both.
package sqlitefn

import (
	"database/sql/driver"
	"math"
	"math/big"
	"math/bits"
	"regexp"
	"strings"
	"sync"

	sqlite "modernc.org/sqlite"
)

// The functions' names, as the dialect prints them.
const (
	Hash    = "dpsql_hash"     // dpsql_hash(key, v1, …): a 64-bit hash of the values' classes and bytes, mixed with key
	Sum     = "dpsql_sum"      // dpsql_sum(x): the exact sum of wide integers (NULL for none), also as a window function
	Mul     = "dpsql_mul"      // dpsql_mul(x, y): x·y of wide integers
	Sub     = "dpsql_sub"      // dpsql_sub(x, y): x − y of wide integers
	Div     = "dpsql_div"      // dpsql_div(x, y): x / y truncated toward zero, y > 0 (NULL for y NULL or ≤ 0)
	Round   = "dpsql_round"    // dpsql_round(x): a double rounded half to even, as a 64-bit integer (saturated)
	Match   = "dpsql_match"    // dpsql_match(x, re): whether text x matches the RE2 expression re
	SumClip = "dpsql_sum_clip" // dpsql_sum_clip(x, lo, hi): the exact sum of wide integers clipped to [lo, hi]
	// Translate is dpsql_translate(x, from, to): each character of x
	// found in from replaced by the one at its place in to (dropped past
	// its end), as translate is in DuckDB and PostgreSQL.
	Translate = "dpsql_translate"
)

// Register registers the functions with reg (sqlite.RegisterFunction, or
// a private driver's RegisterFunction).
func Register(reg func(string, *sqlite.FunctionImpl) error) error {
	scalars := []struct {
		name string
		n    int32
		f    func([]driver.Value) driver.Value
	}{
		{Hash, -1, hash}, {Mul, 2, mul}, {Sub, 2, sub}, {Div, 2, div}, {Round, 1, round}, {Match, 2, match}, {Translate, 3, translate},
	}
	for _, s := range scalars {
		f := s.f
		if err := reg(s.name, &sqlite.FunctionImpl{NArgs: s.n, Deterministic: true,
			Scalar: func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) { return f(args), nil }}); err != nil {
			return err
		}
	}
	if err := reg(Sum, &sqlite.FunctionImpl{NArgs: 1, Deterministic: true,
		MakeAggregate: func(sqlite.FunctionContext) (sqlite.AggregateFunction, error) { return &sum{}, nil }}); err != nil {
		return err
	}
	return reg(SumClip, &sqlite.FunctionImpl{NArgs: 3, Deterministic: true,
		MakeAggregate: func(sqlite.FunctionContext) (sqlite.AggregateFunction, error) { return &sum{clip: true}, nil }})
}

func init() {
	if err := Register(sqlite.RegisterFunction); err != nil {
		panic("sqlitefn: " + err.Error())
	}
}

// hash is the keyed hash as SQLite's INTEGER.
func hash(args []driver.Value) driver.Value { return int64(HashValues(args)) }

// HashValues is the keyed hash of the values (the key among them):
// FNV-1a over each value's class and bytes, then a splitmix64 finalizer.
// The reference evaluator orders a unit's groups by it too.
func HashValues(args []driver.Value) uint64 {
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

// wide reads a wide integer: an INTEGER, a decimal TEXT, or an integral
// REAL (which the dialect never passes; read exactly, a fraction
// truncated). ok is false for NULL and for anything else.
func wide(v driver.Value) (*big.Int, bool) {
	switch v := v.(type) {
	case int64:
		return big.NewInt(v), true
	case string:
		x, ok := new(big.Int).SetString(v, 10)
		return x, ok
	case []byte:
		x, ok := new(big.Int).SetString(string(v), 10)
		return x, ok
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false
		}
		x, _ := big.NewFloat(math.Trunc(v)).Int(nil)
		return x, true
	}
	return nil, false
}

// result is a wide integer as SQLite holds it: INTEGER when it fits,
// decimal TEXT when it does not.
func result(x *big.Int) driver.Value {
	if x.IsInt64() {
		return x.Int64()
	}
	return x.String()
}

func mul(args []driver.Value) driver.Value {
	if a, b, ok := small(args); ok {
		if hi, lo := bits.Mul64(abs(a), abs(b)); hi == 0 && lo < 1<<63 {
			if (a < 0) != (b < 0) {
				return -int64(lo)
			}
			return int64(lo)
		}
	}
	x, ok1 := wide(args[0])
	y, ok2 := wide(args[1])
	if !ok1 || !ok2 {
		return nil
	}
	return result(x.Mul(x, y))
}

func sub(args []driver.Value) driver.Value {
	if a, b, ok := small(args); ok {
		if d := a - b; (a >= 0) == (b >= 0) || (d >= 0) == (a >= 0) {
			return d
		}
	}
	x, ok1 := wide(args[0])
	y, ok2 := wide(args[1])
	if !ok1 || !ok2 {
		return nil
	}
	return result(x.Sub(x, y))
}

func div(args []driver.Value) driver.Value {
	x, ok1 := wide(args[0])
	y, ok2 := wide(args[1])
	if !ok1 || !ok2 || y.Sign() <= 0 {
		return nil
	}
	return result(x.Quo(x, y)) // Quo truncates toward zero
}

// small is both arguments as int64s, when they are.
func small(args []driver.Value) (int64, int64, bool) {
	a, ok1 := args[0].(int64)
	b, ok2 := args[1].(int64)
	return a, b, ok1 && ok2
}

func abs(a int64) uint64 {
	if a < 0 {
		return uint64(-a) // -2^63 too: its magnitude as a uint64
	}
	return uint64(a)
}

// round rounds a double half to even, saturated to int64 (the dialect
// passes magnitudes of at most 2^62); an integer is itself, NULL NULL.
func round(args []driver.Value) driver.Value {
	switch v := args[0].(type) {
	case int64:
		return v
	case float64:
		if math.IsNaN(v) {
			return nil
		}
		r := math.RoundToEven(v)
		switch {
		case r >= 0x1p63:
			return int64(math.MaxInt64)
		case r < -0x1p63:
			return int64(math.MinInt64)
		}
		return int64(r)
	}
	return nil
}

var regexps sync.Map // expression → *regexp.Regexp (nil when it does not compile)

func match(args []driver.Value) driver.Value {
	x, ok1 := text(args[0])
	re, ok2 := text(args[1])
	if !ok1 || !ok2 {
		return nil
	}
	r, ok := regexps.Load(re)
	if !ok {
		c, err := regexp.Compile(re)
		if err != nil {
			c = nil
		}
		r, _ = regexps.LoadOrStore(re, c)
	}
	c := r.(*regexp.Regexp)
	if c == nil {
		return nil // not reached: the dialect passes expressions it built
	}
	if c.MatchString(x) {
		return int64(1)
	}
	return int64(0)
}

func translate(args []driver.Value) driver.Value {
	x, ok1 := text(args[0])
	from, ok2 := text(args[1])
	to, ok3 := text(args[2])
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	toRunes := []rune(to)
	place := map[rune]int{}
	for i, r := range []rune(from) {
		if _, seen := place[r]; !seen {
			place[r] = i
		}
	}
	var b strings.Builder
	for _, r := range x {
		i, ok := place[r]
		switch {
		case !ok:
			b.WriteRune(r)
		case i < len(toRunes):
			b.WriteRune(toRunes[i])
		}
	}
	return b.String()
}

func text(v driver.Value) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	}
	return "", false
}

// sum is dpsql_sum (and dpsql_sum_clip, with clip): an exact sum in an
// int64 that moves to a big.Int when it would overflow.
type sum struct {
	n      int64 // non-NULL values summed
	small  int64
	big    *big.Int // the sum, once it left int64
	clip   bool
	lo, hi *big.Int
}

func (s *sum) Step(_ *sqlite.FunctionContext, args []driver.Value) error {
	s.add(args, 1)
	return nil
}

func (s *sum) WindowInverse(_ *sqlite.FunctionContext, args []driver.Value) error {
	s.add(args, -1)
	return nil
}

func (s *sum) add(args []driver.Value, sign int64) {
	if s.clip && s.lo == nil {
		s.lo, _ = wide(args[1])
		s.hi, _ = wide(args[2])
	}
	if args[0] == nil {
		return
	}
	s.n += sign
	if v, ok := args[0].(int64); ok && s.big == nil {
		if sign < 0 {
			if v == math.MinInt64 {
				goto slow
			}
			v = -v
		}
		if t := s.small + v; (s.small >= 0) != (v >= 0) || (t >= 0) == (v >= 0) {
			s.small = t
			return
		}
	}
slow:
	x, ok := wide(args[0])
	if !ok {
		s.n -= sign
		return
	}
	if s.big == nil {
		s.big = big.NewInt(s.small)
	}
	if sign < 0 {
		s.big.Sub(s.big, x)
	} else {
		s.big.Add(s.big, x)
	}
}

func (s *sum) WindowValue(*sqlite.FunctionContext) (driver.Value, error) {
	if s.n == 0 {
		return nil, nil
	}
	total := s.big
	if total == nil {
		total = big.NewInt(s.small)
	}
	if s.clip && s.lo != nil && s.hi != nil {
		switch {
		case total.Cmp(s.lo) < 0:
			total = s.lo
		case total.Cmp(s.hi) > 0:
			total = s.hi
		}
	}
	return result(total), nil
}

func (s *sum) Final(*sqlite.FunctionContext) {}
