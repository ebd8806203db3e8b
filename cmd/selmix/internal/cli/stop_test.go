package cli

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/runs"
	"selmix/runs/live"
	"selmix/runs/live/livetest"
)

// selmix stop on a run that takes the connection and never answers (a
// process stopped by SIGSTOP) waited forever and ignored SIGINT: it ends
// on SIGINT with 130 and on SIGTERM with 143, saying why, as soon as the
// signal comes. (The deadline of the wait itself is runs/live's test.)
func TestStopAnswersSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	root := livetest.ShortDir(t)
	w, err := runs.Create(root, "mute", "seed = 1\n", runs.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sock := filepath.Join(w.Dir(), live.SocketName)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Chmod(sock, 0o600)
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		cmd := exec.Command(selmixtest.Binary(t), "stop", "--runs", root, "mute")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		select {
		case conn := <-accepted: // it waits for the hello now
			defer conn.Close()
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("selmix stop did not connect:\n%s", out.String())
		}
		cmd.Process.Signal(c.sig)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second): // the hello's own deadline is 10 s
			cmd.Process.Kill()
			<-done
			t.Fatalf("%v: selmix stop still waiting", c.sig)
		}
		got := strings.TrimSpace(out.String())
		if code := cmd.ProcessState.ExitCode(); code != c.code || !strings.HasPrefix(got, "selmix: interrupted while waiting for run ") || strings.Contains(got, "\n") {
			t.Errorf("%v: exit %d, output %q; want %d and one line", c.sig, code, got, c.code)
		}
	}
}
