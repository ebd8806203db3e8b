package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/core/gain"
	"selmix/core/metric"
	"selmix/core/train"
	"selmix/tui/keys"
	"selmix/tui/pane"
)

// picker chooses one value of a hyperparameter from a list.
type picker struct {
	title, key string
	options    []string
	current    string
	cursor     int
}

func newObjectivePicker(cur string) picker {
	var opts []string
	for _, o := range metric.Objectives() {
		opts = append(opts, string(o))
	}
	return newPicker("objective", "objective", opts, cur)
}

func newPolicyPicker(cur string) picker {
	var opts []string
	for _, p := range gain.Policies() {
		opts = append(opts, string(p))
	}
	return newPicker("policy", "policy", opts, cur)
}

func newPicker(title, k string, opts []string, cur string) picker {
	p := picker{title: title, key: k, options: opts, current: cur}
	for i, o := range opts {
		if o == cur {
			p.cursor = i
		}
	}
	return p
}

// update handles a key; done closes the picker, with the control to send
// if a new value was chosen.
func (p *picker) update(k *keys.Map, kp tea.KeyPressMsg) (c *train.Control, done bool) {
	switch {
	case key.Matches(kp, k.Up):
		p.cursor = (p.cursor + len(p.options) - 1) % len(p.options)
	case key.Matches(kp, k.Down):
		p.cursor = (p.cursor + 1) % len(p.options)
	case key.Matches(kp, k.Accept):
		v := p.options[p.cursor]
		if v == p.current {
			return nil, true
		}
		return &train.Control{Op: train.OpSet, Key: p.key, Value: v}, true
	case key.Matches(kp, k.Cancel, k.Quit):
		return nil, true
	}
	return nil, false
}

