package selmixtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Tmux is a terminal driven as a person would: a tmux server of its own
// (its socket in a temporary folder) with one window of a fixed size
// running a shell, keys sent to it and its screen read back.
type Tmux struct {
	t      testing.TB
	socket string
}

// NewTmux starts a cols×rows terminal running sh, in dir; the test is
// skipped where tmux is not installed. The server ends with the test.
func NewTmux(t testing.TB, cols, rows int, dir string) *Tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	sock, err := os.MkdirTemp("", "tmux-")
	if err != nil {
		t.Fatal(err)
	}
	tm := &Tmux{t: t, socket: filepath.Join(sock, "s")}
	cmd := exec.Command("tmux", "-S", tm.socket, "-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), "-c", dir, "sh")
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		exec.Command("tmux", "-S", tm.socket, "kill-server").Run()
		os.RemoveAll(sock)
	})
	return tm
}

// Type sends keys (tmux send-keys names: "Enter", "Space", "q").
func (tm *Tmux) Type(keys ...string) {
	tm.t.Helper()
	if out, err := exec.Command("tmux", append([]string{"-S", tm.socket, "send-keys", "-t", "0"}, keys...)...).CombinedOutput(); err != nil {
		tm.t.Fatalf("tmux send-keys %q: %v\n%s", keys, err, out)
	}
}

// Line types a shell command line and Enter.
func (tm *Tmux) Line(cmd string) {
	tm.t.Helper()
	tm.Type("-l", cmd)
	tm.Type("Enter")
}

// Screen is what the terminal shows now.
func (tm *Tmux) Screen() string {
	tm.t.Helper()
	out, err := exec.Command("tmux", "-S", tm.socket, "capture-pane", "-p", "-t", "0").CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux capture-pane: %v\n%s", err, out)
	}
	return string(out)
}

// Wait waits until the screen satisfies ok (at most limit) and returns
// it; the test fails with the last screen and what was awaited.
func (tm *Tmux) Wait(what string, limit time.Duration, ok func(screen string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s := tm.Screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("waited %v for %s; the screen:\n%s", limit, what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitFor waits until the screen shows text.
func (tm *Tmux) WaitFor(text string, limit time.Duration) string {
	tm.t.Helper()
	return tm.Wait(fmt.Sprintf("%q", text), limit, func(s string) bool { return strings.Contains(s, text) })
}

// Lines is the screen's line i (0 first), or "" past its end.
func Lines(screen string, i int) string {
	ls := strings.Split(screen, "\n")
	if i < len(ls) {
		return ls[i]
	}
	return ""
}
