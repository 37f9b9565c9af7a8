package exec

import (
	"math"
	"math/big"

	"github.com/dpsql/dpsql/mechanism"
	"github.com/dpsql/dpsql/planner"
)

// Percentiles (PERCENTILE_CONT, MEDIAN) by a noisy quantile tree, the
// construction of Google's differential-privacy library: [lo, hi] is cut
// into B^D leaves (B = planner.TreeBranch, D = planner.TreeDepth); the
// scan counts the clipped values of the kept rows per leaf (the P
// measurement). To find the p-quantile, the engine starts at the root
// and, at each of the D levels, adds Laplace noise to the counts of the
// current node's B children, clamps them at 0, and steps into the child
// where the noisy cumulative count reaches the target rank, carrying the
// remaining fraction down; at the leaf it interpolates linearly.
//
// Why it is private: each row adds 1 to exactly one node per level, so a
// unit's ≤ l0·l∞ kept rows move the vector of all node counts of all
// groups by at most D·l0·l∞ in L1 — the cell's sensitivity. Laplace noise
// of that scale on every node count is ε-DP; the descent reads the noisy
// counts of the nodes it visits (each drawn once, independently) and
// nothing else, which is post-processing of that vector (the counts of
// the nodes it does not visit are never drawn, and need not be).

// leaves is the number of leaves of the quantile tree.
var leaves = int32(math.Pow(planner.TreeBranch, planner.TreeDepth))

// QuantileLeaf is the leaf of a clipped value v in [lo, hi]: its position
// among the B^D equal cells of [lo, hi], the top cell closed.
func QuantileLeaf(v, lo, hi float64) int32 {
	f := (v - lo) / (hi - lo) * float64(leaves)
	switch {
	case !(f >= 0): // NaN or below
		return 0
	case f >= float64(leaves):
		return leaves - 1
	}
	return int32(f)
}

// With bounds chosen privately the bounds are not known while the scan
// runs, so the scan counts values per fine log-linear bucket instead (the
// T measurement: each binade cut in BucketsPerBinade, sign apart), and
// once the bounds are chosen each bucket's count goes to the leaf of its
// midpoint, clipped. A row still adds 1 to one leaf, so the tree's
// sensitivity is unchanged; the bucket adds a relative error below
// 1/(2·BucketsPerBinade) of the value to the answer's leaf error.

// BucketsPerBinade is the resolution of the T measurement.
const BucketsPerBinade = 4096

// QuantileBucket is the fine bucket of a value: 0 for zero, ±(k + 1)
// for the k-th bucket of |v| counted up from the smallest binade; the
// infinities take the outermost buckets.
func QuantileBucket(v float64) int32 {
	if v == 0 || math.IsNaN(v) {
		return 0
	}
	sign := int32(1)
	if v < 0 {
		sign, v = -1, -v
	}
	if math.IsInf(v, 0) {
		v = math.MaxFloat64
	}
	frac, exp := math.Frexp(v) // v = frac · 2^exp, frac in [0.5, 1)
	k := int32(exp+1100)*BucketsPerBinade + int32((frac-0.5)*2*BucketsPerBinade)
	return sign * (k + 1)
}

// bucketMidpoint is the middle of a QuantileBucket.
func bucketMidpoint(b int32) float64 {
	if b == 0 {
		return 0
	}
	sign := 1.0
	if b < 0 {
		sign, b = -1, -b
	}
	k := b - 1
	exp := int(k/BucketsPerBinade) - 1100
	frac := 0.5 + (float64(k%BucketsPerBinade)+0.5)/(2*BucketsPerBinade)
	return sign * math.Ldexp(frac, exp)
}

// leavesFromBuckets maps fine-bucket counts to the leaf counts of the
// tree over [lo, hi].
func leavesFromBuckets(buckets map[int32]int64, lo, hi float64) map[int32]int64 {
	leafCounts := make(map[int32]int64, len(buckets))
	for b, n := range buckets {
		leafCounts[QuantileLeaf(clip(bucketMidpoint(b), lo, hi), lo, hi)] += n
	}
	return leafCounts
}

// noisyTree is a quantile tree whose node counts get Laplace noise the
// first time they are read (each node once: every later read, by another
// descent or by the interval, is post-processing of the same value).
type noisyTree struct {
	levels []map[int32]int64 // exact counts per level (level D: the leaves)
	// top holds the noisy counts of levels 1 and 2 (read by every
	// descent and, B² + 1 times each, by the interval) in arrays, with
	// whether each was drawn; deeper levels' in noisy.
	top       [3][]float64
	drawn     [3][]bool
	noisy     map[treeNode]float64
	scales    []float64 // statistic's, reused
	sens, eps float64
	noise     mechanism.Noiser
}

