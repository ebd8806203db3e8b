// Package wait paces the workbench's background readers.
package wait

import (
	"context"
	"time"
)

// Sleep waits d, or less if ctx ends first, and reports whether ctx is
// still live: a reader that loops on it stops at once when its context
// ends. A d ≤ 0 does not wait.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
