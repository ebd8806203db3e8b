package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
)

// pretrain interrupted by SIGINT or SIGTERM exits 130 or 143 in one line,
// writing nothing: it exited 1 ("context canceled").
func TestPretrainSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		out := filepath.Join(t.TempDir(), "ckpt.npz")
		cmd, sc := selmixtest.Start(t, os.Environ(), "pretrain", "--out", out)
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.HasPrefix(sc.Text(), "epoch   1/") {
				cmd.Process.Signal(c.sig)
				break
			}
		}
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		cmd.Wait()
		last := lines[len(lines)-1]
		if got := cmd.ProcessState.ExitCode(); got != c.code || last != "selmix: pre-training interrupted; "+out+" not written" {
			t.Errorf("%v: exit %d, output\n%s\nwant %d and the line saying it was interrupted", c.sig, got, strings.Join(lines, "\n"), c.code)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: %s was written", c.sig, out)
		}
	}
}
