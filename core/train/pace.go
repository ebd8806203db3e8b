package train

import (
	"time"
)

// pacer sizes runs of steps so that each takes about pacerTarget: long
// enough that a worker's round trip is amortised, short enough that a
// control or a stop waits no longer than that.
type pacer struct {
	fixed   int     // if > 0, every run of steps has this length (tests)
	perStep float64 // seconds per step, smoothed; 0 before the first run
	rateN   int
	rateT   time.Duration
	last    float64 // steps per second over the last window
}

const (
	pacerTarget   = 50 * time.Millisecond
	pacerMaxSteps = 1000
)

func (p *pacer) steps() int {
	if p.fixed > 0 {
		return p.fixed
	}
	if p.perStep <= 0 {
		return 1
	}
	return max(1, min(pacerMaxSteps, int(pacerTarget.Seconds()/p.perStep)))
}

func (p *pacer) done(n int, dt time.Duration) {
	ps := dt.Seconds() / float64(n)
	if p.perStep == 0 {
		p.perStep = ps
	} else {
		p.perStep = 0.7*p.perStep + 0.3*ps
	}
	p.rateN += n
	p.rateT += dt
	if p.rateT > time.Second {
		p.last = float64(p.rateN) / p.rateT.Seconds()
		p.rateN, p.rateT = 0, 0
	}
}

// rate is the recent training speed in steps per second (training time
// only: refreshes excluded).
func (p *pacer) rate() float64 {
	if p.last > 0 {
		return p.last
	}
	if p.rateT > 0 {
		return float64(p.rateN) / p.rateT.Seconds()
	}
	return 0
}
