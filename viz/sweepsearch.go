package viz

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"selmix/runs/sweep"
)

// SweepSearch writes the figures of a search sweep from r.Traces:
// sweep-population, every member's validation ψ over steps as the
// search ran it (a population's members along their lineages with the
// exploits marked and the winner drawn stronger; successive halving's up
// to where each stopped, with the rungs dotted and the members that ran
// to the end drawn stronger), and for a population sweep-winner-settings,
// the winner's explored settings over steps.
func SweepSearch(r *sweep.Results, dir string, o Options) (*Result, error) {
	if r.Schedule == nil && r.Population == nil {
		return nil, errors.New("sweep search figures: not a search")
	}
	o, err := prepare(o, dir)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	var errs []error
	f := newFigure(o, fullWidth, 3.2*vg.Inch)
	if err := write(res, dir, "sweep-population", f, func() (*drawing, error) { return populationFigure(f, r) }); err != nil {
		errs = append(errs, fmt.Errorf("sweep-population: %w", err))
	}
	if r.Population != nil {
		n := len(r.Population.PBT.Keys)
		f = newFigure(o, colWidth, vg.Length(1+1.1*float64(n))*vg.Inch)
		if err := write(res, dir, "sweep-winner-settings", f, func() (*drawing, error) { return winnerSettingsFigure(f, r) }); err != nil {
			errs = append(errs, fmt.Errorf("sweep-winner-settings: %w", err))
		}
	}
	return res, errors.Join(errs...)
}

// maxKeyed is how many members the ψ figure names one by one; beyond, the
// members not drawn stronger are grey and named together.
const maxKeyed = 8

// switchGlyph marks where a member continued from another's checkpoint.
func switchGlyph(c color.Color) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: 2.6, Shape: draw.TriangleGlyph{}}
}

// searchStrong are the members a search's ψ figure draws stronger: a
// population's winner, successive halving's members that ran to the end.
func searchStrong(r *sweep.Results) (strong map[int]bool, winner int) {
	strong = map[int]bool{}
	winner = sweep.Winner(r.Traces)
	if r.Population != nil {
		if winner >= 0 {
			strong[winner] = true
		}
		return strong, winner
	}
	for _, t := range r.Traces {
		if t.Ended {
			strong[t.Member] = true
		}
	}
	return strong, winner
}

