package viz

import (
	"fmt"
	"math"
	"sort"

	"selmix/runs/record"
)

// lambdaFigure: the Lagrange multipliers over steps, one line per class
// (or head and tail); with many classes, the lines of the worstShown
// classes whose multipliers grew largest (the CSV has every class).
func lambdaFigure(f *figure, r *RunData) (*drawing, error) {
	xs := steps(r)
	n := 0
	for _, rf := range r.Hist.Refreshes {
		n = max(n, len(rf.Stats.Lambda))
	}
	if n == 0 {
		return nil, errSkip{fmt.Sprintf("objective %s uses no Lagrange multipliers", optimizedNames(r))}
	}
	// names label the lines; in the CSV, the per-class multipliers are
	// "lambda" with the class's id and name, the others "lambda/head",
	// "lambda/tail" (the run format's keys, record.AllSeries) or
	// "lambda/<i>" with no class.
	names := make([]string, n)
	rows := make([][]string, n) // multiplier, class, class_name
	for i := range names {
		switch {
		case n == r.K:
			names[i] = r.ClassNames[i]
			rows[i] = []string{record.KeyLambda, itoa(i), ""}
			if r.Named {
				rows[i][2] = r.ClassNames[i]
			}
		case n == 2:
			names[i] = []string{"head", "tail"}[i]
			rows[i] = []string{[]string{record.KeyLambdaHead, record.KeyLambdaTail}[i], "", ""}
		default:
			names[i] = fmt.Sprintf("λ_%d", i)
			rows[i] = []string{record.KeyLambda + "/" + itoa(i), "", ""}
		}
	}
	fields := func(i, step int) []string {
		return []string{rows[i][0], itoa(step), rows[i][1], rows[i][2]}
	}
	ys := make([][]float64, n)
	peak := make([]float64, n)
	t := newTable("multiplier", "step", "class", "class_name", "value")
	for i := range n {
		ys[i] = make([]float64, len(xs))
		peak[i] = math.Inf(-1)
		for k, rf := range r.Hist.Refreshes {
			ys[i][k] = nan
			if len(rf.Stats.Lambda) == n {
				ys[i][k] = rf.Stats.Lambda[i]
				t.add(ys[i][k], fields(i, rf.Step)...)
				if finite(ys[i][k]) {
					peak[i] = max(peak[i], ys[i][k])
				}
			} else {
				t.addNote(fmt.Sprintf("objective %s has %d multipliers here", rf.Hyper.Objective, len(rf.Stats.Lambda)), fields(i, rf.Step)...)
			}
		}
	}
	drawn := make([]int, n)
	for i := range drawn {
		drawn[i] = i
	}
	title := "Lagrange multipliers of " + optimizedNames(r)
	if n > maxClassBars {
		sort.SliceStable(drawn, func(a, b int) bool { return peak[drawn[a]] > peak[drawn[b]] })
		drawn = drawn[:worstShown]
		sort.Ints(drawn)
		title += fmt.Sprintf(" (the %d of %d largest)", worstShown, n)
	}
	p := f.newPlot(title, "step (SGD iterations)", "multiplier λ")
	p.Add(gridLines())
	var key []keyEntry
	for _, i := range drawn {
		th := series(p, xs, ys[i], lineStyle(seriesColor(i), 1), false)
		if len(drawn) <= 12 {
			key = append(key, keyEntry{names[i], th})
		}
	}
	f.addControls(p, r, "")
	noteControls(t, r, "", 4)
	setXRange(p, xs)
	p.Y.Max += 0.04 * (p.Y.Max - p.Y.Min) // lines at λ = 1 stay off the frame
	key = append(key, f.controlKey(r, "")...)
	return f.keyed(t, p, key), nil
}
