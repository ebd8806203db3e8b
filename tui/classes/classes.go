// Package classes is the per-class pane: recall and coverage bars, the
// coverage constraint α/K, the worst class and the change since the
// previous refresh. At K = 1000 the rows are sorted (worst first by
// default) and a class can be found by name; see package classlist.
package classes

import (
	"fmt"
	"math"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"selmix/core/train"
	"selmix/tui/classlist"
	"selmix/tui/history"
	"selmix/tui/pane"
)

// Model lists classes, scrolling when K exceeds the height.
type Model struct {
	classlist.Pane

	// Derived from one refresh when it arrives (sync), so View formats
	// only the visible rows.
	prev     *train.Refresh // the refresh before, if of the same K
	nameW    int
	countW   int // 0: no training counts (or too narrow to show them)
	covScale float64
}

// New returns the pane over run.
func New(ctx *pane.Context, run *history.Run) *Model {
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

func (m *Model) View() string {
	th := m.Ctx.Theme
	r := m.Run
	cur := m.RS
	if cur == nil {
		return m.Waiting()
	}
	rep := cur.Report
	K := cur.K
	alpha := r.Latest.Hyper.Alpha
	target := alpha / float64(K)
	prev := m.prev

	nameW := m.nameW
	wide := m.W >= 90
	// Training counts show the long tail beside each class, when known
	// and there is room, or when they are the order.
	counts := r.Info.TrainCounts
	countW := 0
	if wide || m.Nav.By() == classlist.ByCount {
		countW = m.countW
	}
	// Coverages are near 1/K: at K = 1000 three decimals would show
	// 0.001 for every class, so the decimals follow K.
	cd := covDecimals(K)
	covW := cd + 2
	// Sorted by gain, the gain is shown: it is not visible otherwise.
	gainW := 0
	if m.Nav.By() == classlist.ByGain {
		gainW = 9
	}
	// mark(2) name [count] [gain] sp bar sp val(5) sp Δ(6) | sp bar sp val [sp Δ] sp flag(1)
	fixed := 2 + nameW + countW + gainW + 1 + 1 + 5 + 1 + 6 + 3 + 1 + covW + 2
	if wide {
		fixed += covW + 2
	}
	bars := max(4, m.W-fixed)
	recW := bars * 3 / 5
	covBarW := bars - recW
	covScale := m.covScale

	var b strings.Builder
	if m.Nav.Searching() {
		b.WriteString(m.Nav.Prompt(m.Ctx))
	} else {
		head := fmt.Sprintf("%s %s  %s %s %.3g",
			th.Render(th.Worst, "▶"), "worst: "+r.ClassName(rep.Worst),
			th.Render(th.Dim, "│ = α/K ="), pane.Trimmed(alpha)+"/"+fmt.Sprint(K), target)
		if key := "  " + th.Render(th.Dim, "! = below α/K"); pane.Width(head+key) <= m.W {
			head += key // the key goes before a cut would
		}
		b.WriteString(head)
	}
	b.WriteByte('\n')
	hd := cd
	if cd == 3 {
		hd = 2
	}
	covHead := fmt.Sprintf("coverage 0–%.*f", hd, covScale)
	countHead := ""
	if countW > 0 {
		countHead = "n"
	}
	gainHead := ""
	if gainW > 0 {
		gainHead = "max G"
	}
	recHead := "recall 0–1"
	if pane.Width(recHead) > recW+1 {
		recHead = "recall" // narrow: the bars are 0–1 all the same
	}
	if 2+nameW+countW+gainW+1+recW+1+13+2+pane.Width(covHead) > m.W {
		covHead = fmt.Sprintf("cov 0–%.*f", hd, covScale)
	}
	b.WriteString(th.Render(th.Dim, pane.PadRight("", 2+nameW)+pane.PadLeft(countHead, countW)+pane.PadLeft(gainHead, gainW)+" "+
		pane.PadRight(recHead, recW+1)+pane.PadRight("", 13)+"│ "+covHead))
	lo, hi := m.Scroll.Window(K, m.Rows())
	for _, k := range m.Nav.Order[lo:hi] {
		b.WriteByte('\n')
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
		name := pane.PadRight(history.Short(r.ClassName(k), nameW), nameW)
		b.WriteString(mark + th.Render(nameStyle, name))
		if countW > 0 {
			b.WriteString(th.Render(th.Dim, pane.PadLeft(fmt.Sprint(counts[k]), countW)))
		}
		if gainW > 0 {
			g := "—"
			if v := m.Nav.Gain(k); !math.IsNaN(v) { // NaN: G not loaded yet
				g = fmt.Sprintf("%+.1e", v)
			}
			b.WriteString(pane.PadLeft(g, gainW))
		}
		b.WriteString(" ")
		recBar := pane.Bar(rec, recW)
		if k == rep.Worst {
			recBar = th.Render(th.Worst, recBar)
		} else {
			recBar = th.Render(th.Accent, recBar)
		}
		b.WriteString(recBar + fmt.Sprintf(" %5.3f ", rec))
		b.WriteString(m.delta(prev != nil, 3, func() float64 { return rec - prev.Report.Recall[k] }))
		b.WriteString(th.Render(th.Dim, " │ "))
		covBar := pane.BarMark(cov/covScale, target/covScale, covBarW)
		flag := " "
		if cov < target {
			covBar, flag = th.Render(th.Bad, covBar), th.Render(th.Bad, "!")
		}
		b.WriteString(covBar + fmt.Sprintf(" %*.*f", covW, cd, cov))
		if wide {
			b.WriteString(" " + m.delta(prev != nil, cd, func() float64 { return cov - prev.Report.Coverage[k] }))
		}
		b.WriteString(" " + flag)
	}
	return pane.Fit(b.String(), m.W, m.H)
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
		return th.Render(th.Dim, pane.PadLeft("—", w))
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
