package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"selmix/tui/style"
)

// Per-class recall beyond this many classes shows the worst and the best
// only.
const (
	worstShown = 30
	bestShown  = 10
)

// ClassDiff is one class in the per-class table: each run's recall and
// the difference that orders the table.
type ClassDiff struct {
	Class  int       // its index in the first run that has it
	Name   string    // its name, or "class i" where the runs do not name it
	Recall []float64 // per run; NaN where the run has no such class
	Delta  float64   // mean of the other runs minus the first; the recall itself for one run
}

// classKey is how runs' classes are matched: by name where a run names
// its class, else by index.
func classKey(r *Series, k int) string {
	if k < len(r.Classes) && r.Classes[k] != "" {
		return r.Classes[k]
	}
	return fmt.Sprintf("class %d", k)
}

// ClassDiffs orders the classes by the difference of the runs' recall at
// their last refresh, lowest first: the classes the other runs lose most
// against the first run come first. With one run it orders by recall.
// Classes are matched by name (a built-in run's T-shirt/top beside an
// imagefolder run's, whose classes are in alphabetical order), by index
// where unnamed; a class one run lacks has no recall there.
func ClassDiffs(runs []*Series) []ClassDiff {
	var out []ClassDiff
	at := map[string]int{}
	for i, r := range runs {
		for k, v := range r.Recall {
			key := classKey(r, k)
			j, ok := at[key]
			if !ok {
				j = len(out)
				at[key] = j
				d := ClassDiff{Class: k, Name: key, Recall: make([]float64, len(runs))}
				for x := range d.Recall {
					d.Recall[x] = math.NaN()
				}
				out = append(out, d)
			}
			out[j].Recall[i] = v
		}
	}
	for j := range out {
		d := &out[j]
		if len(runs) == 1 {
			d.Delta = d.Recall[0]
		} else {
			sum, n := 0.0, 0
			for _, v := range d.Recall[1:] {
				if !math.IsNaN(v) {
					sum, n = sum+v, n+1
				}
			}
			d.Delta = math.NaN()
			if n > 0 {
				d.Delta = sum/float64(n) - d.Recall[0]
			}
		}
	}
	slices.SortStableFunc(out, func(a, b ClassDiff) int {
		switch an, bn := math.IsNaN(a.Delta), math.IsNaN(b.Delta); {
		case an && bn:
			return 0
		case an:
			return 1
		case bn:
			return -1
		}
		if a.Delta < b.Delta {
			return -1
		}
		if a.Delta > b.Delta {
			return 1
		}
		return 0
	})
	return out
}

