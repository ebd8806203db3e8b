package whatif

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/train"
	"selmix/tui/internal/fixture"
)

// The line words the forecast as train.Preview computed it: Δψ now and
// under the change, naming each objective when they differ (their ψs are
// on different scales), and why there is none.
func TestLine(t *testing.T) {
	cur := loop.DefaultHyper()
	s20, obj, none, refresh := cur, cur, cur, cur
	s20.S = 20
	obj.Objective = metric.HMean
	none.Policy = "none"
	refresh.Refresh = 20
	b := fixture.Basis(10, 100, 2000)
	for _, c := range []struct {
		name string
		next loop.Hyper
		want string
	}{
		{"unchanged", cur, "next interval Δψ: now %+.4f$"},
		{"s", s20, "next interval Δψ: now %+.4f · with s=20 %+.4f$"},
		{"objective", obj, "next interval Δψ: now %+.4f in min-recall's ψ · with objective=hmean %+.4f in hmean's ψ$"},
		{"policy none", none, "next interval Δψ: now %+.4f · with policy=none none (policy none does not mix: the linear model predicts mixup steps)$"},
		{"refresh", refresh, "next interval Δψ: now %+.4f · with refresh=20 %+.4f over 20 steps$"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := train.Preview(b, cur, c.next)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.TrimSuffix(c.want, "$")
			switch strings.Count(want, "%") {
			case 1:
				want = fmt.Sprintf(want, f.Now.Delta)
			case 2:
				want = fmt.Sprintf(want, f.Now.Delta, f.Next.Delta)
			}
			if got := Line(f, cur, c.next); got != want {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
	}
	// Two forecasts that differ past the 4th decimal get more.
	a, c := loop.Outlook{OK: true, Delta: 0.585612}, loop.Outlook{OK: true, Delta: 0.585648}
	if got := Line(loop.Forecast{Now: a, Next: c}, cur, s20); got != "next interval Δψ: now +0.58561 · with s=20 +0.58565" {
		t.Errorf("close forecasts: %q", got)
	}
	if got := Line(loop.Forecast{Now: a, Next: a}, cur, s20); got != "next interval Δψ: now +0.5856 · with s=20 +0.5856" {
		t.Errorf("equal forecasts: %q", got)
	}
	if got := Change(cur, s20); got != "s=20" {
		t.Errorf("Change = %q", got)
	}
	two := s20
	two.Tau = 0.02
	if got := Change(cur, two); got != "s=20, tau=0.02" {
		t.Errorf("Change = %q, want the keys in HyperKeys order", got)
	}
	for _, c := range []struct {
		right, of int
		want      string
	}{{22, 40, "linear model: sign right in 22 of the last 40 intervals"}, {0, 0, "linear model: no interval with a prediction yet"}} {
		if got := Record(c.right, c.of); got != c.want {
			t.Errorf("Record(%d, %d) = %q, want %q", c.right, c.of, got, c.want)
		}
	}
}

// run carries out cmd as Bubble Tea would, feeding its messages back to
// p until nothing is left.
func run(p *Preview, cmd tea.Cmd) {
	for cmd != nil {
		msg := cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				run(p, c)
			}
			return
		}
		cmd, _ = p.Update(msg)
	}
}

// While the user types, only the newest question is computed; an answer
// to an older one that comes late is dropped; an error is said.
func TestDebounce(t *testing.T) {
	p := New(train.Preview)
	var asked []float64
	p.forecast = func(b *loop.Basis, cur, next loop.Hyper) (loop.Forecast, error) {
		asked = append(asked, next.S)
		if next.S == 99 {
			return loop.Forecast{}, errors.New("boom")
		}
		return train.Preview(b, cur, next)
	}
	b := fixture.Basis(10, 100, 2000)
	cur := loop.DefaultHyper()
	q := func(s float64) Question {
		n := cur
		n.S = s
		return Question{Basis: b, Cur: cur, Next: n}
	}
	first := p.Ask(q(2), time.Millisecond)
	second := p.Ask(q(20), time.Millisecond)
	run(p, first) // its wait ends after the second question: not computed
	if len(asked) != 0 || p.Text() != "" {
		t.Fatalf("a superseded question was computed: %v, %q", asked, p.Text())
	}
	run(p, second)
	if len(asked) != 1 || asked[0] != 20 || !strings.Contains(p.Text(), "with s=20 ") || p.Forecast() == nil {
		t.Fatalf("computed %v, text %q; want s=20's", asked, p.Text())
	}
	// One forecast at a time: a question asked while one is computed
	// waits for it, and its answer replaces the older one's, which is
	// dropped.
	slow := p.Ask(q(5), 0)
	if p.Ask(q(6), 0) != nil {
		t.Fatal("a second forecast started while one was computed")
	}
	next, changed := p.Update(slow())
	if changed || next == nil || !strings.Contains(p.Text(), "s=20") {
		t.Fatalf("the older answer replaced the text (%q) or the newest question did not start", p.Text())
	}
	run(p, next)
	if !strings.Contains(p.Text(), "s=6 ") || len(asked) != 3 || asked[2] != 6 {
		t.Errorf("text %q after computing %v; want s=6's", p.Text(), asked)
	}
	run(p, p.Ask(q(99), 0))
	if p.Text() != "no forecast: boom" || p.Forecast() != nil {
		t.Errorf("error shown as %q", p.Text())
	}
	run(p, p.Ask(Question{Cur: cur, Next: cur}, 0))
	if !strings.HasPrefix(p.Text(), "no forecast: no statistics of the last refresh") {
		t.Errorf("without a basis: %q", p.Text())
	}
}

// A change made past the refresh is said to be forecast approximately;
// at the refresh, or with nothing changed, nothing is added (issue 46).
func TestMidway(t *testing.T) {
	b := &loop.Basis{Step: 60}
	var cur loop.Hyper
	cur.S = 1
	next := cur
	next.S = 5
	for _, c := range []struct {
		q    Question
		want string
	}{
		{Question{Basis: b, Cur: cur, Next: next, At: 64}, " · approximate: forecast as if made at the refresh (step 60); made now, it applies from step 64"},
		{Question{Basis: b, Cur: cur, Next: next, At: 60}, ""},
		{Question{Basis: b, Cur: cur, Next: cur, At: 64}, ""},
		{Question{Cur: cur, Next: next, At: 64}, ""},
	} {
		if got := Midway(c.q); got != c.want {
			t.Errorf("Midway(at %d) = %q, want %q", c.q.At, got, c.want)
		}
	}
}
