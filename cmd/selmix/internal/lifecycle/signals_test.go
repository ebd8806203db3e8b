package lifecycle

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"selmix/app"
	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/worker/workertest"
	"selmix/runs"
	"selmix/runs/live/livetest"
	"selmix/runs/runstest"
)

// fakeRun is a short run of the fake worker (this test binary) that
// checkpoints often.
var fakeRun = []string{"--set", "finetune.steps=300", "--set", "finetune.refresh=25", "--set", "finetune.checkpoint_every=2",
	"--set", "finetune.batch=16", "--set", "record.plots=false"}

// fakeWorker is the --worker part of a command line that runs this test
// binary as the worker.
func fakeWorker(t *testing.T) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--worker", "--", self}
}

// fakeEnv is the environment of a selmix whose fake worker runs in mode.
func fakeEnv(mode string) []string {
	return append(os.Environ(), workertest.Env+"="+mode)
}

// waitLog waits until the run's worker.log holds line n times.
func waitLog(t *testing.T, dir, line string, n int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "worker.log"))
		if strings.Count(string(b), line+"\n") >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q not written %d times in 3 min:\n%s", dir, line, n, b)
		}
		if r, err := runs.Open(filepath.Dir(dir), filepath.Base(dir)); err == nil && r.Meta.Status == runs.StatusFinished {
			t.Fatalf("%s: the run ended (%s) before %q was written %d times:\n%s", dir, r.EffectiveStatus(), line, n, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exitOf waits for cmd and returns its exit code and how long after since
// it ended; -1 if a signal killed it.
func exitOf(t *testing.T, cmd *exec.Cmd, since time.Time) (int, time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("selmix did not exit within 30 s of the interruption")
	}
	took := time.Since(since)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), took
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, took
}

// SIGINT, SIGTERM and `selmix stop` work while the worker hangs in a
// train request, in a run and in a detached run: selmix stops the worker
// within a moment, exits 130 or 143 (stop: says the run stopped), and
// leaves the run stopped; interrupted again while a resumed worker hangs
// in hello, it exits the same way; resumed, the run ends exactly as an
// uninterrupted one.
func TestSignalWhileWorkerHangs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root := livetest.ShortDir(t) // it holds the control sockets
	base := append(append([]string{"--runs", root}, fakeRun...), fakeWorker(t)...)
	out, code := selmixtest.Code(t, fakeEnv("ok"), append([]string{"run", "--headless", "-q"}, base...)...)
	if code != 0 {
		t.Fatalf("the uninterrupted run: exit %d\n%s", code, out)
	}
	want := runstest.ReadOutcome(t, root, selmixtest.RunIDRe.FindStringSubmatch(out)[1])

	for i, how := range []struct {
		name string
		code int
		sig  syscall.Signal // 0: selmix stop
	}{{"SIGINT", 130, syscall.SIGINT}, {"SIGTERM", 143, syscall.SIGTERM}, {"stop", 143, 0}} {
		t.Run(how.name, func(t *testing.T) {
			t.Parallel()
			// The first train request from step 30, 110 or 190 hangs (how
			// many requests come before depends on the machine's speed).
			env := fakeEnv(fmt.Sprintf("hang-at=%d", 30+80*i))
			var id string
			var cmd *exec.Cmd
			if how.sig == 0 {
				// Detached: selmix stop is how it is stopped.
				out, code := selmixtest.Code(t, env, append([]string{"run", "--detach"}, base...)...)
				if code != 0 || !strings.Contains(out, "started in the background") {
					t.Fatalf("run --detach: exit %d\n%s", code, out)
				}
				id = strings.Fields(strings.TrimPrefix(out, "run "))[0]
			} else {
				var sc *bufio.Scanner
				cmd, sc = selmixtest.Start(t, env, append([]string{"run", "--headless"}, base...)...)
				var o selmixtest.Output
				for sc.Scan() && o.ID == "" {
					o.Add(sc.Text())
				}
				selmixtest.Drain(sc)
				if id = o.ID; id == "" {
					t.Fatalf("no run id:\n%s", o.String())
				}
			}
			dir := filepath.Join(root, id)
			waitLog(t, dir, "fake worker: hanging", 1)
			time.Sleep(100 * time.Millisecond) // into the hang
			sent := time.Now()
			if how.sig == 0 {
				out, code := selmixtest.Code(t, os.Environ(), "stop", "--runs", root, id)
				took := time.Since(sent)
				if code != 0 || !strings.HasPrefix(out, "run "+id+" stopped at step ") {
					t.Errorf("selmix stop: exit %d after %v\n%s", code, took, out)
				}
				t.Logf("selmix stop returned %v after it was run: %s", took.Round(time.Millisecond), strings.TrimSpace(out))
				waitNotLive(t, root, id)
			} else {
				cmd.Process.Signal(how.sig)
				code, took := exitOf(t, cmd, sent)
				t.Logf("%s: exit %d after %v", how.name, code, took.Round(time.Millisecond))
				if code != how.code || took > 10*time.Second {
					t.Errorf("%s while the worker hangs: exit %d after %v, want %d within 2 s", how.name, code, took, how.code)
				}
			}
			checkStatus(t, root, id, runs.StatusStopped)

			// Resumed, the worker hangs in hello: interrupted again.
			if how.sig != 0 {
				cmd, sc := selmixtest.Start(t, fakeEnv("hang-hello"), "resume", "--runs", root, id)
				for sc.Scan() {
					if sc.Text() == "worker: fake worker: hello" {
						break
					}
				}
				selmixtest.Drain(sc)
				time.Sleep(100 * time.Millisecond)
				sent := time.Now()
				cmd.Process.Signal(how.sig)
				code, took := exitOf(t, cmd, sent)
				t.Logf("%s in hello: exit %d after %v", how.name, code, took.Round(time.Millisecond))
				if code != how.code || took > 10*time.Second {
					t.Errorf("%s while the worker hangs in hello: exit %d after %v, want %d within 2 s", how.name, code, took, how.code)
				}
				checkStatus(t, root, id, runs.StatusStopped)
			}

			out, code := selmixtest.Code(t, fakeEnv("ok"), "resume", "-q", "--runs", root, id)
			if code != 0 {
				t.Fatalf("resume: exit %d\n%s", code, out)
			}
			runstest.SameOutcome(t, how.name+" while the worker hung, then resumed", runstest.ReadOutcome(t, root, id), want)
		})
	}
}

