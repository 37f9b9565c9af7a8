package interval

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestJSONFormIsTheCaches: answers cached before the type was shared
// decode as they were written (the cache's keys), and back.
func TestJSONFormIsTheCaches(t *testing.T) {
	const stored = `{"lo":1,"hi":2,"wide":true,"each":[{"lo":1,"hi":1.5}],"clipped":true,"clip_lo":0,"clip_hi":125,"bounded":true}`
	var iv Interval
	if err := json.Unmarshal([]byte(stored), &iv); err != nil {
		t.Fatal(err)
	}
	want := Interval{Lo: 1, Hi: 2, Wide: true, Each: []Interval{{Lo: 1, Hi: 1.5}}, Clipped: true, ClipHi: 125, Bounded: true}
	if !reflect.DeepEqual(iv, want) {
		t.Errorf("decoded %+v, want %+v", iv, want)
	}
	if b, _ := json.Marshal(iv); string(b) != `{"lo":1,"hi":2,"wide":true,"each":[{"lo":1,"hi":1.5}],"clipped":true,"clip_hi":125,"bounded":true}` {
		t.Errorf("encoded %s", b)
	}
}

// TestCopyShares nothing, and bias flags round-trip.
func TestCopySharesNothing(t *testing.T) {
	rows := [][]*Interval{{nil, {Lo: 1, Hi: 2, Each: []Interval{{Lo: 3}}}}}
	c := Copy(rows)
	c[0][1].Lo, c[0][1].Each[0].Lo = 9, 9
	c[0] = append(c[0], nil)
	if rows[0][1].Lo != 1 || rows[0][1].Each[0].Lo != 3 || len(rows[0]) != 2 || c[0][0] != nil {
		t.Errorf("the copy shares with the original: %+v", rows[0][1])
	}
	if Copy(nil) != nil {
		t.Error("Copy(nil) is not nil")
	}
	b := Bias{Clipped: true, ClipLo: -1, ClipHi: 1, Bounded: true}
	var iv Interval
	iv.SetBias(b)
	if iv.Bias() != b || !iv.Clipped || iv.ClipLo != -1 {
		t.Errorf("bias %+v from %+v", iv.Bias(), b)
	}
}
