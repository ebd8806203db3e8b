package cli

import (
	"fmt"
	"io"
	"regexp"
	"sync"
	"time"

	"selmix/internal/safetext"
)

// startupView shows a background run's start-up while the workbench
// waits for it: every line its worker writes (loading data,
// pre-training), as it comes, and on a terminal a last line that says how
// long it has waited and the latest progress the worker reported
// ("epoch 3/8").
type startupView struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	start    time.Time
	progress string
	stop     chan struct{}
	stopped  sync.WaitGroup
}

// progressRe finds a progress report in a worker's line: "epoch 3/8",
// "Epoch 3 / 8", "step 120/400".
var progressRe = regexp.MustCompile(`(?i)\b(epoch|step|batch)\s*\d+\s*/\s*\d+`)

func newStartupView(w io.Writer, tty bool) *startupView {
	v := &startupView{w: w, tty: tty, start: time.Now(), stop: make(chan struct{})}
	if tty {
		v.stopped.Add(1)
		go func() {
			defer v.stopped.Done()
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-v.stop:
					return
				case <-t.C:
					v.mu.Lock()
					v.status()
					v.mu.Unlock()
				}
			}
		}()
	}
	return v
}

// status rewrites the last line; mu is held.
func (v *startupView) status() {
	if !v.tty {
		return
	}
	s := fmt.Sprintf("  waiting for the run · %d s", int(time.Since(v.start).Seconds()))
	if v.progress != "" {
		s += " · " + v.progress
	}
	fmt.Fprintf(v.w, "\r\x1b[K%s", s)
}

// line shows one line from the background run.
func (v *startupView) line(text string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	text = safetext.Line(text)
	if p := progressRe.FindString(text); p != "" {
		v.progress = p
	}
	if v.tty {
		fmt.Fprint(v.w, "\r\x1b[K")
	}
	fmt.Fprintln(v.w, text)
	v.status()
}

// done ends the view: the status line is cleared.
func (v *startupView) done() {
	close(v.stop)
	v.stopped.Wait()
	if v.tty {
		fmt.Fprint(v.w, "\r\x1b[K")
	}
}
