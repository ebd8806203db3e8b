package sweepexec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"selmix/internal/capped"
	"selmix/internal/safetext"
	"selmix/runs/sweep"
)

// maxForecastOutput bounds what a forecast process may print.
const maxForecastOutput = 1 << 20

// forecast runs `selmix sweep forecast` for a population's explore =
// forecast: the forecasts of cands from run's checkpoint at step, in a
// process of its own in the sweep's workdir (where the members run, so
// their relative paths resolve), with the members' threads. A worker's
// run starts its worker there: between generations no member holds a GPU.
func forecast(o LocalOptions, s *sweep.Sweep, run string, step int, cands [][]string) ([]float64, error) {
	in, err := json.Marshal(cands)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.Binary, "sweep", "forecast", s.Dir, run, strconv.Itoa(step))
	cmd.Dir = s.Workdir
	t := strconv.Itoa(o.Threads)
	cmd.Env = append(os.Environ(), "OPENBLAS_NUM_THREADS="+t, "GOMAXPROCS="+t)
	cmd.Stdin = bytes.NewReader(in)
	out, errb := &capped.Buffer{Max: maxForecastOutput}, &capped.Buffer{Max: 64 << 10, Quiet: true}
	cmd.Stdout, cmd.Stderr = out, errb
	// Its own process group, as a member's: a Ctrl-C reaches the
	// scheduler, which passes it on.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case sig := <-o.Signals:
		// The sweep is interrupted: so is the forecast, and nothing of it
		// is taken (sweep resume forecasts again, the same).
		cmd.Process.Signal(sig)
		<-done
		return nil, &forecastInterrupted{sig}
	}
	if err != nil {
		select {
		case sig := <-o.Signals:
			// A signal to every process of the job at once (Slurm's
			// SIGTERM) ended the forecast before the scheduler read it:
			// the same clean, resumable stop.
			return nil, &forecastInterrupted{sig}
		default:
		}
		msg := strings.TrimSpace(errb.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return nil, fmt.Errorf("forecast of run %s at step %d: %v: %s", run, step, err, safetext.Middle(msg, 300))
	}
	var fs []*float64
	if err := json.Unmarshal(out.Bytes(), &fs); err != nil || len(fs) != len(cands) {
		return nil, fmt.Errorf("forecast of run %s at step %d: want %d forecasts, got %q", run, step, len(cands), safetext.Middle(out.String(), 200))
	}
	return forecastValues(fs), nil
}

// forecastInterrupted is forecast's error when a signal stopped the sweep
// while it ran.
type forecastInterrupted struct{ sig os.Signal }

func (e *forecastInterrupted) Error() string { return "forecast interrupted by " + e.sig.String() }

// forecastValues are forecasts as JSON carries them (null: none) as
// numbers (NaN: none).
func forecastValues(fs []*float64) []float64 {
	v := make([]float64, len(fs))
	for i, f := range fs {
		v[i] = math.NaN()
		if f != nil {
			v[i] = *f
		}
	}
	return v
}
