package lifecycle

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/runs"
	"selmix/runs/live/livetest"
	"selmix/runs/record"
)

// attach --follow ends on a line that says how the run ended, with the
// exit code its --help documents: a finished run's line as the run
// prints it and 0; a stopped run's step and how to resume it, and 143.
func TestAttachFollowSaysHowTheRunEnded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	t.Run("finished", func(t *testing.T) {
		root := livetest.ShortDir(t)
		id := startDetached(t, root, "--set", "finetune.steps=600", "--set", "finetune.refresh=100", "--set", "record.plots=false")
		out, code := selmixtest.Code(t, os.Environ(), "attach", "--follow", "--runs", root, id)
		r, err := runs.Open(root, id)
		if err != nil {
			t.Fatal(err)
		}
		want := regexp.MustCompile(`^run ` + regexp.QuoteMeta(id) + ` finished at step 600( \(coverage constraint unmet on validation: \d+ of \d+ met, α/K = [0-9.]+\))?: ` + regexp.QuoteMeta(r.Dir) + `$`)
		if last := selmixtest.LastLines(out, 1); code != 0 || !want.MatchString(last) {
			t.Errorf("attach --follow of a run that finished: exit %d, last line %q; want 0 and %s", code, last, want)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		root := livetest.ShortDir(t)
		id := startDetached(t, root, "--set", "finetune.steps=100000", "--set", "finetune.refresh=25", "--set", "record.plots=false")
		cmd := exec.Command(selmixtest.Binary(t), "attach", "--follow", "--runs", root, id)
		var out bytes.Buffer
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		// Stop the run once attach has followed a refresh.
		buf := make([]byte, 4096)
		for !strings.Contains(out.String(), "  ψ ") {
			n, err := pr.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				t.Fatalf("attach --follow ended before a refresh:\n%s", out.String())
			}
		}
		selmixtest.Run(t, "stop", "--runs", root, id)
		for {
			n, err := pr.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		err = cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		sum, err := record.LoadSummary(waitEnded(t, root, id, time.Minute))
		if err != nil {
			t.Fatalf("the stopped run's summary: %v", err)
		}
		want := fmt.Sprintf("selmix: run %s stopped at step %d; resumable with: selmix resume %s", id, sum.Steps, id)
		if last := selmixtest.LastLines(out.String(), 1); code != 143 || last != want {
			t.Errorf("attach --follow of a stopped run: exit %d, last line %q; want 143 and %q", code, last, want)
		}
	})
}
