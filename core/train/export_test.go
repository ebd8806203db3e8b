package train

// Hooks for the engine's tests in package train_test: they drive the
// engine with the in-process trainer, and core/local imports this package.

// SetPace makes every run of steps between boundaries exactly n steps long
// (0: the pacer decides).
func SetPace(e *Engine, n int) { e.pace.fixed = n }

// Refresh refreshes the engine now.
func RunRefresh(e *Engine) error { return e.refresh() }

// LRFloor is the lowest learning rate adaptation reaches, as a fraction of
// the researcher's.
const LRFloor = lrFloor

// Tail is the engine's tail split of the classes.
func Tail(e *Engine) []bool { return e.tail }

// StepOf is the step the engine stands at.
func StepOf(e *Engine) int { return e.step }

// LastRefresh is the step of the engine's last refresh.
func LastRefresh(e *Engine) int { return e.lastRefresh }
