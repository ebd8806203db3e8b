package workbench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"

	"selmix/core/loop"

	tea "charm.land/bubbletea/v2"
)

// Show runs the workbench m in the terminal while one goroutine feeds it
// st's snapshots (Follow); it returns when the user quits. A signal that
// cancels ctx ends it as q does.
func Show(ctx context.Context, m *Model, st *loop.Stream) error {
	if ctx == nil {
		ctx = context.Background()
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Snapshots arrive at most every UIRate; a faster frame clock would
	// only wake the CPU that training needs.
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithFPS(20))
	go Follow(fctx, st, p.Send, UIRate)
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // interrupted by a signal: the run stops as for q
	}
	return err
}

// HoldWriter passes writes through to W, except while held, when it
// keeps them until Release: what a run in this process prints while the
// workbench owns the terminal is printed once it closes.
type HoldWriter struct {
	W    io.Writer
	mu   sync.Mutex
	buf  bytes.Buffer
	held bool
}

func (h *HoldWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held {
		return h.buf.Write(p)
	}
	return h.W.Write(p)
}

// Hold keeps what is written from here on.
func (h *HoldWriter) Hold() {
	h.mu.Lock()
	h.held = true
	h.mu.Unlock()
}

// Release writes what was kept and passes writes through again.
func (h *HoldWriter) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = false
	if h.buf.Len() > 0 {
		h.W.Write(h.buf.Bytes())
		h.buf.Reset()
	}
}
