package gpu

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
)

// The words --gpus takes besides a list.
const (
	Auto = "auto" // the box's GPUs (Discover)
	None = "none" // no GPU: CUDA_VISIBLE_DEVICES="" (workers on CPU)
)

// Option names, for messages.
const (
	OptGPUs = "--gpus"
	OptPer  = "--gpus-per-member"
)

// BadOption is an error in what a person asked for (--gpus,
// --gpus-per-member): bad input, one line naming the option.
type BadOption struct{ Msg string }

func (e *BadOption) Error() string { return e.Msg }

func bad(format string, args ...any) error { return &BadOption{fmt.Sprintf(format, args...)} }

// Names are what messages call the two values Plan reads: the options
// (Options) or where else they came from (a sweep's record of them).
type Names struct{ GPUs, Per string }

// Options names the values as the options --gpus and --gpus-per-member.
var Options = Names{GPUs: OptGPUs, Per: OptPer}

// CheckPer checks a --gpus-per-member a person gave.
func CheckPer(n int) error { return checkPer(OptPer, n) }

func checkPer(name string, n int) error {
	if n < 1 {
		return bad("%s %d: want ≥ 1 (GPUs each member gets)", name, n)
	}
	return nil
}

// Placement is how members are placed on GPUs: each takes a free group
// of Per GPUs (Take) and gives it back when it ends (Put), so no two
// members ever hold one GPU at once. Its methods are safe for concurrent
// use.
type Placement struct {
	Mode   string     // Auto, None, or the --gpus list as given
	Box    *Box       // the GPUs found (empty with None)
	Per    int        // GPUs per member (0 without groups)
	Groups [][]string // the slots: each member's GPUs; none: members are not placed
	Spare  []string   // GPUs no group holds (fewer than Per left over)
	Hide   bool       // None: every member sees no GPU

	mu   sync.Mutex
	held []bool // per group
}

// Plan resolves --gpus mode ("" is Auto) and --gpus-per-member per (0:
// not given, 1 where there are GPUs) against the box. Bad input is a
// *BadOption: a list naming a GPU the box does not have, or malformed; per
// more than the GPUs, or given where there are none.
func Plan(ctx context.Context, mode string, per int) (*Placement, error) {
	return PlanAs(ctx, mode, per, Options)
}

// PlanAs is Plan with its messages naming the values as n does.
func PlanAs(ctx context.Context, mode string, per int, n Names) (*Placement, error) {
	if mode == "" {
		mode = Auto
	}
	if per < 0 {
		return nil, checkPer(n.Per, per)
	}
	p := &Placement{Mode: mode, Box: &Box{}}
	if mode == None {
		if per > 0 {
			return nil, bad("%s %d: no GPUs to place with %s none", n.Per, per, n.GPUs)
		}
		p.Hide = true
		return p, nil
	}
	var list []string
	if mode != Auto {
		var err error
		if list, err = ParseList(n.GPUs, mode); err != nil {
			return nil, &BadOption{err.Error()}
		}
	}
	q := cut(mode, maxEcho)
	box, err := Discover(ctx)
	if err != nil {
		// nvidia-smi hangs or says what is not its list: naming the GPUs in
		// CUDA_VISIBLE_DEVICES skips it (a list is checked against them).
		if list != nil {
			return nil, fmt.Errorf("%s %s: finding the box's GPUs to check it: %w (set %s to them to skip nvidia-smi, or give %s none)", n.GPUs, q, err, EnvVisible, OptGPUs)
		}
		return nil, fmt.Errorf("finding the GPUs: %w (set %s to the GPUs to use to skip nvidia-smi, or give %s none)", err, EnvVisible, OptGPUs)
	}
	p.Box = box
	ids := box.IDs
	if list != nil {
		if len(box.IDs) == 0 {
			return nil, bad("%s %s: this box has no GPUs (%s unset and no nvidia-smi)", n.GPUs, q, EnvVisible)
		}
		ids = nil
		for _, e := range list {
			id, ok := box.Has(e)
			if !ok {
				return nil, bad("%s %s: no GPU %s on this box; it has %s", n.GPUs, q, e, box)
			}
			if slices.Contains(ids, id) {
				return nil, bad("%s %s: GPU %s is given twice", n.GPUs, q, id)
			}
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		if per > 0 {
			return nil, bad("%s %d: this box has no GPUs (%s unset and no nvidia-smi)", n.Per, per, EnvVisible)
		}
		return p, nil
	}
	if per == 0 {
		per = 1
	}
	if per > len(ids) {
		what := "this box has"
		if list != nil {
			what = n.GPUs + " " + q + " gives"
		}
		return nil, bad("%s %d: more GPUs than the %d %s (%s)", n.Per, per, len(ids), what, strings.Join(ids, ", "))
	}
	p.Per = per
	p.Groups = Groups(ids, per)
	if n := len(p.Groups) * per; n < len(ids) {
		p.Spare = ids[n:]
	}
	p.held = make([]bool, len(p.Groups))
	return p, nil
}

// Groups cuts ids into consecutive groups of per (the last ones left over
// when per does not divide them).
func Groups(ids []string, per int) [][]string {
	var out [][]string
	for i := 0; i+per <= len(ids); i += per {
		out = append(out, slices.Clone(ids[i:i+per]))
	}
	return out
}

// Slots is how many members the placement lets run at once; 0: it sets
// no limit (no GPUs are placed).
func (p *Placement) Slots() int { return len(p.Groups) }

// Take marks the first free group held and returns it; nil without
// groups. Taking more groups than Slots at once is a programming error
// and panics: callers run at most Slots members.
func (p *Placement) Take() []string {
	if len(p.Groups) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, h := range p.held {
		if !h {
			p.held[i] = true
			return slices.Clone(p.Groups[i])
		}
	}
	panic("gpu: Take with every group held")
}

// Put gives back a group Take returned. A group that is not held is a
// programming error and panics.
func (p *Placement) Put(g []string) {
	if len(p.Groups) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.Groups {
		if slices.Equal(x, g) {
			if !p.held[i] {
				panic(fmt.Sprintf("gpu: Put of group %v, which is not held", g))
			}
			p.held[i] = false
			return
		}
	}
	panic(fmt.Sprintf("gpu: Put of %v, which is no group", g))
}

// Held is how many groups are held now.
func (p *Placement) Held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, h := range p.held {
		if h {
			n++
		}
	}
	return n
}

