package wait

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
		min  time.Duration // it waited at least this long
	}{
		{"live, waits d", live, 20 * time.Millisecond, true, 20 * time.Millisecond},
		{"live, no wait", live, 0, true, 0},
		{"ended, returns at once", ended, time.Hour, false, 0},
		{"ended, no wait", ended, 0, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			got := Sleep(c.ctx, c.d)
			took := time.Since(start)
			if got != c.want || took < c.min || took > time.Minute {
				t.Errorf("Sleep(%v) = %v after %v, want %v after at least %v (and well under the hour)", c.d, got, took, c.want, c.min)
			}
		})
	}
}

// A context that ends during the wait ends it.
func TestSleepCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep reported a live context after it was cancelled")
	}
}
