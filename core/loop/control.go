package loop

import "fmt"

// Op is what a Control asks for.
type Op int

const (
	OpPause  Op = iota
	OpResume    // continue after a pause
	OpStep      // while paused: run one refresh interval, then pause again
	OpStop      // end the run now (a final summary is still produced)
	OpSet       // set hyperparameter Key to Value
)

var opNames = [...]string{"pause", "resume", "step", "stop", "set"}

func (o Op) String() string {
	if o < 0 || int(o) >= len(opNames) {
		return fmt.Sprintf("op(%d)", int(o))
	}
	return opNames[o]
}

// ParseOp is the Op whose String is name.
func ParseOp(name string) (Op, error) {
	for op := range Op(len(opNames)) {
		if op.String() == name {
			return op, nil
		}
	}
	return 0, fmt.Errorf("unknown control op %q", name)
}

// Control is a message to the engine. It takes effect at a step boundary:
// at step At if At > 0 (replay uses this), else at the first boundary
// after it arrives.
type Control struct {
	Op         Op
	Key, Value string
	At         int
	// Source says who asked for it (SourceUser, …); "" where a record
	// predates sources and did not say.
	Source ControlSource `json:",omitempty"`
}

// ControlSource is who asked for a Control.
type ControlSource string

const (
	// SourceUser: the researcher, live (the workbench, a control client).
	SourceUser ControlSource = "user"
	// SourceSchedule: planned before the run started, at its step (the
	// --set of a fork, applied where the fork begins).
	SourceSchedule ControlSource = "schedule"
	// SourceAdapt: the engine's own (finetune.adapt). Logged, never drawn
	// as a researcher's control; a replay or resume recomputes it rather
	// than sending it again.
	SourceAdapt ControlSource = "adapt"
	// SourceReplay: a control of the run being replayed, sent again at
	// its step by selmix replay.
	SourceReplay ControlSource = "replay"
	// SourcePBT: population-based training's explore, applied where a
	// member continues from another's checkpoint (selmix sweep --search
	// pbt).
	SourcePBT ControlSource = "pbt"
)

// Auto reports whether c is the engine's own control (finetune.adapt).
func (c Control) Auto() bool { return c.Source == SourceAdapt }

// Tagged is c as the logs show it, with its source unless the researcher
// sent it live (or the record does not say): "set lr=0.001 (adapt)".
func (c Control) Tagged() string {
	if c.Source == "" || c.Source == SourceUser {
		return c.String()
	}
	return fmt.Sprintf("%s (%s)", c, c.Source)
}

func (c Control) String() string {
	if c.Op == OpSet {
		return fmt.Sprintf("set %s=%s", c.Key, c.Value)
	}
	return c.Op.String()
}

// Ack reports the step at which a Control took effect, or why it was
// refused (Err non-empty).
type Ack struct {
	Control Control
	Step    int
	Err     string
}

// SourceOf is the source a record states, or for a record written before
// sources, SourceAdapt where it marked the control auto and "" (not said)
// otherwise.
func SourceOf(source string, auto bool) ControlSource {
	if source != "" {
		return ControlSource(source)
	}
	if auto {
		return SourceAdapt
	}
	return ""
}
