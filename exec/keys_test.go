package exec

import (
	"database/sql/driver"
	"math"
	"testing"
)

// TestKeyEncoding: unit and group keys encode type and value without
// ambiguity (a string holding a separator, a number and its text, 0 and
// −0 apart), and the reused-buffer form is the same encoding.
func TestKeyEncoding(t *testing.T) {
	for _, c := range []struct {
		vals []driver.Value
		want string
	}{
		{[]driver.Value{nil, int64(-5), 1.5, "a;b", []byte{0}}, "n;i-5;f3ff8000000000000;s3:a;b;b1:\x00;"},
		{[]driver.Value{"5"}, "s1:5;"},
		{[]driver.Value{int64(5)}, "i5;"},
		{[]driver.Value{math.Copysign(0, -1)}, "f8000000000000000;"},
		{[]driver.Value{0.0}, "f0;"},
		{nil, ""},
	} {
		if got := keyString(c.vals); got != c.want {
			t.Errorf("keyString(%#v) = %q, want %q", c.vals, got, c.want)
		}
		buf := []byte("left over")
		if got := string(appendKeys(buf[:0], c.vals...)); got != c.want {
			t.Errorf("appendKeys(%#v) = %q, want %q", c.vals, got, c.want)
		}
	}
}
