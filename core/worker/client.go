package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/mat"

	"selmix/core/safetext"
	"selmix/core/train"
)

// Options say how to start a worker.
type Options struct {
	Command []string      // the worker's command line
	Dir     string        // its working directory; "" = this process's
	Seed    uint64        // seeds every generator the worker uses
	Timeout time.Duration // longest wait for a reply; 0 = 300 s
	// StartTimeout bounds the wait for the worker's first reply, while it
	// loads its data and model (and perhaps pre-trains); 0 = 30 min.
	StartTimeout time.Duration
	// StopGrace is how long the worker has to answer a request once the
	// context has ended (SIGINT, SIGTERM, a stop): one in flight then, or
	// one made after. A worker that does not is stopped, and the request
	// fails with an error wrapping train.ErrHalt. 0 = 1 s.
	StopGrace time.Duration
	// Log, if set, receives every stderr line from the start, in order,
	// from another goroutine (SetLog replaces it).
	Log func(line string)
}

// ErrStart marks a worker that could not be started at all: no such
// command, no such directory, not executable. The configuration is at
// fault, not the run.
var ErrStart = errors.New("the worker cannot be started")

// ErrBadInput marks a worker that refused its own input in hello (reason
// "bad_input": a missing data folder, a corrupt file, weights of another
// architecture). Like ErrStart, the configuration is at fault, not the run:
// nothing has been recorded yet.
var ErrBadInput = errors.New("the worker refused its input")

// ErrOutOfMemory marks a request that failed for lack of memory: the
// worker's reply said so (reason "out_of_memory"), or the worker was killed
// by SIGKILL, as the kernel's out-of-memory killer does. It comes wrapped
// with train.ErrHalt: the run is stopped, and resumes (or forks with a
// smaller batch) from its last checkpoint.
var ErrOutOfMemory = errors.New("the worker ran out of memory")

// MemoryKnobs names what bounds a worker's memory, for messages.
const MemoryKnobs = "finetune.batch, and the worker's --eval-batch and --image-size"

// Client is a train.Trainer whose steps a worker process takes. It is used
// from one goroutine (the engine's), except SetLog.
type Client struct {
	cmd     *exec.Cmd
	in, out *os.File
	r       *bufio.Reader
	w       *bufio.Writer
	timeout time.Duration
	grace   time.Duration // StopGrace
	ctx     context.Context
	info    train.Info
	log     *lines
	exited  chan struct{} // closed when the process has been reaped
	exitErr error         // what Wait said; read after exited is closed

	mu    sync.Mutex
	cause error // why the session was ended from outside a request: errExited or ctx's error

	sentP  []float64     // the P the worker has
	sentT  []float64     // the soft targets the worker has
	sentA  []float64     // and their adjustment (nil: zeros)
	busy   time.Duration // time the worker reported spending on requests
	broken error         // set once the session is over; every call returns it
	closed sync.Once
}

// request is one request in flight, as its watcher sees it.
type request struct {
	done     chan struct{} // closed when the reply (or an error) is in
	finished bool          // guarded by Client.mu: the watcher must not act
}

// errExited is the cause of a request cut short because the worker process
// exited (whatever it left running may still hold its pipes open).
var errExited = errors.New("worker exited")

