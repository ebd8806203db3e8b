package runs

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"selmix/internal/boundedfile"
)

// ErrNoCheckpoint is wrapped by the errors for a missing checkpoint.
var ErrNoCheckpoint = errors.New("no checkpoint")

// DefaultKeep is how many most recent checkpoints a writer keeps.
const DefaultKeep = 5

func ckptName(step int) string { return fmt.Sprintf("step-%07d.ckpt", step) }

// bestName is the file of the best checkpoint taken at step. Only the
// latest is kept; its step is in the name so that a fork from it can be
// replayed while it is still the parent's best.
func bestName(step int) string { return fmt.Sprintf("best-%07d.ckpt", step) }

// parseCkptName returns the step of a checkpoint file name.
func parseCkptName(name string) (int, bool) { return parseStepName(name, "step-") }

// parseStepName returns the step of a file named prefix, digits, ".ckpt".
func parseStepName(name, prefix string) (int, bool) {
	digits, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	if digits, ok = strings.CutSuffix(digits, ".ckpt"); !ok || digits == "" {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	step, err := strconv.Atoi(digits)
	return step, err == nil
}

// listCheckpoints returns the checkpoint steps in dir, ascending.
func listCheckpoints(dir string) ([]int, error) { return listSteps(dir, "step-") }

// listSteps returns the steps of the checkpoint files named prefix+step
// in dir, ascending.
func listSteps(dir, prefix string) ([]int, error) {
	ents, err := readDir(filepath.Join(dir, ckptDirName))
	if err != nil {
		return nil, err
	}
	var steps []int
	for _, e := range ents {
		if step, ok := parseStepName(e.Name(), prefix); ok && e.Type().IsRegular() {
			steps = append(steps, step)
		}
	}
	return sortedInts(steps), nil
}

// Checkpoints lists the steps that have a checkpoint, ascending.
func (r *Run) Checkpoints() ([]int, error) { return listCheckpoints(r.Dir) }

// CheckpointCheck is how a reader checks a checkpoint, whose format is
// not this package's (core/train): Head reads the beginning of the file
// (size bytes in all) and says whether it can be what its header says,
// before the whole is read into memory; Content checks the whole. Either
// may be nil.
type CheckpointCheck struct {
	Head    func(r io.Reader, size int64) error
	Content func(b []byte) error
}

// read reads the checkpoint at path as c allows; c's refusals are damage.
func (c CheckpointCheck) read(path string) ([]byte, error) {
	f, size, err := boundedfile.Open(path, ckptFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if c.Head != nil {
		if err := c.Head(io.LimitReader(f, size), size); err != nil {
			return nil, Damaged(err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
	}
	if err := boundedfile.CheckAlloc(path, size); err != nil {
		return nil, err
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = Damaged(fmt.Errorf("%s: shrank while read", path))
		}
		return nil, err
	}
	if c.Content != nil {
		if err := c.Content(b); err != nil {
			return nil, Damaged(err)
		}
	}
	return b, nil
}

// Checkpoint returns the checkpoint saved at step.
func (r *Run) Checkpoint(step int) ([]byte, error) { return r.checkpoint(step, CheckpointCheck{}) }

// checkpoint returns the checkpoint saved at step, if c accepts it.
func (r *Run) checkpoint(step int, c CheckpointCheck) ([]byte, error) {
	b, err := c.read(filepath.Join(r.Dir, ckptDirName, ckptName(step)))
	if errors.Is(err, os.ErrNotExist) {
		have, _ := r.Checkpoints()
		return nil, fmt.Errorf("run %s: %w at step %d (have %v)", filepath.Base(r.Dir), ErrNoCheckpoint, step, have)
	}
	return b, err
}

// Skipped is a checkpoint a reader passed over because it is damaged.
type Skipped struct {
	Step int
	Path string
	Err  error
}

func (s Skipped) String() string { return fmt.Sprintf("%s (%v)", s.Path, s.Err) }

// LatestValidCheckpoint returns the newest checkpoint at or before step
// that c accepts, and the newer ones it did not (newest first), so a
// damaged checkpoint costs the steps since the one before it rather than
// the run. If none is accepted, the error names every file it tried and
// wraps ErrDamaged; with none at all, ErrNoCheckpoint.
func (r *Run) LatestValidCheckpoint(step int, c CheckpointCheck) (int, []byte, []Skipped, error) {
	steps, err := r.Checkpoints()
	if err != nil {
		return 0, nil, nil, err
	}
	var skipped []Skipped
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i] > step {
			continue
		}
		b, err := r.checkpoint(steps[i], c)
		if err == nil {
			return steps[i], b, skipped, nil
		}
		if errors.Is(err, os.ErrPermission) || errors.Is(err, boundedfile.ErrNoMemory) {
			return 0, nil, skipped, err // not damage: unreadable by this user, or here
		}
		skipped = append(skipped, Skipped{steps[i], filepath.Join(r.Dir, ckptDirName, ckptName(steps[i])), err})
	}
	if len(skipped) == 0 {
		if len(steps) == 0 {
			return 0, nil, nil, fmt.Errorf("run %s has %w yet (one is taken every record.checkpoint_every refreshes and when it stops)", filepath.Base(r.Dir), ErrNoCheckpoint)
		}
		return 0, nil, nil, fmt.Errorf("run %s: %w at or before step %d (have %v)", filepath.Base(r.Dir), ErrNoCheckpoint, step, steps)
	}
	msgs := make([]string, len(skipped))
	for i, s := range skipped {
		msgs[i] = s.String()
	}
	where := ""
	if step < math.MaxInt {
		where = fmt.Sprintf(" at or before step %d", step)
	}
	return 0, nil, skipped, Damaged(fmt.Errorf("no valid checkpoint%s: %s", where, strings.Join(msgs, "; ")))
}

// LatestCheckpointAtOrBefore returns the last checkpoint at or before step.
func (r *Run) LatestCheckpointAtOrBefore(step int) (int, []byte, error) {
	steps, err := r.Checkpoints()
	if err != nil {
		return 0, nil, err
	}
	i, found := slices.BinarySearch(steps, step)
	if !found {
		i--
	}
	if i < 0 {
		return 0, nil, fmt.Errorf("run %s: %w at or before step %d (have %v)", filepath.Base(r.Dir), ErrNoCheckpoint, step, steps)
	}
	b, err := r.Checkpoint(steps[i])
	return steps[i], b, err
}

// ErrNoBest is wrapped by the errors for a run without a best checkpoint.
var ErrNoBest = errors.New("no best checkpoint")

// BestCheckpoint returns the best checkpoint (the model at the best
// validation ψ of the optimized objective) and the step it was taken at.
// Runs written before selmix kept one have none.
func (r *Run) BestCheckpoint() (int, []byte, error) {
	step, err := r.bestStep()
	if err != nil {
		return 0, nil, err
	}
	b, err := CheckpointCheck{}.read(filepath.Join(r.Dir, ckptDirName, bestName(step)))
	return step, b, err
}

// ValidBestCheckpoint is BestCheckpoint, checked by c: a best checkpoint
// c refuses is damage (wrapping ErrDamaged, naming the file). Only the
// latest best is kept, so there is none to fall back to.
func (r *Run) ValidBestCheckpoint(c CheckpointCheck) (int, []byte, error) {
	step, err := r.bestStep()
	if err != nil {
		return 0, nil, err
	}
	path := filepath.Join(r.Dir, ckptDirName, bestName(step))
	b, err := c.read(path)
	if err != nil && errors.Is(err, ErrDamaged) {
		err = Damaged(fmt.Errorf("damaged best checkpoint %s: %w", path, err))
	}
	return step, b, err
}

// bestStep is the step of the best checkpoint.
func (r *Run) bestStep() (int, error) {
	steps, err := listSteps(r.Dir, "best-")
	if err != nil {
		return 0, err
	}
	if len(steps) == 0 {
		return 0, fmt.Errorf("run %s: %w (runs written before selmix kept the best model have none)", filepath.Base(r.Dir), ErrNoBest)
	}
	// A crash between writing a new best and removing the old one leaves
	// both: bests are taken in step order, so the last is the best.
	return steps[len(steps)-1], nil
}

// BestCheckpointAt returns the best checkpoint taken at step, if it is
// still the run's best (a fork from it is replayed from it).
func (r *Run) BestCheckpointAt(step int) ([]byte, error) {
	b, err := CheckpointCheck{}.read(filepath.Join(r.Dir, ckptDirName, bestName(step)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("run %s: %w at step %d (a later best replaced it)", filepath.Base(r.Dir), ErrNoBest, step)
	}
	return b, err
}
