package sweepexec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"selmix/runs/sweep"
)

// LocalOptions says how the local executor runs members.
type LocalOptions struct {
	Binary   string         // the selmix executable each member runs
	Parallel int            // members at once; 0: CPUs / Threads, or Placer's slots
	Threads  int            // BLAS and Go threads per member; 0: 1
	Members  []int          // which members, in order
	Out      io.Writer      // one line per member end
	Signals  chan os.Signal // a signal here is passed to every running member, and no more start
	Placer   Placer         // the devices each member gets; nil: they share the box
}

// Placer places members on devices (the application's GPU placement,
// gpu.Placement): a member takes a free slot's devices as it starts and
// gives them back when it ends, so no two members hold one device at
// once.
type Placer interface {
	// Slots is how many members can hold devices at once; 0: no limit
	// (Take then returns nil).
	Slots() int
	// Take returns a free slot's devices; it is called with fewer than
	// Slots members holding theirs.
	Take() []string
	// Put gives back what Take returned.
	Put(devices []string)
	// Env is the environment of a member holding devices (say
	// CUDA_VISIBLE_DEVICES); its worker inherits it.
	Env(devices []string) []string
	// Describe says in one line how members are placed.
	Describe() string
}

// Defaults fills Parallel and Threads: one thread per member and as many
// members as CPUs, or the CPUs shared among Parallel members. With a
// Placer of slots, Parallel is at most (and by default) its slots: a
// member starts only when its devices are free.
func (o *LocalOptions) Defaults() {
	cpus := runtime.NumCPU()
	if o.Placer != nil {
		if n := o.Placer.Slots(); n > 0 && (o.Parallel <= 0 || o.Parallel > n) {
			o.Parallel = n
		}
	}
	switch {
	case o.Threads <= 0 && o.Parallel > 0:
		o.Threads = max(1, cpus/o.Parallel)
	case o.Threads <= 0:
		o.Threads = 1
	}
	if o.Parallel <= 0 {
		o.Parallel = max(1, cpus/o.Threads)
	}
}

// LocalResult is how the members ended.
type LocalResult struct {
	Finished, Stopped, Failed []int
	NotStarted                []int     // left out after a signal
	Signal                    os.Signal // the signal that interrupted the executor, or nil
}

// RunLocal runs members, Parallel at a time, each as its own selmix
// process (`selmix sweep member DIR I`) in its own process group with
// OPENBLAS_NUM_THREADS and GOMAXPROCS set to Threads, writing to its log
// in the sweep folder: a kill of one (even -9) leaves the others alone,
// and a kill of the executor leaves the members running. It holds the
// sweep's lock until every member it started has ended.
func RunLocal(s *sweep.Sweep, o LocalOptions) (*LocalResult, error) {
	o.Defaults()
	lock, err := lockForMembers(s)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	x := &localExec{s: s, o: o, res: &LocalResult{}, running: map[int]*exec.Cmd{}, slots: make(chan struct{}, o.Parallel)}
	sig, launched := x.launch()
	if sig != nil {
		x.res.NotStarted = append(x.res.NotStarted, o.Members[launched:]...)
		x.forward(sig)
	}
	x.res.Signal = x.wait(sig)
	return x.res, nil
}

// localExec is one RunLocal: the members running (by index) and a slot
// per member that may run at once.
type localExec struct {
	s   *sweep.Sweep
	o   LocalOptions
	res *LocalResult

	mu      sync.Mutex // guards running and res
	running map[int]*exec.Cmd
	wg      sync.WaitGroup
	slots   chan struct{}
}

// launch starts the members in order as slots free up, until all are
// started or a signal comes: it returns that signal (nil if none) and
// how many members it started (or tried to).
func (x *localExec) launch() (sig os.Signal, launched int) {
	for _, i := range x.o.Members {
		select {
		case x.slots <- struct{}{}:
		case sig = <-x.o.Signals:
			return sig, launched
		}
		// A signal that came while a slot freed up still stops launching.
		select {
		case sig = <-x.o.Signals:
			<-x.slots
			return sig, launched
		default:
		}
		launched++
		t0 := time.Now()
		devs := x.take()
		x.mu.Lock()
		cmd, err := x.start(i, devs)
		if err == nil {
			x.running[i] = cmd
		}
		x.mu.Unlock()
		if err != nil {
			x.end(i, 0, err, 0)
			x.put(devs)
			<-x.slots
			continue
		}
		x.wg.Add(1)
		go x.reap(i, cmd, devs, t0)
	}
	return nil, launched
}