// Start launches the worker and says hello. Its stderr lines are kept for
// error messages and passed to o.Log, or to the function SetLog installs.
// When ctx ends, requests get o.StopGrace to be answered (see Options);
// the hello too, so an interrupted start ends promptly.
func Start(ctx context.Context, o Options) (*Client, error) {
	if len(o.Command) == 0 || o.Command[0] == "" {
		return nil, fmt.Errorf("worker.command: no command given: %w", ErrStart)
	}
	if o.Timeout <= 0 {
		o.Timeout = 300 * time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Minute
	}
	if o.StopGrace <= 0 {
		o.StopGrace = time.Second
	}
	if o.Dir != "" {
		if fi, err := os.Stat(o.Dir); err != nil || !fi.IsDir() {
			why := "not a directory"
			if err != nil {
				why = "no such directory"
				if !errors.Is(err, fs.ErrNotExist) {
					why = err.Error()
				}
			}
			return nil, &markedError{msg: fmt.Sprintf("worker.dir %q: %s", o.Dir, why), errs: []error{ErrStart}}
		}
	}
	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Dir = o.Dir
	// Its own process group, so a timeout or a stop ends everything it
	// started; and it dies with us if we are killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW, errR, errW} {
			f.Close()
		}
		return nil, &markedError{msg: fmt.Sprintf("worker.command: starting %s: %v", o.Command[0], startReason(err)), errs: []error{ErrStart, err}}
	}
	inR.Close()
	outW.Close()
	errW.Close()
	c := &Client{
		cmd: cmd, in: inW, out: outR, r: bufio.NewReaderSize(outR, 1<<16), w: bufio.NewWriterSize(inW, 1<<16),
		timeout: o.Timeout, grace: o.StopGrace, ctx: ctx, log: newLines(), exited: make(chan struct{}),
	}
	if o.Log != nil {
		c.log.setSink(o.Log)
	}
	go c.log.read(errR)
	go func() {
		// Wait returns when the process exits, not when its pipes close:
		// we hand it our files, so it copies nothing.
		c.exitErr = cmd.Wait()
		close(c.exited)
	}()
	rep, err := c.callWithin(&Frame{Header: map[string]any{"op": "hello", "protocol": Protocol, "seed": o.Seed}}, o.StartTimeout, "worker.start_timeout")
	if err != nil {
		c.Close()
		return nil, err
	}
	if c.info, err = parseHello(rep); err != nil {
		c.broken = err
		c.Close()
		return nil, err
	}
	return c, nil
}

// startReason is why exec could not start a command, without Go's
// wrapping ("fork/exec /x: ").
func startReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, fs.ErrNotExist) {
			return "no such file"
		}
		return pe.Err.Error()
	}
	if errors.Is(err, exec.ErrNotFound) {
		return "not found in $PATH"
	}
	return err.Error()
}

// markedError is an error with its own message that wraps others (markers
// such as train.ErrHalt, ErrStart and ErrBadInput, and the cause).
type markedError struct {
	msg  string
	errs []error
}

func (e *markedError) Error() string   { return e.msg }
func (e *markedError) Unwrap() []error { return e.errs }

// SetLog passes every stderr line of the worker, those already written
// included, to f (in order, from another goroutine).
func (c *Client) SetLog(f func(line string)) { c.log.setSink(f) }

// Busy is the time the worker reported spending on its requests.
func (c *Client) Busy() time.Duration { return c.busy }

func (c *Client) Info() train.Info { return c.info }

// call sends a request and returns the worker's reply.
func (c *Client) call(f *Frame) (*Frame, error) { return c.callWithin(f, c.timeout, "worker.timeout") }

