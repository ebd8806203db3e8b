package app

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"selmix/runs"
	"selmix/runs/live"
)

// Detached runs. `selmix run --detach` (and the workbench) start the run in
// a child process of its own session that ignores SIGHUP, has no terminal
// and logs to <run>/output.log; it serves the run's control socket. The
// child tells its parent the run id over an inherited pipe (fd 3), so the
// parent never reads the child's stdout and the child never writes to a
// closed pipe.

const handshakeFD = 3

// SpawnDetached starts `selmix run --headless --serve` with the given
// configuration (and --gpus gpus, unless "") in the background and
// returns the new run's id and the child's pid once the run exists on
// disk. root is the runs root as given ("" for the default).
func SpawnDetached(root, config string, sets []string, gpus string) (id string, pid int, err error) {
	return SpawnDetachedLines(root, config, sets, gpus, nil)
}

// SpawnDetachedLines is SpawnDetached that hands line, as they come, the
// lines the child prints before the run exists (its worker's start-up:
// loading data, pre-training), which would otherwise be lost to its
// detached output until worker.log keeps them. line may be nil.
func SpawnDetachedLines(root, config string, sets []string, gpus string, line func(string)) (id string, pid int, err error) {
	args := []string{"run", "--headless"}
	if gpus != "" {
		args = append(args, "--gpus", gpus)
	}
	if config != "" {
		abs, err := filepath.Abs(config)
		if err != nil {
			return "", 0, err
		}
		args = append(args, "--config", abs)
	}
	for _, kv := range sets {
		args = append(args, "--set", kv)
	}
	return spawnChild(root, args, line)
}

// SpawnForkDetached forks run id at at (a step or best, as --at takes
// it), with the configuration overrides sets, into a new background run.
func SpawnForkDetached(root, id, at string, sets []string) (string, int, error) {
	args := []string{"fork", id, "--at", at, "-q"}
	for _, kv := range sets {
		args = append(args, "--set", kv)
	}
	return spawnChild(root, args, nil)
}

// runIDLen is the length of a run id (runs.Create makes them).
const runIDLen = len("20060102-1504-0000")

// checkSocketPath refuses a runs root in which a run's control socket
// path would be too long for a Unix socket: a detached run must serve one.
func checkSocketPath(root string) error {
	path := filepath.Join(runs.Root(root), strings.Repeat("x", runIDLen), live.SocketName)
	if len(path) >= live.MaxSocketPath {
		return BadInput("--runs %s: too long for a detached run's control socket (its runs' sockets would be %d bytes, limit %d); use a shorter runs folder", runs.Root(root), len(path), live.MaxSocketPath-1)
	}
	return nil
}

// spawnChild starts `selmix ARGS --serve --handshake` in the background.
func spawnChild(root string, args []string, onLine func(string)) (id string, pid int, err error) {
	if err := checkSocketPath(root); err != nil {
		return "", 0, err
	}
	self, err := os.Executable()
	if err != nil {
		return "", 0, err
	}
	args = append(args, "--serve", "--handshake")
	if root != "" {
		args = append(args, "--runs", root)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return "", 0, err
	}
	defer pr.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		pw.Close()
		return "", 0, err
	}
	defer devnull.Close()
	cmd := exec.Command(self, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.ExtraFiles = []*os.File{pw} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if wd, err := os.Getwd(); err == nil {
		cmd.Dir = wd
	}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return "", 0, err
	}
	pw.Close()
	pid = cmd.Process.Pid
	// The child outlives us: do not wait for it, but reap it if it dies
	// while we still run.
	go cmd.Wait()
	br := bufio.NewReader(pr)
	line, rerr := br.ReadString('\n')
	for ; strings.HasPrefix(line, "line "); line, rerr = br.ReadString('\n') {
		if onLine != nil {
			onLine(strings.TrimSuffix(strings.TrimPrefix(line, "line "), "\n"))
		}
	}
	line = strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(line, "run "):
		return strings.TrimPrefix(line, "run "), pid, nil
	case strings.HasPrefix(line, "error "):
		return "", pid, UsageError{errors.New(strings.TrimPrefix(line, "error "))}
	}
	return "", pid, fmt.Errorf("the background run exited before it started (%v)", rerr)
}

// Handshake is the detached child's end: it reports the run id (or the
// error that kept the run from starting) to the parent, then points
// stdout and stderr at the run's output.log so later output, panics
// included, lands beside the run. A nil *Handshake does nothing.
type Handshake struct {
	mu   sync.Mutex
	pipe *os.File
}

// Relay is w, whose lines also go to the parent (as "line TEXT") until
// the run exists: the parent shows the worker's start-up as it comes.
func (h *Handshake) Relay(w io.Writer) io.Writer {
	if h == nil {
		return w
	}
	return &relay{h: h, w: w}
}

type relay struct {
	h   *Handshake
	w   io.Writer
	buf []byte
}

func (r *relay) Write(p []byte) (int, error) {
	r.h.mu.Lock()
	if r.h.pipe != nil {
		r.buf = append(r.buf, p...)
		for {
			i := bytes.IndexByte(r.buf, '\n')
			if i < 0 {
				break
			}
			fmt.Fprintf(r.h.pipe, "line %s\n", bytes.ReplaceAll(r.buf[:i], []byte("\r"), nil))
			r.buf = r.buf[i+1:]
		}
	}
	r.h.mu.Unlock()
	return r.w.Write(p)
}

// NewHandshake is the child's end of the pipe its parent handed it; the
// child ignores SIGHUP from here on.
func NewHandshake() *Handshake {
	signal.Ignore(syscall.SIGHUP)
	return &Handshake{pipe: os.NewFile(handshakeFD, "handshake")}
}

// Created is the Session.Created of the child's run in root: it reports
// the id and redirects the output.
func (h *Handshake) Created(root string) func(id string) {
	return func(id string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		dir := filepath.Join(runs.Root(root), id)
		if f, err := os.OpenFile(filepath.Join(dir, "output.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			syscall.Dup3(int(f.Fd()), 1, 0)
			syscall.Dup3(int(f.Fd()), 2, 0)
			f.Close()
		}
		fmt.Fprintf(h.pipe, "run %s\n", id)
		h.pipe.Close()
		h.pipe = nil
	}
}

// Fail reports err, which kept the run from starting, to the parent; it
// does nothing once the run was reported, or for a nil err.
func (h *Handshake) Fail(err error) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pipe != nil && err != nil {
		fmt.Fprintf(h.pipe, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		h.pipe.Close()
		h.pipe = nil
	}
}
