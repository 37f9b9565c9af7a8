package catalog

import (
	"math"
	"testing"
)

// TestFingerprintSeesEveryPolicyChange: every change of a read table's
// policy changes the fingerprint (the answer cache must not give an
// answer made under another policy); a change to a table not read, or
// a new order of the names, does not.
func TestFingerprintSeesEveryPolicyChange(t *testing.T) {
	base := func() *Catalog {
		return New(
			&Table{Name: "sales", HasPolicy: true, Unit: Unit{Column: "uid", MaxGroups: 1, MaxRows: 2},
				Bounds:  map[string]Bounds{"price": {0, 10}},
				Domains: map[string][]any{"shop": {int64(1), 2.5, "x"}}},
			&Table{Name: "other", HasPolicy: true, Unit: Unit{MaxGroups: 1, MaxRows: 1}},
		)
	}
	read := []string{"sales"}
	want := base().Fingerprint(read)
	if got := base().Fingerprint([]string{"SALES", "nope"}); got != want {
		t.Errorf("names matched as SQLite does, unknown ones ignored: %q vs %q", got, want)
	}
	for _, tc := range []struct {
		name   string
		change func(c *Catalog)
		same   bool
	}{
		{"public", func(c *Catalog) { c.tables[0].Public = true }, false},
		{"policy dropped", func(c *Catalog) { c.tables[0].HasPolicy = false }, false},
		{"unit column", func(c *Catalog) { c.tables[0].Unit.Column = "" }, false},
		{"max groups", func(c *Catalog) { c.tables[0].Unit.MaxGroups = 2 }, false},
		{"max rows", func(c *Catalog) { c.tables[0].Unit.MaxRows = 3 }, false},
		{"upper bound", func(c *Catalog) { c.tables[0].Bounds["price"] = Bounds{0, math.Nextafter(10, 11)} }, false},
		{"bounds added", func(c *Catalog) { c.tables[0].Bounds["qty"] = Bounds{0, 1} }, false},
		{"domain value's type", func(c *Catalog) { c.tables[0].Domains["shop"][0] = 1.0 }, false},
		{"domain value", func(c *Catalog) { c.tables[0].Domains["shop"][2] = "y" }, false},
		{"domain order", func(c *Catalog) { d := c.tables[0].Domains["shop"]; d[0], d[1] = d[1], d[0] }, false},
		{"another table", func(c *Catalog) { c.tables[1].Public = true }, true},
	} {
		c := base()
		tc.change(c)
		if got := c.Fingerprint(read); (got == want) != tc.same {
			t.Errorf("%s: fingerprint %q (unchanged: %v, want %v)", tc.name, got, got == want, tc.same)
		}
	}
}

// TestDomainValuesKeepTypeAndValue: a domain value written to PostgreSQL
// reads back with its type and its exact value.
func TestDomainValuesKeepTypeAndValue(t *testing.T) {
	for _, v := range []any{int64(0), int64(math.MinInt64), int64(math.MaxInt64), 0.1, math.Copysign(0, -1), 5e-324, math.MaxFloat64, 1.0, "", "x'y\"z", "naïve\x00", "\xff\xfe"} {
		kind, text := domainValueText(v)
		back, err := parseDomainValue(kind, text)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		if f, ok := v.(float64); ok {
			if b, ok := back.(float64); !ok || math.Float64bits(b) != math.Float64bits(f) {
				t.Errorf("%#v came back as %#v", v, back)
			}
			continue
		}
		if back != v {
			t.Errorf("%#v came back as %#v", v, back)
		}
	}
	if kind, _ := domainValueText("a\x00b"); kind != "hex" {
		t.Errorf("a string with NUL is kept as %s (PostgreSQL's text cannot hold it)", kind)
	}
	if _, err := parseDomainValue("blob", "x"); err == nil {
		t.Error("an unknown kind was read")
	}
}
