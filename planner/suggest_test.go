package planner

import "testing"

func TestDidYouMean(t *testing.T) {
	cols := []string{"age", "income", "region", "Education", "education_num"}
	for _, c := range []struct{ name, want string }{
		{"agee", ` (did you mean "age"?)`},
		{"incme", ` (did you mean "income"?)`},
		{"educaton", ` (did you mean "Education"?)`},
		{"zzz", ""},
		{"x", ""},
		{"age", ""}, // the same name (a case or quoting matter): nothing to suggest
	} {
		if got := didYouMean(c.name, cols); got != c.want {
			t.Errorf("%q: %q, want %q", c.name, got, c.want)
		}
	}
	if got := didYouMean("ab", []string{"ac", "ad"}); got != "" {
		t.Errorf("a tie suggested %q", got)
	}
}
