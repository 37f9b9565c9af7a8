// Package exactsum adds float64 values without rounding.
//
// Where it sits: exec's measurement aggregate and autobound's histogram
// accumulate clipped values with it, and exec hands the exact totals to the
// noise. Privacy needs this: the Laplace mechanism's sensitivity is a claim
// about the exact clipped sum, and a float64 running sum can move by far
// more than the sensitivity between neighbouring databases (rounding far
// from zero, cancellation after centring), which noise calibrated to the
// sensitivity does not hide.
//
// An Acc keeps, per binary exponent e, the 128-bit two's-complement sum of
// the integer mantissas m of the values m·2^e added so far (|m| < 2^53, so
// 2^64 additions cannot overflow). The exact total is then Σ sum_e·2^e,
// which Big returns as a big.Float with enough precision to hold it
// exactly. Adding costs O(1); memory grows with the range of exponents
// seen, at most about 2,100 entries.
package exactsum

import (
	"math"
	"math/big"
	"math/bits"
)

// Acc is an exact sum of float64 values. The zero value is an empty sum.
// It is not safe for concurrent use.
type Acc struct {
	base int       // exponent of sums[0]
	sums []uint128 // sums[i]: Σ mantissas with exponent base+i
}

type uint128 struct{ hi, lo uint64 }

// Add adds x exactly. x must be finite; NaN and ±Inf are ignored (the
// callers clip every value into a finite range first).
func (a *Acc) Add(x float64) {
	b := math.Float64bits(x)
	e := int(b>>52) & 0x7ff
	if e == 0x7ff || b<<1 == 0 { // NaN, ±Inf, ±0
		return
	}
	m := b & (1<<52 - 1)
	if e == 0 {
		e = 1 // subnormal: m·2^(1−1075)
	} else {
		m |= 1 << 52
	}
	exp := e - 1075
	if i := exp - a.base; uint(i) < uint(len(a.sums)) {
		s := &a.sums[i]
		var c uint64
		if b>>63 == 1 {
			s.lo, c = bits.Sub64(s.lo, m, 0)
			s.hi -= c
		} else {
			s.lo, c = bits.Add64(s.lo, m, 0)
			s.hi += c
		}
		return
	}
	a.addMant(exp, m, b>>63 == 1)
}

// addMant adds ±m·2^exp (the slow path of Add: a new exponent).
func (a *Acc) addMant(exp int, m uint64, neg bool) {
	v := uint128{lo: m}
	if neg {
		var c uint64
		v.lo, c = bits.Sub64(0, m, 0)
		v.hi, _ = bits.Sub64(0, 0, c)
	}
	a.addWide(exp, v)
}

// AddSquare adds x² exactly (up to 2^-1074 per call when x² underflows):
// x·x = p + e with p the rounded product and e = fma(x, x, −p) its error.
func (a *Acc) AddSquare(x float64) {
	p := x * x
	a.Add(p)
	a.Add(math.FMA(x, x, -p))
}

// AddNegated subtracts every value of o.
func (a *Acc) AddNegated(o *Acc) {
	for i, s := range o.sums {
		if s == (uint128{}) {
			continue
		}
		var neg uint128
		var c uint64
		neg.lo, c = bits.Sub64(0, s.lo, 0)
		neg.hi, _ = bits.Sub64(0, s.hi, c)
		a.addWide(o.base+i, neg)
	}
}

// AddAcc adds every value of o.
func (a *Acc) AddAcc(o *Acc) {
	for i, s := range o.sums {
		if s != (uint128{}) {
			a.addWide(o.base+i, s)
		}
	}
}

// addWide adds the 128-bit two's-complement sum s of mantissas with
// exponent exp, growing the window of exponents as needed.
func (a *Acc) addWide(exp int, s uint128) {
	if len(a.sums) == 0 {
		a.base = exp
		a.sums = make([]uint128, 1, 8)
	}
	if exp < a.base {
		grow := a.base - exp
		n := make([]uint128, len(a.sums)+grow, cap(a.sums)+grow)
		copy(n[grow:], a.sums)
		a.sums, a.base = n, exp
	}
	j := exp - a.base
	for j >= len(a.sums) {
		a.sums = append(a.sums, uint128{})
	}
	d := &a.sums[j]
	var c uint64
	d.lo, c = bits.Add64(d.lo, s.lo, 0)
	d.hi, _ = bits.Add64(d.hi, s.hi, c)
}

// AddScaled adds k·x for a count k ≥ 0, exactly, for every finite x:
// with x = m·2^e, the product m·k (< 2^116) is added in 52-bit pieces at
// exponents e, e+52, e+104, so each exponent's sum grows by less than
// 2^53 per call, as with Add.
func (a *Acc) AddScaled(x float64, k int64) {
	b := math.Float64bits(x)
	e := int(b>>52) & 0x7ff
	if k <= 0 || e == 0x7ff || b<<1 == 0 { // nothing to add, NaN, ±Inf, ±0
		return
	}
	m := b & (1<<52 - 1)
	if e == 0 {
		e = 1
	} else {
		m |= 1 << 52
	}
	exp, neg := e-1075, b>>63 == 1
	hi, lo := bits.Mul64(m, uint64(k))
	for shift := 0; hi != 0 || lo != 0; shift += 52 {
		if piece := lo & (1<<52 - 1); piece != 0 {
			a.addMant(exp+shift, piece, neg)
		}
		lo = lo>>52 | hi<<12
		hi >>= 52
	}
}

// Big returns the exact sum.
func (a *Acc) Big() *big.Float {
	total := new(big.Int)
	for i := len(a.sums) - 1; i >= 0; i-- {
		total.Lsh(total, 1)
		s := a.sums[i]
		if s == (uint128{}) {
			continue
		}
		v := new(big.Int).SetUint64(s.hi)
		v.Lsh(v, 64)
		v.Or(v, new(big.Int).SetUint64(s.lo))
		if s.hi>>63 == 1 { // negative in two's complement
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		total.Add(total, v)
	}
	prec := uint(total.BitLen())
	if prec < 64 {
		prec = 64
	}
	f := new(big.Float).SetPrec(prec).SetInt(total)
	return f.SetMantExp(f, a.base)
}

// CentredSquares returns Σ (x − m)² = Σx² − 2m·Σx + m²·n exactly, from
// the exact Σx and Σx² of n values.
func CentredSquares(sum, sq *big.Float, n int64, m float64) *big.Float {
	const prec = 4096 // wide enough for every product of float64 magnitudes here
	bm := new(big.Float).SetPrec(prec).SetFloat64(m)
	out := new(big.Float).SetPrec(prec).Set(sq)
	t := new(big.Float).SetPrec(prec).Mul(bm, sum)
	out.Sub(out, t.Mul(t, big.NewFloat(2)))
	t2 := new(big.Float).SetPrec(prec).Mul(bm, bm)
	t2.Mul(t2, new(big.Float).SetPrec(prec).SetInt64(n))
	return out.Add(out, t2)
}
