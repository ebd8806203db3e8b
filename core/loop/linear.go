package loop

import (
	"fmt"
	"strings"

	"selmix/core/gain"
)

// WrongSign reports a realised change of ψ of the opposite sign to the
// predicted one (predicted > 0, realised < 0 under SelMix, whose P keeps
// only positive gains): the step left the region where the first-order
// prediction holds (docs/method.md). A zero on either side is no sign.
func WrongSign(predicted, realised float64) bool {
	return predicted > 0 && realised < 0 || predicted < 0 && realised > 0
}

// The linear step is failing when, of the last LinearWindow refresh
// intervals that had a prediction, at least LinearMinIntervals are in and
// a share of at least LinearFailShare moved ψ the other way. A
// first-order step that holds gets the sign right nearly always; a
// coin's share is what a step far outside its region gets.
const (
	LinearWindow       = 10
	LinearMinIntervals = 5
	LinearFailShare    = 0.5
)

// LinearWatch follows the intervals' predicted and realised changes of ψ
// and says when the linear step keeps failing. The zero value is ready.
type LinearWatch struct {
	wrong   []bool // the last LinearWindow intervals with a prediction, oldest first
	failing bool   // as of the last Add
}

// Add takes the interval a refresh closed. It returns true when this
// interval makes the step failing where it was not (a viewer says so
// once, and again only after it recovered).
func (w *LinearWatch) Add(predicted, realised float64) (started bool) {
	w.wrong = append(w.wrong, WrongSign(predicted, realised))
	if len(w.wrong) > LinearWindow {
		w.wrong = append(w.wrong[:0], w.wrong[1:]...)
	}
	was := w.failing
	wrong, n := w.Tally()
	w.failing = n >= LinearMinIntervals && float64(wrong) >= LinearFailShare*float64(n)
	return w.failing && !was
}

// Tally is how many of the last n intervals with a prediction (n ≤
// LinearWindow) had the wrong sign.
func (w *LinearWatch) Tally() (wrong, n int) {
	for _, b := range w.wrong {
		if b {
			wrong++
		}
	}
	return wrong, len(w.wrong)
}

// Failing reports whether the step was failing as of the last Add.
func (w *LinearWatch) Failing() bool { return w.failing }

// Advice is the one line that says the step is failing and what to try
// under h: a smaller s where the policy's P depends on s (selmix), the
// shorter refresh and the learning rate controller where they are not in
// force yet, and a smaller learning rate where nothing else is left.
func (w *LinearWatch) Advice(h Hyper) string {
	wrong, n := w.Tally()
	var try []string
	if h.Policy == gain.SelMix {
		try = append(try, fmt.Sprintf("a smaller s (now %g)", h.S))
	}
	if h.Refresh > 10 {
		try = append(try, "finetune.refresh 10")
	}
	if h.Adapt != AdaptLR {
		try = append(try, "finetune.adapt = lr")
	}
	if len(try) == 0 {
		try = append(try, fmt.Sprintf("a smaller finetune.lr (now %g)", h.LR))
	}
	alt := try[0]
	if len(try) > 1 {
		alt = strings.Join(try[:len(try)-1], ", ") + " or " + try[len(try)-1]
	}
	return fmt.Sprintf("the linear step is failing: %d of the last %d refreshes moved ψ the other way — try %s", wrong, n, alt)
}
