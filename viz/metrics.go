package viz

import (
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs/record"
)

// metricsFigure: ψ of the optimized objective and every reported metric
// over steps, one small panel each, with the pre-trained value dashed.
func metricsFigure(f *figure, r *RunData) (*drawing, error) {
	xs := steps(r)
	type panel struct {
		m          Metric
		emphasised bool
		psi        bool             // a ψ panel: its CSV rows are psi (psi_aimed, psiName) and every objective's ψ
		objective  metric.Objective // of a ψ panel after a change of objective: drawn thick where optimized
	}
	var panels []panel
	for _, pp := range psiPanels(r) {
		panels = append(panels, panel{pp.m, true, true, pp.objective})
	}
	for _, m := range ReportedMetrics() {
		opt := false
		for _, rf := range r.Hist.Refreshes {
			opt = opt || m.objective != "" && rf.Hyper.Objective == m.objective
		}
		panels = append(panels, panel{m, opt, false, ""})
	}
	t := newTable("metric", "step", "value")
	psiKey, _ := psiName(r)
	psi := psiSeries()
	for i := range r.Hist.Refreshes {
		t.add(psi.Value(&r.Hist.Refreshes[i]), psiKey, itoa(r.Hist.Refreshes[i].Step))
	}
	cols := 3
	rows := (len(panels) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		ys := make([]float64, len(xs))
		for k := range r.Hist.Refreshes {
			ys[k] = pn.m.get(&r.Hist.Refreshes[k])
			if !pn.psi {
				t.add(ys[k], pn.m.Name, itoa(r.Hist.Refreshes[k].Step))
			}
		}
		title := pn.m.Title
		xl := ""
		if i/cols == rows-1 {
			xl = "step (SGD iterations)"
		}
		p := f.newPlot(title, xl, pn.m.Unit)
		p.Add(gridLines())
		if finite(ys[0]) {
			p.Add(hline{ys[0], lineStyle(grey, 0.8, 3, 2)})
		}
		sty := lineStyle(postColor, 1)
		if pn.emphasised {
			sty = lineStyle(emphasis, 1.6)
			p.Title.TextStyle.Color = emphasis
		}
		if pn.objective != "" {
			// Thin where another objective was optimized, thick where
			// this one was: no line joins two objectives' ψ.
			series(p, xs, ys, lineStyle(postColor, 1), false)
			opt := make([]float64, len(ys))
			for k, rf := range r.Hist.Refreshes {
				opt[k] = nan
				if rf.Hyper.Objective == pn.objective {
					opt[k] = ys[k]
				}
			}
			ys = opt
		}
		series(p, xs, ys, sty, false)
		f.addControls(p, r, "")
		setXRange(p, xs)
		plots[i/cols][i%cols] = p
	}
	noteControls(t, r, "", 2)
	// Psi of every objective goes into the CSV too, so any of them can be
	// re-plotted from it.
	// An objective added after the run was recorded has no values in it:
	// one line says so.
	for _, o := range metric.Objectives() {
		s := record.ObjectiveSeries(o)
		vs := make([]float64, len(r.Hist.Refreshes))
		recorded := false
		for i := range r.Hist.Refreshes {
			vs[i] = s.Value(&r.Hist.Refreshes[i])
			recorded = recorded || !math.IsNaN(vs[i])
		}
		if !recorded {
			t.addNote("not recorded by this run", s.Figure, "")
			continue
		}
		for i, rf := range r.Hist.Refreshes {
			t.add(vs[i], s.Figure, itoa(rf.Step))
		}
	}
	key := []keyEntry{
		{"fine-tuning (validation)", &plotter.Line{LineStyle: lineStyle(postColor, 1)}},
		{"optimized objective", &plotter.Line{LineStyle: lineStyle(emphasis, 1.6)}},
		{"pre-trained", hline{style: lineStyle(grey, 0.8, 3, 2)}},
	}
	key = append(key, f.controlKey(r, "")...)
	return &drawing{table: t, draw: func(c draw.Canvas) {
		c = f.drawKey(c, key)
		f.drawGrid(c, plots)
	}}, nil
}

// psiPanel is one ψ panel of the metrics figure.
type psiPanel struct {
	m         Metric
	objective metric.Objective // "" for the one panel of a run that kept its objective
}

// psiPanels are the metrics figure's ψ panels: one of the optimized
// objective, or, where the objective was changed while the run went on,
// one per objective optimized, each its own ψ over the whole run (every
// refresh records every objective's ψ) with its own pre-trained value —
// never two objectives' ψ joined on one axis.
func psiPanels(r *RunData) []psiPanel {
	var objs []metric.Objective
	for _, rf := range r.Hist.Refreshes {
		if o := rf.Hyper.Objective; !slices.Contains(objs, o) {
			objs = append(objs, o)
		}
	}
	if len(objs) <= 1 {
		name, label := psiName(r)
		return []psiPanel{{m: Metric{Name: name, Title: label + " " + optimizedNames(r) + " (optimized)", Unit: label, obj: -1,
			get: psiSeries().Value}}}
	}
	out := make([]psiPanel, 0, len(objs))
	for _, o := range objs {
		m := ObjectiveMetric(o)
		m.Title += " (optimized)"
		out = append(out, psiPanel{objective: o, m: m})
	}
	return out
}

// psiSeries is the catalogue's ψ of the optimized objective
// (Refresh.Psi).
func psiSeries() record.Series { return catalogued(record.KeyPsi) }

// catalogued is the series of the run format's catalogue with key key.
func catalogued(key string) record.Series {
	s, ok := record.LookupSeries(key)
	if !ok || s.Key != key {
		panic("viz: the catalogue has no series " + key)
	}
	return s
}

// psiName is the CSV name and the label of the ψ the run optimized
// (Refresh.Psi): "psi" and "ψ", or "psi_aimed" and "ψ aimed" where some
// refresh aimed it at α/K + δ (loop.Aimed, a coverage margin in force).
// That ψ is not the objective's reported ψ, which the rows and panels of
// each objective's ψ (record.ObjectiveSeries) hold.
func psiName(r *RunData) (name, label string) {
	for _, rf := range r.Hist.Refreshes {
		if rf.Hyper.Aimed() {
			return "psi_aimed", loop.PsiLabel(true)
		}
	}
	return "psi", loop.PsiLabel(false)
}
