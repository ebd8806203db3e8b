package sweepexec

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"selmix/core/search"
	"selmix/runs/sweep/sweeptest"
)

// fakeForecaster writes a shell script standing in for selmix: it prints
// body's output for `sweep forecast` (after reading the candidates), or
// sleeps when body is "sleep", writing its pid first.
func fakeForecaster(t *testing.T, body string) (bin, pidFile string) {
	t.Helper()
	dir := t.TempDir()
	bin, pidFile = filepath.Join(dir, "selmix"), filepath.Join(dir, "pid")
	script := "#!/bin/sh\ncat > /dev/null\n"
	if body == "sleep" {
		script += "echo $$ > " + pidFile + "\nexec sleep 30\n"
	} else {
		script += body + "\n"
	}
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, pidFile
}

// forecast reads the forecasts a forecast process prints (null: none),
// names the run on a failure with its last line, and stops the process
// when the sweep is interrupted, with an error saying so.
func TestForecastProcess(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	cands := [][]string{{"finetune.s=1"}, {"finetune.s=2"}}

	bin, _ := fakeForecaster(t, `echo '[0.25, null]'`)
	got, err := forecast(LocalOptions{Binary: bin, Threads: 1}, s, "r1", 51, cands)
	if err != nil || len(got) != 2 || got[0] != 0.25 || !math.IsNaN(got[1]) {
		t.Errorf("forecasts %v (%v), want [0.25 NaN]", got, err)
	}
	bin, _ = fakeForecaster(t, `echo '[0.25]'`)
	if _, err := forecast(LocalOptions{Binary: bin, Threads: 1}, s, "r1", 51, cands); err == nil || !strings.Contains(err.Error(), "want 2 forecasts") {
		t.Errorf("one forecast for two candidates: %v", err)
	}
	bin, _ = fakeForecaster(t, "echo 'loading' >&2; echo 'selmix: run r1 has no checkpoint at step 51' >&2; exit 2")
	if _, err := forecast(LocalOptions{Binary: bin, Threads: 1}, s, "r1", 51, cands); err == nil || !strings.HasSuffix(err.Error(), ": selmix: run r1 has no checkpoint at step 51") {
		t.Errorf("a failed forecast: %v", err)
	}

	bin, pidFile := fakeForecaster(t, "sleep")
	sigs := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() {
		_, err := forecast(LocalOptions{Binary: bin, Threads: 1, Signals: sigs}, s, "r1", 51, cands)
		done <- err
	}()
	for i := 0; ; i++ {
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
			break
		}
		if i == 500 {
			t.Fatal("the forecast process did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sigs <- syscall.SIGINT
	select {
	case err := <-done:
		var fi *forecastInterrupted
		if !errors.As(err, &fi) || fi.sig != syscall.SIGINT {
			t.Errorf("interrupted forecast: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the forecast did not stop with the sweep")
	}

	// A signal to every process at once: the forecast dies of it before
	// the scheduler reads its own; still an interrupted forecast.
	bin, _ = fakeForecaster(t, "exit 143")
	sigs <- syscall.SIGTERM
	_, err = forecast(LocalOptions{Binary: bin, Threads: 1, Signals: sigs}, s, "r1", 51, cands)
	if fi := (*forecastInterrupted)(nil); !errors.As(err, &fi) || fi.sig != syscall.SIGTERM {
		t.Errorf("a forecast ended by the job's SIGTERM: %v", err)
	}
}
