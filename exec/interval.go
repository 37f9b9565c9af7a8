package exec

import (
	"fmt"
	"math"
	"strings"

	"github.com/dpsql/dpsql/interval"
	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/planner"
)

// Interval is a released value's 95% interval (package interval).
type Interval = interval.Interval

// Bias flags a value whose measured data may differ from the raw table's
// (package interval).
type Bias = interval.Bias

// intervalLevel is the intervals' confidence level.
const intervalLevel = 0.95

// noiseOf describes one cell's noise: Laplace with scale b, or Gaussian
// with standard deviation σ (scale).
type noiseOf struct {
	gaussian bool
	scale    float64
}

// cellNoise is the noise each cell of q got, with its run-time bounds.
func cellNoise(q *planner.PrivateQuery, cells []cellBounds) []noiseOf {
	out := make([]noiseOf, len(q.Cells))
	for i, c := range q.Cells {
		if c.Gaussian {
			out[i] = noiseOf{gaussian: true, scale: mechanism.GaussianSigma(c.L2Sensitivity(cells[i].sens), c.Rho)}
		} else {
			out[i] = noiseOf{scale: mechanism.LaplaceScale(cells[i].sens, c.Epsilon)}
		}
	}
	return out
}

// halfWidth returns t with P(|Σ w_k X_k| > t) = alpha for the independent
// noises X_k: exact for Gaussian noises (a Gaussian), and for Laplace
// noises from the distribution of their weighted sum (a signed mixture of
// Laplace distributions: the characteristic function Π 1/(1 + s_k²ω²)
// splits into partial fractions).
func halfWidth(ws []float64, ns []noiseOf, alpha float64) float64 {
	var gaussVar float64
	var scales []float64
	for k, w := range ws {
		s := math.Abs(w) * ns[k].scale
		if s == 0 || math.IsNaN(s) {
			continue
		}
		if ns[k].gaussian {
			gaussVar += s * s
		} else {
			scales = append(scales, s)
		}
	}
	switch {
	case len(scales) == 0:
		return mechanism.GaussianErrorBound(math.Sqrt(gaussVar), alpha)
	case gaussVar > 0:
		// Not produced by one aggregate's cells (a query's cells are all
		// Laplace or all Gaussian); a union bound keeps it honest.
		return mechanism.GaussianErrorBound(math.Sqrt(gaussVar), alpha/2) + laplaceSumHalfWidth(scales, alpha/2)
	}
	return laplaceSumHalfWidth(scales, alpha)
}