type treeNode struct {
	level int
	index int32
}

func newNoisyTree(leafCounts map[int32]int64, sens, eps float64, noise mechanism.Noiser) *noisyTree {
	levels := make([]map[int32]int64, planner.TreeDepth+1)
	levels[planner.TreeDepth] = leafCounts
	for d := planner.TreeDepth - 1; d >= 1; d-- {
		m := map[int32]int64{}
		for k, n := range levels[d+1] {
			m[k/planner.TreeBranch] += n
		}
		levels[d] = m
	}
	tr := &noisyTree{levels: levels, noisy: map[treeNode]float64{}, sens: sens, eps: eps, noise: noise}
	for d, size := 1, planner.TreeBranch; d <= 2; d, size = d+1, size*planner.TreeBranch {
		tr.top[d] = make([]float64, size)
		tr.drawn[d] = make([]bool, size)
	}
	return tr
}

// count is node (d, index)'s noisy count.
func (tr *noisyTree) count(d int, index int32) (float64, error) {
	if d <= 2 && tr.drawn[d][index] {
		return tr.top[d][index], nil
	}
	n := treeNode{d, index}
	if d > 2 {
		if v, ok := tr.noisy[n]; ok {
			return v, nil
		}
	}
	v, err := tr.noise.AddLaplaceExact(new(big.Float).SetInt64(tr.levels[d][index]), tr.sens, tr.eps)
	if err != nil {
		return 0, err
	}
	if d <= 2 {
		tr.top[d][index], tr.drawn[d][index] = v, true
	} else {
		tr.noisy[n] = v
	}
	return v, nil
}

// quantile descends the tree to the p-quantile of [lo, hi].
func (tr *noisyTree) quantile(p, lo, hi float64) (float64, error) {
	at, rel := int32(0), p
	for d := 1; d <= planner.TreeDepth; d++ {
		base := at * planner.TreeBranch
		counts := make([]float64, planner.TreeBranch)
		total := 0.0
		for j := range counts {
			v, err := tr.count(d, base+int32(j))
			if err != nil {
				return 0, err
			}
			counts[j] = math.Max(0, v)
			total += counts[j]
		}
		child, next := chooseChild(counts, total, rel)
		at, rel = base+int32(child), next
	}
	width := (hi - lo) / float64(leaves)
	return math.Min(hi, math.Max(lo, lo+(float64(at)+rel)*width)), nil
}

// statistic is Ĉ(L) − p·N̂ for the leaves [0, L): the noisy count below
// leaf boundary L (the canonical decomposition of [0, L) into at most
// D·(B − 1) nodes) minus p times the noisy total (the B nodes of level
// 1), and the Laplace scales of its noise (a level-1 node in both weighs
// 1 − p, one in the total only −p, a deeper node 1).
func (tr *noisyTree) statistic(L int32, p float64) (float64, []float64, error) {
	b := tr.sens / tr.eps
	firstDigit := int32(-1) // the level-1 nodes below it are in the prefix
	g := 0.0
	scales := tr.scales[:0] // reused: the caller is done with the last call's

	rem, prefix := L, int32(0)
	unit := leaves
	for d := 1; d <= planner.TreeDepth; d++ {
		unit /= planner.TreeBranch
		digit := rem / unit
		rem -= digit * unit
		for j := int32(0); j < digit; j++ {
			idx := prefix*planner.TreeBranch + j
			v, err := tr.count(d, idx)
			if err != nil {
				return 0, nil, err
			}
			g += v
			if d > 1 {
				scales = append(scales, b)
			}
		}
		if d == 1 {
			firstDigit = digit
		}
		prefix = prefix*planner.TreeBranch + digit
		if digit == planner.TreeBranch { // L = every leaf
			break
		}
	}
	for j := int32(0); j < planner.TreeBranch; j++ {
		v, err := tr.count(1, j)
		if err != nil {
			return 0, nil, err
		}
		g -= p * v
		w := -p
		if j < firstDigit {
			w = 1 - p
		}
		scales = append(scales, math.Abs(w)*b)
	}
	tr.scales = scales
	return g, scales, nil
}

