package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"syscall"
	"time"

	"selmix/core/train"
	"selmix/internal/safetext"
)

// maxMessage bounds a worker's error message as selmix repeats it.
const maxMessage = 4096

// call sends a request and its arrays and returns the worker's reply.
func (c *Client) call(r Request, arrays ...Array) (*Frame, error) {
	return c.callWithin(r, arrays, c.timeout, "worker.timeout")
}

// callWithin sends a request and waits for the reply at most timeout
// (the configuration key knob), less once ctx has ended. A watcher ends
// the wait early when the process exits or the grace after ctx runs out.
func (c *Client) callWithin(r Request, arrays []Array, timeout time.Duration, knob string) (*Frame, error) {
	if c.broken != nil {
		return nil, c.broken
	}
	op := r.Op()
	if c.ended() != nil {
		c.broken = c.failure(op, timeout, knob, os.ErrClosed)
		return nil, c.broken
	}
	deadline := time.Now().Add(timeout)
	c.in.SetWriteDeadline(deadline)
	c.out.SetReadDeadline(deadline)
	req := &request{done: make(chan struct{})}
	go c.watch(req)
	f, err := requestFrame(r, arrays)
	if err == nil {
		err = WriteFrame(c.w, f)
	}
	if err == nil {
		err = c.w.Flush()
	}
	var rep *Frame
	if err == nil {
		rep, err = ReadFrame(c.r)
	}
	c.mu.Lock()
	req.finished = true
	cause := c.cause
	c.mu.Unlock()
	close(req.done)
	if err != nil {
		c.broken = c.failure(op, timeout, knob, err)
		c.kill()
		return nil, c.broken
	}
	if cause != nil {
		// The reply came as the worker was being stopped: take it, but
		// the session is over.
		c.broken = c.failure(op, timeout, knob, os.ErrClosed)
	}
	var st status
	if err := c.decode(op, rep, &st); err != nil {
		return nil, err
	}
	if s := st.Seconds; s != nil && *s > 0 && !math.IsInf(*s, 0) {
		c.busy += time.Duration(*s * float64(time.Second))
	}
	if st.OK == nil || !*st.OK {
		return nil, refusal(op, st)
	}
	return rep, nil
}

