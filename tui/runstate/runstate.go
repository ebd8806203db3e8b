// Package runstate accumulates a run's snapshots into what the panes
// draw: the latest state, per-refresh series and the event log (it draws
// nothing itself; the run's recorded log is record.History, in the
// store). Apply is
// called from the UI's Update only, so no locking is needed, and it does
// O(K + objectives) work per refresh and O(1) per step or log line.
package runstate

import (
	"fmt"
	"strings"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/internal/safetext"
)

// Info is what the workbench knows of a run besides its snapshots.
type Info struct {
	ID, Name    string
	Dir         string // the run's directory in the store
	ClassNames  []string
	TrainCounts []int
	ReadOnly    bool // a finished run opened from the store
	// Worker is the command of the worker process that trains the run
	// (worker.command), "" for the in-process trainer, which writes no
	// console lines.
	Worker string
}

// Level grades an event-log entry.
type Level int

const (
	Routine Level = iota // refreshes
	Note                 // controls and UI notes
	Warn                 // refused controls, unavailable actions
	Error                // run failures
)

// Entry is one line of the event log.
type Entry struct {
	Step  int
	Level Level
	Text  string
}

// State is the accumulated view of one run, live or replayed from its
// log: not the store's record.History (every event, read once) but what
// the panes draw, kept up to date one snapshot at a time: the latest
// refresh and the one before it, per-refresh series, the intervals' Δψ
// predicted and realised, and the event log and console, bounded.
type State struct {
	Info Info

	Latest   loop.Snapshot // newest snapshot of any kind
	Seen     bool          // at least one snapshot arrived
	Closed   bool          // the stream ended
	Cur      *loop.Refresh
	Prev     *loop.Refresh // the refresh before Cur (for deltas)
	Baseline []float64     // objectives at the first refresh: the pre-trained model

	// Per refresh, oldest first.
	Steps  []int
	Obj    [][]float64 // Obj[o][i]: objective o (metric.Objectives() order) at refresh i
	S      []float64
	Lambda [][]float64 // multipliers at refresh i (nil if the objective has none)

	// Intervals holds, per refresh (aligned with Steps), the change of ψ
	// over the interval it closed; Predicted and Wrong count those with a
	// prediction and those whose realised change had the wrong sign, and
	// the sums add up the changes of those with a prediction.
	Intervals                 []Interval
	Predicted, Wrong          int
	SumPredicted, SumRealised float64

	Summary *loop.Summary
	Err     string
	// Log is the event log, newest last: the last MaxLog entries, with
	// LogDropped older ones gone. Console is the same for the worker's
	// own lines (its stderr, as written).
	Log, Console               []Entry
	LogDropped, ConsoleDropped int
	// System is what the trainer last said of its device and process;
	// SystemHistory is every such report, one per refresh that had one.
	System        *loop.System
	SystemHistory []loop.System

	// What the interval the next refresh closes saw: the hyperparameters
	// at the refresh that opened it, and controls applied since.
	ivHyper     loop.Hyper
	ivNoMixup   bool // a control set a policy that does not mix
	ivObjective bool // a control changed ψ (objective or its parameters)
	lastOK      int  // 1 + index of the newest interval with a prediction; 0: none

	// cur is the snapshot's loop.Refresh Cur was copied from when G and P
	// were filled in (see SetMatrices); matrices are those G and P.
	cur      *loop.Refresh
	matrices *loaded
	linear   loop.LinearWatch // says when the linear step keeps failing
}

// loaded are G and P that arrived apart from their refresh.
type loaded struct {
	step int
	G, P []float64
}

// New returns an empty State. The strings of info come from outside (a
// worker's hello, a features file, a run directory anyone may have
// written): each is made safe to draw here, once.
func New(info Info) *State {
	info.ID, info.Name, info.Dir = safetext.Line(info.ID), safetext.Line(info.Name), safetext.Line(info.Dir)
	names := make([]string, len(info.ClassNames))
	for k, n := range info.ClassNames {
		names[k] = safetext.Line(n)
	}
	info.ClassNames = names
	return &State{Info: info, Obj: make([][]float64, len(metric.Objectives()))}
}

// K is the number of classes, 0 before the first refresh.
func (r *State) K() int {
	if r.Cur == nil {
		return 0
	}
	return r.Cur.K
}

// ClassName names class k: its dataset name if known, else its index.
func (r *State) ClassName(k int) string {
	if k < len(r.Info.ClassNames) && r.Info.ClassNames[k] != "" {
		return r.Info.ClassNames[k]
	}
	return fmt.Sprintf("class %d", k)
}

// MaxLog is how many entries the event log and the console keep: a worker
// printing 100 lines a second must not grow the workbench without bound.
const MaxLog = 10000

// maxLine is the longest worker line kept, in bytes (a scanner reading a
// worker's stderr accepts lines of a megabyte).
const maxLine = 2000