func (p *picker) view(th *pane.Theme) string {
	var b strings.Builder
	for i, o := range p.options {
		mark := "  "
		if o == p.current {
			mark = "● "
		}
		line := " " + mark + o
		if i == p.cursor {
			line = "▸" + mark + o
			line = th.Render(th.Selected, pane.PadRight(line, 24))
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("\n" + th.Render(th.Dim, "↑/↓ choose · enter apply · esc cancel · ● current"))
	return b.String()
}

// formFields are the hyperparameters the edit form offers (s, ω, λ_max,
// τ, α, η, β_min, refresh); their labels and docs are train's.
var formFields = func() []struct{ key, label string } {
	var out []struct{ key, label string }
	for _, k := range []string{"s", "omega", "lambda_max", "tau", "alpha", "lr", "beta_min", "refresh"} {
		out = append(out, struct{ key, label string }{k, train.HyperLabel(k)})
	}
	return out
}()

// form edits several hyperparameters at once. Each value is checked with
// Hyper.Set on a copy before anything is sent, so the engine only ever
// receives values it will accept.
type form struct {
	values, orig, errs []string
	cursor             int
}

func newForm(h train.Hyper) form {
	f := form{values: make([]string, len(formFields)), orig: make([]string, len(formFields)), errs: make([]string, len(formFields))}
	for i, fl := range formFields {
		v, _ := h.Get(fl.key)
		f.values[i], f.orig[i] = v, v
	}
	return f
}

func (f *form) update(k *keys.Map, kp tea.KeyPressMsg, h train.Hyper) (cs []train.Control, done bool) {
	switch {
	case kp.String() == "esc" || key.Matches(kp, k.Cancel):
		return nil, true
	case kp.String() == "enter" || key.Matches(kp, k.Accept):
		return f.submit(h)
	case kp.String() == "up" || kp.String() == "shift+tab":
		f.cursor = (f.cursor + len(f.values) - 1) % len(f.values)
	case kp.String() == "down" || kp.String() == "tab":
		f.cursor = (f.cursor + 1) % len(f.values)
	case kp.String() == "backspace":
		if v := []rune(f.values[f.cursor]); len(v) > 0 {
			f.values[f.cursor] = string(v[:len(v)-1])
		}
		f.errs[f.cursor] = ""
	case kp.String() == "ctrl+u":
		f.values[f.cursor] = ""
		f.errs[f.cursor] = ""
	default:
		// Typed characters go into the field: only what a number needs.
		if t := kp.Key().Text; t != "" && strings.Trim(t, "0123456789.eE+-") == "" {
			f.values[f.cursor] += t
			f.errs[f.cursor] = ""
		}
	}
	return nil, false
}

// submit validates every changed field on a copy of h, in order, so the
// checks see earlier edits; any error keeps the form open.
func (f *form) submit(h train.Hyper) ([]train.Control, bool) {
	probe := h
	var cs []train.Control
	bad := false
	for i, fl := range formFields {
		f.errs[i] = ""
		v := strings.TrimSpace(f.values[i])
		if v == f.orig[i] {
			continue
		}
		if err := probe.Set(fl.key, v); err != nil {
			f.errs[i] = strings.TrimPrefix(err.Error(), fl.key+": ")
			bad = true
			continue
		}
		cs = append(cs, train.Control{Op: train.OpSet, Key: fl.key, Value: v})
	}
	if bad {
		return nil, false
	}
	return cs, true
}

func (f *form) view(th *pane.Theme) string {
	var b strings.Builder
	for i, fl := range formFields {
		v := f.values[i]
		cur := "  "
		if i == f.cursor {
			cur = "▸ "
			v += "▏"
		}
		line := fmt.Sprintf("%s%-8s %-14s %s", cur, fl.label, v, th.Render(th.Dim, train.HyperDoc(fl.key)))
		if f.values[i] != f.orig[i] {
			line += th.Render(th.Warn, "  (was "+f.orig[i]+")")
		}
		b.WriteString(line + "\n")
		if f.errs[i] != "" {
			b.WriteString("           " + th.Render(th.Bad, "✗ "+f.errs[i]) + "\n")
		}
	}
	b.WriteString("\n" + th.Render(th.Dim, "↑/↓ field · type to edit · ctrl+u clear\nenter applies all changes · esc cancels"))
	return b.String()
}

// fullHelp lists every key for the ? overlay, in two columns when the
// screen is too short for one.
func (m *Model) fullHelp() string {
	k := m.ctx.Keys
	th := m.ctx.Theme
	type item struct {
		b    key.Binding
		desc string
	}
	groups := []struct {
		name  string
		items []item
	}{
		{"run", []item{
			{k.Pause, "pause / resume"}, {k.Step, "step to the next refresh"},
			{k.SUp, "s × 1.25"}, {k.SDown, "s ÷ 1.25"}, {k.Objective, "pick the objective"},
			{k.Policy, "pick the policy"}, {k.Edit, "edit hyperparameters"},
			{k.Fork, "fork the run here"}, {k.Export, "export plots"}, {k.Quit, "quit (asks: stop or detach)"},
		}},
		{"view", []item{
			{k.Help, "this help"}, {k.Next, "next pane"}, {k.Prev, "previous pane"},
			{k.Up, "scroll / select up"}, {k.Down, "scroll / select down"},
			{k.Left, "scroll left (G·P)"}, {k.Right, "scroll right (G·P)"},
			{k.Top, "top; curves: follow ψ"}, {k.Bottom, "bottom; log: follow"},
		}},
		{"curves, events", []item{
			{k.SmoothLess, "less smoothing"}, {k.SmoothMore, "more smoothing"},
			{k.Linear, "Δψ predicted/realised"}, {k.Console, "worker's lines only"},
		}},
		{"forms, search", []item{
			{k.Accept, "apply; jump to the match"}, {k.Cancel, "cancel"},
		}},
		{"classes, s·λ", []item{
			{k.Sort, "cycle the sort order"}, {k.Search, "find a class (name/index)"},
		}},
		{"G·P", []item{
			{k.Toggle, "aggregate / scroll"}, {k.Zoom, "zoom into the block"},
			{k.ZoomOut, "zoom out; clear the mark"}, {k.Worst, "worst class's row"}, {k.TopP, "the pair P samples most"},
		}},
	}
	if m.ctl == nil {
		// A recorded run: nothing to pause, step, change or fork here.
		groups[0].name = "recorded run (read-only)"
		groups[0].items = []item{{k.Quit, "quit"}}
	}
	render := func(gs ...int) []string {
		var out []string
		for n, gi := range gs {
			if n > 0 {
				out = append(out, "")
			}
			g := groups[gi]
			out = append(out, th.Render(th.Bold, g.name))
			for _, it := range g.items {
				ks := strings.ReplaceAll(strings.Join(it.b.Keys(), " "), "backspace", "bksp")
				out = append(out, fmt.Sprintf("  %-10s %s", ks, it.desc))
			}
		}
		return out
	}
	where := "--keys FILE"
	if m.keysPath != "" {
		where = m.keysPath + " or --keys FILE"
	}
	footer := []string{"", th.Render(th.Dim, "keys are remappable: "+where)}
	one := render(0, 1, 4, 5, 2, 3)
	if len(one)+len(footer)+2 <= m.h {
		return strings.Join(append(one, footer...), "\n")
	}
	// Two columns; at 80×24 the blank line before the footer goes.
	left, right := render(0, 2, 3), render(1, 4, 5)
	if max(len(left), len(right))+len(footer)+2 > m.h {
		footer = footer[1:]
	}
	const colW = 38
	var lines []string
	for i := range max(len(left), len(right)) {
		l, r := "", ""
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		lines = append(lines, pane.PadRight(l, colW)+r)
	}
	return strings.Join(append(lines, footer...), "\n")
}
