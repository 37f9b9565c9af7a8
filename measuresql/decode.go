package measuresql

import (
	"database/sql"
	"fmt"
	"math"
	"math/big"

	"github.com/dpsql/dpsql/exactsum"
	"github.com/dpsql/dpsql/internal/sqlrows"
	"github.com/dpsql/dpsql/measure"
)

// Group is one group's measurements (measure.MeasuredGroup).
type Group = measure.MeasuredGroup

// Read reads the statement's result through database/sql and decodes
// it (readRows, then Decode).
func (st *Statement) Read(rows *sql.Rows) ([]*Group, error) {
	out, err := readRows(rows)
	if err != nil {
		return nil, err
	}
	return st.Decode(out)
}

// readRows reads a statement's result through database/sql, each value
// Normalized (text a driver gives as bytes as a string), for Decode.
func readRows(rows *sql.Rows) ([][]any, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]any
	for rows.Next() {
		vals, err := sqlrows.Values(rows, len(cols)) // database/sql's pgx returns some text as bytes
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			vals[i] = Normalize(v)
		}
		out = append(out, vals)
	}
	return out, rows.Err()
}

// Decode reads the statement's rows (each value as the driver gives it:
// int64, float64, string, nil) into groups, in the order first met.
func (st *Statement) Decode(rows [][]any) ([]*Group, error) {
	if st.profile {
		return nil, st.decodeProfile(rows)
	}
	var out []*Group
	index := map[string]*Group{}
	sums := map[*Group][][3]*big.Int{} // per group and spec: its columns, added over the group's rows
	nk, nd, width := len(st.keys), len(st.Detail), st.width()
	st.decoded = nil
	if st.dropped > 0 {
		width = st.dropped + 3
		st.decoded = &measure.Dropped{Share: new(big.Int)}
	}
	for r, row := range rows {
		if len(row) < width {
			return nil, fmt.Errorf("measuresql: a row of %d columns, want %d", len(row), width)
		}
		if st.dropped > 0 && (r == 0 || st.droppedPerRow) {
			var counts [3]*big.Int
			for j := range counts {
				x, err := bigOf(row[st.dropped+j])
				if err != nil {
					return nil, err
				}
				counts[j] = x
			}
			st.decoded.Units += counts[0].Int64()
			st.decoded.Affected += counts[1].Int64()
			st.decoded.Share.Add(st.decoded.Share, counts[2])
		}
		keys := make([]any, nk)
		for i, ko := range st.keys {
			k, err := keyValue(row[i], ko)
			if err != nil {
				return nil, err
			}
			keys[i] = k
		}
		if !st.inDomains(keys) {
			continue // a group outside a public domain (or NULL): dropped
		}
		id := fmt.Sprintf("%#v", keys)
		g := index[id]
		if g == nil {
			g = &Group{Keys: keys, Values: make([]*big.Float, len(st.Specs))}
			sums[g] = make([][3]*big.Int, len(st.Specs))
			index[id] = g
			out = append(out, g)
		}
		if nd > 0 {
			w, ok := row[nk+nd].(int64)
			if !ok {
				return nil, fmt.Errorf("measuresql: weight %T", row[nk+nd])
			}
			g.Details = append(g.Details, append([]any(nil), row[nk:nk+nd]...))
			g.Weights = append(g.Weights, w)
		}
		for i, o := range st.outs {
			if st.DetailSpec[i] {
				continue
			}
			for j := 0; j < o.columns(); j++ {
				x, err := bigOf(row[o.col+j])
				if err != nil {
					return nil, err
				}
				s := sums[g]
				if s[i][j] == nil {
					s[i][j] = new(big.Int)
				}
				s[i][j].Add(s[i][j], x)
			}
		}
	}
	for _, g := range out {
		for i, o := range st.outs {
			if !st.DetailSpec[i] {
				g.Values[i] = o.value(sums[g][i])
			}
		}
	}
	return out, nil
}

