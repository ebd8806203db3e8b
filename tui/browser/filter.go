package browser

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// A Filter is what the user typed after '/': words separated by spaces,
// all of which a run must match. A bare word is found (case-insensitive)
// in the run's id, name, status, objective, policy or tags; key=value
// wants a config key equal to value, key~value one containing it. A key
// names a config key whole ("finetune.policy") or by its last parts
// ("policy"); name, id, status, objective, policy and tag are keys too.
type Filter struct {
	words []string
	terms []term
}

type term struct {
	key, val string
	exact    bool
}

// ParseFilter reads a filter; it never fails (a word it cannot read as a
// key term is a bare word).
func ParseFilter(s string) Filter {
	var f Filter
	for _, w := range strings.Fields(strings.ToLower(s)) {
		i := strings.IndexAny(w, "=~")
		if i <= 0 {
			f.words = append(f.words, w)
			continue
		}
		f.terms = append(f.terms, term{key: w[:i], val: w[i+1:], exact: w[i] == '='})
	}
	return f
}

// Empty reports whether f lets every run through.
func (f Filter) Empty() bool { return len(f.words) == 0 && len(f.terms) == 0 }

// Match reports whether e passes f.
func (f Filter) Match(e *Row) bool {
	for _, w := range f.words {
		if !strings.Contains(e.hay, w) {
			return false
		}
	}
	for _, t := range f.terms {
		if !t.match(e) {
			return false
		}
	}
	return true
}

func (t term) match(e *Row) bool {
	test := func(v string) bool {
		v = strings.ToLower(v)
		if t.exact {
			return v == t.val
		}
		return strings.Contains(v, t.val)
	}
	if t.key == "tag" || t.key == "tags" {
		for _, g := range e.Tags {
			if test(g) {
				return true
			}
		}
		return false
	}
	if v, ok := e.fields[t.key]; ok {
		return test(v)
	}
	if v, ok := e.Config[t.key]; ok {
		return test(v)
	}
	// A short key matches every config key it ends: "lr" matches
	// "finetune.lr" and "pretrain.lr"; any of them passing will do.
	suffix := "." + t.key
	for k, v := range e.Config {
		if strings.HasSuffix(strings.ToLower(k), suffix) && test(v) {
			return true
		}
	}
	return false
}

// Column is a column of the list, by which it can be sorted.
type Column int

// The list's columns, in order.
const (
	ColName Column = iota
	ColStatus
	ColObjective
	ColPolicy
	ColSteps
	ColFinal
	ColBest
	ColAge
	ColTags
	nColumns
)

var columnNames = [nColumns]string{"run", "status", "objective", "policy", "steps", "ψ test", "best ψ", "age", "tags"}

func (c Column) String() string { return columnNames[c] }

// compare orders a before b by column c, ascending. NaN sorts before
// every number, so missing values gather at one end.
func compare(c Column, a, b *Row) int {
	switch c {
	case ColName:
		return cmp.Compare(strings.ToLower(a.Label()), strings.ToLower(b.Label()))
	case ColStatus:
		return cmp.Compare(a.Status, b.Status)
	case ColObjective:
		return cmp.Compare(a.Objective, b.Objective)
	case ColPolicy:
		return cmp.Compare(a.Policy, b.Policy)
	case ColSteps:
		return cmp.Compare(a.Steps, b.Steps)
	case ColFinal:
		return cmpNum(a.Final, b.Final)
	case ColBest:
		return cmpNum(a.Best, b.Best)
	case ColAge:
		// Ascending age is newest first.
		return b.Created.Compare(a.Created)
	case ColTags:
		return cmp.Compare(strings.Join(a.Tags, ","), strings.Join(b.Tags, ","))
	}
	return 0
}

func cmpNum(a, b float64) int {
	switch an, bn := math.IsNaN(a), math.IsNaN(b); {
	case an && bn:
		return 0
	case an:
		return -1
	case bn:
		return 1
	}
	return cmp.Compare(a, b)
}

// Select returns the indices of the rows that pass f, ordered by
// column c (descending if desc); ties keep the order of all.
func Select(all []Row, f Filter, c Column, desc bool) []int {
	idx := make([]int, 0, len(all))
	for i := range all {
		if f.Match(&all[i]) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		r := compare(c, &all[i], &all[j])
		if desc {
			r = -r
		}
		return r
	})
	return idx
}