// watch ends req's wait early: at once when the worker process exits (a
// child it left may hold its pipes open, so end of file would not come),
// and StopGrace after ctx ends.
func (c *Client) watch(req *request) {
	var grace <-chan time.Time
	ctxDone := c.ctx.Done()
	for {
		select {
		case <-req.done:
			return
		case <-c.exited:
			// What it wrote before it exited is in the pipe: give the
			// reader a moment for it (and for end of file, once the group
			// is gone), then cut the wait.
			c.kill()
			select {
			case <-req.done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			c.abort(req, errExited)
			return
		case <-ctxDone:
			ctxDone = nil
			t := time.NewTimer(c.grace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			c.abort(req, context.Cause(c.ctx))
			return
		}
	}
}

// abort ends the session from outside the request: it records why, stops
// the worker's process group and unblocks the request's reads and writes.
func (c *Client) abort(req *request, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.finished {
		return
	}
	if c.cause == nil {
		c.cause = cause
	}
	c.kill()
	c.in.SetWriteDeadline(time.Now())
	c.out.SetReadDeadline(time.Now())
}

// ended is why the session was ended from outside a request, or nil.
func (c *Client) ended() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// failure describes why a request got no reply, with the worker's last
// words.
func (c *Client) failure(op string, timeout time.Duration, knob string, err error) error {
	var why string
	var marks []error
	cause := c.ended()
	switch {
	case cause != nil && cause != errExited:
		// Interrupted: the run stops, and resumes from its checkpoint.
		why = fmt.Sprintf("did not answer %q within %v of the stop; stopped it", op, c.grace)
		marks = []error{train.ErrHalt, cause}
	case cause == nil && errors.Is(err, os.ErrDeadlineExceeded):
		why = fmt.Sprintf("did not answer %q within %v (%s); stopped it", op, timeout, knob)
	case cause == nil && errors.Is(err, ErrFrame):
		why = fmt.Sprintf("sent a malformed reply to %q: %v", op, err)
	default:
		// The pipe broke or the process is gone. Say how it ended.
		select {
		case <-c.exited:
		case <-time.After(2 * time.Second):
		}
		why = fmt.Sprintf("ended during %q", op)
		if c.isExited() {
			if op == "hello" && exitCode(c.exitErr) == ExitUsage {
				return c.usageFailure()
			}
			why = fmt.Sprintf("exited during %q (%s)", op, exitString(c.exitErr))
			switch sig := killedBy(c.exitErr); {
			case sig == syscall.SIGKILL:
				why += "; lower " + MemoryKnobs
				marks = []error{train.ErrHalt, ErrOutOfMemory}
			case c.stoppedWithin(stopSiblings):
				// A scheduler (Slurm's scancel or preemption, systemd)
				// signals every process of the job at once: the worker
				// died of the signal selmix received, a stop.
				marks = []error{train.ErrHalt, context.Cause(c.ctx)}
			case sig == syscall.SIGTERM || sig == syscall.SIGINT || sig == syscall.SIGHUP:
				// Stopped from outside, not failed: the run resumes
				// from its last checkpoint.
				marks = []error{train.ErrHalt, ErrSignalled}
			}
		}
	}
	if tail := c.log.tail(3); tail != "" {
		why += "; its last words: " + tail
	}
	return &markedError{msg: "worker " + why, errs: marks}
}

// ExitUsage is the exit status of a worker that refuses its own command
// line or environment before it answers hello (argparse's, with its
// error as the last line on stderr).
const ExitUsage = 2

// usageFailure is the error of a worker that exited with ExitUsage
// during hello: bad input, in its own last line on stderr.
func (c *Client) usageFailure() error {
	c.log.wait() // its last line may still be in the pipe
	msg := fmt.Sprintf("worker refused its command line or environment (exit status %d during \"hello\")", ExitUsage)
	if last := c.log.tail(1); last != "" {
		msg = "worker: " + oneLine(last)
	}
	return &markedError{msg: msg, errs: []error{ErrBadInput}}
}

// refusal is the error of a reply that is not ok, marked by its reason.
func refusal(op string, st status) error {
	msg := "the reply says neither ok nor why"
	if st.Error != nil && *st.Error != "" {
		// A worker that names the request itself ("train: loader
		// process died") is not made to say it twice.
		msg = strings.TrimPrefix(oneLine(*st.Error), op+": ")
	}
	switch {
	case st.Reason == ReasonOutOfMemory:
		return &markedError{
			msg:  fmt.Sprintf("worker ran out of memory in %q: %s; lower %s", op, msg, MemoryKnobs),
			errs: []error{train.ErrHalt, ErrOutOfMemory},
		}
	case st.Reason == ReasonBadInput && op == "hello":
		return &markedError{msg: fmt.Sprintf("worker: %s: %s", op, msg), errs: []error{ErrBadInput}}
	case op == "load":
		return &markedError{msg: fmt.Sprintf("worker: %s: %s", op, msg), errs: []error{ErrBadState}}
	}
	return fmt.Errorf("worker: %s: %s", op, msg)
}

// oneLine is the first line of a worker's message, safe to print and at
// most maxMessage bytes.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > maxMessage {
		s = strings.ToValidUTF8(s[:maxMessage], "") + " …"
	}
	return safetext.Line(s)
}

// stopSiblings is how long a worker that died waits for selmix's own
// stop: a signal sent to both at once reaches selmix within it.
const stopSiblings = 500 * time.Millisecond

// stoppedWithin reports whether the session's context ends within d (the
// run was asked to stop: a signal, selmix stop).
func (c *Client) stoppedWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.ctx.Done():
		return true
	case <-t.C:
		return c.ctx.Err() != nil
	}
}
