package train

import (
	"math"
	"strconv"

	"selmix/core/loop"
)

// The trust region: an interval aims at a predicted change of ψ of at most
// radius; the radius halves when an interval's realised change falls below
// ratioHold of its prediction (the wrong sign included) and grows by half
// when it holds. The interval never exceeds the one the researcher set nor
// falls below a tenth of it; the learning rate never exceeds theirs nor
// falls below a 32nd of it.
const (
	radiusStart = 0.05
	radiusMin   = 0.002
	radiusMax   = 0.5
	ratioHold   = 0.25
	lrFloor     = 1.0 / 32
)

// adapter is the controller's state; a checkpoint carries it.
type adapter struct {
	Radius      float64 `json:"radius"`
	BaseLR      float64 `json:"base_lr"`      // the researcher's learning rate
	BaseRefresh int     `json:"base_refresh"` // and refresh interval
}

func newAdapter(h loop.Hyper) adapter {
	return adapter{Radius: radiusStart, BaseLR: h.LR, BaseRefresh: h.Refresh}
}

// userSet notes a researcher's change of the learning rate or interval:
// it becomes the bound the controller works under.
func (a *adapter) userSet(h loop.Hyper, key string) {
	switch loop.Canonical(key) {
	case "lr":
		a.BaseLR = h.LR
	case "refresh":
		a.BaseRefresh = h.Refresh
	}
}

// learn updates the radius from an interval's predicted and realised
// change. A prediction too small to tell from the validation set's noise
// teaches nothing.
func (a *adapter) learn(pred, real *float64) {
	if pred == nil || real == nil || *pred < 1e-6 {
		return
	}
	if *real/(*pred) < ratioHold {
		a.Radius = math.Max(radiusMin, a.Radius/2)
	} else {
		a.Radius = math.Min(radiusMax, a.Radius*1.5)
	}
}

// adapt runs at a refresh, after the interval it closes has been scored
// and P recomputed: it learns from the interval and returns the controls
// that size the next one. They are the engine's own (Auto), logged like a
// researcher's, and a replay recomputes them rather than resending them.
func (e *Engine) adapt() []loop.Control {
	if e.hyper.Adapt == loop.AdaptNone || e.hyper.Adapt == "" {
		return nil
	}
	a := &e.ad
	a.learn(e.last.Predicted, e.last.Realised)
	g := expectedGain(e.last.P, e.last.G)
	if e.hyper.Policy == "none" || !(g > 0) {
		return nil
	}
	// reach(n, f) is the predicted change of n steps at learning rate
	// scale f from here.
	reach := func(n int, f float64) float64 {
		var s float64
		for k := 1; k <= n && e.step+k-1 < e.cfg.Steps; k++ {
			s += f * e.baseLRAt(e.step+k-1) * momentumGain(e.cfg.Momentum, k) * g
		}
		return s
	}
	var c loop.Control
	switch e.hyper.Adapt {
	case loop.AdaptRefresh:
		lo := max(1, a.BaseRefresh/10)
		n := lo
		for n < a.BaseRefresh && reach(n+1, 1) <= a.Radius {
			n++
		}
		if n == e.hyper.Refresh {
			return nil
		}
		c = loop.Control{Op: loop.OpSet, Key: "refresh", Value: strconv.Itoa(n), Source: loop.SourceAdapt}
	case loop.AdaptLR:
		f := 1.0
		if r := reach(a.BaseRefresh, 1); r > a.Radius {
			f = math.Max(lrFloor, a.Radius/r)
		}
		lr, _ := strconv.ParseFloat(strconv.FormatFloat(a.BaseLR*f, 'g', 3, 64), 64)
		if lr == e.hyper.LR {
			return nil
		}
		c = loop.Control{Op: loop.OpSet, Key: "lr", Value: strconv.FormatFloat(lr, 'g', -1, 64), Source: loop.SourceAdapt}
	}
	return []loop.Control{c}
}

// baseLRAt is the researcher's cosine schedule at step (the controller
// scales from it, not from its own last choice).
func (e *Engine) baseLRAt(step int) float64 {
	return e.ad.BaseLR * 0.5 * (1 + math.Cos(math.Pi*float64(step)/float64(e.cfg.Steps)))
}
