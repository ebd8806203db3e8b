package worker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

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
}

// Client is a train.Trainer whose steps a worker process takes. It is used
// from one goroutine (the engine's), except SetLog.
type Client struct {
	cmd     *exec.Cmd
	in, out *os.File
	r       *bufio.Reader
	w       *bufio.Writer
	timeout time.Duration
	info    train.Info
	log     *lines
	exited  chan struct{} // closed when the process has been reaped
	exitErr error         // what Wait said; read after exited is closed

	sentP  []float64     // the P the worker has
	sentT  []float64     // the soft targets the worker has
	sentA  []float64     // and their adjustment (nil: zeros)
	busy   time.Duration // time the worker reported spending on requests
	broken error         // set once the session is over; every call returns it
	closed sync.Once
}

// Start launches the worker and says hello. Its stderr lines are kept for
// error messages and passed to the function SetLog installs.
func Start(o Options) (*Client, error) {
	if len(o.Command) == 0 || o.Command[0] == "" {
		return nil, errors.New("worker: no command given")
	}
	if o.Timeout <= 0 {
		o.Timeout = 300 * time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Minute
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
		return nil, fmt.Errorf("worker: starting %s: %w", o.Command[0], err)
	}
	inR.Close()
	outW.Close()
	errW.Close()
	c := &Client{
		cmd: cmd, in: inW, out: outR, r: bufio.NewReaderSize(outR, 1<<16), w: bufio.NewWriterSize(inW, 1<<16),
		timeout: o.Timeout, log: newLines(), exited: make(chan struct{}),
	}
	go c.log.read(errR)
	go func() {
		c.exitErr = cmd.Wait()
		close(c.exited)
	}()
	rep, err := c.callWithin(&Frame{Header: map[string]any{"op": "hello", "protocol": Protocol, "seed": o.Seed}}, o.StartTimeout)
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

// SetLog passes every stderr line of the worker, those already written
// included, to f (in order, from another goroutine).
func (c *Client) SetLog(f func(line string)) { c.log.setSink(f) }

// Busy is the time the worker reported spending on its requests.
func (c *Client) Busy() time.Duration { return c.busy }

func (c *Client) Info() train.Info { return c.info }

// call sends a request and returns the worker's reply.
func (c *Client) call(f *Frame) (*Frame, error) { return c.callWithin(f, c.timeout) }

func (c *Client) callWithin(f *Frame, timeout time.Duration) (*Frame, error) {
	if c.broken != nil {
		return nil, c.broken
	}
	op, _ := f.Header["op"].(string)
	deadline := time.Now().Add(timeout)
	c.in.SetWriteDeadline(deadline)
	err := WriteFrame(c.w, f)
	if err == nil {
		err = c.w.Flush()
	}
	var rep *Frame
	if err == nil {
		c.out.SetReadDeadline(deadline)
		rep, err = ReadFrame(c.r)
	}
	if err != nil {
		c.broken = c.failure(op, timeout, err)
		c.kill()
		return nil, c.broken
	}
	if s, ok := rep.Header["seconds"].(float64); ok && s > 0 && !math.IsInf(s, 0) {
		c.busy += time.Duration(s * float64(time.Second))
	}
	if ok, _ := rep.Header["ok"].(bool); !ok {
		msg, _ := rep.Header["error"].(string)
		if msg == "" {
			msg = "the reply says neither ok nor why"
		}
		return nil, fmt.Errorf("worker: %s: %s", op, oneLine(msg))
	}
	return rep, nil
}

// failure describes why a request got no reply, with the worker's last
// words.
func (c *Client) failure(op string, timeout time.Duration, err error) error {
	var why string
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		why = fmt.Sprintf("did not answer %q within %v (worker.timeout); stopped it", op, timeout)
	case errors.Is(err, ErrFrame):
		why = fmt.Sprintf("sent a malformed reply to %q: %v", op, err)
	default:
		// The pipe broke: the process is gone. Say how it ended.
		select {
		case <-c.exited:
		case <-time.After(2 * time.Second):
		}
		why = fmt.Sprintf("ended during %q", op)
		if c.isExited() {
			why = fmt.Sprintf("exited during %q (%s)", op, exitString(c.exitErr))
		}
	}
	if tail := c.log.tail(3); tail != "" {
		why += "; its last words: " + tail
	}
	return errors.New("worker " + why)
}

func (c *Client) isExited() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

func exitString(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + ws.Signal().String()
		}
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
			c.callWithin(&Frame{Header: map[string]any{"op": "bye"}}, 5*time.Second)
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
	s.MemUsed, s.MemReserved, s.RSS = int64(num("mem_used")), int64(num("mem_reserved")), int64(num("rss"))
	s.Util, s.CPU = num("util"), num("cpu")
	return s
}

// lines collects a worker's stderr: the last few for error messages, and
// every one for the sink once there is one.
type lines struct {
	mu      sync.Mutex
	last    []string
	pending []string
	sink    func(string)
	done    chan struct{}
}

const (
	keepLast    = 20
	keepPending = 10000
)

func newLines() *lines { return &lines{done: make(chan struct{})} }

func (l *lines) read(r io.ReadCloser) {
	defer close(l.done)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		l.mu.Lock()
		l.last = append(l.last, line)
		if len(l.last) > keepLast {
			l.last = l.last[len(l.last)-keepLast:]
		}
		// The sink runs under the lock so lines reach it in order; it
		// must be quick (a file append, a stream publish).
		if l.sink != nil {
			l.sink(line)
		} else if len(l.pending) < keepPending {
			l.pending = append(l.pending, line)
		}
		l.mu.Unlock()
	}
}

func (l *lines) setSink(f func(string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.pending {
		f(line)
	}
	l.pending = nil
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
