package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"selmix/core/loop"
	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/runs/record"
)

// Show writes what runs show prints about r, whose event log is h: its
// metadata, tags and note, its best validation ψ, checkpoints, controls,
// errors and warnings. The final summary, if any, is the caller's to
// print after it.
func Show(w io.Writer, r *runs.Run, h *record.History) {
	m := r.Meta
	safetext.Fprintf(w, "run       %s\nname      %s\ndir       %s\nstatus    %s\nobjective %s\npolicy    %s\nsteps     %d\ncreated   %s\n",
		m.ID, m.Name, r.Dir, r.EffectiveStatus(), m.Objective, m.Policy, m.Steps, m.Created)
	if m.Method != "" {
		safetext.Fprintf(w, "method    %s\n", m.Method)
	}
	if r.Live {
		fmt.Fprintf(w, "writer    pid %d (live)\n", r.Pid)
	}
	if m.Parent != "" {
		safetext.Fprintf(w, "forked    from %s at step %d\n", m.Parent, m.ParentStep)
	}
	if m.BLASThreads > 0 {
		kernel := ""
		if m.BLASCore != "" {
			kernel = ", kernel " + m.BLASCore
		}
		safetext.Fprintf(w, "blas      %s, %d thread(s)%s\n", m.BLAS, m.BLASThreads, kernel)
	}
	if m.CPU != "" {
		safetext.Fprintf(w, "cpu       %s\n", m.CPU)
	}
	if len(m.WorkerEnv) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(m.WorkerEnv)) {
			kv = append(kv, k+"="+m.WorkerEnv[k])
		}
		safetext.Fprintf(w, "worker    %s\n", strings.Join(kv, " "))
	}
	if len(m.Tags) > 0 {
		safetext.Fprintf(w, "tags      %s\n", strings.Join(m.Tags, " "))
	}
	if m.Note != "" {
		for i, l := range strings.Split(m.Note, "\n") {
			head := "note      "
			if i > 0 {
				head = "          "
			}
			safetext.Fprintf(w, "%s%s\n", head, l)
		}
	}
	bs := h.Bests()
	Bests(w, bs)
	// What "ψ aimed" is, once: the final summary's best line, which the
	// caller prints, says it where that best was aimed.
	if slices.ContainsFunc(bs, func(b record.Best) bool { return b.Aimed }) && (h.Final == nil || h.Final.Best == nil || !h.Final.Best.Aimed) {
		fmt.Fprintln(w, AimedNote)
	}
	ck, err := r.Checkpoints()
	if err == nil {
		fmt.Fprintf(w, "checkpoints %v\n", ck)
	}
	if step, _, err := r.BestCheckpoint(); err == nil {
		// The best checkpoint is the latest objective's best.
		psi := "ψ"
		if n := len(bs); n > 0 {
			psi = loop.PsiLabel(bs[n-1].Aimed)
		}
		fmt.Fprintf(w, "best ckpt step %d (the model at the best validation %s: export-head --best, fork --at best)\n", step, psi)
	}
	events(w, h)
}