// recallTable is the per-class recall of the runs side by side in w×h.
func (m *Model) recallTable(w, h int) string {
	th := m.ctx.Theme
	diffs := ClassDiffs(m.runs)
	if len(diffs) == 0 {
		return style.Fit(th.Render(th.Dim, "no per-class recall yet: no run has a refresh"), w, h)
	}
	const classW = 16
	colW := 8 // "1 " and the run's label, at most 14 wide
	for _, r := range m.runs {
		colW = max(colW, min(16, style.Width(r.Label())+2))
	}
	nRuns := min(len(m.runs), max(1, (w-classW-colW-2)/(colW+1)))
	if nRuns < len(m.runs) { // narrow: many runs before long labels
		colW = 8
		nRuns = min(len(m.runs), max(1, (w-classW-colW-2)/(colW+1)))
	}
	deltaName := "Δ vs " + Mark(0)
	if len(m.runs) == 1 {
		deltaName = ""
	}
	labels := make([]string, len(m.runs))
	for i, r := range m.runs {
		labels[i] = r.Label()
	}
	labels = distinctTails(labels, colW-2)
	head := style.PadRight("class", classW)
	for i := range nRuns {
		head += " " + style.PadLeft(m.paints[i%len(m.paints)].Render(Mark(i))+" "+style.PadRight(labels[i], colW-2), colW)
	}
	head += " " + style.PadLeft(deltaName, colW)
	row := func(d ClassDiff) string {
		s := style.PadRight(d.Name, classW)
		for i := range nRuns {
			s += " " + style.PadLeft(num3(d.Recall[i]), colW)
		}
		if len(m.runs) > 1 {
			s += " " + style.PadLeft(signed(d.Delta), colW)
		}
		return s
	}
	lines := []string{th.Render(th.Bold, head)}
	rows := h - 1
	if len(diffs) <= rows && len(diffs) <= worstShown+bestShown {
		for _, d := range diffs {
			lines = append(lines, row(d))
		}
	} else {
		// The worst first, then the best; both cut to fit, the worst
		// keeping the larger share.
		best := min(bestShown, max(0, (rows-2)/4))
		worst := max(0, min(worstShown, len(diffs)-best, rows-2-best))
		lines = append(lines, th.Render(th.Dim, fmt.Sprintf("worst %d of %d classes", worst, len(diffs))))
		for _, d := range diffs[:worst] {
			lines = append(lines, th.Render(th.Bad, row(d)))
		}
		if best > 0 {
			lines = append(lines, th.Render(th.Dim, fmt.Sprintf("best %d", best)))
			for _, d := range diffs[len(diffs)-best:] {
				lines = append(lines, th.Render(th.Good, row(d)))
			}
		}
	}
	if nRuns < len(m.runs) {
		lines = append(lines, th.Render(th.Dim, fmt.Sprintf("%d more runs do not fit: widen the terminal", len(m.runs)-nRuns)))
	}
	if note := classNote(m.runs, diffs); note != "" {
		// Said first: it changes how every row reads.
		lines = append([]string{lines[0], th.Render(th.Warn, note)}, lines[1:]...)
	}
	return style.Fit(strings.Join(lines, "\n"), w, h)
}

// classNote says, in one line, where the runs' classes or data differ:
// how many classes only some runs have (rows matched by name), and which
// data settings differ. "" where they agree.
func classNote(runs []*Series, diffs []ClassDiff) string {
	var parts []string
	some := 0
	for _, d := range diffs {
		for _, v := range d.Recall {
			if math.IsNaN(v) {
				some++
				break
			}
		}
	}
	if some > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d classes not in every run", some, len(diffs)))
	}
	if keys := dataDiffers(runs); len(keys) > 0 {
		parts = append(parts, "different data: "+strings.Join(keys, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "! classes matched by name; " + strings.Join(parts, "; ")
}

// dataDiffers lists the configuration keys that say what the runs learn
// from (data.*, the model, the worker's command) and differ between them:
// runs of different experiments.
func dataDiffers(runs []*Series) []string {
	var keys []string
	seen := map[string]bool{}
	for _, r := range runs {
		for k := range r.Config {
			if !seen[k] && (strings.HasPrefix(k, "data.") || strings.HasPrefix(k, "model.") || k == "worker.command") {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		for _, r := range runs[1:] {
			if r.Config[k] != runs[0].Config[k] {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

func num3(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.3f", x)
}

func signed(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%+.3f", x)
}

// distinctTails shortens labels wider than w to what sets them apart: the
// part after the prefix they all share, behind "…" (a sweep's members
// pol-7e40-0 … pol-7e40-11 become …0 … …11). Labels that fit, or that
// share no prefix, are left to the column to cut.
func distinctTails(labels []string, w int) []string {
	if len(labels) < 2 || !slices.ContainsFunc(labels, func(l string) bool { return style.Width(l) > w }) {
		return labels
	}
	prefix := []rune(labels[0])
	prefix = prefix[:max(0, len(prefix)-1)] // each keeps a rune
	for _, l := range labels[1:] {
		r := []rune(l)
		n := 0
		for n < len(prefix) && n < len(r)-1 && prefix[n] == r[n] {
			n++
		}
		prefix = prefix[:n]
	}
	if len(prefix) == 0 {
		return labels
	}
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = "…" + string([]rune(l)[len(prefix):])
	}
	return out
}