// Env is the environment a member holding group g runs with:
// CUDA_VISIBLE_DEVICES set to g (and CUDA_DEVICE_ORDER=PCI_BUS_ID, where
// it is not set, when g holds nvidia-smi's indices, so that CUDA counts
// them as nvidia-smi does), set empty with None, nothing when the
// placement places nothing.
func (p *Placement) Env(g []string) []string {
	switch {
	case p.Hide:
		return []string{EnvVisible + "="}
	case len(g) == 0:
		return nil
	}
	env := []string{EnvVisible + "=" + strings.Join(g, ",")}
	if _, set := os.LookupEnv(EnvOrder); !set && p.Box.Source == FromSMI {
		env = append(env, EnvOrder+"=PCI_BUS_ID")
	}
	return env
}

// Describe says how members are placed, in one line: "GPUs 0, 1, 2, 3
// (nvidia-smi), 1 per member: 4 at a time".
func (p *Placement) Describe() string {
	switch {
	case p.Hide:
		return OptGPUs + " none: every member sees no GPU (" + EnvVisible + "=\"\")"
	case len(p.Groups) == 0:
		return "no GPUs found (" + EnvVisible + " unset and no nvidia-smi): members run on the CPU, " + EnvVisible + " left as it is"
	}
	var ids []string
	for _, g := range p.Groups {
		ids = append(ids, g...)
	}
	s := fmt.Sprintf("GPUs %s (%s), %d per member: %d at a time, each with its own", strings.Join(ids, ", "), p.Box.Source, p.Per, len(p.Groups))
	if len(p.Spare) > 0 {
		s += fmt.Sprintf("; %s left unused", strings.Join(p.Spare, ", "))
	}
	return s
}

// Visible is the environment a single run's worker gets from --gpus mode
// (run, tui): nothing for "" or Auto (CUDA_VISIBLE_DEVICES as it is),
// CUDA_VISIBLE_DEVICES="" for None, and the list, checked against the
// box, otherwise.
func Visible(ctx context.Context, mode string) ([]string, error) {
	switch mode {
	case "", Auto:
		return nil, nil
	case None:
		return []string{EnvVisible + "="}, nil
	}
	list, err := ParseList(OptGPUs, mode)
	if err != nil {
		return nil, &BadOption{err.Error()}
	}
	p, err := Plan(ctx, mode, len(list))
	if err != nil {
		return nil, err
	}
	return p.Env(p.Groups[0]), nil
}
