package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"selmix/core/gpu"
	"selmix/core/loop"
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
	// Env is added to this process's environment for the worker (say
	// CUDA_VISIBLE_DEVICES, from --gpus); nil: the worker inherits ours.
	Env []string
	// GPUStats gives the GPUs' utilisation and total memory where the
	// worker reports a GPU without them; nil: nvidia-smi's (gpu.Query),
	// asked at most every StatsEvery.
	GPUStats func(ctx context.Context) ([]gpu.Stat, error)
	// Echo, if set and Log is not, is shown every stderr line as it comes
	// until SetLog is first called; the lines are kept all the same (the
	// last MiB of them) and handed to SetLog's function, so a run's
	// worker.log holds what its worker wrote before the run existed.
	Echo func(line string)
}

// StatsEvery is how often a Client asks nvidia-smi at most.
const StatsEvery = 5 * time.Second

// ErrStart marks a worker that could not be started at all: no such
// command, no such directory, not executable. The configuration is at
// fault, not the run.
var ErrStart = errors.New("the worker cannot be started")

// ErrBadInput marks a worker that refused its own input in hello
// (ReasonBadInput: a missing data folder, a corrupt file, weights of another
// architecture), or exited with ExitUsage before answering it (a bad
// option or environment variable). Like ErrStart, the configuration is at
// fault, not the run: nothing has been recorded yet.
var ErrBadInput = errors.New("the worker refused its input")

// ErrBadState marks a checkpoint's state the worker refused to load (its
// "load" reply not ok): the checkpoint is at fault, and a resume takes the
// one before it, as for a damaged file.
var ErrBadState = errors.New("the worker refused the checkpoint's state")

// ErrOutOfMemory marks a request that failed for lack of memory: the
// worker's reply said so (ReasonOutOfMemory), or the worker was killed
// by SIGKILL, as the kernel's out-of-memory killer does. It comes wrapped
// with train.ErrHalt: the run is stopped, and resumes (or forks with a
// smaller batch) from its last checkpoint.
var ErrOutOfMemory = errors.New("the worker ran out of memory")

// ErrSignalled marks a worker that SIGTERM, SIGINT or SIGHUP ended while
// selmix itself was not asked to stop: the run is stopped, not failed,
// and resumes from its last checkpoint.
var ErrSignalled = errors.New("the worker was stopped by a signal")

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
	// features: the worker's hello said it serves the features request.
	features bool
	log      *lines
	exited   chan struct{} // closed when the process has been reaped
	exitErr  error         // what Wait said; read after exited is closed

	mu    sync.Mutex
	cause error // why the session was ended from outside a request: errExited or ctx's error

	stats    func(ctx context.Context) ([]gpu.Stat, error)
	statsAt  time.Time  // when stats last answered
	lastStat []gpu.Stat // and what
	noStats  bool       // it cannot answer (no nvidia-smi)

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
	if len(o.Env) > 0 {
		cmd.Env = append(os.Environ(), o.Env...)
	}
	// Its own process group, so a timeout or a stop ends everything it
	// started; and it dies with us if we are killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	inW, outR, errR, err := startWithPipes(cmd, o.Command[0])
	if err != nil {
		return nil, err
	}
	c := &Client{
		cmd: cmd, in: inW, out: outR, r: bufio.NewReaderSize(outR, 1<<16), w: bufio.NewWriterSize(inW, 1<<16),
		timeout: o.Timeout, grace: o.StopGrace, ctx: ctx, log: newLines(), exited: make(chan struct{}),
		stats: o.GPUStats,
	}
	if c.stats == nil {
		c.stats = gpu.Query
	}
	if o.Log != nil {
		c.log.setSink(o.Log)
	}
	c.log.echo = o.Echo
	go c.log.read(errR)
	go func() {
		// Wait returns when the process exits, not when its pipes close:
		// we hand it our files, so it copies nothing.
		c.exitErr = cmd.Wait()
		close(c.exited)
	}()
	rep, err := c.callWithin(HelloRequest{Protocol: Protocol, Seed: o.Seed}, nil, o.StartTimeout, "worker.start_timeout")
	if err != nil {
		c.Close()
		return nil, err
	}
	c.features = helloFeatures(rep)
	if c.info, err = parseHello(rep); err != nil {
		c.broken = err
		c.Close()
		return nil, err
	}
	return c, nil
}

// startWithPipes starts cmd with its stdin, stdout and stderr on pipes and
// returns our ends of them; name is the command, for the error.
func startWithPipes(cmd *exec.Cmd, name string) (in, out, stderr *os.File, err error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, nil, nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW, errR, errW} {
			f.Close()
		}
		return nil, nil, nil, &markedError{msg: fmt.Sprintf("worker.command: starting %s: %v", name, startReason(err)), errs: []error{ErrStart, err}}
	}
	inR.Close()
	outW.Close()
	errW.Close()
	return inW, outR, errR, nil
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

// exitCode is the exit status of the process Wait reported on; -1 when
// a signal ended it or it did not run.
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
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
			c.callWithin(ByeRequest{}, nil, 5*time.Second, "the wait for bye")
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

// fillGPUs completes what sys says of its GPUs from GPUStats (gpu.Fill):
// never more often than StatsEvery, within statsWait, and never again
// once it failed (no nvidia-smi, or one that hangs: the engine waits on
// it).
func (c *Client) fillGPUs(sys *loop.System) {
	if c.noStats || !gpu.NeedsFill(sys) {
		return
	}
	if c.statsAt.IsZero() || time.Since(c.statsAt) >= StatsEvery {
		ctx, cancel := context.WithTimeout(c.ctx, statsWait)
		st, err := c.stats(ctx)
		cancel()
		if err != nil {
			c.noStats = true
			return
		}
		c.statsAt, c.lastStat = time.Now(), st
	}
	gpu.Fill(sys, c.lastStat)
}

// statsWait bounds one GPUStats call.
const statsWait = 3 * time.Second
