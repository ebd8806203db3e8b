// Package classes is the per-class pane: recall and coverage bars, the
// coverage constraint α/K, the worst class and the change since the
// previous refresh. At K = 1000 the rows are sorted (worst first by
// default) and a class can be found by name; see package classlist.
package classes

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/tui/classlist"
	"selmix/tui/pane"
	"selmix/tui/runstate"
	"selmix/tui/style"
)

// Model lists classes, scrolling when K exceeds the height.
type Model struct {
	classlist.Pane

	// Derived from one refresh when it arrives (sync), so View formats
	// only the visible rows.
	prev     *loop.Refresh // the refresh before, if of the same K
	nameW    int
	countW   int // 0: no training counts (or too narrow to show them)
	covScale float64
}

// New returns the pane over run.
func New(ctx *pane.Context, run *runstate.State) *Model {
	m := &Model{Pane: classlist.NewPane(ctx, run)}
	m.sync()
	return m
}

func (m *Model) SetSize(w, h int) { m.Base.SetSize(w, h); m.sync() }

func (m *Model) Title() string {
	t := "recall & coverage"
	if k, rows := m.Nav.K, m.Rows(); k > rows && rows > 0 {
		lo, hi := m.Scroll.Window(k, rows)
		t = fmt.Sprintf("classes %d–%d of %d", lo+1, hi, k)
	}
	if m.Nav.By() != classlist.ByClass {
		t += " · " + m.Nav.Title()
	}
	return t
}

func (m *Model) ShortHelp() []key.Binding {
	k := m.Ctx.Keys
	return m.Help([]key.Binding{k.Up, k.Down}, true)
}
func (m *Model) FullHelp() [][]key.Binding {
	k := m.Ctx.Keys
	return [][]key.Binding{{k.Up, k.Down, k.Top, k.Bottom}, classlist.KeyHelp(m.Ctx)}
}

func (m *Model) Update(msg tea.Msg) tea.Cmd {
	m.sync()
	if kp, ok := msg.(tea.KeyPressMsg); ok {
		m.Keys(kp, m.Nav.K, true)
	}
	return nil
}

// sync derives what View needs from the run's current refresh, once per
// refresh (or when its G arrives).
func (m *Model) sync() {
	if !m.Sync() {
		return
	}
	r, cur := m.Run, m.RS
	m.prev = nil
	m.Nav.Refresh(cur, r)
	if cur == nil {
		return
	}
	K := cur.K
	if p := r.Prev; p != nil && p.K == K {
		m.prev = p
	}
	m.nameW = 4
	for k := range K {
		m.nameW = max(m.nameW, len([]rune(r.ClassName(k))))
	}
	m.nameW = min(m.nameW, 12)
	m.countW = 0
	if counts := r.Info.TrainCounts; len(counts) == K {
		for _, c := range counts {
			m.countW = max(m.countW, len(fmt.Sprint(c))+1)
		}
	}
	m.covScale = 2 / float64(K)
	for _, c := range cur.Report.Coverage {
		m.covScale = max(m.covScale, c*1.05)
	}
}

// bound is the coverage bound α/K the pane compares coverages with.
func (m *Model) bound() float64 {
	return metric.Params{Alpha: m.Run.Latest.Hyper.Alpha}.Bound(m.RS.K)
}

func (m *Model) View() string {
	if m.RS == nil {
		return m.Waiting()
	}
	lo, hi := m.Scroll.Window(m.RS.K, m.Rows())
	rows := m.Nav.Order[lo:hi]
	c := m.columns(rows)
	var b strings.Builder
	b.WriteString(m.topLine())
	b.WriteByte('\n')
	b.WriteString(m.headRow(c))
	for _, k := range rows {
		b.WriteByte('\n')
		b.WriteString(m.row(k, c))
	}
	return style.Fit(b.String(), m.W, m.H)
}

