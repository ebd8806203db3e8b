package cli

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"selmix/runs"
	"selmix/viz"
)

// groupRuns splits rs by the value of config key key ("(unset)" where a
// run's config lacks it), groups in order of first member. key is a
// whole config key ("finetune.policy") or its last parts ("policy") if
// they name one key only; it returns the whole key.
func groupRuns(rs []*viz.RunData, key string) ([]viz.Group, string, error) {
	cfgs := make([]map[string]string, len(rs))
	keys := map[string]bool{}
	for i, r := range rs {
		run, err := runs.Open(filepath.Dir(r.Dir), filepath.Base(r.Dir))
		if err != nil {
			return nil, "", err
		}
		if cfgs[i], err = flatConfig(run); err != nil {
			return nil, "", err
		}
		for k := range cfgs[i] {
			keys[k] = true
		}
	}
	whole, err := resolveKey(key, keys)
	if err != nil {
		return nil, "", err
	}
	var out []viz.Group
	at := map[string]int{}
	for i, r := range rs {
		v, ok := cfgs[i][whole]
		if !ok {
			v = "(unset)"
		}
		j, ok := at[v]
		if !ok {
			j = len(out)
			at[v] = j
			out = append(out, viz.Group{Value: v})
		}
		out[j].Runs = append(out[j].Runs, r)
	}
	return out, whole, nil
}

// resolveKey finds key among keys, whole or by its last parts.
func resolveKey(key string, keys map[string]bool) (string, error) {
	if keys[key] {
		return key, nil
	}
	var cand []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if strings.HasSuffix(k, "."+key) {
			cand = append(cand, k)
		}
	}
	switch len(cand) {
	case 1:
		return cand[0], nil
	case 0:
		return "", badInput("--group-by %q: no run's config has that key (e.g. %s)", cell(key), strings.Join(firstN(slices.Sorted(maps.Keys(keys)), 6), ", "))
	}
	return "", badInput("--group-by %q: ambiguous, it ends %s", cell(key), strings.Join(cand, ", "))
}

func firstN(s []string, n int) []string { return s[:min(n, len(s))] }

// errNoGroupBy says --group-by was given without --compare.
var errNoGroupBy = errors.New("--group-by goes with --compare")