// callWithin sends a request and waits for the reply at most timeout
// (the configuration key knob), less once ctx has ended. A watcher ends
// the wait early when the process exits or the grace after ctx runs out.
func (c *Client) callWithin(f *Frame, timeout time.Duration, knob string) (*Frame, error) {
	if c.broken != nil {
		return nil, c.broken
	}
	op, _ := f.Header["op"].(string)
	if c.ended() != nil {
		c.broken = c.failure(op, timeout, knob, os.ErrClosed)
		return nil, c.broken
	}
	deadline := time.Now().Add(timeout)
	c.in.SetWriteDeadline(deadline)
	c.out.SetReadDeadline(deadline)
	req := &request{done: make(chan struct{})}
	go c.watch(req)
	err := WriteFrame(c.w, f)
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
	if s, ok := rep.Header["seconds"].(float64); ok && s > 0 && !math.IsInf(s, 0) {
		c.busy += time.Duration(s * float64(time.Second))
	}
	if ok, _ := rep.Header["ok"].(bool); !ok {
		msg, _ := rep.Header["error"].(string)
		if msg == "" {
			msg = "the reply says neither ok nor why"
		}
		switch reason, _ := rep.Header["reason"].(string); {
		case reason == "out_of_memory":
			return nil, &markedError{
				msg:  fmt.Sprintf("worker ran out of memory in %q: %s; lower %s", op, oneLine(msg), MemoryKnobs),
				errs: []error{train.ErrHalt, ErrOutOfMemory},
			}
		case reason == "bad_input" && op == "hello":
			return nil, &markedError{msg: fmt.Sprintf("worker: %s: %s", op, oneLine(msg)), errs: []error{ErrBadInput}}
		}
		return nil, fmt.Errorf("worker: %s: %s", op, oneLine(msg))
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
			why = fmt.Sprintf("exited during %q (%s)", op, exitString(c.exitErr))
			if killedBy(c.exitErr) == syscall.SIGKILL {
				why += "; lower " + MemoryKnobs
				marks = []error{train.ErrHalt, ErrOutOfMemory}
			}
		}
	}
	if tail := c.log.tail(3); tail != "" {
		why += "; its last words: " + tail
	}
	return &markedError{msg: "worker " + why, errs: marks}
}

func (c *Client) isExited() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// killedBy is the signal that killed the process Wait reported on, or 0.
func killedBy(err error) syscall.Signal {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}

