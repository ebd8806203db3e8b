package lifecycle

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"selmix/cmd/selmix/internal/selmixtest"
)

var (
	headerStep = regexp.MustCompile(`step (\d+)/20000`)
	withS20    = regexp.MustCompile(`with s=20 ([+-][0-9.]+)`)
)

// The what-if preview in the edit form of a workbench attached to a run
// in the background (the statistics cross the control socket): paused at
// a refresh, typing s = 20 shows the next interval's forecast, and once
// applied there the run records that very Δψ_pred for the interval (to
// the decimals shown). Driven in tmux at 120×36.
func TestTmuxWhatIfPreview(t *testing.T) {
	// Refresh 50 (the built-in experiment's is 10): room to type between.
	tm, _, root := tmuxLongRun(t, "finetune.refresh=50")
	t0 := time.Now()
	tm.WaitFor("● running", 60*time.Second)
	t.Logf("running after %v", time.Since(t0))
	tm.Type("Space")
	step := func(s string) int {
		m := headerStep.FindStringSubmatch(selmixtest.Lines(s, 1))
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	paused := tm.WaitFor("● paused", 20*time.Second)
	// n: on to the next refresh (every 50 steps), paused there.
	atRefresh := func(after int) int {
		tm.Type("n")
		s := tm.Wait("paused at a refresh after step "+strconv.Itoa(after), 20*time.Second, func(s string) bool {
			n := step(s)
			return strings.Contains(s, "● paused") && n > after && n%50 == 0
		})
		return step(s)
	}
	at := atRefresh(step(paused))
	tm.Type("e")
	tm.WaitFor("next interval Δψ: now ", 10*time.Second)
	tm.Type("C-u", "2", "0")
	s := tm.WaitFor("with s=20 ", 10*time.Second)
	if !strings.Contains(s, "linear model: sign right in ") {
		t.Errorf("no track record in the form:\n%s", s)
	}
	shown := withS20.FindStringSubmatch(strings.Join(strings.Fields(s), " "))
	if shown == nil {
		t.Fatalf("no forecast for s = 20:\n%s", s)
	}
	tm.Type("Enter")
	tm.WaitFor(" s 20 ", 10*time.Second)
	next := atRefresh(at)
	if next != at+50 {
		t.Fatalf("paused at %d, want the refresh at %d", next, at+50)
	}
	pred, ok := predictedAt(t, root, next)
	if !ok {
		t.Fatalf("the run recorded no predicted Δψ at step %d", next)
	}
	_, frac, _ := strings.Cut(shown[1], ".")
	if got := fmt.Sprintf("%+.*f", len(frac), pred); got != shown[1] {
		t.Errorf("the form forecast %s for s = 20 at step %d; the run recorded %s (%v)", shown[1], at, got, pred)
	}
	t.Logf("checked after %v", time.Since(t0))
	tm.Type("q")
	tm.WaitFor("detach", 10*time.Second)
	tm.Type("y")
}

// predictedAt is the predicted Δψ the run in root logged at the refresh
// at step.
func predictedAt(t *testing.T, root string, step int) (float64, bool) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "events.jsonl"))
	for _, path := range dirs {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var e struct {
				Kind string
				Data struct {
					Step      int
					Predicted *float64
				}
			}
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Kind == "refresh" && e.Data.Step == step && e.Data.Predicted != nil {
				return *e.Data.Predicted, true
			}
		}
	}
	return 0, false
}