// push appends e to a bounded log. Dropping the oldest entry reslices, so
// the backing array is reallocated (and the dropped entries freed) every
// few thousand lines: O(1) amortised.
func push(log []Entry, dropped *int, e Entry) []Entry {
	log = append(log, e)
	if len(log) > MaxLog {
		log = log[len(log)-MaxLog:]
		*dropped++
	}
	return log
}

func (r *State) log(e Entry) { r.Log = push(r.Log, &r.LogDropped, e) }

// refreshPrefix opens a refresh's line in the event log ("refresh ψ
// min-recall 0.5643 …", "refresh ψ aimed mean-recall@cov 0.0372 …").
const refreshPrefix = "refresh ψ "

// foldAdapt puts a change finetune.adapt made at a refresh on that
// refresh's line ("refresh ψ … · lr=0.0021 (adapt)") rather than a line of
// its own, so that at a short refresh interval the researcher's own
// controls are not lost among adapt's. It reports whether it did.
func (r *State) foldAdapt(step int, c loop.Control) bool {
	n := len(r.Log)
	if c.Source != loop.SourceAdapt || c.Op != loop.OpSet || n == 0 {
		return false
	}
	last := &r.Log[n-1]
	if last.Step != step || !strings.HasPrefix(last.Text, refreshPrefix) {
		return false
	}
	last.Text += safetext.Line(fmt.Sprintf(" · %s=%s (adapt)", c.Key, c.Value))
	return true
}

// Note appends a UI-side line to the event log (e.g. "fork not available").
func (r *State) Note(level Level, text string) {
	r.log(Entry{Step: r.Latest.Step, Level: level, Text: text})
}

// SetMatrices supplies G and P for the refresh at step, for snapshots that
// came without them (loop.Refresh.G == nil means "not loaded yet": a
// recorded run's are read from disk after its history is shown). They
// fill in Cur whenever it is that refresh and lacks them, now or later.
func (r *State) SetMatrices(step int, G, P []float64) {
	r.matrices = &loaded{step, G, P}
	r.fill()
}

// fill completes Cur with the loaded G and P if they are its own. Cur
// becomes a copy: the snapshot it came from is shared and never written.
func (r *State) fill() {
	m := r.matrices
	if m == nil || r.Cur == nil || r.Cur.G != nil || r.Cur.Step != m.step {
		return
	}
	c := *r.Cur
	c.G, c.P = m.G, m.P
	r.cur, r.Cur = r.Cur, &c
}

// AddConsole adds a line the worker wrote before this viewer came (its
// start-up, read from the run's worker log) to the console, not the
// event log.
func (r *State) AddConsole(text string) {
	r.Console = push(r.Console, &r.ConsoleDropped, Entry{r.Latest.Step, Routine, safetext.Console(text, maxLine)})
}

// Apply folds one snapshot in. Snapshots are the engine's immutable
// copies, so keeping their slices is safe.
func (r *State) Apply(s loop.Snapshot) {
	defer r.fill()
	r.Seen = true
	// A step snapshot carries the last refresh too; keep per-step values
	// but take refresh data only from refresh events.
	if s.Kind == loop.KindLog {
		// A line from the trainer (a worker's stderr): not a state of the
		// run, so Latest stays.
		text := safetext.Console(s.Text, maxLine)
		r.log(Entry{r.Latest.Step, Routine, "worker: " + text})
		r.Console = push(r.Console, &r.ConsoleDropped, Entry{r.Latest.Step, Routine, text})
		return
	}
	r.Latest = s
	switch s.Kind {
	case loop.KindStep:
		// The engine's standing to a viewer that joined late carries the
		// device as its last refresh measured it.
		if s.System != nil && r.System == nil {
			r.System = s.System
		}
		// A viewer that attaches gets the last refresh's statistics with
		// the run's standing: the refresh read from disk lacks them.
		if rs := s.Refresh; rs != nil && rs.Basis != nil && r.Cur != nil && r.Cur.Basis == nil && r.Cur.Step == rs.Step {
			c := *r.Cur
			c.Basis = rs.Basis
			r.cur, r.Cur = r.Cur, &c
		}
	case loop.KindRefresh:
		if s.System != nil && (s.Refresh == nil || !r.seenRefresh(s.Refresh)) {
			r.System = s.System
			r.SystemHistory = append(r.SystemHistory, *s.System)
		}
		r.addRefresh(s)
	case loop.KindControl:
		// A control that changes G or P (s, the objective, the policy, …)
		// recomputes them from the same evaluation: show the new ones
		// without adding a point to the histories.
		if rs := s.Refresh; rs != nil && r.Cur != nil && rs != r.Cur && rs != r.cur && rs.Step == r.Cur.Step {
			r.Cur, r.cur = rs, nil
		}
		if s.Ack == nil {
			r.log(Entry{s.Step, Note, "paused after one refresh interval"})
			break
		}
		if s.Ack.Err != "" {
			r.log(Entry{s.Ack.Step, Warn, safetext.Line(fmt.Sprintf("%s refused: %s", s.Ack.Control.Tagged(), s.Ack.Err))})
		} else if r.foldAdapt(s.Ack.Step, s.Ack.Control) {
			r.noteControl(s.Ack.Control)
		} else {
			r.log(Entry{s.Ack.Step, Note, safetext.Line(fmt.Sprintf("%s ✓", s.Ack.Control.Tagged()))})
			r.noteControl(s.Ack.Control)
		}
	case loop.KindFinal:
		r.Summary = s.Summary
		if sm := s.Summary; sm != nil && len(sm.TestObjBefore) > 0 {
			i := sm.Objective.Index()
			r.log(Entry{s.Step, Note, fmt.Sprintf("%s after %d steps: test %s %.4f → %.4f",
				s.State, sm.Steps, sm.Objective, sm.TestObjBefore[i], sm.TestObjAfter[i])})
			if b := sm.Best; b != nil && len(b.TestObj) == len(sm.TestObjAfter) {
				j := b.Objective.Index()
				// Judged on ψ aimed at α/K + δ where a margin was in force:
				// the line names it so, beside the reported test ψ.
				judged := ""
				if b.Aimed {
					judged = loop.PsiLabel(true) + " "
				}
				r.log(Entry{s.Step, Note, fmt.Sprintf("best checkpoint at step %d (validation %s%s %.4f): test %s %.4f, worst recall %.4f (at the end %.4f)",
					b.Step, judged, b.Objective, b.Psi, b.Objective, b.TestObj[j], b.Test.MinRecall, sm.TestAfter.MinRecall)})
			}
		} else {
			r.log(Entry{s.Step, Note, string(s.State)})
		}
	case loop.KindError:
		r.Err = safetext.Line(s.Err)
		r.log(Entry{s.Step, Error, "error: " + r.Err})
	}
}