// inDomains maps each key with a domain to its position (in place), and
// reports whether every such key is in its domain.
func (st *Statement) inDomains(keys []any) bool {
	for i, ko := range st.keys {
		if ko.domain == nil {
			continue
		}
		v := keys[i]
		if f, ok := v.(float64); ok && f == 0 {
			v = 0.0
		}
		pos, ok := ko.domain[v]
		if !ok || v == nil {
			return false
		}
		keys[i] = pos
	}
	return true
}

// width is the number of columns a row has.
func (st *Statement) width() int {
	w := len(st.keys) + len(st.Detail)
	if len(st.Detail) > 0 {
		w++
	}
	for i, o := range st.outs {
		if !st.DetailSpec[i] {
			w = max(w, o.col+o.columns())
		}
	}
	return w
}

func (o specOut) columns() int {
	if o.q {
		return 3
	}
	return 1
}

// value is the spec's exact value from its summed columns: Σ·2^-shift,
// or for q the centred squares Σ (c − m)² from Σc, Σc² and the count.
func (o specOut) value(s [3]*big.Int) *big.Float {
	for j := range s {
		if s[j] == nil {
			s[j] = new(big.Int)
		}
	}
	if !o.q {
		return new(big.Float).SetMantExp(new(big.Float).SetInt(s[0]), -o.shift)
	}
	// Σc = Σt·2^-F, Σc² = Σt²·2^-2F (exact: a big.Float holds the
	// integers with their exponents).
	sum := new(big.Float).SetMantExp(new(big.Float).SetInt(s[0]), -o.shift)
	sq := new(big.Float).SetMantExp(new(big.Float).SetInt(s[1]), -2*o.shift)
	return exactsum.CentredSquares(sum, sq, s[2].Int64(), o.mid)
}

func keyValue(v any, ko keyOut) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case int64:
		return v, nil
	case int32:
		return int64(v), nil
	case float64:
		if ko.t == Real {
			return v, nil
		}
	case string:
		if ko.t == Text {
			return v, nil
		}
	}
	return nil, fmt.Errorf("measuresql: key %T", v)
}

// bigOf reads an integer column sent as text (NULL: a sum over no value,
// 0).
func bigOf(v any) (*big.Int, error) {
	switch v := v.(type) {
	case nil:
		return new(big.Int), nil
	case string:
		x, ok := new(big.Int).SetString(v, 10)
		if !ok {
			return nil, fmt.Errorf("measuresql: %q is not an integer", v)
		}
		return x, nil
	case int64:
		return big.NewInt(v), nil
	}
	return nil, fmt.Errorf("measuresql: value %T", v)
}

// Normalize gives a value an engine's driver returned for a compiled
// statement (or a mirror's read) as the reference holds it: integers as
// int64, floats as float64 (NaN as NULL), booleans as 0/1, the rest as it
// is (text as string, blobs as bytes).
func Normalize(v any) any {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	case float32:
		return Normalize(float64(x))
	case float64:
		if math.IsNaN(x) {
			return nil
		}
		return x
	}
	return v
}

// Measured is the statement's groups as a measure.Measured.
func (st *Statement) Measured(groups []*Group) *measure.Measured {
	return &measure.Measured{Detail: st.Detail, DetailSpec: st.DetailSpec, Groups: groups, Dropped: st.decoded, Profile: st.decodedProfile}
}

// decodeProfile reads a profile statement's one row.
func (st *Statement) decodeProfile(rows [][]any) error {
	p := measure.NewProfile()
	n := len(p.Groups)
	if len(rows) != 1 || len(rows[0]) != 2*n {
		return fmt.Errorf("measuresql: a profile of %d rows, want 1 of %d columns", len(rows), 2*n)
	}
	for j, v := range rows[0] {
		x, err := bigOf(v)
		if err != nil {
			return err
		}
		if !x.IsInt64() {
			return fmt.Errorf("measuresql: a profile count beyond 64 bits")
		}
		if j < n {
			p.Groups[j] = x.Int64()
		} else {
			p.Rows[j-n] = x.Int64()
		}
	}
	st.decodedProfile = p
	return nil
}