func checkStatus(t *testing.T, root, id, want string) {
	t.Helper()
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	if st := r.EffectiveStatus(); st != want {
		t.Errorf("run %s: status %s, want %s", id, st, want)
	}
}

// waitNotLive waits until run id's process has let go of it.
func waitNotLive(t *testing.T, root, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := runs.Open(root, id)
		if err == nil && !r.Live {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is still live 30 s after it was stopped (%v)", id, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SIGINT and SIGTERM work while selmix blocks opening a FIFO given as
// data.train (unless it is refused up front, as a special file).
func TestSignalWhileReadingFIFO(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	for _, how := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "train.npz")
		if err := unix.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd, sc := selmixtest.Start(t, os.Environ(), "run", "--headless", "--runs", filepath.Join(dir, "runs"),
			"--set", "data.source=features", "--set", "model.arch=identity", "--set", "data.train="+fifo,
			"--set", "data.val="+filepath.Join(dir, "val.npz"), "--set", "data.test="+filepath.Join(dir, "test.npz"))
		var out strings.Builder
		done := make(chan struct{})
		go func() {
			for sc.Scan() {
				out.WriteString(sc.Text() + "\n")
			}
			close(done)
		}()
		blocked := waitFIFOOpen(cmd.Process.Pid)
		sent := time.Now()
		cmd.Process.Signal(how.sig)
		code, took := exitOf(t, cmd, sent)
		<-done
		t.Logf("%v (blocked in open: %v): exit %d after %v", how.sig, blocked, code, took.Round(time.Millisecond))
		if code == 2 && strings.Contains(out.String(), fifo) {
			t.Logf("refused up front: %s", strings.TrimSpace(out.String()))
			continue
		}
		if code != how.code || took > 10*time.Second {
			t.Errorf("%v while reading a FIFO: exit %d after %v, want %d within 2 s\n%s", how.sig, code, took, how.code, out.String())
		}
		if rs, _ := runs.List(filepath.Join(dir, "runs")); len(rs) != 0 {
			t.Errorf("%d runs created", len(rs))
		}
	}
}

