package live

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"selmix/core/loop"
)

// Client is a connection to a live run.
type Client struct {
	last    *loop.Refresh // the newest evaluation received
	greeted bool          // the server's hello was read
	idle    time.Duration // after the hello, the longest silence Next waits (0: no bound)
	maxLine int
	c       net.Conn
	sc      *bufio.Scanner
	out     chan []byte // lines to send
	err     error
	once    sync.Once
}

// ErrNotLive reports a run with no process serving it.
var ErrNotLive = errors.New("run is not live")

// ErrNoAnswer reports a run whose process took the connection but did not
// answer in time (it is stopped, or hung, or not selmix).
var ErrNoAnswer = errors.New("the run does not answer")

// helloTimeout bounds the wait for the server's hello: it is sent as
// soon as the connection is accepted, by a goroutine of its own. A
// variable for tests.
var helloTimeout = 10 * time.Second

// Bounds of one line from the server: G and P inline at K = 1000 are
// tens of MB; without them a line is the refresh's vectors and summary.
const (
	maxLineMatrices = 256 << 20
	maxLine         = 16 << 20
)

// Dial connects to the run in dir and says hello: what it wants sent
// (Dial sets its Version). It checks the socket's owner and mode before
// connecting.
func Dial(dir string, hello Hello) (*Client, error) {
	path := filepath.Join(dir, SocketName)
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (no control socket)", dir, ErrNotLive)
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return nil, fmt.Errorf("%s: not a socket", path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return nil, fmt.Errorf("%s: refused: owned by uid %d, not by you (uid %d)", path, st.Uid, os.Getuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%s: refused: mode %04o lets other users connect; want 0600", path, perm)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return nil, fmt.Errorf("%s: %w (stale socket: the process is gone)", dir, ErrNotLive)
		}
		return nil, err
	}
	max := maxLine
	if hello.Matrices || hello.Stats {
		max = maxLineMatrices
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), max)
	cl := &Client{c: c, sc: sc, out: make(chan []byte, 256), maxLine: max}
	hello.Version = Version
	cl.out <- append(mustJSON(struct {
		Hello Hello `json:"hello"`
	}{hello}), '\n')
	go cl.write()
	return cl, nil
}

// write sends queued lines, so Send never blocks its caller (a UI).
func (cl *Client) write() {
	for line := range cl.out {
		cl.c.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := cl.c.Write(line); err != nil {
			return
		}
	}
}

// Err is why the stream ended, if the server said or sent garbage.
func (cl *Client) Err() error { return cl.err }

// SetIdle bounds how long Next waits for the server after its hello
// (0, the default: as long as ctx lets it; a paused run is silent).
func (cl *Client) SetIdle(d time.Duration) { cl.idle = d }

// Next returns the next snapshot; false when the run's process closed the
// connection (the run ended or the process died) or ctx ended. A server
// error, a hello not sent within helloTimeout (ErrNoAnswer), silence past
// SetIdle's bound (ErrNoAnswer) or a line past its bound ends the stream
// and is returned by Err.
func (cl *Client) Next(ctx context.Context) (loop.Snapshot, bool) {
	stop := context.AfterFunc(ctx, func() { cl.c.SetReadDeadline(time.Now()) })
	defer stop()
	for {
		wait := cl.idle
		if !cl.greeted {
			wait = helloTimeout
		}
		var deadline time.Time
		if wait > 0 {
			deadline = time.Now().Add(wait)
		}
		cl.c.SetReadDeadline(deadline)
		if ctx.Err() != nil { // the AfterFunc may have run before the line above
			return loop.Snapshot{}, false
		}
		if !cl.sc.Scan() {
			err := cl.sc.Err()
			var ne net.Error
			switch {
			case err == nil || ctx.Err() != nil:
			case errors.As(err, &ne) && ne.Timeout() && !cl.greeted:
				cl.err = fmt.Errorf("%w: no hello within %v", ErrNoAnswer, helloTimeout)
			case errors.As(err, &ne) && ne.Timeout():
				cl.err = fmt.Errorf("%w: silent for %v", ErrNoAnswer, cl.idle)
			case errors.Is(err, bufio.ErrTooLong):
				cl.err = fmt.Errorf("the run sent a line longer than %d bytes", cl.maxLine)
			}
			return loop.Snapshot{}, false
		}
		snap, err := decodeMessage(cl.sc.Bytes(), !cl.greeted)
		cl.greeted = true
		if err != nil {
			cl.err = err
			return loop.Snapshot{}, false
		}
		if snap != nil {
			s := *snap
			if s.Refresh != nil {
				if p := cl.last; s.Refresh.Basis == nil && p != nil && p.Basis != nil && p.Basis.Step == s.Refresh.Step {
					// A control's recompute of the same evaluation: the
					// server sent its statistics once, with the refresh.
					s.Refresh.Basis = p.Basis
				}
				cl.last = s.Refresh
			} else if s.Kind == loop.KindStep {
				s.Refresh = cl.last
			}
			return s, true
		}
	}
}

// Send queues a control for the run without blocking. Controls past a
// queue of 256 unsent ones are dropped (the run is not reading).
func (cl *Client) Send(c loop.Control) {
	defer func() { recover() }() // Send after Close: nothing to do
	select {
	case cl.out <- encodeControl(c):
	default:
	}
}

// Close disconnects; the run goes on.
func (cl *Client) Close() error {
	cl.once.Do(func() { close(cl.out) })
	return cl.c.Close()
}
