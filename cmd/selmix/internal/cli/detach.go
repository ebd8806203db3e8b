package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

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

// spawnDetached starts `selmix run --headless --serve` with the given
// configuration in the background and returns the new run's id and the
// child's pid once the run exists on disk.
func spawnDetached(root, config string, sets []string) (id string, pid int, err error) {
	args := []string{"run", "--headless"}
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
	return spawnChild(root, args)
}

// spawnForkDetached forks run id at at (a step or best, as --at takes
// it), with the configuration overrides sets, into a new background run.
func spawnForkDetached(root, id, at string, sets []string) (string, int, error) {
	args := []string{"fork", id, "--at", at, "-q"}
	for _, kv := range sets {
		args = append(args, "--set", kv)
	}
	return spawnChild(root, args)
}

// runIDLen is the length of a run id (runs.Create makes them).
const runIDLen = len("20060102-1504-0000")

// checkSocketPath refuses a runs root in which a run's control socket
// path would be too long for a Unix socket: a detached run must serve one.
func checkSocketPath(root string) error {
	path := filepath.Join(runs.Root(root), strings.Repeat("x", runIDLen), live.SocketName)
	if len(path) >= live.MaxSocketPath {
		return badInput("--runs %s: too long for a detached run's control socket (its runs' sockets would be %d bytes, limit %d); use a shorter runs folder", runs.Root(root), len(path), live.MaxSocketPath-1)
	}
	return nil
}

// spawnChild starts `selmix ARGS --serve --handshake` in the background.
func spawnChild(root string, args []string) (id string, pid int, err error) {
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
	line, rerr := bufio.NewReader(pr).ReadString('\n')
	line = strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(line, "run "):
		return strings.TrimPrefix(line, "run "), pid, nil
	case strings.HasPrefix(line, "error "):
		return "", pid, usageError{errors.New(strings.TrimPrefix(line, "error "))}
	}
	return "", pid, fmt.Errorf("the background run exited before it started (%v)", rerr)
}

// childHandshake is the child's end: it reports the run id (or the error
// that kept the run from starting) to the parent, then points stdout and
// stderr at the run's output.log so later output, panics included, lands
// beside the run.
type childHandshake struct {
	pipe *os.File
}

func newChildHandshake() *childHandshake {
	signal.Ignore(syscall.SIGHUP)
	return &childHandshake{pipe: os.NewFile(handshakeFD, "handshake")}
}

func (h *childHandshake) created(root string) func(id string) {
	return func(id string) {
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

func (h *childHandshake) fail(err error) {
	if h != nil && h.pipe != nil && err != nil {
		fmt.Fprintf(h.pipe, "error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		h.pipe.Close()
	}
}

// liveCmd gives cmd, which takes at most one RUN, the --runs flag and
// runs do with the live run liveRun finds.
func liveCmd(cmd *cobra.Command, do func(cmd *cobra.Command, r *runs.Run) error) *cobra.Command {
	return rootCmd(cmd, func(root string, args []string) (*runs.Run, error) {
		id := ""
		if len(args) == 1 {
			id = args[0]
		}
		return liveRun(root, id)
	}, do)
}

// liveRun finds the run to attach to: the given one, else the most
// recently started live run.
func liveRun(root, id string) (*runs.Run, error) {
	if id != "" {
		r, err := openRun(root, id)
		if err != nil {
			return nil, err
		}
		if !r.Live {
			return nil, badInput("run %s is not live (status %s)%s", r.Meta.ID, r.EffectiveStatus(), resumeHint(r))
		}
		return r, nil
	}
	all, err := runs.List(root)
	if err != nil {
		return nil, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Live {
			return &all[i], nil
		}
	}
	return nil, badInput("no live run in %s (selmix ps lists runs; selmix run --detach starts one)", root)
}

func resumeHint(r *runs.Run) string {
	if r.EffectiveStatus() == runs.StatusCrashed || r.EffectiveStatus() == runs.StatusStopped {
		return "; `selmix resume " + r.Meta.ID + "` continues it"
	}
	return ""
}

// dialLive connects to a live run, waiting briefly for its socket: a run
// that was just created serves it a moment later. matrices asks for G and
// P with every refresh (the workbench draws them).
func dialLive(r *runs.Run, matrices bool) (*live.Client, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		cl, err := live.Dial(r.Dir, live.Hello{Matrices: matrices})
		if err == nil || !errors.Is(err, live.ErrNotLive) || time.Now().After(deadline) {
			return cl, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func newPsCmd() *cobra.Command {
	return listCmd("ps", "List live runs (pid, run, step, state) and crashed ones (resume them with selmix resume)",
		func(cmd *cobra.Command, root string) error { return listLive(cmd.OutOrStdout(), root) })
}

func listLive(w io.Writer, root string) error {
	rs, err := runs.List(root)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tRUN\tNAME\tSTEP\tSTATE")
	n := 0
	for _, r := range rs {
		st := r.EffectiveStatus()
		if !r.Live && st != runs.StatusCrashed {
			continue
		}
		pid := "-"
		if r.Live {
			pid = fmt.Sprint(r.Pid)
		}
		printText(tw, "%s\t%s\t%s\t%d\t%s\n", pid, r.Meta.ID, r.Meta.Name, r.Meta.Steps, st)
		n++
	}
	if n == 0 {
		fmt.Fprintf(w, "no live or crashed runs in %s\n", root)
		return nil
	}
	return tw.Flush()
}

func newStopCmd() *cobra.Command {
	return liveCmd(&cobra.Command{
		Use:   "stop RUN",
		Short: "Stop a live run cleanly (final checkpoint, summary and plots are written)",
		Args:  cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, r *runs.Run) error {
		return stopLive(cmd.Context(), cmd.OutOrStdout(), r)
	})
}