// waitFIFOOpen waits (10 s at most) until a thread of process pid blocks
// opening a FIFO, and says whether one did; it stops waiting when the
// process ends (as it does when it refuses the FIFO up front).
func waitFIFOOpen(pid int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err != nil || ended(b) {
			return false
		}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
		for _, p := range tasks {
			if b, _ := os.ReadFile(p); string(b) == "wait_for_partner" {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// ended says whether /proc/PID/stat's state is that of a process that
// has exited (a zombie, not yet waited for, or dead).
func ended(stat []byte) bool {
	// The state follows the command name, which is in parentheses and
	// may itself hold spaces or parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

// A worker out of memory — its reply says so, or the kernel killed it
// (SIGKILL) — ends the run with one line naming the cause, what bounds
// memory and the fork to try; the run is stopped (exit 1), resumes to
// exactly the uninterrupted result, and forks with a smaller batch.
func TestWorkerOutOfMemoryStopsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root := t.TempDir()
	base := append(append([]string{"--runs", root}, fakeRun...), fakeWorker(t)...)
	out, code := selmixtest.Code(t, fakeEnv("ok"), append([]string{"run", "--headless", "-q"}, base...)...)
	if code != 0 {
		t.Fatalf("the uninterrupted run: exit %d\n%s", code, out)
	}
	want := runstest.ReadOutcome(t, root, selmixtest.RunIDRe.FindStringSubmatch(out)[1])
	for _, tc := range []struct {
		mode string
		want string
	}{
		{"oom-at=60", `worker ran out of memory in "train": CUDA out of memory. Tried to allocate 2.00 GiB; lower finetune.batch, and the worker's --eval-batch and --image-size`},
		{"sigkill-at=60", `worker exited during "train" (killed by SIGKILL (out of memory?)); lower finetune.batch, and the worker's --eval-batch and --image-size`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			out, code := selmixtest.Code(t, fakeEnv(tc.mode), append([]string{"run", "--headless", "-q"}, base...)...)
			m := selmixtest.RunIDRe.FindStringSubmatch(out)
			if code != 1 || m == nil {
				t.Fatalf("exit %d, want 1\n%s", code, out)
			}
			id := m[1]
			last := selmixtest.LastLines(out, 1)
			if !strings.HasPrefix(last, "selmix: run "+id+" stopped at step ") || !strings.Contains(last, tc.want) ||
				!strings.Contains(last, "`selmix fork "+id+" --set finetune.batch=8` continues it with half the batch") {
				t.Errorf("last line %q lacks the cause, the knobs or the fork", last)
			}
			checkStatus(t, root, id, runs.StatusStopped)
			fork, code := selmixtest.Code(t, fakeEnv("ok"), "fork", "-q", "--runs", root, id, "--set", "finetune.batch=8")
			if code != 0 || !strings.Contains(fork, "run ") {
				t.Fatalf("fork with a smaller batch: exit %d\n%s", code, fork)
			}
			fm := selmixtest.RunIDRe.FindStringSubmatch(fork)
			checkStatus(t, root, fm[1], runs.StatusFinished)
			res, code := selmixtest.Code(t, fakeEnv("ok"), "resume", "-q", "--runs", root, id)
			if code != 0 {
				t.Fatalf("resume: exit %d\n%s", code, res)
			}
			runstest.SameOutcome(t, tc.mode+", then resumed", runstest.ReadOutcome(t, root, id), want)
		})
	}
}

// Bad worker settings are input errors: one line naming the key, exit 2,
// no run; --set worker.dir is honoured with --worker --.
func TestWorkerSettingsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root := t.TempDir()
	run := func(args ...string) []string {
		return append(append([]string{"run", "--headless", "-q", "--runs", root}, fakeRun...), args...)
	}
	self := fakeWorker(t)[2]
	long := filepath.Join(t.TempDir(), strings.Repeat("r", 100))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{run("--set", "worker.dir=/nonexistent", "--worker", "--", self), `selmix: worker.dir "/nonexistent": no such directory`},
		{run("--worker", "--", "/nonexistent/worker", "--flag"), `selmix: worker.command: starting /nonexistent/worker: no such file`},
		{run("--worker", "--", "selmix-no-such-worker"), `selmix: worker.command: starting selmix-no-such-worker: not found in $PATH`},
		{append([]string{"run", "--detach", "--runs", long}, fakeWorker(t)...), "selmix: --runs " + long + ": too long for a detached run's control socket"},
	} {
		out, code := selmixtest.Code(t, fakeEnv("ok"), tc.args...)
		if code != 2 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, tc.want) {
			t.Errorf("selmix %s: exit %d\n%s\nwant exit 2 and one line %q…", strings.Join(tc.args, " "), code, out, tc.want)
		}
	}
	// A worker refusing its own input in hello (the PyTorch worker's
	// recipes: a missing --root, a corrupt image) is bad input too.
	const bad = "selmix: worker: hello: --root /data/x: no such folder"
	if out, code := selmixtest.Code(t, fakeEnv("bad-input"), run("--worker", "--", self)...); code != 2 || !strings.HasSuffix(out, bad+"\n") {
		t.Errorf("a worker answering hello with bad_input: exit %d\n%s\nwant exit 2 ending in %q", code, out, bad)
	}
	if _, err := os.Stat(long); err == nil {
		t.Errorf("run --detach created %s", long)
	}
	if rs, _ := runs.List(root); len(rs) != 0 {
		t.Errorf("%d runs created", len(rs))
	}
	wd := t.TempDir()
	out, code := selmixtest.Code(t, fakeEnv("ok"), run("--set", "worker.dir="+wd, "--worker", "--", self)...)
	if code != 0 {
		t.Fatalf("--set worker.dir: exit %d\n%s", code, out)
	}
	r, err := runs.Open(root, selmixtest.RunIDRe.FindStringSubmatch(out)[1])
	if err != nil {
		t.Fatal(err)
	}
	c, err := app.RunConfig(r)
	if err != nil || c.Worker.Dir != wd {
		t.Errorf("recorded worker.dir %q (%v), want %q", c.Worker.Dir, err, wd)
	}
}

