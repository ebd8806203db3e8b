// Package whatif is the workbench's what-if preview: while a control is
// being chosen (the edit form, the objective and policy pickers, s±), the
// change of ψ the linear model predicts for the next interval under the
// candidate setting beside the one in force (a Forecaster: the engine's
// train.Preview, which the command line wires; from the last
// refresh's statistics), and the model's recent track record. Forecasts
// are computed off the UI goroutine, debounced while the user types; an
// answer to an older question is dropped.
package whatif

import (
	"errors"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
)

// Debounce is how long a question waits for the next keystroke before it
// is computed.
const Debounce = 150 * time.Millisecond

// Window is how many of the last intervals with a prediction the track
// record counts.
const Window = 40

// Question is a forecast to make: the interval the refresh of Basis
// opened, under Cur (in force) and Next (the candidate).
type Question struct {
	Basis     *loop.Basis
	Cur, Next loop.Hyper
	// At is the step the run stands at: past the refresh (Basis.Step),
	// a change made now applies to the rest of the interval only, and
	// the forecast (of the whole interval) is approximate.
	At int
}

// Preview holds the newest question and its answer. One forecast is
// computed at a time (at large K one takes a while, and the run needs
// the CPU): a question whose wait ends meanwhile is computed when it
// returns, if it is still the newest.
type Preview struct {
	seq      int
	busy     bool // a forecast is being computed
	wait     bool // the newest question waits for it
	q        Question
	text     string
	f        *loop.Forecast // the newest answer; nil before one or after an error
	forecast Forecaster
}

// Forecaster forecasts the interval b's refresh opens under cur (the
// hyperparameters in force) and under next: the engine's train.Preview,
// which comes in through workbench.Options so the workbench links no engine.
type Forecaster func(b *loop.Basis, cur, next loop.Hyper) (loop.Forecast, error)

// New returns an empty preview that forecasts with f (nil: every
// question is answered "no forecast").
func New(f Forecaster) *Preview { return &Preview{forecast: f} }

// tickMsg fires when a question has waited Debounce; answerMsg brings a
// computed forecast. Both carry the question's number.
type (
	tickMsg   struct{ seq int }
	answerMsg struct {
		seq  int
		f    loop.Forecast
		err  error
		text string
	}
)

// Ask replaces the question with q; its answer is computed after delay
// unless another question comes first. The answer shown meanwhile is the
// last one's, marked as being recomputed.
func (p *Preview) Ask(q Question, delay time.Duration) tea.Cmd {
	p.seq++
	p.q = q
	seq := p.seq
	if delay <= 0 {
		return p.start()
	}
	return tea.Tick(delay, func(time.Time) tea.Msg { return tickMsg{seq} })
}

// start computes the newest question, or has it wait for the forecast
// being computed.
func (p *Preview) start() tea.Cmd {
	if p.busy {
		p.wait = true
		return nil
	}
	p.busy, p.wait = true, false
	return p.compute(p.seq)
}

// Reset forgets the question and its answer (the dialog closed).
func (p *Preview) Reset() {
	p.seq++
	p.text, p.f = "", nil
}

// compute is the command that answers question seq, from copies: q's
// Basis is never written, its Hypers are values.
func (p *Preview) compute(seq int) tea.Cmd {
	q, forecast := p.q, p.forecast
	return func() tea.Msg {
		if q.Basis == nil {
			return answerMsg{seq: seq, err: errNoBasis}
		}
		if forecast == nil {
			return answerMsg{seq: seq, err: errNoForecaster}
		}
		f, err := forecast(q.Basis, q.Cur, q.Next)
		return answerMsg{seq: seq, f: f, err: err, text: Line(f, q.Cur, q.Next) + Midway(q)}
	}
}

var errNoForecaster = errors.New("this workbench was opened without the engine's forecast")

var errNoBasis = errors.New("no statistics of the last refresh: they come with the next one (a run in the background sends them for K² + 2Kd + K ≤ 2^20)")

