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

// noisyQuantiles descends the tree of leaf counts once per quantile in
// ps, with Laplace noise of sensitivity sens at eps on each node count it
// reads. A node's count is noised once, the first time a descent reads
// it, and reused by the others: several quantiles (APPROX_QUANTILES) cost
// what one does, since all are post-processing of the one noisy tree.
func noisyQuantiles(leafCounts map[int32]int64, ps []float64, lo, hi, sens, eps float64, noise mechanism.Noiser) ([]float64, error) {
	// Counts of the nodes of each level (level D are the leaves).
	levels := make([]map[int32]int64, planner.TreeDepth+1)
	levels[planner.TreeDepth] = leafCounts
	for d := planner.TreeDepth - 1; d >= 1; d-- {
		m := map[int32]int64{}
		for k, n := range levels[d+1] {
			m[k/planner.TreeBranch] += n
		}
		levels[d] = m
	}
	type node struct {
		level int
		index int32
	}
	noisy := map[node]float64{}
	out := make([]float64, len(ps))
	for q, p := range ps {
		at, rel := int32(0), p
		for d := 1; d <= planner.TreeDepth; d++ {
			base := at * planner.TreeBranch
			counts := make([]float64, planner.TreeBranch)
			total := 0.0
			for j := range counts {
				n := node{d, base + int32(j)}
				v, ok := noisy[n]
				if !ok {
					exact := new(big.Float).SetInt64(levels[d][n.index])
					var err error
					if v, err = noise.AddLaplaceExact(exact, sens, eps); err != nil {
						return nil, err
					}
					noisy[n] = v
				}
				counts[j] = math.Max(0, v)
				total += counts[j]
			}
			child, next := chooseChild(counts, total, rel)
			at, rel = base+int32(child), next
		}
		width := (hi - lo) / float64(leaves)
		out[q] = math.Min(hi, math.Max(lo, lo+(float64(at)+rel)*width))
	}
	return out, nil
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
