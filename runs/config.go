package runs

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"selmix/core/experiment"
	"selmix/internal/safetext"
)

// Recorded is the configuration r was recorded with, as its one reader
// reads it (experiment.ReadRecorded): a key the run did not record holds
// what ran then. A config.toml that is not a valid configuration is
// damage.
func (r *Run) Recorded() (experiment.Config, error) {
	text, err := r.Config()
	if err != nil {
		return experiment.Config{}, err
	}
	c, err := experiment.ReadRecorded(text, filepath.Join(r.Dir, configName))
	if err != nil {
		return c, Damaged(err)
	}
	return c, nil
}

// Config is a run's configuration flattened: "section.key" → its value,
// an int64, float64, bool or string (anything else, such as an array, as
// its text), for every key of the configuration, as Run.Recorded reads
// it.
type Config map[string]any

// ParseConfig flattens the config.toml text of a run (read as
// Run.Recorded reads it); file names it in errors.
func ParseConfig(text, file string) (Config, error) {
	c, err := experiment.ReadRecorded(text, file)
	if err != nil {
		return nil, err
	}
	return flatten(c), nil
}

// flatten is c's keys and values (experiment.Config.Table).
func flatten(c experiment.Config) Config {
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
	walk("", c.Table())
	return out
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

// ReadConfig is the configuration of the run in dir flattened, read as
// Run.Recorded reads it.
func ReadConfig(dir string) (Config, error) {
	c, err := (&Run{Dir: dir}).Recorded()
	if err != nil {
		return nil, err
	}
	return flatten(c), nil
}

// FlatConfig is r's config.toml flattened (ReadConfig).
func (r *Run) FlatConfig() (Config, error) { return ReadConfig(r.Dir) }