// laplaceSumHalfWidth is t with P(|Σ L_k| > t) = alpha for independent
// Laplace variables of scales s_k.
func laplaceSumHalfWidth(s []float64, alpha float64) float64 {
	if len(s) == 1 {
		return s[0] * math.Log(1/alpha)
	}
	if len(s) > 3 {
		return cornishFisherHalfWidth(s, alpha)
	}
	// Equal scales make the partial fractions degenerate; nearby distinct
	// scales (relative 1e-4, rounded up) give the same tail to 1e-4.
	ps := make([]float64, len(s))
	for k := range s {
		ps[k] = s[k] * (1 + 1e-4*float64(k))
	}
	coef := make([]float64, len(ps))
	for k := range ps {
		a := 1.0
		for j := range ps {
			if j != k {
				a *= ps[k] * ps[k] / (ps[k]*ps[k] - ps[j]*ps[j])
			}
		}
		coef[k] = a
	}
	tail := func(t float64) float64 { // P(|Z| > t)
		p := 0.0
		for k := range ps {
			p += coef[k] * math.Exp(-t/ps[k])
		}
		return p
	}
	lo, hi := 0.0, 0.0
	for _, x := range ps {
		hi += x * math.Log(1/alpha) * 2
	}
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := (lo + hi) / 2
		if tail(mid) > alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// aggregateInterval is the 95% interval of aggregate a in one group, from
// its noisy cells (noisy) and their noises; ok is false for aggregates
// without one (percentiles).
func aggregateInterval(a *planner.Aggregate, noisy []float64, ns []noiseOf, lo, hi float64) (Interval, bool) {
	alpha := 1 - intervalLevel
	one := func(i int) float64 { return halfWidth([]float64{1}, []noiseOf{ns[i]}, alpha) }
	switch a.Kind {
	case planner.AggCount:
		// The whole numbers within h of c; when h < 1/2 there may be none,
		// and then the one released (c rounded) stands for them, so the
		// interval always holds the released count.
		c, h := noisy[a.Cells[0]], one(a.Cells[0])
		l, u := math.Max(0, math.Ceil(c-h)), math.Max(0, math.Floor(c+h))
		if l > u {
			l = math.Max(0, math.Round(c))
			u = l
		}
		return Interval{Lo: l, Hi: u}, true
	case planner.AggSum:
		s, h := noisy[a.Cells[0]], one(a.Cells[0])
		iv := Interval{Lo: s - h, Hi: s + h}
		if lo >= 0 { // bounds of one sign bound the sum's sign
			iv.Lo, iv.Hi = math.Max(0, iv.Lo), math.Max(0, iv.Hi)
		}
		if hi <= 0 {
			iv.Lo, iv.Hi = math.Min(0, iv.Lo), math.Min(0, iv.Hi)
		}
		return iv, true
	case planner.AggAvg, planner.AggVar, planner.AggStddev:
		return momentInterval(a, noisy, ns, lo, hi, alpha)
	}
	return Interval{}, false
}

// withTail widens a SUM's or AVG's interval upward by the allowance for
// values beyond a privately chosen upper bound (excess:
// autobound.Result.TailExcess, over the whole table): all of it for a SUM
// (the values beyond may all lie in this group), divided by the group's
// count (the 95% lower end of its noisy count, at least 1) for an AVG.
// Post-processing of released values: free.
func withTail(iv *Interval, a *planner.Aggregate, excess float64, noisy []float64, ns []noiseOf) {
	if !(excess > 0) || math.IsInf(excess, 0) {
		return
	}
	switch a.Kind {
	case planner.AggSum:
	case planner.AggAvg:
		ci := a.Cells[1]
		excess /= math.Max(1, noisy[ci]-halfWidth([]float64{1}, []noiseOf{ns[ci]}, 1-intervalLevel))
	default:
		return
	}
	iv.Hi += excess
	iv.Tail = excess
}

// momentInterval is AVG's, VAR's and STDDEV's interval: the value's error
// linearised in the noises of its cells (the count C, the centred sum S
// and, for VAR and STDDEV, the centred sum of squares Q) at the noisy
// values, clamped to what the bounds allow. A group whose noisy count is
// not clearly above 1 gets the whole range, marked Wide.
func momentInterval(a *planner.Aggregate, noisy []float64, ns []noiseOf, lo, hi, alpha float64) (Interval, bool) {
	si, ci := a.Cells[0], a.Cells[1]
	S, C := noisy[si], noisy[ci]
	half := (hi - lo) / 2
	mid := planner.Midpoint(lo, hi)
	hC := halfWidth([]float64{1}, []noiseOf{ns[ci]}, alpha)
	if a.Kind == planner.AggAvg {
		if C-hC <= 1 {
			return Interval{Lo: lo, Hi: hi, Wide: true}, true
		}
		m := S / C
		t := halfWidth([]float64{1 / C, -S / (C * C)}, []noiseOf{ns[si], ns[ci]}, alpha)
		return Interval{Lo: math.Max(lo, mid+m-t), Hi: math.Min(hi, mid+m+t)}, true
	}
	maxVar := half * half
	if C-hC <= 2 {
		if a.Kind == planner.AggStddev {
			return Interval{Lo: 0, Hi: half, Wide: true}, true
		}
		return Interval{Lo: 0, Hi: maxVar, Wide: true}, true
	}
	Q := noisy[a.Cells[2]]
	m := S / C
	v := Q/C - m*m
	t := halfWidth(
		[]float64{1 / C, -2 * S / (C * C), -Q/(C*C) + 2*S*S/(C*C*C)},
		[]noiseOf{ns[a.Cells[2]], ns[si], ns[ci]}, alpha)
	vlo, vhi := math.Max(0, v-t), math.Min(maxVar, v+t)
	if a.Sample {
		f := C / (C - 1)
		vlo, vhi = vlo*f, vhi*f
	}
	vhi = math.Max(vlo, vhi)
	if a.Kind == planner.AggStddev {
		return Interval{Lo: math.Sqrt(vlo), Hi: math.Sqrt(vhi)}, true
	}
	return Interval{Lo: vlo, Hi: vhi}, true
}

// predictedError says, before anything runs, how wrong aggregate a may
// be: its 95% error when that does not depend on the data (a count, a
// sum with declared bounds), else what it depends on and the bound for
// stated group sizes (the worst case over values within the bounds).
func predictedError(q *planner.PrivateQuery, a *planner.Aggregate) string {
	if a.Search >= 0 {
		return "95% error: depends on the bounds chosen privately when the query runs (the interval comes with the answer)"
	}
	cells := make([]cellBounds, len(q.Cells))
	for i, c := range q.Cells {
		cells[i] = cellBounds{lo: c.Lo, hi: c.Hi, sens: c.L1Sensitivity}
	}
	ns := cellNoise(q, cells)
	alpha := 1 - intervalLevel
	half := (a.Hi - a.Lo) / 2
	at := func(weights func(n float64) []float64, cells []int) string {
		var parts []string
		for _, n := range []float64{100, 1000, 10000} {
			cn := make([]noiseOf, len(cells))
			for k, c := range cells {
				cn[k] = ns[c]
			}
			parts = append(parts, fmt.Sprintf("±%.3g for %g values", halfWidth(weights(n), cn, alpha), n))
		}
		return strings.Join(parts, ", ")
	}
	switch a.Kind {
	case planner.AggCount, planner.AggSum:
		return fmt.Sprintf("95%% error ±%.6g, whatever the data", halfWidth([]float64{1}, []noiseOf{ns[a.Cells[0]]}, alpha))
	case planner.AggAvg:
		return "95% error: depends on the group's count of values n (the noisy sum is divided by the noisy count); at most " +
			at(func(n float64) []float64 { return []float64{1 / n, half / n} }, a.Cells[:2]) + "; a group with too few values gets the whole range [lo, hi]"
	case planner.AggVar, planner.AggStddev:
		what := "VAR's"
		if a.Kind == planner.AggStddev {
			what = "STDDEV's (its variance's, whose square root it is)"
		}
		return fmt.Sprintf("95%% error: %s depends on the group's count of values n; the variance's at most ", what) +
			at(func(n float64) []float64 { return []float64{1 / n, 2 * half / n, half * half / n} }, []int{a.Cells[2], a.Cells[0], a.Cells[1]})
	}
	return "95% error: depends on how densely the data lies around the percentile (the noisy tree's counts move its rank by a few noise scales); the interval comes with the answer"
}

// cornishFisherHalfWidth is laplaceSumHalfWidth for many terms (the
// quantile tree's rank statistics sum up to 76): the sum is close to a
// Gaussian, and the Cornish–Fisher expansion corrects the normal quantile
// for its excess kurtosis 3·Σs⁴/(Σs²)² (the sum is symmetric: no skew
// term). Checked against simulation in the tests.
func cornishFisherHalfWidth(s []float64, alpha float64) float64 {
	var s2, s4 float64
	for _, x := range s {
		s2 += x * x
		s4 += x * x * x * x
	}
	z := math.Sqrt2 * math.Erfcinv(alpha)
	kurt := 3 * s4 / (s2 * s2)
	return math.Sqrt(2*s2) * (z + (z*z*z-3*z)*kurt/24)
}
