// Package header is the workbench's top pane: what runs, where it is and
// how fast it goes.
package header

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"selmix/core/loop"
	"selmix/tui/pane"
	"selmix/tui/runstate"
	"selmix/tui/style"
	"selmix/tui/system"
)

// Model draws two lines: identity and state, then progress.
type Model struct{ pane.Base }

// New returns a header over run.
func New(ctx *pane.Context, run *runstate.State) *Model { return &Model{pane.NewBase(ctx, run)} }

func (m *Model) Update(tea.Msg) tea.Cmd    { return nil }
func (m *Model) Title() string             { return "run" }
func (m *Model) ShortHelp() []key.Binding  { return nil }
func (m *Model) FullHelp() [][]key.Binding { return nil }

// State is the run state shown in the header: the engine's, or
// "starting" before the first snapshot.
func (m *Model) State() string {
	r := m.Run
	switch {
	case !r.Seen:
		return "starting"
	case r.Err != "":
		return string(loop.Failed)
	case r.Closed && r.Latest.State == loop.Running:
		// The stream ended without a final state: the run is over.
		return string(loop.Stopped)
	}
	return string(r.Latest.State)
}

func (m *Model) View() string {
	th := m.Ctx.Theme
	r := m.Run
	s := r.Latest
	state := m.State()
	stateStyle := th.Accent
	switch state {
	case string(loop.Paused):
		stateStyle = th.Warn
	case string(loop.Failed):
		stateStyle = th.Bad
	case string(loop.Finished):
		stateStyle = th.Good
	}
	name := r.Info.Name
	if name == "" {
		name = r.Info.ID
	}
	if r.Info.ReadOnly {
		name += " (read-only)"
	}
	obj, pol := string(s.Hyper.Objective), string(s.Hyper.Policy)
	if m := s.Hyper.Method(); m != "" {
		pol += " (" + m + ")"
	}
	if obj == "" {
		obj, pol = "—", "—"
	}
	right := th.Render(stateStyle, "● "+state)
	rightW := len([]rune("● " + state))
	// Labels only when they fit: at 80 columns the values speak alone.
	left := th.Render(th.Title, "selmix") + " " + name + th.Render(th.Dim, "  objective ") + obj +
		th.Render(th.Dim, "  policy ") + pol + th.Render(th.Dim, "  phase ") + r.Phase()
	if len([]rune(ansiStrip(left))) > m.W-rightW-1 {
		sep := th.Render(th.Dim, " · ")
		left = th.Render(th.Title, "selmix") + " " + name + sep + obj + sep + pol + sep + r.Phase()
	}
	line1 := style.PadRight(left, max(0, m.W-rightW-1)) + " " + right

	// Progress line: fixed-width fields around a bar that takes the rest.
	frac := 0.0
	if s.Total > 0 {
		frac = float64(s.Step) / float64(s.Total)
	}
	rate, eta := "— step/s", "ETA —"
	if s.StepsPerSec > 0 && state == string(loop.Running) {
		rate = fmt.Sprintf("%.0f step/s", s.StepsPerSec)
		eta = "ETA " + clock(float64(s.Total-s.Step)/s.StepsPerSec)
	}
	psi := ""
	if r.Cur != nil {
		// ψ aimed at α/K + δ is not the objective's reported ψ: named so.
		psi = fmt.Sprintf("  %s %.4f  s %s", loop.PsiLabel(s.Hyper.Aimed()), r.Cur.Psi, compact(s.Hyper.S))
	}
	fields := fmt.Sprintf(" %3.0f%%  %s  %s%s", 100*frac, rate, eta, psi)
	head := fmt.Sprintf("step %d/%d ", s.Step, s.Total)
	barW := m.W - len([]rune(head)) - len([]rune(fields))
	if barW < 10 {
		// Too narrow for everything: drop ψ and s first.
		fields = fmt.Sprintf(" %3.0f%%  %s  %s", 100*frac, rate, eta)
		barW = m.W - len([]rune(head)) - len([]rune(fields))
	}
	// The trainer's device and process at the right, as much of it as
	// leaves the bar 30 columns (20, 10 on narrower screens).
	minBar := 10
	switch {
	case m.W >= 140:
		minBar = 30
	case m.W >= 100:
		minBar = 20
	}
	sys := system.Line(r.System, barW-minBar-2)
	if sys != "" {
		barW -= len([]rune(sys)) + 2
	}
	bar := min(barW, 60)
	line2 := head + th.Render(th.Accent, style.Bar(frac, max(0, bar))) + fields
	if sys != "" {
		line2 += strings.Repeat(" ", barW-bar+2) + th.Render(th.Dim, sys)
	}
	return style.Fit(line1+"\n"+line2, m.W, m.H)
}

// compact formats x in at most 10 columns: with at most three decimals
// and no trailing zeros (style.Trimmed: 0.95, 10, 12.5) where that is
// short and not 0 for a value that is not, else with four significant
// digits (1e+30, 1.235e-05): s set to 1e30 must not push the fields
// after it off the line.
func compact(x float64) string {
	t := style.Trimmed(x)
	if len(t) <= 8 && (x == 0 || strings.Trim(t, "-0.") != "") {
		return t
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// clock formats seconds as m:ss or h:mm:ss.
func clock(sec float64) string {
	if math.IsInf(sec, 0) || math.IsNaN(sec) || sec < 0 {
		return "—"
	}
	t := int(math.Round(sec))
	if t >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", t/3600, t/60%60, t%60)
	}
	return fmt.Sprintf("%d:%02d", t/60, t%60)
}

func ansiStrip(s string) string { return ansi.Strip(s) }
