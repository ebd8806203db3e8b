package loop

import (
	"testing"

	"selmix/core/gain"
)

func TestWrongSign(t *testing.T) {
	for _, tt := range []struct {
		pred, real float64
		want       bool
	}{
		{0.1, -0.01, true}, {-0.1, 0.01, true}, {0.1, 0.2, false}, {-0.1, -0.2, false},
		{0, -0.1, false}, {0.1, 0, false},
	} {
		if got := WrongSign(tt.pred, tt.real); got != tt.want {
			t.Errorf("WrongSign(%v, %v) = %v, want %v", tt.pred, tt.real, got, tt.want)
		}
	}
}

// The watch says "failing" once when the wrong-sign share of the last
// LinearWindow intervals reaches LinearFailShare (with at least
// LinearMinIntervals in), and again only after it recovered.
func TestLinearWatch(t *testing.T) {
	var w LinearWatch
	add := func(wrong bool) bool {
		if wrong {
			return w.Add(0.1, -0.05)
		}
		return w.Add(0.1, 0.05)
	}
	// 4 intervals, all wrong: too few to judge.
	for i := range 4 {
		if add(true) {
			t.Fatalf("failing after %d intervals; want at least %d", i+1, LinearMinIntervals)
		}
	}
	// 4 of 5 wrong: failing starts here, and is said.
	if !add(false) || !w.Failing() {
		t.Fatalf("4 of 5 wrong: not said, or Failing() = %v", w.Failing())
	}
	// Still failing: not said again.
	if add(true) {
		t.Errorf("said twice while failing")
	}
	if wrong, n := w.Tally(); wrong != 5 || n != 6 {
		t.Errorf("Tally() = %d of %d, want 5 of 6", wrong, n)
	}
	// Ten good intervals push the wrong ones out of the window.
	for range 10 {
		if add(false) {
			t.Errorf("said failing while recovering")
		}
	}
	if w.Failing() {
		t.Errorf("still failing after 10 good intervals")
	}
	if wrong, n := w.Tally(); wrong != 0 || n != LinearWindow {
		t.Errorf("Tally() = %d of %d, want 0 of %d", wrong, n, LinearWindow)
	}
	// 5 of 10 wrong: failing again, said again.
	said := 0
	for range 5 {
		if add(true) {
			said++
		}
	}
	if said != 1 || !w.Failing() {
		t.Errorf("after 5 wrong of 10: said %d times, failing %v; want once, true", said, w.Failing())
	}
}

func TestLinearAdvice(t *testing.T) {
	var w LinearWatch
	for _, wr := range []bool{true, true, false, true, true, true, false, true, true, false} {
		if wr {
			w.Add(1, -1)
		} else {
			w.Add(1, 1)
		}
	}
	h := DefaultHyper()
	h.S, h.Refresh, h.Adapt = 10, 50, AdaptNone
	want := "the linear step is failing: 7 of the last 10 refreshes moved ψ the other way — try a smaller s (now 10), finetune.refresh 10 or finetune.adapt = lr"
	if got := w.Advice(h); got != want {
		t.Errorf("Advice =\n %q\nwant\n %q", got, want)
	}
	h.Refresh, h.Adapt = 10, AdaptLR
	want = "the linear step is failing: 7 of the last 10 refreshes moved ψ the other way — try a smaller s (now 10)"
	if got := w.Advice(h); got != want {
		t.Errorf("with refresh 10 and adapt lr, Advice =\n %q\nwant\n %q", got, want)
	}
	// Under a policy whose P does not depend on s, s is no advice.
	h.Policy, h.Refresh, h.Adapt, h.LR = gain.Uniform, 50, AdaptLR, 0.01
	want = "the linear step is failing: 7 of the last 10 refreshes moved ψ the other way — try finetune.refresh 10"
	if got := w.Advice(h); got != want {
		t.Errorf("under uniform, Advice =\n %q\nwant\n %q", got, want)
	}
	h.Policy, h.Refresh = gain.Greedy, 10
	want = "the linear step is failing: 7 of the last 10 refreshes moved ψ the other way — try a smaller finetune.lr (now 0.01)"
	if got := w.Advice(h); got != want {
		t.Errorf("under greedy with nothing else left, Advice =\n %q\nwant\n %q", got, want)
	}
}