// childPIDs are the processes whose parent is pid.
func childPIDs(pid int) []int {
	var out []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		var state string
		var ppid, self int
		fmt.Sscanf(string(b[:bytes.IndexByte(b, ' ')]), "%d", &self)
		if n, _ := fmt.Sscanf(string(b[i+1:]), " %s %d", &state, &ppid); n == 2 && ppid == pid {
			out = append(out, self)
		}
	}
	return out
}

// Slurm's scancel and preemption, and systemd, signal every process of a
// job at once: selmix and its worker get SIGTERM (or SIGINT) together. The
// run stops — exit 143 or 130, status stopped, within a moment — and
// resumes to exactly the uninterrupted result; it is not a failure (issue
// 45: exit 1, status error, "worker exited during train (killed by
// SIGTERM)" in 3 of 3 tries). A worker killed alone stops the run too
// (exit 1, one line, status stopped), and it resumes.
func TestSignalToSelmixAndWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root := t.TempDir()
	base := append(append([]string{"--runs", root}, fakeRun...), fakeWorker(t)...)
	out, code := selmixtest.Code(t, fakeEnv("ok"), append([]string{"run", "--headless", "-q"}, base...)...)
	if code != 0 {
		t.Fatalf("the uninterrupted run: exit %d\n%s", code, out)
	}
	want := runstest.ReadOutcome(t, root, selmixtest.RunIDRe.FindStringSubmatch(out)[1])
	for i, how := range []struct {
		name  string
		sig   syscall.Signal
		alone bool // the worker only
		code  int
	}{{"SIGTERM", syscall.SIGTERM, false, 143}, {"SIGINT", syscall.SIGINT, false, 130}, {"worker alone", syscall.SIGTERM, true, 1}} {
		t.Run(how.name, func(t *testing.T) {
			t.Parallel()
			cmd, sc := selmixtest.Start(t, fakeEnv(fmt.Sprintf("hang-at=%d", 30+80*i)), append([]string{"run", "--headless"}, base...)...)
			var o selmixtest.Output
			for sc.Scan() && o.ID == "" {
				o.Add(sc.Text())
			}
			var rest strings.Builder
			done := make(chan struct{})
			go func() {
				for sc.Scan() {
					rest.WriteString(sc.Text() + "\n")
				}
				close(done)
			}()
			id := o.ID
			if id == "" {
				t.Fatalf("no run id:\n%s", o.String())
			}
			waitLog(t, filepath.Join(root, id), "fake worker: hanging", 1)
			kids := childPIDs(cmd.Process.Pid)
			if len(kids) != 1 {
				t.Fatalf("selmix has %d children, want its worker", len(kids))
			}
			sent := time.Now()
			// The worker first: the order in which a scheduler's signals
			// land is not given, and this one failed every time.
			syscall.Kill(kids[0], how.sig)
			if !how.alone {
				cmd.Process.Signal(how.sig)
			}
			code, took := exitOf(t, cmd, sent)
			<-done
			t.Logf("%s: exit %d after %v: %s", how.name, code, took.Round(time.Millisecond), strings.TrimSpace(rest.String()))
			if code != how.code || took > 5*time.Second {
				t.Errorf("%s: exit %d after %v, want %d within a moment\n%s", how.name, code, took, how.code, rest.String())
			}
			if how.alone && !strings.Contains(rest.String(), "stopped at step ") {
				t.Errorf("the worker killed alone: no line saying the run stopped\n%s", rest.String())
			}
			checkStatus(t, root, id, runs.StatusStopped)
			out, code := selmixtest.Code(t, fakeEnv("ok"), "resume", "-q", "--runs", root, id)
			if code != 0 {
				t.Fatalf("resume: exit %d\n%s", code, out)
			}
			runstest.SameOutcome(t, how.name+", then resumed", runstest.ReadOutcome(t, root, id), want)
		})
	}
}
