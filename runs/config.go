package runs

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/BurntSushi/toml"

	"selmix/internal/safetext"
)

// Config is a run's config.toml flattened: "section.key" → its value, an
// int64, float64, bool or string (anything else, such as an array, as
// its text).
type Config map[string]any

// ParseConfig flattens config.toml text; file names it in errors.
func ParseConfig(text, file string) (Config, error) {
	var m map[string]any
	if _, err := toml.Decode(text, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	out := Config{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, sub)
			}
		case int64, float64, bool, string:
			out[prefix] = x
		default:
			out[prefix] = fmt.Sprint(x)
		}
	}
	walk("", m)
	return out, nil
}

// Keys are c's keys, sorted.
func (c Config) Keys() []string { return slices.Sorted(maps.Keys(c)) }

// Text is the value of key as text ("" if absent), as runs compare shows it.
func (c Config) Text(key string) string {
	v, ok := c[key]
	if !ok {
		return ""
	}
	return fmt.Sprint(v)
}

// Lines is c as text (Text), each key and value made safe to show in one
// row of a terminal (safetext.Line).
func (c Config) Lines() map[string]string {
	out := make(map[string]string, len(c))
	for k := range c {
		out[safetext.Line(k)] = safetext.Line(c.Text(k))
	}
	return out
}

// Keys is every key any of cfgs has, sorted.
func Keys(cfgs ...Config) []string {
	var keys []string
	for _, c := range cfgs {
		for k := range c {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// Unset is the group of the runs whose config lacks the grouping key.
const Unset = "(unset)"

// Group is the runs that share a value of a config key: their indices.
type Group struct {
	Value   string
	Members []int
}

// GroupBy splits n runs by value(i), the value of the grouping key in
// run i's config (false: it has none, then it is Unset), groups in order
// of first member: the one grouping that export --compare --group-by
// and the comparison view share.
func GroupBy(n int, value func(i int) (string, bool)) []Group {
	var out []Group
	at := map[string]int{}
	for i := range n {
		v, ok := value(i)
		if !ok {
			v = Unset
		}
		j, ok := at[v]
		if !ok {
			j = len(out)
			at[v] = j
			out = append(out, Group{Value: v})
		}
		out[j].Members = append(out[j].Members, i)
	}
	return out
}

// ReadConfig is the config.toml of the run in dir flattened (ParseConfig),
// read as Run.Config reads it.
func ReadConfig(dir string) (Config, error) {
	text, err := (&Run{Dir: dir}).Config()
	if err != nil {
		return nil, err
	}
	return ParseConfig(text, filepath.Join(dir, configName))
}

// FlatConfig is r's config.toml flattened (ReadConfig).
func (r *Run) FlatConfig() (Config, error) { return ReadConfig(r.Dir) }