func exitString(err error) string {
	if sig := killedBy(err); sig != 0 {
		name := unix.SignalName(sig)
		if name == "" {
			name = fmt.Sprintf("signal %d", int(sig))
		}
		if sig == syscall.SIGKILL {
			name += " (out of memory?)"
		}
		return "killed by " + name
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// kill ends the worker's process group.
func (c *Client) kill() {
	if c.cmd.Process != nil {
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// Close says bye and waits briefly for the worker to exit, then ends its
// process group.
func (c *Client) Close() error {
	c.closed.Do(func() {
		if c.broken == nil {
			c.callWithin(&Frame{Header: map[string]any{"op": "bye"}}, 5*time.Second, "the wait for bye")
			c.broken = errors.New("worker: closed")
		}
		c.in.Close()
		select {
		case <-c.exited:
		case <-time.After(5 * time.Second):
		}
		c.kill()
		<-c.exited
		c.out.Close()
		c.log.wait()
	})
	return nil
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}

// Requests.

func (c *Client) Evaluate(split train.Split, centroids bool) (*train.Eval, error) {
	rep, err := c.call(&Frame{Header: map[string]any{"op": "evaluate", "split": split.String(), "centroids": centroids}})
	if err != nil {
		return nil, err
	}
	K, d := c.info.K, c.info.D
	rows, ok := intField(rep.Header, "rows")
	if !ok || rows < 1 {
		return nil, c.bad("evaluate", "\"rows\" is %v, want a positive integer", rep.Header["rows"])
	}
	counts, err := c.array(rep, "evaluate", "C", "i8", K, K)
	if err != nil {
		return nil, err
	}
	var sum int64
	for _, v := range counts.Ints() {
		if v < 0 {
			return nil, c.bad("evaluate", "negative count %d in C", v)
		}
		sum += v
	}
	if sum != int64(rows) {
		return nil, c.bad("evaluate", "C counts %d samples, \"rows\" says %d", sum, rows)
	}
	C := mat.NewDense(K, K, counts.Floats())
	C.Scale(1/float64(rows), C) // as train.Confusion.Result does, to the last bit
	ev := &train.Eval{C: C, Rows: rows, Sys: parseSystem(rep.Header["system"])}
	if centroids {
		var Z, W, b *Array
		if Z, err = c.array(rep, "evaluate", "Z", "f8", K, d); err != nil {
			return nil, err
		}
		if W, err = c.array(rep, "evaluate", "W", "f8", d, K); err != nil {
			return nil, err
		}
		if b, err = c.array(rep, "evaluate", "b", "f8", K); err != nil {
			return nil, err
		}
		ev.Z, ev.W, ev.B = mat.NewDense(K, d, Z.Floats()), mat.NewDense(d, K, W.Floats()), b.Floats()
	}
	if ev.Sys != nil && ev.Sys.Device == "" {
		ev.Sys.Device = c.info.Device
	}
	return ev, nil
}

func (c *Client) Pseudo(oracle bool) error {
	if c.info.Unlabeled == 0 {
		return nil
	}
	_, err := c.call(&Frame{Header: map[string]any{"op": "pseudo", "oracle": oracle}})
	return err
}

func (c *Client) Train(r *train.TrainRequest) (float64, error) {
	h := map[string]any{
		"op": "train", "mode": r.Mode.String(), "steps": len(r.LR), "batch": r.Batch, "beta_min": r.BetaMin,
		"weight_decay": r.WeightDecay, "momentum": r.Momentum, "backbone_lr_scale": 0.1,
	}
	if r.FreezeBackbone {
		h["backbone_lr_scale"] = 0.0
	}
	f := &Frame{Header: h, Arrays: []Array{F64("lr", r.LR, len(r.LR))}}
	K := c.info.K
	sentP, sentSoft := false, false
	if r.Mode == train.ModeMixup && !samePointer(c.sentP, r.P) {
		if len(r.P) != K*K {
			panic(fmt.Sprintf("worker: P has %d entries, want %d", len(r.P), K*K))
		}
		f.Arrays = append(f.Arrays, F64("P", r.P, K, K))
		sentP = true
	}
	if r.Mode == train.ModeSoft {
		h["sampling"] = r.Sampling.String()
		// Targets and adjustment travel together, only when either changed
		// (the engine makes new ones at each refresh).
		sameA := samePointer(c.sentA, r.Adjust) || (c.sentA == nil && r.Adjust == nil)
		if !samePointer(c.sentT, r.Targets) || !sameA {
			if len(r.Targets) != K*K || (r.Adjust != nil && len(r.Adjust) != K) {
				panic(fmt.Sprintf("worker: %d targets and %d adjustments, want %d and nil or %d", len(r.Targets), len(r.Adjust), K*K, K))
			}
			adj := r.Adjust
			if adj == nil {
				adj = make([]float64, K)
			}
			f.Arrays = append(f.Arrays, F64("targets", r.Targets, K, K), F64("adjust", adj, K))
			sentSoft = true
		}
	}
	rep, err := c.call(f)
	if err != nil {
		return 0, err
	}
	if sentP {
		c.sentP = r.P
	}
	if sentSoft {
		c.sentT, c.sentA = r.Targets, r.Adjust
	}
	loss, ok := rep.Header["loss"].(float64)
	if !ok {
		return 0, c.bad("train", "no \"loss\" number in the reply")
	}
	return loss, nil
}

// samePointer reports whether a and b are the same slice (the engine makes
// a new P whenever it changes one).
func samePointer(a, b []float64) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}

func (c *Client) Save() (*train.Saved, error) {
	rep, err := c.call(&Frame{Header: map[string]any{"op": "save"}})
	if err != nil {
		return nil, err
	}
	format, _ := rep.Header["format"].(string)
	if format == "" {
		return nil, c.bad("save", "no \"format\" in the reply")
	}
	state := rep.Array("state")
	if state == nil || state.Dtype != "u1" {
		return nil, c.bad("save", "no u1 array \"state\"")
	}
	K, d := c.info.K, c.info.D
	W, err := c.array(rep, "save", "W", "f8", d, K)
	if err != nil {
		return nil, err
	}
	b, err := c.array(rep, "save", "b", "f8", K)
	if err != nil {
		return nil, err
	}
	return &train.Saved{Format: format, State: state.Data, W: W.Floats(), B: b.Floats()}, nil
}

// Load restores the worker from a checkpoint taken by this kind of worker.
func (c *Client) Load(s *train.Saved) error {
	_, err := c.call(&Frame{Header: map[string]any{"op": "load", "format": s.Format}, Arrays: []Array{Bytes("state", s.State)}})
	if err != nil {
		return err
	}
	c.sentP = nil // the worker has the checkpoint's P; the next train sends the engine's
	c.sentT, c.sentA = nil, nil
	return nil
}

// bad ends the session on a reply that breaks the protocol.
func (c *Client) bad(op, format string, args ...any) error {
	c.broken = fmt.Errorf("worker sent a bad reply to %q: %s", op, fmt.Sprintf(format, args...))
	c.kill()
	return c.broken
}

// array returns the reply's array name, checking its dtype and shape.
func (c *Client) array(rep *Frame, op, name, dtype string, shape ...int) (*Array, error) {
	a := rep.Array(name)
	if a == nil {
		return nil, c.bad(op, "no array %q", name)
	}
	if a.Dtype != dtype || !equalShape(a.Shape, shape) {
		return nil, c.bad(op, "array %q is %s %v, want %s %v", name, a.Dtype, a.Shape, dtype, shape)
	}
	if dtype == "f8" {
		for i, v := range a.Floats() {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, c.bad(op, "array %q holds %v at flat index %d", name, v, i)
			}
		}
	}
	return a, nil
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func intField(h map[string]any, key string) (int, bool) {
	f, ok := h[key].(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int(f), true
}

// parseHello checks the worker's description of itself.
func parseHello(rep *Frame) (train.Info, error) {
	h := rep.Header
	bad := func(format string, args ...any) (train.Info, error) {
		return train.Info{}, fmt.Errorf("worker sent a bad reply to \"hello\": %s", fmt.Sprintf(format, args...))
	}
	if p, ok := intField(h, "protocol"); !ok || p != Protocol {
		return bad("protocol %v, this selmix speaks %d", h["protocol"], Protocol)
	}
	K, ok1 := intField(h, "k")
	d, ok2 := intField(h, "d")
	if !ok1 || !ok2 || K < 2 || d < 1 || K > 1<<20 || d > 1<<24 {
		return bad("k = %v and d = %v; want integers k ≥ 2, d ≥ 1", h["k"], h["d"])
	}
	info := train.Info{K: K, D: d}
	counts, _ := h["train_counts"].([]any)
	if len(counts) != K {
		return bad("%d train_counts for k = %d", len(counts), K)
	}
	for i, v := range counts {
		f, ok := v.(float64)
		if !ok || f < 0 || f != math.Trunc(f) {
			return bad("train_counts[%d] = %v, want a count", i, v)
		}
		info.TrainCounts = append(info.TrainCounts, int(f))
	}
	if names, ok := h["class_names"].([]any); ok && len(names) > 0 {
		if len(names) != K {
			return bad("%d class_names for k = %d", len(names), K)
		}
		for i, v := range names {
			s, _ := v.(string)
			if safetext.Control(s) >= 0 {
				return bad("class_names[%d] = %q holds a control character", i, s)
			}
			info.ClassNames = append(info.ClassNames, s)
		}
	}
	sizes, _ := h["sizes"].(map[string]any)
	for _, f := range []struct {
		key string
		dst *int
	}{{"labeled", &info.Labeled}, {"unlabeled", &info.Unlabeled}, {"val", &info.Val}, {"test", &info.Test}} {
		n, ok := intField(sizes, f.key)
		if !ok || n < 0 {
			return bad("sizes.%s = %v, want a count", f.key, sizes[f.key])
		}
		*f.dst = n
	}
	if info.Labeled == 0 || info.Val == 0 || info.Test == 0 {
		return bad("sizes %v: labeled, val and test must not be empty", sizes)
	}
	dev, _ := h["device"].(string)
	name, _ := h["worker"].(string)
	info.Device = safetext.Line(strings.TrimSpace(dev + " (" + name + ")"))
	return info, nil
}

func parseSystem(v any) *train.System {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	s := &train.System{}
	dev, _ := m["device"].(string)
	s.Device = safetext.Line(dev)
	num := func(k string) float64 {
		f, _ := m[k].(float64)
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return 0
		}
		return f
	}
	s.MemUsed, s.MemReserved, s.MemPeak, s.RSS = int64(num("mem_used")), int64(num("mem_reserved")), int64(num("mem_peak")), int64(num("rss"))
	s.Util, s.CPU, s.ImgS = num("util"), num("cpu"), num("img_s")
	return s
}

// lines collects a worker's stderr: the last few for error messages, and
// every one for the sink once there is one. It reads to the end whatever
// the worker writes — a line too long is cut, never fatal — so the worker
// never blocks on, or breaks, its stderr.
type lines struct {
	mu      sync.Mutex
	last    []string
	pending []string
	pendB   int // bytes in pending
	dropped int // lines dropped from pending
	sink    func(string)
	done    chan struct{}
}

const (
	keepLast = 20
	// MaxLine is the longest stderr line kept; the rest of a longer one is
	// cut and counted.
	MaxLine = 64 << 10
	// keepPending bounds the bytes of the lines kept until there is a
	// sink (a worker may write a lot while it pre-trains); the oldest go.
	keepPending = 1 << 20
)

func newLines() *lines { return &lines{done: make(chan struct{})} }

func (l *lines) read(r io.ReadCloser) {
	defer close(l.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<16)
	var line []byte
	cut := 0
	for {
		frag, err := br.ReadSlice('\n')
		eol := err == nil
		if eol {
			frag = frag[:len(frag)-1]
		}
		take := min(len(frag), MaxLine-len(line))
		line = append(line, frag[:take]...)
		cut += len(frag) - take
		if err == bufio.ErrBufferFull {
			continue
		}
		if eol || len(line) > 0 || cut > 0 {
			l.add(cutLine(line, cut))
		}
		if err != nil {
			return
		}
		line, cut = line[:0], 0
	}
}

// cutLine is a stderr line as kept: without its carriage return, and, if
// it was cut, ending on a whole character and saying how much was cut.
func cutLine(b []byte, cut int) string {
	if cut == 0 {
		return strings.TrimRight(string(b), "\r")
	}
	for n := 0; n < utf8.UTFMax && len(b) > 0; n++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
		cut++
	}
	return fmt.Sprintf("%s … [cut %d bytes]", b, cut)
}

func (l *lines) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = append(l.last, line)
	if len(l.last) > keepLast {
		l.last = l.last[len(l.last)-keepLast:]
	}
	// The sink runs under the lock so lines reach it in order; it must be
	// quick (a file append, a stream publish).
	if l.sink != nil {
		l.sink(line)
		return
	}
	l.pending = append(l.pending, line)
	l.pendB += len(line) + 1
	for l.pendB > keepPending {
		l.pendB -= len(l.pending[0]) + 1
		l.pending[0] = ""
		l.pending = l.pending[1:]
		l.dropped++
	}
}

func (l *lines) setSink(f func(string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped > 0 {
		f(fmt.Sprintf("[selmix: %d earlier lines of the worker's stderr were dropped: only the last %d KiB before this point are kept]", l.dropped, keepPending>>10))
		l.dropped = 0
	}
	for _, line := range l.pending {
		f(line)
	}
	l.pending, l.pendB = nil, 0
	l.sink = f
}

// tail is the last n non-empty lines joined in one line.
func (l *lines) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for i := len(l.last) - 1; i >= 0 && len(out) < n; i-- {
		if s := strings.TrimSpace(l.last[i]); s != "" {
			out = append([]string{s}, out...)
		}
	}
	return strings.Join(out, " | ")
}

func (l *lines) wait() {
	select {
	case <-l.done:
	case <-time.After(2 * time.Second):
	}
}
