package train

// Hooks for the engine's tests in package train_test: they drive the
// engine with the in-process trainer, and core/local imports this package.

// SetPace makes every run of steps between boundaries exactly n steps long
// (0: the pacer decides).
func SetPace(e *Engine, n int) { e.pace.fixed = n }

// Refresh refreshes the engine now.
func Refresh(e *Engine) error { return e.refresh() }

// LRFloor is the lowest learning rate adaptation reaches, as a fraction of
// the researcher's.
const LRFloor = lrFloor
