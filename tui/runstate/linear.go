package runstate

import (
	"math"

	"selmix/core/gain"
	"selmix/core/loop"
)

// Interval is the change of ψ over the refresh interval one refresh
// closed: as the previous refresh's G and P predicted it for the steps
// taken, and as it happened (docs/method.md; both with the previous
// refresh's multipliers). Without a prediction, Why says why not.
type Interval struct {
	From, Step          int // the refreshes that opened and closed it; From is -1 for the first
	Predicted, Realised float64
	OK                  bool   // a prediction exists
	Why                 string // !OK: "first refresh", "no mixup steps", "objective changed", …
}

// Reasons an interval has no prediction.
const (
	WhyFirst    = "first refresh"
	WhyNone     = "no mixup steps" // policies none, resample, csst, mislas2: the prediction is of mixup steps
	WhyChanged  = "objective changed"
	WhyRecorded = "run recorded before predictions"
	WhyUnknown  = "no prediction"
)

// Ratio is realised over predicted: 1 when the first-order prediction
// holds, NaN without a prediction or when the prediction is 0.
func (iv Interval) Ratio() float64 {
	if !iv.OK || iv.Predicted == 0 {
		return math.NaN()
	}
	return iv.Realised / iv.Predicted
}

// WrongSign reports a realised change of the opposite sign to the
// predicted one (loop.WrongSign).
func (iv Interval) WrongSign() bool {
	return iv.OK && loop.WrongSign(iv.Predicted, iv.Realised)
}

// noteControl records what an accepted control does to the interval in
// progress.
func (r *State) noteControl(c loop.Control) {
	if c.Op != loop.OpSet {
		return
	}
	switch {
	case c.Key == "policy" && !gain.Policy(c.Value).Mixes():
		r.ivNoMixup = true
	case loop.ChangesPsi(c.Key):
		// ψ is another function: the engine drops the prediction.
		r.ivObjective = true
	}
}

// addInterval appends the interval refresh s closes, and starts the next.
func (r *State) addInterval(s loop.Snapshot) {
	rs := s.Refresh
	iv := Interval{From: -1, Step: rs.Step}
	if n := len(r.Steps); n > 0 {
		iv.From = r.Steps[n-1]
	}
	switch {
	case rs.Predicted != nil && rs.Realised != nil:
		iv.OK, iv.Predicted, iv.Realised = true, *rs.Predicted, *rs.Realised
		r.Predicted++
		r.SumPredicted += iv.Predicted
		r.SumRealised += iv.Realised
		if iv.WrongSign() {
			r.Wrong++
		}
		if r.linear.Add(iv.Predicted, iv.Realised) {
			r.log(Entry{rs.Step, Warn, r.linear.Advice(s.Hyper)})
		}
	case iv.From < 0:
		iv.Why = WhyFirst
	case r.ivNoMixup || !r.ivHyper.Policy.Mixes():
		iv.Why = WhyNone
	case r.ivObjective || psiDiffers(r.ivHyper, s.Hyper):
		iv.Why = WhyChanged
	case r.Predicted == 0:
		iv.Why = WhyRecorded
	default:
		iv.Why = WhyUnknown
	}
	r.Intervals = append(r.Intervals, iv)
	if iv.OK {
		r.lastOK = len(r.Intervals)
	}
	r.ivHyper, r.ivNoMixup, r.ivObjective = s.Hyper, false, false
}

// psiDiffers reports whether a and b define different functions ψ.
func psiDiffers(a, b loop.Hyper) bool {
	return a.Objective != b.Objective || a.Omega != b.Omega || a.Alpha != b.Alpha || a.Tau != b.Tau || a.LambdaMax != b.LambdaMax
}

// LastPredicted is the newest interval with a prediction, or false.
func (r *State) LastPredicted() (Interval, bool) {
	if r.lastOK == 0 {
		return Interval{}, false
	}
	return r.Intervals[r.lastOK-1], true
}

// TrackRecord is the linear model's record over the last n intervals
// that had a prediction (fewer if there are fewer): how many of them it
// got the sign of right (the realised change not of the opposite sign),
// out of how many.
func (r *State) TrackRecord(n int) (right, of int) {
	for i := len(r.Intervals) - 1; i >= 0 && of < n; i-- {
		if iv := r.Intervals[i]; iv.OK {
			of++
			if !iv.WrongSign() {
				right++
			}
		}
	}
	return right, of
}