// quantileInterval is a 95% interval for the p-quantile of [lo, hi], by
// inverting one-sided tests on the same noisy tree. At each boundary v of
// level 2 the statistic g(v) = Ĉ(v) − p·N̂ — the noisy count below v (the
// nodes of its canonical decomposition) minus p times the noisy total
// (the B nodes of level 1) — has a known noise: a weighted sum of
// independent Laplace noises whose lower 2.5% point is −t(v). Without
// noise, g is above −1 at the first boundary above the true quantile and
// below 1 at the last boundary below it (PERCENTILE_CONT's rank p·(n − 1)
// is within one row of p·n), whatever the data. So:
//
//   - the lower end is the boundary before the first v with g(v) ≥ −t(v) − 1:
//     it is above the true quantile only if g at the boundary above the
//     quantile fell below −t − 1, probability at most 2.5%;
//   - the upper end is the boundary after the last v with g(v) ≤ t(v) + 1,
//     likewise at most 2.5%.
//
// That is at least 95% for every data set, and exact for data whose
// count below the quantile's boundary is p·N (a point mass at the
// quantile, the rest far away); data spread over the cells around the
// quantile make g cross the band before the quantile's own boundary, and
// the interval then covers more (docs/benchmarks.md). An interval
// calibrated on the tree the noisy counts describe (simulated, so as to
// miss exactly 2.5% each side there) was tried and under-covered
// (73–96%), because that tree's quantile is itself noisy.
func (tr *noisyTree) quantileInterval(p, lo, hi float64) (Interval, error) {
	const n = planner.TreeBranch * planner.TreeBranch // level-2 boundaries: 0..n
	step := leaves / n
	a, b := n, 0
	for k := 0; k <= n; k++ {
		g, scales, err := tr.statistic(int32(k)*step, p)
		if err != nil {
			return Interval{}, err
		}
		t := laplaceSumHalfWidth(nonZero(scales), 1-intervalLevel) + 1
		if g >= -t && k < a {
			a = k
		}
		if g <= t {
			b = k
		}
	}
	a, b = max(a-1, 0), min(b+1, n)
	if p == 0 {
		a = 0
	}
	if p == 1 {
		b = n
	}
	if a > b { // g fell across the band between two boundaries
		a, b = b, a
	}
	width := (hi - lo) / float64(n)
	return Interval{Lo: math.Max(lo, lo+float64(a)*width), Hi: math.Min(hi, lo+float64(b)*width)}, nil
}

// intervals is the interval of one percentile (ps[0]), or with each set,
// of APPROX_QUANTILES' values: Each holds one interval per quantile, and
// Lo and Hi span them.
func (tr *noisyTree) intervals(ps []float64, lo, hi float64, each bool) (*Interval, error) {
	if !each {
		iv, err := tr.quantileInterval(ps[0], lo, hi)
		return &iv, err
	}
	out := &Interval{Lo: hi, Hi: lo}
	for _, p := range ps {
		iv, err := tr.quantileInterval(p, lo, hi)
		if err != nil {
			return nil, err
		}
		out.Each = append(out.Each, iv)
		out.Lo, out.Hi = math.Min(out.Lo, iv.Lo), math.Max(out.Hi, iv.Hi)
	}
	return out, nil
}

// widenForBuckets widens a percentile interval for the fine buckets of
// the T measurement: each value was counted at its bucket's midpoint,
// within |v|/(2·BucketsPerBinade) of it, so the tree's quantile is within
// that much of the data's; the ends move out by twice that, inside
// [lo, hi].
func widenForBuckets(iv *Interval, lo, hi float64) {
	widen := func(e *Interval) {
		e.Lo = math.Max(lo, e.Lo-math.Abs(e.Lo)/BucketsPerBinade)
		e.Hi = math.Min(hi, e.Hi+math.Abs(e.Hi)/BucketsPerBinade)
	}
	widen(iv)
	for k := range iv.Each {
		widen(&iv.Each[k])
	}
}

// nonZero drops zero scales (a weight of 0: p = 1 on a prefix node), in
// place.
func nonZero(s []float64) []float64 {
	out := s[:0]
	for _, x := range s {
		if x > 0 {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return []float64{math.SmallestNonzeroFloat64}
	}
	return out
}

// chooseChild picks the child where the cumulative count reaches the
// fraction rel of the total, and the fraction of that child's count still
// to go. With no count at all it spreads rel evenly over the children.
func chooseChild(counts []float64, total, rel float64) (int, float64) {
	clamp := func(x float64) float64 { return math.Min(1, math.Max(0, x)) }
	if !(total > 0) {
		x := rel * float64(len(counts))
		j := min(len(counts)-1, int(x))
		return j, clamp(x - float64(j))
	}
	target := rel * total
	cum, last := 0.0, 0
	for j, c := range counts {
		if c <= 0 {
			continue
		}
		last = j
		if cum+c >= target {
			return j, clamp((target - cum) / c)
		}
		cum += c
	}
	return last, 1
}
