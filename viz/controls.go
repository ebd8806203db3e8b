package viz

import (
	"fmt"
	"strings"

	"selmix/core/loop"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
)

// controlsShown are the controls by which someone changed the run:
// accepted sets and stops (pause/resume change timing only), not the
// engine's own (finetune.adapt), which follow from the configuration.
func controlsShown(r *RunData) []loop.Ack {
	var out []loop.Ack
	for _, a := range r.Hist.Controls {
		if a.Err == "" && !a.Control.Auto() && (a.Control.Op == loop.OpSet || a.Control.Op == loop.OpStop) {
			out = append(out, a)
		}
	}
	return out
}

// addControls marks every control change on p (or only those of key
// only) with a vertical line; what changed is said in the key and the CSV,
// never written over the data.
func (f *figure) addControls(p *plot.Plot, r *RunData, only string) {
	for _, a := range controlsShown(r) {
		if only != "" && a.Control.Key != only {
			continue
		}
		p.Add(vline{x: float64(a.Step), style: ctlStyle()})
	}
}

// Dotted, where baselines are dashed, so the two never read alike.
func ctlStyle() draw.LineStyle { return lineStyle(ctlColor, 0.7, 0.7, 1.6) }

// controlKey is the key entry for the control marks: each change and its
// step, or a count when there are too many to list.
func (f *figure) controlKey(r *RunData, only string) []keyEntry {
	var parts []string
	for _, a := range controlsShown(r) {
		if only == "" || a.Control.Key == only {
			parts = append(parts, fmt.Sprintf("%s at step %d", a.Control.Tagged(), a.Step))
		}
	}
	switch {
	case len(parts) == 0:
		return nil
	case len(parts) > 3:
		return []keyEntry{{fmt.Sprintf("%d control changes (listed in the CSV)", len(parts)), vline{style: ctlStyle()}}}
	}
	return []keyEntry{{strings.Join(parts, "; "), vline{style: ctlStyle()}}}
}

// noteControls lists the control changes in a figure's CSV.
func noteControls(t *table, r *RunData, only string, fields int) {
	for _, a := range controlsShown(r) {
		if only == "" || a.Control.Key == only {
			row := []string{"control", itoa(a.Step)}
			for len(row) < fields {
				row = append(row, "")
			}
			t.addNote(a.Control.Tagged(), row...)
		}
	}
}

// optimizedNames is the optimized objective, or each one in turn when a
// control changed it.
func optimizedNames(r *RunData) string {
	var objs []string
	for _, rf := range r.Hist.Refreshes {
		o := string(rf.Hyper.Objective)
		if len(objs) == 0 || objs[len(objs)-1] != o {
			objs = append(objs, o)
		}
	}
	return strings.Join(objs, " → ")
}
