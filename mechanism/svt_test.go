package mechanism

import (
	"errors"
	"math"
	"testing"
)

func TestSparseSplitFollowsLyu(t *testing.T) {
	e1, e2 := SparseSplit(1, 1, false)
	if math.Abs(e2/e1-math.Pow(2, 2.0/3)) > 1e-12 || math.Abs(e1+e2-1) > 1e-12 {
		t.Errorf("c=1 general: %v:%v", e1, e2)
	}
	e1, e2 = SparseSplit(2, 8, true)
	if math.Abs(e2/e1-4) > 1e-12 || math.Abs(e1+e2-2) > 1e-12 {
		t.Errorf("c=8 monotonic: %v:%v", e1, e2)
	}
}

// Queries 20 noise scales below the threshold: each is reported with
// probability about e^-20; over 10,000 runs of 50 queries none should be.
func TestSparseIgnoresQueriesFarBelow(t *testing.T) {
	src := newSeeded(21)
	opts := SparseOptions{Epsilon: 1, Sensitivity: 1, Threshold: 0, Cutoff: 1}
	far := -20 * (SparseQueryScale(opts) + 1/(1/(1+math.Pow(2, 2.0/3))))
	for run := 0; run < 10_000; run++ {
		s, err := NewSparse(opts, src)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 50; i++ {
			if above, _ := s.Next(far); above {
				t.Fatalf("run %d: query %v reported above threshold 0", run, far)
			}
		}
	}
}

func TestSparseStopsAtCutoff(t *testing.T) {
	s, err := NewSparse(SparseOptions{Epsilon: 1, Sensitivity: 1, Threshold: -1e6, Cutoff: 2}, newSeeded(22))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if above, err := s.Next(0); !above || err != nil {
			t.Fatalf("query %d: %v %v", i, above, err)
		}
	}
	if _, err := s.Next(0); !errors.Is(err, ErrSparseDone) {
		t.Errorf("after cutoff: %v", err)
	}
	if _, err := NewSparse(SparseOptions{Epsilon: 1, Sensitivity: 1, Cutoff: 0}, nil); !errors.Is(err, ErrInvalidParameter) {
		t.Errorf("cutoff 0: %v", err)
	}
}

// TestAboveThresholdIsPrivate: the index of the first ⊤ over the stream
// q(D) = 0, 1, 2, ... and the neighbouring q(D') = q(D) + 1 (sensitivity 1,
// general queries) must satisfy P(D) ≤ e^ε P(D') both ways, within 4.4
// standard errors per index (false-failure rate ~1e-5 each).
func TestAboveThresholdIsPrivate(t *testing.T) {
	const n, eps = 100_000, 1.0
	run := func(shift float64, seed uint64) map[int]int {
		src := newSeeded(seed)
		out := map[int]int{}
		for r := 0; r < n; r++ {
			s, err := NewSparse(SparseOptions{Epsilon: eps, Sensitivity: 1, Threshold: 5, Cutoff: 1}, src)
			if err != nil {
				t.Fatal(err)
			}
			idx := 40
			for i := 0; i < 40; i++ {
				if above, _ := s.Next(float64(i) + shift); above {
					idx = i
					break
				}
			}
			out[idx]++
		}
		return out
	}
	a, b := run(0, 31), run(1, 32)
	e := math.Exp(eps)
	checked := 0
	for i := 0; i <= 40; i++ {
		for _, pr := range [][2]int{{a[i], b[i]}, {b[i], a[i]}} {
			if pr[0] < 500 || pr[1] < 500 {
				continue
			}
			p, q := float64(pr[0])/n, float64(pr[1])/n
			if se := math.Sqrt(p/n + e*e*q/n); p-e*q > zTolerance*se {
				t.Errorf("index %d: P=%.4f > e^ε·P'=%.4f", i, p, e*q)
			}
			checked++
		}
	}
	if checked < 10 {
		t.Errorf("only %d comparisons", checked)
	}
}
