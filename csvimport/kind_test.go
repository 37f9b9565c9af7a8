package csvimport

import "testing"

// TestKindKeepsTheWrittenValue: INTEGER and REAL only for numbers exactly
// as written (issue 11: 02134, 0x1p4, 1_000, 99999999999999999999 were
// silently changed).
func TestKindKeepsTheWrittenValue(t *testing.T) {
	for v, want := range map[string]kind{
		"0": kindInt, "7": kindInt, "-12": kindInt, "9223372036854775807": kindInt, "-9223372036854775808": kindInt,
		"02134": kindText, "-0": kindReal, "+5": kindText, "0x1p4": kindText, "0x10": kindText, "1_000": kindText,
		"99999999999999999999": kindText, "9223372036854775808": kindText, " 5": kindText, "5 ": kindText,
		"1.50": kindReal, "0.1": kindReal, ".5": kindReal, "5.": kindReal, "1e5": kindReal, "-2.5E-3": kindReal,
		"007.5": kindText, "1e-400": kindText, "1e400": kindText, "Inf": kindText, "NaN": kindText, "1e": kindText,
		".": kindText, "-": kindText, "e5": kindText, "0.30000000000000004441": kindText, "123456789012345678": kindInt,
		"12345678901234567.0": kindText,
	} {
		if got := kindOf(v); got != want {
			t.Errorf("kindOf(%q) = %s, want %s", v, typeNames[got], typeNames[want])
		}
	}
}
