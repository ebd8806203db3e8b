package workbench

import (
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"selmix/core/gain"
	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/tui/dialog"
	"selmix/tui/runstate"
)

// Dialog IDs the root model acts on.
const (
	editID = "edit"
	forkID = "fork"
)

func (m *Model) objectivePicker() dialog.Dialog {
	var opts []string
	for _, o := range metric.Objectives() {
		opts = append(opts, string(o))
	}
	return dialog.NewPicker(m.ctx, "objective", "objective", opts, string(m.run.Latest.Hyper.Objective))
}

func (m *Model) policyPicker() dialog.Dialog {
	var opts, descs []string
	for _, p := range gain.Policies() {
		opts, descs = append(opts, string(p)), append(descs, p.Describe())
	}
	return dialog.NewPicker(m.ctx, "policy", "policy", opts, string(m.run.Latest.Hyper.Policy)).Describe(descs)
}

// editKeys are the hyperparameters the edit form offers (s, ω, λ_max,
// τ, α, the coverage margin and its confidence, η, β_min, refresh); their
// labels and docs are train's.
var editKeys = []string{"s", "omega", "lambda_max", "tau", "alpha", "cov_margin", "cov_conf", "lr", "beta_min", "refresh"}

func hyperField(h loop.Hyper, k string) dialog.Field {
	v, _ := h.Get(k)
	return dialog.Field{Key: k, Label: loop.HyperLabel(k), Doc: loop.HyperDoc(k), Value: v}
}

// checkHyper validates changed hyperparameters with Hyper.Set on a copy
// of h, in order, so each check sees the earlier edits.
func checkHyper(h loop.Hyper, changed []dialog.KV) map[string]string {
	errs := map[string]string{}
	for _, kv := range changed {
		if err := h.Set(kv.Key, kv.Value); err != nil {
			errs[kv.Key] = strings.TrimPrefix(err.Error(), kv.Key+": ")
		}
	}
	return errs
}

// editForm edits several hyperparameters of the live run at once; only
// values the engine will accept are sent.
func (m *Model) editForm() dialog.Dialog {
	h := m.run.Latest.Hyper
	fields := make([]dialog.Field, len(editKeys))
	for i, k := range editKeys {
		fields[i] = hyperField(h, k)
	}
	return dialog.NewForm(m.ctx, editID, "edit hyperparameters", "enter applies all changes", fields,
		func(c []dialog.KV) map[string]string { return checkHyper(h, c) })
}

// forkForm asks for the settings of a fork at step, prefilled with the
// run's values: the new run's name ("" picks a free one), objective,
// policy, s, η, steps, refresh, and where it starts: the checkpoint at
// or before a step (step itself unless changed) or the best one, as
// `selmix fork --at STEP|best`.
func (m *Model) forkForm(step int) dialog.Dialog {
	h := m.run.Latest.Hyper
	name := dialog.Field{Key: "name", Label: "name", Text: true,
		Doc: fmt.Sprintf("empty: %s-fork (then -fork-2, …)", m.nameOr("RUN"))}
	obj, pol := hyperField(h, "objective"), hyperField(h, "policy")
	obj.Text, pol.Text = true, true
	// train's docs list every choice, too long for a form line; a bad
	// name is refused with the list.
	obj.Doc, pol.Doc = "objective to optimize (a wrong name lists them)", "fine-tuning policy (a wrong name lists them)"
	total := m.run.Latest.Total
	steps := dialog.Field{Key: "steps", Label: "steps", Value: strconv.Itoa(total), Doc: "fine-tuning steps in all (the fork goes on from its step)"}
	if m.ended() && step >= total {
		// A run that is over is extended: twice the steps, to change.
		steps.Value, steps.Base = strconv.Itoa(2*total), strconv.Itoa(total)
		steps.Doc = fmt.Sprintf("fine-tuning steps in all: more than %d extends the run", total)
	}
	at := dialog.Field{Key: "at", Label: "at", Text: true, Value: strconv.Itoa(step),
		Doc: "a step ≤ " + strconv.Itoa(step) + ", or best (the best validation ψ)"}
	fields := []dialog.Field{name, obj, pol, hyperField(h, "s"), hyperField(h, "lr"), steps, hyperField(h, "refresh"), at}
	check := func(changed []dialog.KV) map[string]string {
		var hyper []dialog.KV
		errs := map[string]string{}
		for _, kv := range changed {
			switch kv.Key {
			case "name":
			case "at":
				if n, err := strconv.Atoi(kv.Value); kv.Value != "best" && (err != nil || n < 0 || n > step) {
					errs["at"] = fmt.Sprintf("want best or a step from 0 to %d, got %q", step, kv.Value)
				}
			case "steps":
				if n, err := strconv.Atoi(kv.Value); err != nil || n <= step {
					errs["steps"] = fmt.Sprintf("want an integer > the fork's step %d, got %q", step, kv.Value)
				}
			default:
				hyper = append(hyper, kv)
			}
		}
		for k, e := range checkHyper(h, hyper) {
			errs[k] = e
		}
		return errs
	}
	return dialog.NewForm(m.ctx, forkID, fmt.Sprintf("fork at the checkpoint at or before step %d", step), "enter forks", fields, check)
}

