// Package suggest finds the names closest to a misspelt one, for "did you mean" hints in errors
// (spec keys and column names, dataset names on the command line, DDL type names).
package suggest

import (
	"slices"
	"strings"
)

// Closest returns up to three of candidates within a Levenshtein distance of 1 + len(word)/4 of
// word (in runes, ignoring case), nearest first, ties in candidate order; nil when none is that
// close.
func Closest(word string, candidates []string) []string {
	type scored struct {
		s string
		d int
	}
	limit := 1 + len([]rune(word))/4
	var out []scored
	lw := strings.ToLower(word)
	for _, c := range candidates {
		if d := Distance(lw, strings.ToLower(c)); d <= limit {
			out = append(out, scored{c, d})
		}
	}
	slices.SortStableFunc(out, func(a, b scored) int { return a.d - b.d })
	var names []string
	for i := 0; i < len(out) && i < 3; i++ {
		names = append(names, out[i].s)
	}
	return names
}

// Distance is the Levenshtein edit distance between a and b, in runes (case-sensitive).
func Distance(a, b string) int {
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
