package compare

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"

	"selmix/runs"
)

// GroupKeys are the config keys whose values differ between the runs:
// the keys worth grouping by.
func (m *Model) GroupKeys() []string {
	seen := map[string]bool{}
	for _, r := range m.runs {
		for k := range r.Config {
			seen[k] = true
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		if k == "name" || k == "id" {
			continue
		}
		for _, r := range m.runs[1:] {
			if r.Config[k] != m.runs[0].Config[k] {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// nextGroup cycles the grouping: none, then each key that differs.
func (m *Model) nextGroup() {
	ks := m.GroupKeys()
	if len(ks) == 0 {
		m.group = ""
		return
	}
	i := slices.Index(ks, m.group)
	switch {
	case m.group == "":
		m.group = ks[0]
	case i < 0 || i == len(ks)-1:
		m.group = ""
	default:
		m.group = ks[i+1]
	}
}

// GroupBy sets the grouping key ("" for none).
func (m *Model) GroupBy(k string) { m.group = k }

// Group is the runs that share a value of the grouping key.
type Group struct {
	Value   string
	Members []int // indices into the runs
}

// Groups splits the runs by the grouping key, in order of first member.
func (m *Model) Groups() []Group {
	var out []Group
	for _, g := range runs.GroupBy(len(m.runs), func(i int) (string, bool) {
		v, ok := m.runs[i].Config[m.group]
		return v, ok
	}) {
		out = append(out, Group(g))
	}
	return out
}

// lastMeanStd is the group's mean ± std at the end of its members' last
// refreshes (each member's last smoothed value).
func (g Group) lastMeanStd(ss []sampler, _ float64) string {
	var vals []float64
	for _, s := range ss {
		if n := len(s.ys); n > 0 {
			vals = append(vals, s.ys[n-1])
		}
	}
	if len(vals) == 0 {
		return "-"
	}
	mu, sd := meanStd(vals)
	return fmt.Sprintf("%s ± %s", num(mu), num(sd))
}

// meanStd is the mean and the sample (n−1) standard deviation
// (stat.MeanStdDev); the std of one value is 0, and none has NaN for both.
func meanStd(v []float64) (float64, float64) {
	switch len(v) {
	case 0:
		return math.NaN(), math.NaN()
	case 1:
		return v[0], 0
	}
	return stat.MeanStdDev(v, nil)
}

func lastOf(v []float64) string {
	for i := len(v) - 1; i >= 0; i-- {
		if !math.IsNaN(v[i]) {
			return num(v[i])
		}
	}
	return "-"
}
