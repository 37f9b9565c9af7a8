package planner

import (
	"fmt"
	"strings"
)

// didYouMean is " (did you mean "x"?)" for the candidate closest to a
// misspelt name — within an edit distance of a third of its length, at
// least 1, ignoring case — or "" when none is that close or two tie.
// Names of tables and columns are public: suggesting one reveals no row.
func didYouMean(name string, candidates []string) string {
	limit := max(1, len([]rune(name))/3)
	best, bestD, tie := "", limit+1, false
	seen := map[string]bool{}
	for _, c := range candidates {
		if seen[strings.ToLower(c)] {
			continue
		}
		seen[strings.ToLower(c)] = true
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		switch {
		case d < bestD:
			best, bestD, tie = c, d, false
		case d == bestD:
			tie = true
		}
	}
	if best == "" || tie || bestD == 0 {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
