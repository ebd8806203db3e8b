package runs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"selmix/internal/atomicfile"
)

// WriteCheckpoint stores b as the checkpoint of step atomically, then
// deletes older checkpoints beyond the most recent Keep (pinned ones and
// this one are always kept).
func (w *Writer) WriteCheckpoint(step int, b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeCheckpoint(step, b)
}

// WriteFinalCheckpoint is WriteCheckpoint that also pins the checkpoint
// (Meta.Pinned), so retention never deletes it.
func (w *Writer) WriteFinalCheckpoint(step int, b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log == nil {
		return ErrClosed
	}
	if !slices.Contains(w.meta.Pinned, step) {
		m := w.meta.clone()
		m.Pinned = sortedInts(append(m.Pinned, step))
		if err := w.writeMeta(m); err != nil {
			return err
		}
	}
	return w.writeCheckpoint(step, b)
}

// WriteBestCheckpoint stores the best checkpoint taken at step and
// removes the one it replaces: a run keeps one best checkpoint, never
// pruned by retention.
func (w *Writer) WriteBestCheckpoint(step int, b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.log == nil {
		return ErrClosed
	}
	if step < 0 {
		return fmt.Errorf("run %s: best checkpoint step %d is negative", w.id, step)
	}
	dir := filepath.Join(w.dir, ckptDirName)
	if err := writeAtomic(filepath.Join(dir, bestName(step)), b, w.wrap); err != nil {
		return err
	}
	steps, err := listSteps(w.dir, "best-")
	if err != nil {
		return fmt.Errorf("best checkpoint %d written; removing the one it replaces failed: %w", step, err)
	}
	removed := false
	for _, s := range steps {
		if s == step {
			continue
		}
		if err := os.Remove(filepath.Join(dir, bestName(s))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("best checkpoint %d written; removing the one it replaces failed: %w", step, err)
		}
		removed = true
	}
	if removed {
		if err := atomicfile.SyncDir(dir); err != nil {
			return fmt.Errorf("best checkpoint %d written; removing the one it replaces failed: %w", step, err)
		}
	}
	return nil
}

func (w *Writer) writeCheckpoint(step int, b []byte) error {
	if w.log == nil {
		return ErrClosed
	}
	if step < 0 {
		return fmt.Errorf("run %s: checkpoint step %d is negative", w.id, step)
	}
	dir := filepath.Join(w.dir, ckptDirName)
	if err := writeAtomic(filepath.Join(dir, ckptName(step)), b, w.wrap); err != nil {
		return err
	}
	if w.keep < 1 {
		return nil
	}
	steps, err := listCheckpoints(w.dir)
	if err != nil {
		return fmt.Errorf("checkpoint %d written; pruning old ones failed: %w", step, err)
	}
	removed := false
	for i, s := range steps {
		if i >= len(steps)-w.keep || s == step || slices.Contains(w.meta.Pinned, s) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, ckptName(s))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("checkpoint %d written; pruning old ones failed: %w", step, err)
		}
		removed = true
	}
	if removed {
		if err := atomicfile.SyncDir(dir); err != nil {
			return fmt.Errorf("checkpoint %d written; pruning old ones failed: %w", step, err)
		}
	}
	return nil
}