// seenRefresh reports whether rs is the refresh already shown (a repeat,
// or the same refresh carried again).
func (r *State) seenRefresh(rs *loop.Refresh) bool {
	return r.Cur != nil && r.Cur.Step == rs.Step && (r.Cur == rs || r.cur == rs)
}

func (r *State) addRefresh(s loop.Snapshot) {
	rs := s.Refresh
	if rs == nil {
		return
	}
	if r.seenRefresh(rs) {
		return
	}
	r.addInterval(s)
	r.Prev, r.Cur, r.cur = r.Cur, rs, nil
	if r.Baseline == nil {
		r.Baseline = rs.Objectives
	}
	r.Steps = append(r.Steps, rs.Step)
	for o := range r.Obj {
		v := 0.0
		if o < len(rs.Objectives) {
			v = rs.Objectives[o]
		}
		r.Obj[o] = append(r.Obj[o], v)
	}
	r.S = append(r.S, rs.S)
	r.Lambda = append(r.Lambda, rs.Lambda)
	rep := rs.Report
	worst := ""
	if rep.K > 0 {
		worst = fmt.Sprintf("  worst recall %.3f (%s)", rep.MinRecall, r.ClassName(rep.Worst))
	}
	// ψ of the objective (a smoothed minimum for min-recall) and the true
	// worst-class recall carry different names (README, "Two numbers"),
	// and so do ψ aimed at α/K + δ and the objective's reported ψ.
	aimed := ""
	if s.Hyper.Aimed() {
		aimed = "aimed "
	}
	r.log(Entry{rs.Step, Routine, fmt.Sprintf(refreshPrefix+"%s%s %.4f%s", aimed, s.Hyper.Objective, rs.Psi, worst)})
	if len(r.Steps) == 1 {
		if why := loop.CannotLearn(rs.Report, rs.G); why != "" {
			r.log(Entry{rs.Step, Warn, why})
		}
	}
}

// LambdaHistory returns the history of multiplier i over the trailing
// refreshes whose multipliers have n entries (a change of objective
// starts a new history).
func (r *State) LambdaHistory(i, n int) []float64 {
	var out []float64
	for j := len(r.Lambda) - 1; j >= 0; j-- {
		l := r.Lambda[j]
		if len(l) != n {
			break
		}
		out = append(out, l[i])
	}
	for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
		out[a], out[b] = out[b], out[a]
	}
	return out
}

// Phase is a short description of where the run is.
func (r *State) Phase() string {
	switch {
	case !r.Seen:
		return "starting"
	case r.Err != "":
		return "failed"
	case r.Summary != nil || r.Closed:
		return "done"
	case r.Latest.Step == 0 && r.Cur != nil && len(r.Steps) == 1:
		return "evaluated pre-trained model"
	default:
		return "fine-tuning"
	}
}

// Short shortens a class name to w columns for labels.
func Short(name string, w int) string {
	name = strings.TrimSpace(name)
	if len([]rune(name)) <= w {
		return name
	}
	return string([]rune(name)[:w])
}
