package train

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
	// Auto marks the engine's own controls (finetune.adapt): logged like
	// a researcher's, but a replay or resume recomputes them rather than
	// sending them again.
	Auto bool `json:",omitempty"`
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