// events writes the counts of h's events, every control with its refusal
// and every error and warning.
func events(w io.Writer, h *record.History) {
	// finetune.adapt's changes are the engine's, not the researcher's:
	// counted and summarised by key apart from the others.
	type adaptKey struct {
		key, last   string
		n, from, to int
	}
	var adapt []*adaptKey
	for _, a := range h.Controls {
		if a.Control.Auto() {
			i := slices.IndexFunc(adapt, func(k *adaptKey) bool { return k.key == a.Control.Key })
			if i < 0 {
				adapt = append(adapt, &adaptKey{key: a.Control.Key, from: a.Step})
				i = len(adapt) - 1
			}
			k := adapt[i]
			k.n, k.to, k.last = k.n+1, a.Step, a.Control.Value
		}
	}
	nAdapt := 0
	for _, k := range adapt {
		nAdapt += k.n
	}
	byAdapt := ""
	if nAdapt > 0 {
		byAdapt = fmt.Sprintf(" (%d by finetune.adapt)", nAdapt)
	}
	fmt.Fprintf(w, "events    %d refreshes, %d controls%s, %d starts\n", len(h.Refreshes), len(h.Controls), byAdapt, len(h.Starts))
	if line := aimsLine(h); line != "" {
		safetext.Fprintf(w, "%s\n", line)
	}
	for _, a := range h.Controls {
		if a.Control.Auto() {
			continue
		}
		msg := ""
		if a.Err != "" {
			msg = " (refused: " + a.Err + ")"
		}
		safetext.Fprintf(w, "  step %6d  %s%s\n", a.Step, a.Control.Tagged(), msg)
	}
	for _, k := range adapt {
		safetext.Fprintf(w, "  adapt        %s: %d changes from step %d to %d, last %s\n", k.key, k.n, k.from, k.to, k.last)
	}
	for _, e := range h.Errors {
		safetext.Fprintf(w, "error     %s\n", e.Err)
	}
	for _, wn := range h.Warnings {
		safetext.Fprintf(w, "warning   %s\n", wn.String())
	}
}

// Bests writes the best validation ψ of every objective the run
// optimized, each judged on its own objective and labelled with it
// ("ψ aimed" where it was aimed at α/K + δ); the latest first.
func Bests(w io.Writer, bs []record.Best) {
	for i := len(bs) - 1; i >= 0; i-- {
		b := bs[i]
		head := "best      "
		if i < len(bs)-1 {
			head = "          "
		}
		span := ""
		if len(bs) > 1 {
			span = fmt.Sprintf(", optimized from step %d to %d", b.From, b.To)
		}
		fmt.Fprintf(w, "%s%s %s %.4f at step %d (validation%s)\n", head, loop.PsiLabel(b.Aimed), b.Objective, b.Psi, b.Step, span)
	}
}

// maxAimsNamed bounds the classes whose aims runs show names one by one;
// past it, their range.
const maxAimsNamed = 20

// aimsLine says what the coverage multipliers aimed at, at the last
// refresh that recorded it: "" where they aimed at α/K itself (no
// margin), or nothing was recorded (no coverage constraint, or a run
// from before aims were).
func aimsLine(h *record.History) string {
	for i := len(h.Refreshes) - 1; i >= 0; i-- {
		rf := h.Refreshes[i]
		aims := rf.Stats.Aims
		if len(aims) == 0 {
			continue
		}
		if !rf.Hyper.Aimed() {
			return ""
		}
		head := fmt.Sprintf("aims      α/K + δ at step %d: ", rf.Step)
		var names []string
		if n := len(h.Starts); n > 0 {
			names = h.Starts[n-1].ClassNames
		}
		switch {
		case len(aims) == 2 && rf.Stats.K != 2:
			return head + fmt.Sprintf("head %.4f, tail %.4f", aims[0], aims[1])
		case len(aims) > maxAimsNamed:
			return head + fmt.Sprintf("%.4f–%.4f over %d classes", slices.Min(aims), slices.Max(aims), len(aims))
		}
		parts := make([]string, len(aims))
		var capped []string
		for k, a := range aims {
			name := fmt.Sprint(k)
			if k < len(names) && names[k] != "" {
				name = names[k]
			}
			parts[k] = fmt.Sprintf("%s %.4f", name, a)
			if a >= 1/float64(len(aims))-1e-12 {
				capped = append(capped, name)
			}
		}
		line := head + strings.Join(parts, ", ")
		if len(capped) > 0 {
			// Their margin exceeded the slack (1 − α)/K: the bound holds
			// for them at a lower confidence than asked (docs/method.md).
			line += fmt.Sprintf("\n          at the cap 1/K, so held at less than the confidence asked: %s", strings.Join(capped, ", "))
		}
		return line
	}
	return ""
}