func populationFigure(f *figure, r *sweep.Results) (*drawing, error) {
	t := newTable("step", "member", "run", "psi")
	var title, by string
	if r.Population != nil {
		by = r.Population.PBT.MetricName()
		title = "Population: %s per member along its lineage (a member's first settings name it; triangles: where it continued from another's checkpoint)"
	} else {
		by = r.Schedule.ASHA.MetricName()
		title = "Successive halving: %s per member up to where it stopped (dotted: the rungs)"
	}
	// What ranks the members: an objective's ψ, or a reported metric.
	what, ylabel := "validation ψ of "+by, "ψ (validation)"
	if m, ok := strings.CutPrefix(by, "metrics/"); ok {
		what, ylabel = "validation "+m, m+" (validation)"
	}
	p := f.newPlot(fmt.Sprintf(title, what), "step (SGD iterations)", ylabel)
	p.Add(gridLines())
	strong, winner := searchStrong(r)
	var drawn []sweep.Trace
	for _, tr := range r.Traces {
		if len(tr.Points) > 0 {
			drawn = append(drawn, tr)
		}
	}
	if len(drawn) == 0 {
		return nil, errSkip{"no member has a refresh"}
	}
	many := len(drawn) > maxKeyed
	// The members drawn stronger go last, on top.
	slices.SortStableFunc(drawn, func(a, b sweep.Trace) int { return boolInt(strong[a.Member]) - boolInt(strong[b.Member]) })
	var key []keyEntry
	var all []float64
	nStrong, switched := 0, false
	for _, tr := range drawn {
		c, width := seriesColor(tr.Member), vg.Length(1)
		if strong[tr.Member] {
			width = 2.2
		}
		if many {
			c = color.Color(preColor)
			if strong[tr.Member] {
				c = seriesColor(nStrong)
				nStrong++
			}
		}
		xs, ys := make([]float64, len(tr.Points)), make([]float64, len(tr.Points))
		var marks plotter.XYs
		for k, pt := range tr.Points {
			xs[k], ys[k] = float64(pt.Step), pt.Psi
			note := ""
			if pt.Copied >= 0 {
				note = fmt.Sprintf("switched: continued from member %d's checkpoint after this refresh", pt.Copied)
				if finite(pt.Psi) {
					marks = append(marks, plotter.XY{X: xs[k], Y: pt.Psi})
				}
			}
			t.addNoted(pt.Psi, note, itoa(pt.Step), itoa(tr.Member), pt.Run)
		}
		all = append(all, xs...)
		thumb := series(p, xs, ys, lineStyle(c, width), false)
		if len(marks) > 0 {
			s, err := plotter.NewScatter(marks)
			if err == nil {
				s.GlyphStyle = switchGlyph(c)
				p.Add(s)
				switched = true
			}
		}
		if many && !strong[tr.Member] {
			continue
		}
		label := fmt.Sprintf("%d: %s", tr.Member, tr.Describe)
		switch {
		case r.Population != nil && tr.Member == winner:
			label += fmt.Sprintf(" (winner, %.4f)", tr.Last().Psi)
		case r.Population == nil && strong[tr.Member]:
			label += " (ran to the end)"
		}
		key = append(key, keyEntry{label, thumb})
	}
	if many {
		key = append([]keyEntry{{fmt.Sprintf("the other %d members", len(drawn)-nStrong), &plotter.Line{LineStyle: lineStyle(preColor, 1)}}}, key...)
	}
	if switched {
		key = append(key, keyEntry{"continued from a copy", glyphThumb{switchGlyph(black)}})
	}
	if r.Schedule != nil {
		a := r.Schedule.ASHA
		rung := lineStyle(grey, 0.8, 1, 2)
		for _, x := range a.Rungs[:a.Top()] {
			p.Add(vline{float64(x), rung})
		}
		key = append(key, keyEntry{"rung", vline{style: rung}})
	}
	setXRange(p, all)
	return f.keyed(t, p, key), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// winnerSettingsFigure: the population's winner's explored settings over
// steps, one panel per key, as step functions along its lineage, with
// the steps where it continued from a copy dotted.
func winnerSettingsFigure(f *figure, r *sweep.Results) (*drawing, error) {
	w := sweep.Winner(r.Traces)
	k := slices.IndexFunc(r.Traces, func(t sweep.Trace) bool { return t.Member == w })
	if k < 0 || len(r.Traces[k].Points) == 0 {
		return nil, errSkip{"no member has a validation ψ"}
	}
	tr := r.Traces[k]
	keys := r.Population.PBT.Keys
	if len(keys) == 0 {
		return nil, errSkip{"the population explores no key"}
	}
	t := newTable("step", "run", "key", "setting", "value")
	c := seriesColor(w)
	sty := lineStyle(c, 1.4)
	switchSty := lineStyle(grey, 0.8, 1, 2)
	var plots [][]*plot.Plot
	var all []float64
	for n, key := range keys {
		xlabel := ""
		if n == len(keys)-1 {
			xlabel = "step (SGD iterations)"
		}
		p := f.newPlot("", xlabel, key)
		p.Add(gridLines())
		xs, ys := make([]float64, len(tr.Points)), make([]float64, len(tr.Points))
		texts := make([]string, len(tr.Points))
		for j, pt := range tr.Points {
			xs[j] = float64(pt.Step)
			texts[j], _ = pt.Hyper.Get(key)
		}
		names, numeric := settingValues(texts, ys)
		for j, pt := range tr.Points {
			note := ""
			if pt.Copied >= 0 {
				note = fmt.Sprintf("switched: continued from member %d's checkpoint with these settings", pt.Copied)
				p.Add(vline{xs[j], switchSty})
			}
			if !numeric {
				note = joinNote(note, "value: the setting's place among the values drawn")
			}
			t.addNoted(ys[j], note, itoa(pt.Step), pt.Run, key, texts[j])
		}
		series(p, xs, ys, sty, true)
		settingAxis(p, key, ys, names, numeric)
		all = append(all, xs...)
		plots = append(plots, []*plot.Plot{p})
	}
	for _, row := range plots {
		setXRange(row[0], all)
	}
	title := fmt.Sprintf("Winner's settings: member %d (started as %s; final validation %s %.4f) along its lineage", w, tr.Describe, rankWord(r.Population.PBT.MetricName()), tr.Last().Psi)
	key := []keyEntry{{"in force", &plotter.Line{LineStyle: sty}}}
	if slices.ContainsFunc(tr.Points, func(p sweep.TracePoint) bool { return p.Copied >= 0 }) {
		key = append(key, keyEntry{"continued from a copy", vline{style: switchSty}})
	}
	return &drawing{table: t, draw: func(c draw.Canvas) {
		ts := plots[0][0].Title.TextStyle
		ts.Font.Size = titleSize
		c = fillTitle(c, ts, f.t(title), 4)
		c = f.drawKey(c, key)
		f.drawGrid(c, plots)
	}}, nil
}

// rankWord names the value a search ranks by in a short phrase: ψ, or a
// reported metric's key.
func rankWord(by string) string {
	if m, ok := strings.CutPrefix(by, "metrics/"); ok {
		return m
	}
	return "ψ"
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// settingValues fills ys with the settings texts say: their numbers, or
// where one is not a number (a named choice) each one's place among the
// distinct values in the order first seen, which names lists.
func settingValues(texts []string, ys []float64) (names []string, numeric bool) {
	numeric = true
	for j, s := range texts {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			numeric = false
			break
		}
		ys[j] = v
	}
	if numeric {
		return nil, true
	}
	for j, s := range texts {
		k := slices.Index(names, s)
		if k < 0 {
			k, names = len(names), append(names, s)
		}
		ys[j] = float64(k)
	}
	return names, false
}

// settingAxis sets a settings panel's y axis: the names of a named
// choice; a logarithmic scale for s and lr where they are positive and
// span a factor of 4 or more; ticks at the values taken where they are
// few.
func settingAxis(p *plot.Plot, key string, ys []float64, names []string, numeric bool) {
	if !numeric {
		ticks := make([]plot.Tick, len(names))
		for k, n := range names {
			ticks[k] = plot.Tick{Value: float64(k), Label: n}
		}
		p.Y.Tick.Marker = plot.ConstantTicks(ticks)
		p.Y.Min, p.Y.Max = -0.5, float64(len(names))-0.5
		return
	}
	var vals []float64
	for _, y := range ys {
		if finite(y) && !slices.Contains(vals, y) {
			vals = append(vals, y)
		}
	}
	slices.Sort(vals)
	if len(vals) == 0 {
		return
	}
	lo, hi := vals[0], vals[len(vals)-1]
	if (key == "s" || key == "lr") && lo > 0 && hi/lo >= 4 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Min, p.Y.Max = lo/1.25, hi*1.25
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	} else {
		pad := math.Max((hi-lo)*0.1, math.Abs(hi)*0.05)
		if pad == 0 {
			pad = 0.05
		}
		p.Y.Min, p.Y.Max = lo-pad, hi+pad
	}
	if len(vals) <= 8 {
		var ticks []plot.Tick
		for _, v := range spaced(p.Y, vals) {
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 4, 64)})
		}
		p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	}
}

// spaced are the sorted values axis a labels, each an eighth of its
// height from the next so that labels do not overlap: the first, the last
// where it is that far from it, and between them those that keep that
// distance from both.
func spaced(a plot.Axis, vals []float64) []float64 {
	const gap = 0.125
	n := len(vals)
	if n <= 1 {
		return slices.Clone(vals)
	}
	last := vals[n-1]
	out := []float64{vals[0]}
	for _, v := range vals[1 : n-1] {
		if a.Norm(v)-a.Norm(out[len(out)-1]) >= gap && a.Norm(last)-a.Norm(v) >= gap {
			out = append(out, v)
		}
	}
	if a.Norm(last)-a.Norm(out[len(out)-1]) >= gap {
		out = append(out, last)
	}
	return out
}
