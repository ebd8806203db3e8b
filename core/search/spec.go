// Package search is what a sweep is, apart from where it is kept and how
// it runs: its spec (TOML: a base configuration and the members, a
// product of axes and/or explicit rows), how it searches them (a grid;
// successive halving's rungs), and the Slurm batch script its members run
// under. The run store keeps a sweep's folder and reads its members'
// status (runs/sweep); app/sweepexec runs them. docs/sweeps.md describes
// the spec, the folder and the executors.
package search

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"selmix/core/experiment"
	"selmix/internal/boundedfile"
)

// MaxMembers bounds a sweep: a typo in an axis must not create a million
// runs.
const MaxMembers = 10000

// Spec is a parsed sweep spec.
type Spec struct {
	File       string // the spec's path, as given (for errors)
	Name       string
	BaseConfig string      // base_config resolved against the spec's folder, or ""
	Base       []Setting   // [base], sorted by key
	Axes       []Axis      // [axes], in the order the spec declares them
	Rows       []Row       // [[rows]]
	Slurm      *Slurm      // [slurm], nil if absent
	ASHA       *ASHASpec   // [asha], nil if absent (successive halving's settings: asha.go)
	PBT        *PBTSpec    // [pbt], nil if absent (population-based training's settings: pbt.go)
	Random     *RandomSpec // [random], nil if absent (a drawn sweep's budget: random.go)
}

// Setting is one configuration key and its value as TOML text (what
// `--set key=value` takes).
type Setting struct {
	Key, Value string
}

// Arg is the setting as a --set argument.
func (s Setting) Arg() string { return s.Key + "=" + s.Value }

// Axis is one key and the values the sweep gives it: a list, or a
// distribution a drawn sweep draws from (random.go).
type Axis struct {
	Key    string
	Values []string // TOML value text; nil for a distribution
	Dist   *Dist    // uniform or log-uniform, nil for a list (a choice)
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
	ASHA       *ASHASpec        `toml:"asha"`
	PBT        *PBTSpec         `toml:"pbt"`
	Random     *RandomSpec      `toml:"random"`
}

// reservedKeys are set by the sweep itself.
var reservedKeys = map[string]string{
	"name": "the sweep names every member's run <sweep id>-<index>",
}

// Count is the number of members: rows × the product of the axes (either
// factor is 1 when absent); it stops counting past countLimit.
func (s *Spec) Count() int {
	n := max(1, len(s.Rows))
	for _, a := range s.Axes {
		n *= max(1, len(a.Values)) // a distribution counts once: its draws are [random]'s
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
	if s.HasDists() {
		return nil, s.gridOfDists()
	}
	var combos [][]Setting
	combo := make([]int, len(s.Axes))
	for {
		c := make([]Setting, len(s.Axes))
		for ai, a := range s.Axes {
			c[ai] = Setting{a.Key, a.Values[combo[ai]]}
		}
		combos = append(combos, c)
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
	return s.build(id, combos)
}

// build is the members of a sweep with id: each row (one empty row
// without [[rows]]) with each of combos (a value per axis, in the axes'
// order), rows outer. It builds and validates every member's
// configuration as `selmix run` would and names the first bad one.
func (s *Spec) build(id string, combos [][]Setting) ([]Member, error) {
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
	for ri, row := range rows {
		for _, combo := range combos {
			m := Member{Index: len(out), Run: fmt.Sprintf("%s-%d", id, len(out)), Vary: make([]string, len(cols)), Sets: s.baseSets()}
			var where []string
			if len(s.Rows) > 0 {
				where = append(where, fmt.Sprintf("[[rows]] %d", ri+1))
			}
			for _, st := range row {
				m.Sets = append(m.Sets, st.Arg())
				m.Vary[slices.Index(cols, st.Key)] = st.Value
			}
			for _, st := range combo {
				m.Sets = append(m.Sets, st.Arg())
				m.Vary[slices.Index(cols, st.Key)] = st.Value
				where = append(where, st.Key+"="+Display(st.Value))
			}
			m.Sets = append(m.Sets, "name="+quote(m.Run))
			if _, err := experiment.Load(s.BaseConfig, m.Sets); err != nil {
				return nil, fmt.Errorf("%s: member %d (%s): %v", s.File, m.Index, strings.Join(where, ", "), err)
			}
			out = append(out, m)
		}
	}
	return out, nil
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