// Update takes the preview's own messages: it returns the command that
// computes a question whose wait is over, and whether the answer shown
// changed. Other messages are not the preview's (false, nil).
func (p *Preview) Update(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case tickMsg:
		if msg.seq == p.seq {
			return p.start(), false
		}
	case answerMsg:
		p.busy = false
		if msg.seq != p.seq {
			// An older question's; the newest may be waiting for it.
			if p.wait {
				return p.start(), false
			}
			return nil, false
		}
		p.wait = false
		if msg.err != nil {
			p.text, p.f = "no forecast: "+msg.err.Error(), nil
		} else {
			p.text, p.f = msg.text, &msg.f
		}
		return nil, true
	}
	return nil, false
}

// Text is the newest answer as a line ("" before one).
func (p *Preview) Text() string { return p.text }

// Forecast is the newest answer, nil before one or after an error.
func (p *Preview) Forecast() *loop.Forecast { return p.f }

// Line is f as one line: the interval's predicted Δψ now and under the
// change from cur to next, each in its objective's units.
func Line(f loop.Forecast, cur, next loop.Hyper) string {
	change := Change(cur, next)
	now := "now " + outlook(f.Now, "", 4)
	if change == "" {
		return "next interval Δψ: " + now
	}
	unit, digits := "", decimals(f.Now, f.Next)
	now = "now " + outlook(f.Now, "", digits)
	if f.Next.Objective != f.Now.Objective {
		unit = string(f.Now.Objective)
		now = "now " + outlook(f.Now, unit, digits)
		unit = string(f.Next.Objective)
	}
	with := fmt.Sprintf("with %s %s", change, outlook(f.Next, unit, digits))
	if f.Next.OK && f.Steps != 0 && next.Refresh != cur.Refresh {
		with += fmt.Sprintf(" over %d steps", f.Steps)
	}
	return "next interval Δψ: " + now + " · " + with
}

// Midway is what the forecast of q leaves out when the run stands past
// the refresh that opened the interval: "" at the refresh. (Issue 46: s
// = 5 at step 64 was forecast +0.2551 for the interval from step 60,
// and the change took effect at step 64.)
func Midway(q Question) string {
	if q.Basis == nil || q.At <= q.Basis.Step || Change(q.Cur, q.Next) == "" {
		return ""
	}
	return fmt.Sprintf(" · approximate: forecast as if made at the refresh (step %d); made now, it applies from step %d", q.Basis.Step, q.At)
}

// decimals is how many decimals tell a and b apart: 4, or more (up to
// 8) where two different forecasts would read the same (a P already
// concentrated on one pair hardly moves with s).
func decimals(a, b loop.Outlook) int {
	d := 4
	for ; d < 8 && a.OK && b.OK && a.Delta != b.Delta; d++ {
		if fmt.Sprintf("%+.*f", d, a.Delta) != fmt.Sprintf("%+.*f", d, b.Delta) {
			break
		}
	}
	return d
}

// outlook is one setting's Δψ to digits decimals, with its objective
// named when unit is set (ψs of two objectives are on different scales).
func outlook(o loop.Outlook, unit string, digits int) string {
	if !o.OK {
		return "none (" + o.Why + ")"
	}
	s := fmt.Sprintf("%+.*f", digits, o.Delta)
	if unit != "" {
		s += " in " + unit + "'s ψ"
	}
	return s
}

// Change names what differs between cur and next, as "s=20, tau=0.02"
// (the controls' keys, in loop.HyperKeys order).
func Change(cur, next loop.Hyper) string {
	var parts []string
	for _, k := range loop.HyperKeys() {
		a, _ := cur.Get(k)
		b, _ := next.Get(k)
		if a != b {
			parts = append(parts, k+"="+b)
		}
	}
	return strings.Join(parts, ", ")
}

// Record is the linear model's track record as a line: the sign right in
// right of the last of intervals with a prediction.
func Record(right, of int) string {
	if of == 0 {
		return "linear model: no interval with a prediction yet"
	}
	return fmt.Sprintf("linear model: sign right in %d of the last %d intervals", right, of)
}