// columns are the widths of the class rows shown (rows): their name,
// training count and gain (0: not shown), recall bar, coverage bar and
// coverage value (with its decimals), and whether there is room for the
// coverage's change.
type columns struct {
	name, count, gain, rec, covBar, cov, covDecimals int
	wide                                             bool
}

func (m *Model) columns(rows []int) columns {
	c := columns{name: m.nameW, wide: m.W >= 90}
	// Training counts show the long tail beside each class, when known
	// and there is room, or when they are the order.
	if c.wide || m.Nav.By() == classlist.ByCount {
		c.count = m.countW
	}
	// Coverages are near 1/K: at K = 1000 three decimals would show
	// 0.001 for every class, so the decimals follow K.
	c.covDecimals = covDecimals(m.RS.K)
	c.cov = c.covDecimals + 2
	// A coverage below α/K that its decimals would round to α/K shows
	// more of them (metric.CoverageText): where one of the rows shown has
	// one, the column widens for all of them.
	bound := m.bound()
	for _, k := range rows {
		c.cov = max(c.cov, len(metric.CoverageText(m.RS.Report.Coverage[k], bound, c.covDecimals)))
	}
	// Sorted by gain, the gain is shown: it is not visible otherwise.
	if m.Nav.By() == classlist.ByGain {
		c.gain = 9
	}
	// mark(2) name [count] [gain] sp bar sp val(5) sp Δ(6) | sp bar sp val [sp Δ] sp flag(1)
	fixed := 2 + c.name + c.count + c.gain + 1 + 1 + 5 + 1 + 6 + 3 + 1 + c.cov + 2
	if c.wide {
		fixed += c.cov + 2
	}
	bars := max(4, m.W-fixed)
	c.rec = bars * 3 / 5
	c.covBar = bars - c.rec
	return c
}

// topLine is the search prompt while searching, else the worst class
// and the coverage target α/K.
func (m *Model) topLine() string {
	if m.Nav.Searching() {
		return m.Nav.Prompt(m.Ctx)
	}
	th, r, K := m.Ctx.Theme, m.Run, m.RS.K
	alpha := r.Latest.Hyper.Alpha
	bound := m.bound()
	head := fmt.Sprintf("%s %s  %s %s %.3g  %s",
		th.Render(th.Worst, "▶"), "worst: "+r.ClassName(m.RS.Report.Worst),
		th.Render(th.Dim, "│ = α/K ="), style.Trimmed(alpha)+"/"+fmt.Sprint(K), alpha/float64(K),
		fmt.Sprintf("%d of %d met", m.RS.Report.CoverageMet(bound), K))
	if aims := m.RS.Aims; len(aims) == K && r.Latest.Hyper.Aimed() {
		// What the multipliers aim at, α/K + δ_j per class: the margin
		// that makes the bound hold on new data.
		aim := fmt.Sprintf("%.4f", aims[0])
		if lo, hi := slices.Min(aims), slices.Max(aims); lo != hi {
			aim = fmt.Sprintf("%.4f–%.4f", lo, hi)
		}
		for _, label := range []string{"aims α/K+δ", "aims"} {
			if a := "  " + th.Render(th.Dim, label) + " " + aim; style.Width(head+a) <= m.W {
				head += a
				break
			}
		}
	}
	if key := "  " + th.Render(th.Dim, "! = below α/K"); style.Width(head+key) <= m.W {
		head += key // the key goes before a cut would
	}
	return head
}

// headRow names the columns, shorter when narrow.
func (m *Model) headRow(c columns) string {
	th := m.Ctx.Theme
	hd := c.covDecimals
	if hd == 3 {
		hd = 2
	}
	covHead := fmt.Sprintf("coverage 0–%.*f", hd, m.covScale)
	countHead := ""
	if c.count > 0 {
		countHead = "n"
	}
	gainHead := ""
	if c.gain > 0 {
		gainHead = "max G"
	}
	recHead := "recall 0–1"
	if style.Width(recHead) > c.rec+1 {
		recHead = "recall" // narrow: the bars are 0–1 all the same
	}
	if 2+c.name+c.count+c.gain+1+c.rec+1+13+2+style.Width(covHead) > m.W {
		covHead = fmt.Sprintf("cov 0–%.*f", hd, m.covScale)
	}
	return th.Render(th.Dim, style.PadRight("", 2+c.name)+style.PadLeft(countHead, c.count)+style.PadLeft(gainHead, c.gain)+" "+
		style.PadRight(recHead, c.rec+1)+style.PadRight("", 13)+"│ "+covHead)
}

