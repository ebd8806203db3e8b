package viz

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"selmix/internal/safetext"
	"selmix/runs"
)

// GroupBy splits rs by the value of config key key ("(unset)" where a
// run's config lacks it), groups in order of first member, as export
// --compare --group-by draws them. key is a whole config key
// ("finetune.policy") or its last parts ("policy") if they name one key
// only; GroupBy returns the whole key. A key that names no key or
// several is a *KeyError.
func GroupBy(rs []*RunData, key string) ([]Group, string, error) {
	keys := map[string]bool{}
	for _, r := range rs {
		if r.Config == nil {
			if r.configErr != nil {
				return nil, "", r.configErr
			}
			return nil, "", fmt.Errorf("run %s: its config was not read", r.Meta.ID)
		}
		for k := range r.Config {
			keys[k] = true
		}
	}
	whole, err := resolveKey(key, keys)
	if err != nil {
		return nil, "", err
	}
	var out []Group
	for _, g := range runs.GroupBy(len(rs), func(i int) (string, bool) {
		_, ok := rs[i].Config[whole]
		return rs[i].Config.Text(whole), ok
	}) {
		grp := Group{Value: g.Value}
		for _, i := range g.Members {
			grp.Runs = append(grp.Runs, rs[i])
		}
		out = append(out, grp)
	}
	return out, whole, nil
}

// KeyError is a group-by key that names no config key of the runs, or
// several.
type KeyError struct {
	Key        string
	Keys       []string // every key of the runs' configs, sorted
	Candidates []string // the keys Key is the end of, when more than one
}

func (e *KeyError) Error() string {
	key := safetext.Middle(e.Key, 24)
	if len(e.Candidates) > 0 {
		return fmt.Sprintf("%q: ambiguous, it ends %s", key, strings.Join(e.Candidates, ", "))
	}
	return fmt.Sprintf("%q: no run's config has that key (e.g. %s)", key, strings.Join(e.Keys[:min(6, len(e.Keys))], ", "))
}

// resolveKey finds key among keys, whole or by its last parts.
func resolveKey(key string, keys map[string]bool) (string, error) {
	if keys[key] {
		return key, nil
	}
	all := slices.Sorted(maps.Keys(keys))
	var cand []string
	for _, k := range all {
		if strings.HasSuffix(k, "."+key) {
			cand = append(cand, k)
		}
	}
	switch len(cand) {
	case 1:
		return cand[0], nil
	case 0:
		return "", &KeyError{Key: key, Keys: all}
	}
	return "", &KeyError{Key: key, Keys: all, Candidates: cand}
}

// CompareWithGroups draws Compare of rs and then, when groups is not
// nil, CompareGroups of groups (grouped by config key key) into the same
// folder: one Result of both, and the errors of both. A nil Result means
// the options were rejected before anything was drawn.
func CompareWithGroups(rs []*RunData, groups []Group, key string, m Metric, dir string, o Options) (*Result, error) {
	res, err := Compare(rs, m, dir, o)
	if groups != nil && res != nil {
		gres, gerr := CompareGroups(groups, key, m, dir, o)
		if gres != nil {
			res.Files, res.Notes = append(res.Files, gres.Files...), append(res.Notes, gres.Notes...)
		}
		err = errors.Join(err, gerr)
	}
	return res, err
}
