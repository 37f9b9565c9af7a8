// Package interval is a released value's 95% interval: one type for the
// engine that computes it (exec), the answers that carry it (the root's
// Result) and the answer cache that keeps it (its JSON form).
package interval

// Interval is a released value's 95% interval: the true value of the
// measured (clipped, contribution-bounded) data lies in [Lo, Hi] with
// probability about 0.95 over the noise. It is computed from the noisy
// cells and public parameters only: post-processing, free.
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// Wide marks an interval that is the whole range the bounds allow,
	// because the group's noisy count is too small to say more.
	Wide bool `json:"wide,omitempty"`
	// Each holds, for APPROX_QUANTILES' array of values, one interval per
	// value (Lo and Hi then span them).
	Each []Interval `json:"each,omitempty"`
	// Clipped says the value is computed from values clipped to [ClipLo,
	// ClipHi] (declared or privately chosen bounds): where the table has
	// values beyond them, its raw value may lie outside [Lo, Hi], pulled
	// toward the bounds. Set for every aggregate but COUNT; a public fact
	// of the query, not a measurement (no ε is spent to say how many
	// values were clipped).
	Clipped bool    `json:"clipped,omitempty"`
	ClipLo  float64 `json:"clip_lo,omitempty"`
	ClipHi  float64 `json:"clip_hi,omitempty"`
	// Tail is how far Hi reaches above the clipped values' interval to
	// allow for values beyond a privately chosen upper bound: an estimate
	// of what clipping there removed, extrapolated from the bound search's
	// released stops (autobound.Result.TailExcess), for SUM and AVG. 0:
	// none (declared bounds, or no tail to follow).
	Tail float64 `json:"tail_allowance,omitempty"`
	// Bounded says contribution bounding may have dropped rows: the
	// policy has a privacy unit, and a unit's rows beyond its l0 groups
	// and l∞ rows per group are not measured.
	Bounded bool `json:"bounded,omitempty"`
}

// Bias flags a value whose measured data may differ from the raw
// table's, so that the raw table's value may lie outside the interval: a
// public fact of the query, not a measurement of the data (Interval's
// Clipped, ClipLo, ClipHi and Bounded).
type Bias struct {
	Clipped        bool
	ClipLo, ClipHi float64
	Bounded        bool
}

// Bias is the interval's bias flags.
func (iv *Interval) Bias() Bias {
	return Bias{Clipped: iv.Clipped, ClipLo: iv.ClipLo, ClipHi: iv.ClipHi, Bounded: iv.Bounded}
}

// SetBias sets the interval's bias flags.
func (iv *Interval) SetBias(b Bias) {
	iv.Clipped, iv.ClipLo, iv.ClipHi, iv.Bounded = b.Clipped, b.ClipLo, b.ClipHi, b.Bounded
}

// Copy copies intervals row by row (nil stays nil), so that an answer's
// intervals and the cache's never share a value.
func Copy(rows [][]*Interval) [][]*Interval {
	if rows == nil {
		return nil
	}
	out := make([][]*Interval, len(rows))
	for r, row := range rows {
		out[r] = make([]*Interval, len(row))
		for j, iv := range row {
			if iv != nil {
				c := *iv
				c.Each = append([]Interval(nil), iv.Each...)
				out[r][j] = &c
			}
		}
	}
	return out
}
