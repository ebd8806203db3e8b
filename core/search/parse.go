package search

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

	"selmix/core/experiment"
	"selmix/internal/boundedfile"
)

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
		if len(k) == 2 && k[0] == "asha" {
			return nil, fmt.Errorf("%s: [asha] %s: unknown key (it has min_steps, eta, metric and align)", file, k[1])
		}
		if len(k) == 2 && k[0] == "random" {
			return nil, fmt.Errorf("%s: [random] %s: unknown key (it has members, steps and seed)", file, k[1])
		}
		if len(k) == 2 && k[0] == "pbt" {
			return nil, fmt.Errorf("%s: [pbt] %s: unknown key (it has interval, quantile, explore, candidates, keys, metric and seed)", file, k[1])
		}
		return nil, fmt.Errorf("%s: unknown key %s (a spec has name, base_config, [base], [axes], [[rows]], [slurm], [asha], [pbt] and [random])", file, k)
	}
	s := &Spec{File: file, Name: f.Name, Slurm: f.Slurm, ASHA: f.ASHA, PBT: f.PBT, Random: f.Random}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if err := CheckName(s.Name); err != nil {
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
	if s.ASHA != nil {
		if err := s.ASHA.check(); err != nil {
			return nil, fmt.Errorf("%s: [asha] %v", file, err)
		}
	}
	if s.PBT != nil {
		if err := s.PBT.check(); err != nil {
			return nil, fmt.Errorf("%s: [pbt] %v", file, err)
		}
	}
	if s.Random != nil {
		if err := s.Random.check(); err != nil {
			return nil, fmt.Errorf("%s: [random] %v", file, err)
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
	axes, err := flattenWith(m, "", isDist)
	if err != nil {
		return nil, fmt.Errorf("%s: [axes]: %v", file, err)
	}
	var out []Axis
	for _, k := range declared(md, "axes", axes) {
		a := Axis{Key: k}
		vals, ok := axes[k].([]any)
		if t, table := axes[k].(map[string]any); table {
			if a.Dist, vals, err = parseDist(t); err != nil {
				return nil, badKey(file, "[axes]", k, err)
			}
			ok = true
		}
		if a.Dist != nil {
			out = append(out, a)
			continue
		}
		if !ok || len(vals) == 0 {
			return nil, badKey(file, "[axes]", k, errors.New("want a non-empty array of values, e.g. [1, 2, 3], or a distribution: { log_uniform = [0.5, 4] }"))
		}
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
		vals := a.Values
		if d := a.Dist; d != nil {
			vals = nil
			for _, x := range []float64{d.Lo, d.Hi} {
				t, _ := render(x) // a finite float renders
				if d.Int {
					t = strconv.FormatInt(int64(x), 10)
				}
				vals = append(vals, t)
			}
		}
		for _, v := range vals {
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

// CheckName accepts names that are safe in a folder name, a run name and
// a Slurm job name.
func CheckName(n string) error {
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
	return flattenWith(m, prefix, func(string, map[string]any) bool { return false })
}

// isDist reports whether the table t at key of [axes] is a distribution
// ({ log_uniform = [0.5, 4] }) rather than a section of keys: it names a
// distribution, or it sits below a whole key (section.key), where no
// configuration key is (a misspelt distribution is then named as one).
func isDist(key string, t map[string]any) bool {
	for _, k := range []string{DistUniform, DistLogUniform, DistChoice} {
		if _, ok := t[k]; ok {
			return true
		}
	}
	return strings.Contains(key, ".")
}

// flattenWith is flatten, but keeps as values the tables leaf says are.
func flattenWith(m map[string]any, prefix string, leaf func(key string, t map[string]any) bool) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && !leaf(key, sub) {
			inner, err := flattenWith(sub, key, leaf)
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
