package loop

import (
	"fmt"

	"selmix/core/metric"
)

// Kind says what a Snapshot reports.
type Kind int

const (
	KindStep    Kind = iota // after an SGD step; may be coalesced
	KindRefresh             // validation evaluated, G and P recomputed
	KindControl             // a control message took effect (or was refused)
	KindFinal               // the run ended; Summary is set, except after a Trainer halted (ErrHalt)
	KindError               // the run failed; Err is set
	KindLog                 // a line the trainer wrote (a worker's stderr); Text is set. Live only: never recorded
)

var kindNames = [...]string{"step", "refresh", "control", "final", "error", "log"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("kind(%d)", int(k))
	}
	return kindNames[k]
}

// State is the run's state as a viewer shows it.
type State string

const (
	Running  State = "running"
	Paused   State = "paused"
	Finished State = "finished"
	Stopped  State = "stopped"
	Failed   State = "error"
)

// Snapshot is an immutable view of the run at one step. The engine builds
// a fresh one for every publication: no slice in it is ever written again,
// so readers may keep it.
type Snapshot struct {
	Kind        Kind
	Step, Total int
	State       State
	Hyper       Hyper
	LR          float64 // head learning rate at this step (after the schedule)
	Loss        float64 // training loss of the last step; NaN before the first
	StepsPerSec float64

	// Set on refresh (and carried on the following step snapshots).
	Refresh *Refresh
	// System is what the trainer measured of its device and process at
	// this refresh (nil if it does not say). Live only: never recorded.
	System *System

	Ack     *Ack     // KindControl
	Summary *Summary // KindFinal
	Err     string   // KindError
	Text    string   // KindLog
}

// Refresh is what one refresh computed: the evaluation on the validation
// set and the G and P derived from it. (record.RefreshEvent is a refresh
// read back from a run's log; record.RefreshData the snake_case record
// of one on every wire: the log, the control socket and --json.)
type Refresh struct {
	Step       int
	Report     metric.Report // per-class recall, coverage, all reported metrics
	Objectives []float64     // ψ of each objective in metric.Objectives() order
	Psi        float64       // ψ of the optimized objective
	Lambda     []float64     // its multipliers (nil if none)
	// Aims is the coverage each coverage multiplier aims at, α/K + δ
	// (per class, or head and tail; nil without a coverage constraint).
	Aims []float64
	G, P []float64 // K×K row-major
	K    int
	S    float64
	// The change of ψ over the interval this refresh closes: predicted by
	// the previous refresh's G and P for the steps taken, and realised
	// (with the previous refresh's multipliers). Nil where there is no
	// prediction: the first refresh, steps without mixup, a changed
	// objective (docs/method.md).
	Predicted, Realised *float64
	// Best says this refresh takes a new best: its ψ beats the best so
	// far of the optimized objective (NewBest; a changed objective starts
	// anew). The engine judges it, whether or not it keeps the model, and
	// the run store records best and best_step from it.
	Best bool
	// Basis is what the refresh measured, for a forecast of the interval
	// it opens under other hyperparameters (Preview); shared by every
	// Refresh of one evaluation, never written. Live only: nil in a
	// recorded run, and on the control socket sent to a client that asks.
	Basis *Basis
}

// Summary closes a run: the optimized objective and every reported metric
// before and after fine-tuning, on validation and on test.
type Summary struct {
	Steps                 int
	Objective             metric.Objective
	ValBefore, ValAfter   metric.Report
	TestBefore, TestAfter metric.Report
	// Objective values (metric.Objectives() order) on test before/after.
	TestObjBefore, TestObjAfter []float64
	// Best is the model kept at the best validation ψ of the optimized
	// objective, with its test metrics; nil if no refresh took one.
	Best *Best
	// PluginBefore and PluginAfter are the post-hoc plug-in classifier on
	// the pre-trained model and on the model at the end (nil where the run
	// did not measure it: Config.Plugin, a trainer without logits).
	PluginBefore, PluginAfter *Plugin
	Seconds                   float64
	// Alpha is the α of the coverage bound α/K at the end, what the
	// constraints are counted against ("k of K met"). It is not recorded
	// apart: a run's reader takes it from its last refresh (0: unknown,
	// read as the default 0.95).
	Alpha float64
}
