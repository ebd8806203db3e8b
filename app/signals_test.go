package app

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// untilSignalChild names the mode of TestUntilSignal's child process.
const untilSignalChild = "SELMIX_APP_UNTILSIGNAL"

// Work that cannot be interrupted part way (export drawing figures of a
// K = 1000 run: it ignored SIGINT and finished with 0) ends the command
// at once on SIGINT with 130 and on SIGTERM with 143. The child process
// waits in UntilSignal on work that never ends.
func TestUntilSignal(t *testing.T) {
	if os.Getenv(untilSignalChild) != "" {
		err := UntilSignal(context.Background(), "export interrupted", func() error {
			fmt.Println("working")
			select {}
		})
		fmt.Println(err)
		os.Exit(ExitCode(err))
	}
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUntilSignal$")
		cmd.Env = append(os.Environ(), untilSignalChild+"=1")
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(pipe)
		var out []string
		for sc.Scan() {
			out = append(out, sc.Text())
			if sc.Text() == "working" {
				cmd.Process.Signal(c.sig)
			}
		}
		cmd.Wait()
		if got := cmd.ProcessState.ExitCode(); got != c.code || strings.Join(out, "|") != "working|export interrupted" {
			t.Errorf("%v: exit %d, output %q; want %d", c.sig, got, out, c.code)
		}
	}
}
