package classlist

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"selmix/core/data"
)

func TestSort(t *testing.T) {
	nan := math.NaN()
	names := []string{"dog", "Cat", "ant", "bee", "cat"}
	v := Values{
		Recall:   []float64{0.5, 0.2, nan, 0.2, 0.9},
		Coverage: []float64{0.3, 0.1, 0.2, 0.25, 0.15},
		Counts:   []int{100, 50, 50, 10, 5},
		Gain:     []float64{-1, 3, 2, nan, 3},
		Name:     func(k int) string { return names[k] },
	}
	cases := []struct {
		name string
		by   By
		v    Values
		want []int
	}{
		{"class", ByClass, v, []int{0, 1, 2, 3, 4}},
		{"recall: ties by index, NaN last", ByRecall, v, []int{1, 3, 0, 4, 2}},
		{"coverage", ByCoverage, v, []int{1, 4, 2, 3, 0}},
		{"count: tail first, ties by index", ByCount, v, []int{4, 3, 1, 2, 0}},
		{"gain: largest first, NaN last", ByGain, v, []int{1, 4, 2, 0, 3}},
		{"name: case-insensitive, ties by index", ByName, v, []int{2, 3, 1, 4, 0}},
		{"unknown counts: class order", ByCount, Values{Counts: []int{3, 2}}, []int{0, 1, 2, 3, 4}},
		{"no gain yet: class order", ByGain, Values{}, []int{0, 1, 2, 3, 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Sort(nil, c.by, 5, c.v)
			if !slices.Equal(got, c.want) {
				t.Errorf("Sort(%v) = %v, want %v", c.by, got, c.want)
			}
		})
	}
}

// Gains against a different computation: the last element of each sorted
// row.
func TestGains(t *testing.T) {
	const K = 7
	rnd := rand.New(rand.NewPCG(1, 2))
	G := make([]float64, K*K)
	for i := range G {
		G[i] = rnd.NormFloat64()
	}
	G[3*K+2] = math.NaN() // a NaN in a row is skipped
	got := Gains(nil, G, K)
	for i := range K {
		row := slices.DeleteFunc(slices.Clone(G[i*K:(i+1)*K]), math.IsNaN)
		slices.Sort(row)
		if want := row[len(row)-1]; got[i] != want {
			t.Errorf("gain of row %d = %g, want %g", i, got[i], want)
		}
	}
	if g := Gains(nil, G[:K*K-1], K); g != nil {
		t.Errorf("Gains of a short G = %v, want nil (not loaded)", g)
	}
	if g := Gains(nil, nil, K); g != nil {
		t.Errorf("Gains(nil) = %v, want nil", g)
	}
	allNaN := []float64{math.NaN(), math.NaN(), 1, 2}
	if g := Gains(nil, allNaN, 2); !math.IsNaN(g[0]) || g[1] != 2 {
		t.Errorf("Gains with a NaN row = %v, want [NaN 2]", g)
	}
}

func TestFind(t *testing.T) {
	unnamed := func(k int) string { return "class " + strconv.Itoa(k) }
	named := func(k int) string { return data.FashionMNISTClasses[k] }
	worstFirst := []int{125, 412, 12, 120, 7} // a display order
	cases := []struct {
		name        string
		order       []int
		names       func(int) string
		query       string
		pos, nMatch int
	}{
		{"first in display order", worstFirst, unnamed, "class 1", 0, 3},
		{"an index wins over the first match", worstFirst, unnamed, "12", 2, 4},
		{"whole name wins", worstFirst, unnamed, "Class 12", 2, 3},
		{"index wins over order", worstFirst, unnamed, "120", 3, 1},
		{"case-insensitive substring", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, named, "SHI", 0, 2},
		{"whole name", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, named, "shirt", 6, 2},
		{"index of a named class", []int{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, named, "3", 6, 1},
		{"no match", worstFirst, unnamed, "zebra", -1, 0},
		{"blank", worstFirst, unnamed, "  ", -1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pos, n := Find(c.order, c.names, c.query)
			if pos != c.pos || n != c.nMatch {
				t.Errorf("Find(%q) = %d, %d matches; want %d, %d", c.query, pos, n, c.pos, c.nMatch)
			}
		})
	}
}

func TestNatural(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"class 2", "class 10", -1},
		{"class 10", "class 2", 1},
		{"class 10", "class 10", 0},
		{"class 007", "class 7", 0},
		{"a", "b", -1},
		{"abc", "ab", 1},
		{"x9y", "x10a", -1},
		{"10", "9z", 1},
		{"", "a", -1},
	}
	for _, c := range cases {
		if got := natural(c.a, c.b); got != c.want {
			t.Errorf("natural(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
