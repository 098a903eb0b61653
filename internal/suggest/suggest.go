// Package suggest finds the names closest to a misspelt one, for "did you mean" hints in errors
// (spec keys and column names, dataset names on the command line, DDL type names).
package suggest

import (
	"slices"
	"strings"
)

// Closest returns up to three of candidates within an edit distance (Distance) of 1 + len(word)/4 of
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

// Distance is the edit distance between a and b, in runes (case-sensitive): the least number of
// insertions, deletions, substitutions and swaps of two adjacent runes that turn a into b (the
// optimal string alignment distance, Levenshtein's with the swap that typing makes most often:
// "rwa" is one edit from "raw").
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// rows i-2, i-1 and i of the table of distances between ra[:i] and rb[:j]
	prev2 := make([]int, len(rb)+1)
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
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