// take is a free slot's devices from the Placer (nil without one).
func (x *localExec) take() []string {
	if x.o.Placer == nil {
		return nil
	}
	return x.o.Placer.Take()
}

// put gives devices back to the Placer.
func (x *localExec) put(devs []string) {
	if x.o.Placer != nil {
		x.o.Placer.Put(devs)
	}
}

// reap waits for member i's process and frees its devices and its slot.
func (x *localExec) reap(i int, cmd *exec.Cmd, devs []string, t0 time.Time) {
	defer x.wg.Done()
	defer func() { <-x.slots }()
	// The process has ended: its devices are free (whatever it left
	// behind is in its process group, which ended with it or is its own).
	defer x.put(devs)
	err := cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode() // -1 when a signal killed it
	} else if err != nil {
		code = -1
	}
	x.end(i, code, nil, time.Since(t0).Seconds())
}

// wait returns once every started member has ended, passing on each
// signal that comes meanwhile; it returns the last signal (sig if none
// came).
func (x *localExec) wait(sig os.Signal) os.Signal {
	done := make(chan struct{})
	go func() { x.wg.Wait(); close(done) }()
	for {
		select {
		case <-done:
			return sig
		case s2 := <-x.o.Signals:
			// Passed on again: a second Ctrl-C is for the members too.
			sig = s2
			x.forward(s2)
		}
	}
}

// forward sends sig to every running member's process group.
func (x *localExec) forward(sig os.Signal) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, cmd := range x.running {
		syscall.Kill(-cmd.Process.Pid, sig.(syscall.Signal))
	}
}

// end records how member i ended (exit code, or err if it could not
// start) and writes its line.
func (x *localExec) end(i int, code int, err error, secs float64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, res := x.s, x.res
	delete(x.running, i)
	line := fmt.Sprintf("member %d  %s  ", i, s.Describe(i))
	switch {
	case err != nil:
		res.Failed = append(res.Failed, i)
		line += fmt.Sprintf("could not start: %v", err)
	case code == 0:
		res.Finished = append(res.Finished, i)
		line += fmt.Sprintf("finished (%.1fs)", secs)
		if r, err := s.Run(i); err == nil && r != nil {
			line += ", run " + r.Meta.ID
		}
	case code == 130 || code == 143:
		res.Stopped = append(res.Stopped, i)
		line += fmt.Sprintf("stopped (exit %d, %.1fs): resumable", code, secs)
	case code < 0:
		res.Failed = append(res.Failed, i)
		line += fmt.Sprintf("killed (%.1fs): see %s", secs, s.LogPath(i))
	default:
		res.Failed = append(res.Failed, i)
		line += fmt.Sprintf("failed (exit %d, %.1fs): see %s", code, secs, s.LogPath(i))
	}
	fmt.Fprintln(x.o.Out, line)
}

// start starts member i's process on devs, appending to its log, and
// records devs as the member's (SetDevices); args follow the member's
// index on its command line.
func (x *localExec) start(i int, devs []string, args ...string) (*exec.Cmd, error) {
	s, o := x.s, x.o
	if err := s.SetDevices(i, devs); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(s.LogPath(i), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	var env []string
	if o.Placer != nil {
		env = o.Placer.Env(devs)
	}
	argv := append([]string{"sweep", "member", s.Dir, strconv.Itoa(i)}, args...)
	fmt.Fprintf(logf, "=== %s: %sselmix %s\n", time.Now().Format(time.RFC3339), strings.Join(append(slices.Clone(env), ""), " "), strings.Join(argv, " "))
	cmd := exec.Command(o.Binary, argv...)
	cmd.Dir = s.Workdir
	t := strconv.Itoa(o.Threads)
	cmd.Env = append(append(os.Environ(), "OPENBLAS_NUM_THREADS="+t, "GOMAXPROCS="+t), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C at the terminal reaches the
	// executor only, which passes it on (and a kill of one member
	// reaches that member only).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, cmd.Start()
}

// lockForMembers takes s's lock, which the caller holds until every member
// it starts has ended, and makes the folder of the members' logs.
func lockForMembers(s *sweep.Sweep) (*os.File, error) {
	lock, err := s.Lock()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(s.LogPath(0)), 0o755); err != nil {
		lock.Close()
		return nil, err
	}
	return lock, nil
}
