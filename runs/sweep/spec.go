// Package sweep runs grids of selmix runs: a spec (TOML) describes a base
// configuration and the members (a product of axes and/or explicit rows);
// a sweep folder in the runs root records them; the members run locally,
// N at a time, or as a Slurm job array; status, resume and report read
// the members' runs back from the run store. docs/sweeps.md describes
// the spec, the folder and the executors.
package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"selmix/core/boundedfile"
	"selmix/core/experiment"
)

// MaxMembers bounds a sweep: a typo in an axis must not create a million
// runs.
const MaxMembers = 10000

// Spec is a parsed sweep spec.
type Spec struct {
	File       string // the spec's path, as given (for errors)
	Name       string
	BaseConfig string    // base_config resolved against the spec's folder, or ""
	Base       []Setting // [base], sorted by key
	Axes       []Axis    // [axes], in the order the spec declares them
	Rows       []Row     // [[rows]]
	Slurm      *Slurm    // [slurm], nil if absent
}

// Setting is one configuration key and its value as TOML text (what
// `--set key=value` takes).
type Setting struct {
	Key, Value string
}

// Arg is the setting as a --set argument.
func (s Setting) Arg() string { return s.Key + "=" + s.Value }

// Axis is one key and the values the sweep gives it.
type Axis struct {
	Key    string
	Values []string // TOML value text
}

// Row is one [[rows]] table: settings taken together.
type Row []Setting

// Slurm is the [slurm] table: the resources of one array task and how
// the array runs.
type Slurm struct {
	Partition     string   `toml:"partition" json:"partition,omitempty"`
	Time          string   `toml:"time" json:"time,omitempty"`
	Gres          string   `toml:"gres" json:"gres,omitempty"`
	CPUsPerTask   int      `toml:"cpus_per_task" json:"cpus_per_task,omitempty"`
	Mem           string   `toml:"mem" json:"mem,omitempty"`
	MaxParallel   int      `toml:"max_parallel" json:"max_parallel,omitempty"`     // array throttle %M; 0 = no limit
	SignalSeconds int      `toml:"signal_seconds" json:"signal_seconds,omitempty"` // --signal=B:TERM@S; 0 = none
	Requeue       bool     `toml:"requeue" json:"requeue,omitempty"`               // a task warned to stop (143 while running) requeues itself
	Extra         []string `toml:"extra" json:"extra,omitempty"`                   // further sbatch options, e.g. "--account=lab"
}

// specFile is the TOML layout of a spec.
type specFile struct {
	Name       string           `toml:"name"`
	BaseConfig string           `toml:"base_config"`
	Base       map[string]any   `toml:"base"`
	Axes       map[string]any   `toml:"axes"`
	Rows       []map[string]any `toml:"rows"`
	Slurm      *Slurm           `toml:"slurm"`
}

// reservedKeys are set by the sweep itself.
var reservedKeys = map[string]string{
	"name": "the sweep names every member's run <sweep id>-<index>",
}

// ReadSpec reads and parses the spec at path.
func ReadSpec(path string) (*Spec, []byte, error) {
	b, err := boundedfile.ReadFile(path, experiment.ConfigFile)
	if err != nil {
		return nil, nil, err
	}
	s, err := Parse(b, path)
	return s, b, err
}