// forkAt is where a fork form's fork starts, as `selmix fork --at` takes
// it: "best", or the step (the form's own unless changed).
func forkAt(step int, changed []dialog.KV) string {
	for _, kv := range changed {
		if kv.Key == "at" {
			return kv.Value
		}
	}
	return strconv.Itoa(step)
}

// forkSets turns a fork form's changes into the run's configuration
// overrides (section.key=value).
func forkSets(changed []dialog.KV) []string {
	var sets []string
	for _, kv := range changed {
		switch kv.Key {
		case "at":
		case "name":
			if kv.Value != "" {
				sets = append(sets, "name="+kv.Value)
			}
		default:
			sets = append(sets, "finetune."+kv.Key+"="+kv.Value)
		}
	}
	return sets
}

// helpDialog lists every key for the ? overlay.
func (m *Model) helpDialog() dialog.Dialog {
	k := m.ctx.Keys
	type item = dialog.Item
	groups := []dialog.Group{
		{Name: "run", Items: []item{
			{B: k.Pause, Desc: "pause / resume"}, {B: k.Step, Desc: "step to the next refresh"},
			{B: k.SUp, Desc: "s × 1.25"}, {B: k.SDown, Desc: "s ÷ 1.25"}, {B: k.Objective, Desc: "pick the objective"},
			{B: k.Policy, Desc: "pick the policy"}, {B: k.Edit, Desc: "edit hyperparameters"},
			{B: k.Fork, Desc: "fork the run here"}, {B: k.Export, Desc: "export plots"}, {B: k.Quit, Desc: "quit: stop or detach"},
		}},
		{Name: "view", Items: []item{
			{B: k.Help, Desc: "this help"}, {B: k.Next, Desc: "next pane"}, {B: k.Prev, Desc: "previous pane"},
			{B: k.Up, Desc: "scroll / select up"}, {B: k.Down, Desc: "scroll / select down"},
			{B: k.Left, Desc: "scroll left (G·P)"}, {B: k.Right, Desc: "scroll right (G·P)"},
			{B: k.Top, Desc: "top; curves: follow ψ"}, {B: k.Bottom, Desc: "bottom; log: follow"},
		}},
		{Name: "curves, events", Items: []item{
			{B: k.SmoothLess, Desc: "less smoothing"}, {B: k.SmoothMore, Desc: "more smoothing"},
			{B: k.Linear, Desc: "Δψ predicted/realised"}, {B: k.Console, Desc: "worker's lines only"},
		}},
		{Name: "forms, search", Items: []item{
			{B: k.Accept, Desc: "apply; jump to the match"}, {B: k.Cancel, Desc: "cancel"},
		}},
		{Name: "classes, s·λ", Items: []item{
			{B: k.Sort, Desc: "cycle the sort order"}, {B: k.Search, Desc: "find a class (name/index)"},
		}},
		{Name: "G·P", Items: []item{
			{B: k.Toggle, Desc: "aggregate / scroll"}, {B: k.Zoom, Desc: "zoom into the block"},
			{B: k.ZoomOut, Desc: "zoom out; clear the mark"}, {B: k.Worst, Desc: "worst class's row"}, {B: k.TopP, Desc: "the pair P samples most"},
		}},
	}
	if m.ctl == nil {
		// A recorded run: nothing to pause, step, change or fork here.
		groups[0].Name = "recorded run (read-only)"
		groups[0].Items = []item{{B: k.Quit, Desc: "quit"}}
	}
	where := "--keys FILE"
	if m.keysPath != "" {
		where = m.keysPath + " or --keys FILE"
	}
	return dialog.NewHelp(m.ctx, groups, "keys are remappable: "+where, []int{0, 1, 4, 5, 2, 3}, []int{0, 2, 3}, []int{1, 4, 5})
}

// act carries out what a dialog asked for.
func (m *Model) act(a dialog.Action) tea.Cmd {
	switch a := a.(type) {
	case dialog.Quit:
		m.quit, m.detached = true, a.Detach && m.attached
		return tea.Quit
	case dialog.Submit:
		if a.ID == forkID {
			at, sets, fork := forkAt(m.forkStep, a.Values), forkSets(a.Values), m.fork
			if at == "best" {
				m.run.Note(runstate.Note, "forking at the best checkpoint…")
			} else {
				m.run.Note(runstate.Note, fmt.Sprintf("forking at the checkpoint at or before step %s…", at))
			}
			return func() tea.Msg { t, err := fork(at, sets); return NoteMsg{t, err} }
		}
		for _, kv := range a.Values {
			m.send(loop.Control{Op: loop.OpSet, Key: kv.Key, Value: kv.Value})
		}
	}
	return nil
}

func (m *Model) nameOr(def string) string {
	if m.run.Info.Name != "" {
		return m.run.Info.Name
	}
	return def
}

func (m *Model) idOr(def string) string {
	if m.run.Info.ID != "" {
		return m.run.Info.ID
	}
	return def
}