// row is class k: its mark (worst, found), name, count, gain, recall
// and coverage with their changes since the previous refresh, and the
// flag of a coverage below α/K.
func (m *Model) row(k int, c columns) string {
	th, r, rep, prev := m.Ctx.Theme, m.Run, m.RS.Report, m.prev
	target := m.bound()
	var b strings.Builder
	rec, cov := rep.Recall[k], rep.Coverage[k]
	mark, nameStyle := "  ", th.Bold
	switch {
	case k == rep.Worst && k == m.Nav.Found:
		mark, nameStyle = th.Render(th.Worst, "▶»"), th.Worst
	case k == rep.Worst:
		mark, nameStyle = th.Render(th.Worst, "▶ "), th.Worst
	case k == m.Nav.Found:
		mark, nameStyle = th.Render(th.Accent, "» "), th.Accent
	}
	name := style.PadRight(runstate.Short(r.ClassName(k), c.name), c.name)
	b.WriteString(mark + th.Render(nameStyle, name))
	if c.count > 0 {
		b.WriteString(th.Render(th.Dim, style.PadLeft(fmt.Sprint(r.Info.TrainCounts[k]), c.count)))
	}
	if c.gain > 0 {
		g := "—"
		if v := m.Nav.Gain(k); !math.IsNaN(v) { // NaN: G not loaded yet
			g = fmt.Sprintf("%+.1e", v)
		}
		b.WriteString(style.PadLeft(g, c.gain))
	}
	b.WriteString(" ")
	recBar := style.Bar(rec, c.rec)
	if k == rep.Worst {
		recBar = th.Render(th.Worst, recBar)
	} else {
		recBar = th.Render(th.Accent, recBar)
	}
	b.WriteString(recBar + fmt.Sprintf(" %5.3f ", rec))
	b.WriteString(m.delta(prev != nil, 3, func() float64 { return rec - prev.Report.Recall[k] }))
	b.WriteString(th.Render(th.Dim, " │ "))
	covBar := style.BarMark(cov/m.covScale, target/m.covScale, c.covBar)
	flag := " "
	if !metric.Meets(cov, target) {
		covBar, flag = th.Render(th.Bad, covBar), th.Render(th.Bad, "!")
	}
	// A coverage below α/K never reads as α/K: more decimals where it
	// would round to it.
	b.WriteString(covBar + " " + style.PadLeft(metric.CoverageText(cov, target, c.covDecimals), c.cov))
	if c.wide {
		b.WriteString(" " + m.delta(prev != nil, c.covDecimals, func() float64 { return cov - prev.Report.Coverage[k] }))
	}
	b.WriteString(" " + flag)
	return b.String()
}

// covDecimals is how many decimals tell coverages of K classes apart:
// 3 up to K = 100, one more per factor of 10.
func covDecimals(K int) int { return max(3, len(fmt.Sprint(K-1))+1) }

// delta renders a signed change with dec decimals in dec+3 columns, "—"
// when unknown; changes that round to zero are dim.
func (m *Model) delta(known bool, dec int, d func() float64) string {
	th := m.Ctx.Theme
	w := dec + 3
	if !known {
		return th.Render(th.Dim, style.PadLeft("—", w))
	}
	v := d()
	s := fmt.Sprintf("%+*.*f", w, dec, v)
	half := 0.5 * math.Pow(10, -float64(dec))
	switch {
	case v > half:
		return th.Render(th.Good, s)
	case v < -half:
		return th.Render(th.Bad, s)
	}
	return th.Render(th.Dim, s)
}