// Parse parses spec text; file names it in errors and anchors a relative
// base_config. It checks the spec's structure and that every key is a
// configuration key with a value of its type; Members checks each
// member's whole configuration.
func Parse(text []byte, file string) (*Spec, error) {
	var f specFile
	md, err := toml.Decode(string(text), &f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	for _, k := range md.Undecoded() {
		// [base], [axes] and [[rows]] decode into maps whole (the TOML
		// decoder still lists dotted keys inside them).
		if len(k) > 1 && (k[0] == "base" || k[0] == "axes" || k[0] == "rows") {
			continue
		}
		return nil, fmt.Errorf("%s: unknown key %s (a spec has name, base_config, [base], [axes], [[rows]] and [slurm])", file, k)
	}
	s := &Spec{File: file, Name: f.Name, Slurm: f.Slurm}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if err := checkName(s.Name); err != nil {
		return nil, fmt.Errorf("%s: name: %v", file, err)
	}
	if f.BaseConfig != "" {
		s.BaseConfig = f.BaseConfig
		if !filepath.IsAbs(s.BaseConfig) {
			s.BaseConfig = filepath.Join(filepath.Dir(file), s.BaseConfig)
		}
	}
	if s.Base, err = parseBase(f.Base, file); err != nil {
		return nil, err
	}
	if s.Axes, err = parseAxes(md, f.Axes, file); err != nil {
		return nil, err
	}
	if s.Rows, err = parseRows(f.Rows, s.Axes, file); err != nil {
		return nil, err
	}
	if len(s.Axes) == 0 && len(s.Rows) == 0 {
		return nil, fmt.Errorf("%s: no members: give [axes] (a product) or [[rows]] (explicit members), or both", file)
	}
	if err := s.checkKeys(); err != nil {
		return nil, err
	}
	if n := s.Count(); n > MaxMembers {
		return nil, fmt.Errorf("%s: %d members; at most %d per sweep", file, n, MaxMembers)
	}
	if s.Slurm != nil {
		if err := s.Slurm.check(); err != nil {
			return nil, fmt.Errorf("%s: [slurm] %v", file, err)
		}
	}
	return s, nil
}

// badKey is the error of key in a part of spec file (where: "[base]",
// "[axes]", "[[rows]] 2").
func badKey(file, where, key string, err error) error {
	return fmt.Errorf("%s: %s %q: %v", file, where, key, err)
}

// parseBase reads [base]: one setting per key, sorted.
func parseBase(m map[string]any, file string) ([]Setting, error) {
	base, err := flatten(m, "")
	if err != nil {
		return nil, fmt.Errorf("%s: [base]: %v", file, err)
	}
	var out []Setting
	for _, k := range sortedKeys(base) {
		v, err := render(base[k])
		if err != nil {
			return nil, badKey(file, "[base]", k, err)
		}
		out = append(out, Setting{k, v})
	}
	return out, nil
}

// parseAxes reads [axes] in the order the file declares them: each a
// non-empty array of values.
func parseAxes(md toml.MetaData, m map[string]any, file string) ([]Axis, error) {
	axes, err := flatten(m, "")
	if err != nil {
		return nil, fmt.Errorf("%s: [axes]: %v", file, err)
	}
	var out []Axis
	for _, k := range declared(md, "axes", axes) {
		vals, ok := axes[k].([]any)
		if !ok || len(vals) == 0 {
			return nil, badKey(file, "[axes]", k, errors.New("want a non-empty array of values, e.g. [1, 2, 3]"))
		}
		a := Axis{Key: k}
		for _, v := range vals {
			t, err := render(v)
			if err != nil {
				return nil, badKey(file, "[axes]", k, err)
			}
			a.Values = append(a.Values, t)
		}
		out = append(out, a)
	}
	return out, nil
}

// parseRows reads [[rows]]: each non-empty, none setting an axis's key.
func parseRows(rows []map[string]any, axes []Axis, file string) ([]Row, error) {
	var out []Row
	for i, r := range rows {
		flat, err := flatten(r, "")
		if err != nil {
			return nil, fmt.Errorf("%s: [[rows]] %d: %v", file, i+1, err)
		}
		if len(flat) == 0 {
			return nil, fmt.Errorf("%s: [[rows]] %d is empty", file, i+1)
		}
		var row Row
		for _, k := range sortedKeys(flat) {
			v, err := render(flat[k])
			if err != nil {
				return nil, badKey(file, fmt.Sprintf("[[rows]] %d", i+1), k, err)
			}
			if slices.ContainsFunc(axes, func(a Axis) bool { return a.Key == k }) {
				return nil, badKey(file, fmt.Sprintf("[[rows]] %d", i+1), k, errors.New("is also an axis; give it in one place"))
			}
			row = append(row, Setting{k, v})
		}
		out = append(out, row)
	}
	return out, nil
}

// checkKeys checks that every key is a configuration key taking such a
// value and not one the sweep sets: members are checked whole later, but
// a typo is best named where it is.
func (s *Spec) checkKeys() error {
	def := experiment.Default()
	check := func(where string, st Setting) error {
		if why, ok := reservedKeys[st.Key]; ok {
			return badKey(s.File, where, st.Key, errors.New("is set by the sweep: "+why))
		}
		c := def
		c.Model.Hidden = slices.Clone(def.Model.Hidden)
		c.Worker.Command = slices.Clone(def.Worker.Command)
		if err := experiment.Set(&c, st.Arg()); err != nil {
			return badKey(s.File, where, st.Key, err)
		}
		return nil
	}
	for _, st := range s.Base {
		if err := check("[base]", st); err != nil {
			return err
		}
	}
	for _, a := range s.Axes {
		for _, v := range a.Values {
			if err := check("[axes]", Setting{a.Key, v}); err != nil {
				return err
			}
		}
	}
	for i, r := range s.Rows {
		for _, st := range r {
			if err := check(fmt.Sprintf("[[rows]] %d", i+1), st); err != nil {
				return err
			}
		}
	}
	return nil
}

// Count is the number of members: rows × the product of the axes (either
// factor is 1 when absent); it stops counting past countLimit.
func (s *Spec) Count() int {
	n := max(1, len(s.Rows))
	for _, a := range s.Axes {
		n *= len(a.Values)
		if n > countLimit {
			return countLimit + 1
		}
	}
	return n
}

// countLimit keeps Count from overflowing on absurd specs.
const countLimit = 1 << 30

// Columns are the keys that vary between members: the rows' keys in order
// of first appearance, then the axes.
func (s *Spec) Columns() []string {
	var cols []string
	for _, r := range s.Rows {
		for _, st := range r {
			if !slices.Contains(cols, st.Key) {
				cols = append(cols, st.Key)
			}
		}
	}
	for _, a := range s.Axes {
		cols = append(cols, a.Key)
	}
	return cols
}

// Member is one run of the sweep.
type Member struct {
	Index int      `json:"index"`
	Run   string   `json:"run"`    // the name its run records under
	Vary  []string `json:"values"` // its value of each column, as TOML text ("" if its row lacks the key)
	Sets  []string `json:"sets"`   // every --set override, in order
}

// Members expands the spec for the sweep with the given id: rows in order,
// each with every combination of the axes (the last axis varies fastest).
// It builds and validates every member's configuration as `selmix run`
// would (base_config, then [base], the row, the axes, the run name) and
// names the first bad one.
func (s *Spec) Members(id string) ([]Member, error) {
	if n := s.Count(); n > MaxMembers {
		return nil, fmt.Errorf("%s: %d members; at most %d per sweep", s.File, n, MaxMembers)
	}
	if s.BaseConfig != "" {
		f, _, err := boundedfile.Open(s.BaseConfig, experiment.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("%s: base_config: %v", s.File, err)
		}
		f.Close()
	}
	cols := s.Columns()
	rows := s.Rows
	if len(rows) == 0 {
		rows = []Row{nil}
	}
	var out []Member
	combo := make([]int, len(s.Axes))
	for ri, row := range rows {
		for i := range combo {
			combo[i] = 0
		}
		for {
			m := Member{Index: len(out), Run: fmt.Sprintf("%s-%d", id, len(out)), Vary: make([]string, len(cols))}
			for _, st := range s.Base {
				m.Sets = append(m.Sets, st.Arg())
			}
			var where []string
			if len(s.Rows) > 0 {
				where = append(where, fmt.Sprintf("[[rows]] %d", ri+1))
			}
			for _, st := range row {
				m.Sets = append(m.Sets, st.Arg())
				m.Vary[slices.Index(cols, st.Key)] = st.Value
			}
			for ai, a := range s.Axes {
				v := a.Values[combo[ai]]
				m.Sets = append(m.Sets, a.Key+"="+v)
				m.Vary[slices.Index(cols, a.Key)] = v
				where = append(where, a.Key+"="+Display(v))
			}
			m.Sets = append(m.Sets, "name="+quote(m.Run))
			if _, err := experiment.Load(s.BaseConfig, m.Sets); err != nil {
				return nil, fmt.Errorf("%s: member %d (%s): %v", s.File, m.Index, strings.Join(where, ", "), err)
			}
			out = append(out, m)
			// Next combination, last axis fastest.
			i := len(combo) - 1
			for ; i >= 0; i-- {
				combo[i]++
				if combo[i] < len(s.Axes[i].Values) {
					break
				}
				combo[i] = 0
			}
			if i < 0 {
				break
			}
		}
	}
	return out, nil
}

// checkName accepts names that are safe in a folder name, a run name and
// a Slurm job name.
func checkName(n string) error {
	if n == "" || len(n) > 40 {
		return fmt.Errorf("%q: want 1 to 40 characters", n)
	}
	for i, r := range n {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
		if !ok || i == 0 && (r == '.' || r == '-') {
			return fmt.Errorf("%q: use letters, digits, '-', '_' and '.' (not first)", n)
		}
	}
	return nil
}

// flatten turns nested tables (from dotted keys or [base.finetune]) into
// "section.key" → value.
func flatten(m map[string]any, prefix string) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			inner, err := flatten(sub, key)
			if err != nil {
				return nil, err
			}
			for ik, iv := range inner {
				if _, dup := out[ik]; dup {
					return nil, fmt.Errorf("key %q is given twice", ik)
				}
				out[ik] = iv
			}
			continue
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("key %q is given twice", key)
		}
		out[key] = v
	}
	return out, nil
}

