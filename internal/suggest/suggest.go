// Package suggest finds the names nearest a mistyped one, for the "did
// you mean" of error messages.
package suggest

import (
	"cmp"
	"slices"
	"strings"
)

// Distance is the Levenshtein distance between a and b in runes: the
// fewest insertions, deletions and substitutions that turn one into the
// other.
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
			sub := 1
			if ra[i-1] == rb[j-1] {
				sub = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+sub)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Nearest returns at most n candidates ordered by their distance from s
// (case-insensitive; ties keep the candidates' order), nearest first.
func Nearest(s string, candidates []string, n int) []string {
	type scored struct {
		name string
		d, i int
	}
	ls := strings.ToLower(s)
	all := make([]scored, len(candidates))
	for i, c := range candidates {
		all[i] = scored{c, Distance(ls, strings.ToLower(c)), i}
	}
	slices.SortStableFunc(all, func(a, b scored) int { return cmp.Compare(a.d, b.d) })
	out := make([]string, 0, min(n, len(all)))
	for _, c := range all[:min(n, len(all))] {
		out = append(out, c.name)
	}
	return out
}

// Close returns the candidates s is plausibly a typo of, nearest first:
// within a third of its length in edits (at least 2), or a prefix of it
// or it of them (as "min" of "min-recall"). It leaves out s itself.
func Close(s string, candidates []string) []string {
	ls := strings.ToLower(s)
	limit := max(2, len([]rune(s))/3)
	var keep []string
	for _, c := range Nearest(s, candidates, len(candidates)) {
		lc := strings.ToLower(c)
		if lc == ls {
			continue
		}
		if Distance(ls, lc) <= limit || len(ls) >= 3 && (strings.HasPrefix(lc, ls) || strings.HasPrefix(ls, lc)) {
			keep = append(keep, c)
		}
	}
	return keep
}

// DidYouMean is " (did you mean X?)" for the closest candidate, or "
// (did you mean X or Y?)" for two as close, or "" when none is close.
func DidYouMean(s string, candidates []string) string {
	c := Close(s, candidates)
	switch {
	case len(c) == 0:
		return ""
	case len(c) >= 2 && Distance(strings.ToLower(s), strings.ToLower(c[0])) == Distance(strings.ToLower(s), strings.ToLower(c[1])):
		return " (did you mean " + c[0] + " or " + c[1] + "?)"
	}
	return " (did you mean " + c[0] + "?)"
}