// declared lists the keys of flat in the order the document declares them
// under table (TOML maps forget it; an axis's order is the members').
func declared(md toml.MetaData, table string, flat map[string]any) []string {
	var out []string
	for _, k := range md.Keys() {
		if len(k) < 2 || k[0] != table {
			continue
		}
		name := strings.Join(k[1:], ".")
		if _, ok := flat[name]; ok && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	// Keys the metadata did not list (not expected) keep a stable order.
	for _, k := range sortedKeys(flat) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// render writes a decoded TOML value back as TOML value text.
func render(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return quote(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		switch {
		case math.IsNaN(v):
			return "nan", nil
		case math.IsInf(v, 1):
			return "inf", nil
		case math.IsInf(v, -1):
			return "-inf", nil
		}
		t := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(t, ".e") {
			t += ".0" // stays a float: 10.0, not the integer 10
		}
		return t, nil
	case bool:
		return strconv.FormatBool(v), nil
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			t, err := render(x)
			if err != nil {
				return "", err
			}
			parts[i] = t
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case []map[string]any, map[string]any:
		return "", errors.New("a table is not a configuration value")
	}
	return "", fmt.Errorf("unsupported value %v (%T): want a string, number, boolean or array", v, v)
}

// quote is a TOML basic string (JSON's escapes are all valid TOML ones).
func quote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// Display is a value as a person reads it: strings without their quotes.
func Display(v string) string {
	if strings.HasPrefix(v, `"`) {
		var s string
		if json.Unmarshal([]byte(v), &s) == nil {
			return s
		}
	}
	return v
}

// check validates the [slurm] table: values go into #SBATCH lines, which
// sbatch splits at white space and which must stay one line each.
func (s *Slurm) check() error {
	for _, f := range []struct{ k, v string }{{"partition", s.Partition}, {"time", s.Time}, {"gres", s.Gres}, {"mem", s.Mem}} {
		if strings.ContainsAny(f.v, " \t\r\n\"'\\#") {
			return fmt.Errorf("%s %q: no white space, quotes, backslashes or '#'", f.k, f.v)
		}
	}
	for _, f := range []struct {
		k string
		v int
	}{{"cpus_per_task", s.CPUsPerTask}, {"max_parallel", s.MaxParallel}, {"signal_seconds", s.SignalSeconds}} {
		if f.v < 0 {
			return fmt.Errorf("%s %d: want ≥ 0 (0 leaves it to Slurm)", f.k, f.v)
		}
	}
	if s.SignalSeconds > 65535 {
		return fmt.Errorf("signal_seconds %d: Slurm allows at most 65535", s.SignalSeconds)
	}
	for _, e := range s.Extra {
		if !strings.HasPrefix(e, "-") || strings.ContainsAny(e, "\r\n") || strings.HasPrefix(e, "--array") {
			return fmt.Errorf("extra %q: want one sbatch option per entry, e.g. \"--account=lab\" (not --array: the sweep sets it)", e)
		}
	}
	return nil
}
