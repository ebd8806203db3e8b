package sweepexec

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"selmix/runs/sweep"
	"selmix/runs/sweep/sweeptest"
)

// halvingSpec has nine members of 270 steps refreshing every 10: rungs at
// 10, 30, 90 and 270.
const halvingSpec = `
name = "halving"
[base]
"finetune.steps" = 270
"finetune.refresh" = 10
[axes]
"finetune.policy" = ["selmix", "uniform", "resample"]
seed = [1, 2, 3]
[asha]
min_steps = 10
`

// fakePsi is member i's ψ at rung k: a fixed, shuffled order.
func fakePsi(i, k int) float64 { return float64((i*7)%9)/10 + float64(k) }

// fakeSession runs one session of s's schedule with members that end at
// once: code says each launch's exit code (the nth launch, from 0), and
// may send a signal first. It returns the result and the launches.
func fakeSession(t *testing.T, s *sweep.Sweep, parallel int, code func(n int, d sweep.Decision, sigs chan os.Signal) int) (*ASHAResult, []sweep.Decision, string) {
	t.Helper()
	sc, err := s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sigs := make(chan os.Signal, 2)
	a := &ashaExec{s: s, o: LocalOptions{Parallel: parallel, Out: &out, Signals: sigs}, sc: sc, quit: make(chan struct{})}
	var mu sync.Mutex
	var launched []sweep.Decision
	a.launch = func(d sweep.Decision, ends chan<- jobEnd) {
		mu.Lock()
		n := len(launched)
		launched = append(launched, d)
		mu.Unlock()
		c := code(n, d, sigs)
		go func() {
			if c == 130 {
				<-a.quit // a member stops after the executor took the signal
			}
			ends <- jobEnd{d: d, code: c}
		}()
	}
	a.forward = func(os.Signal) {}
	a.psi = func(i, upTo int) (float64, int, error) {
		k := slices.Index(s.ASHA.Stops[i], upTo)
		return fakePsi(i, k), upTo, nil
	}
	res, err := a.run()
	if err != nil {
		t.Fatal(err)
	}
	return res, launched, out.String()
}

func decisionsOf(t *testing.T, s *sweep.Sweep) []string {
	t.Helper()
	sc, err := s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range sc.Decisions {
		out = append(out, fmt.Sprintf("%s %d@%d stop %d rank %d/%d step %d ψ %g", d.Op, d.Member, d.Rung, d.StopAt, d.Rank, d.Of, d.Step, d.PsiValue()))
	}
	return out
}

func ok(int, sweep.Decision, chan os.Signal) int { return 0 }

// One member at a time, the executor takes the schedule's decisions to
// its end and says each on a line; a session interrupted after some
// decisions (its member stopped on the way) and resumed sends that member
// on first and ends with the decisions of one never interrupted; so does
// one whose member failed.
func TestASHASessions(t *testing.T) {
	whole := sweeptest.NewASHA(t, halvingSpec)
	res, launched, out := fakeSession(t, whole, 1, ok)
	want := decisionsOf(t, whole)
	if !res.Complete || res.Signal != nil || len(res.Failed)+len(res.Stopped) != 0 || res.Reports != len(launched) {
		t.Fatalf("one session: %+v after %d launches", res, len(launched))
	}
	if last := launched[len(launched)-1]; last.Rung != whole.ASHA.Top() || last.StopAt != 0 {
		t.Errorf("the last launch %+v: want one to the end, without a stop", last)
	}
	for _, line := range []string{
		"member 0  policy=selmix seed=1  starts: rung 0 (10 steps)\n",
		"member 0  policy=selmix seed=1  reached rung 0 (10 steps): ψ 0.0000 at step 10 (0.0s)\n",
		"promoted to the end (rung 3, 270 steps): 1st of ",
		"  finished: the end (rung 3, 270 steps): ψ ",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}

	for _, c := range []struct {
		name string
		at   int // the launch that does not reach its rung
		code int
	}{
		{"interrupted", 5, 130},
		{"failed", 7, 1},
	} {
		s := sweeptest.NewASHA(t, halvingSpec)
		res, launched, out := fakeSession(t, s, 1, func(n int, d sweep.Decision, sigs chan os.Signal) int {
			if n != c.at {
				return 0
			}
			if c.code == 130 {
				sigs <- syscall.SIGINT
			}
			return c.code
		})
		cut := launched[c.at]
		stuck := res.Stopped
		if c.code != 130 {
			stuck = res.Failed
		}
		if res.Complete || !reflect.DeepEqual(stuck, []sweep.Assignment{{Member: cut.Member, Rung: cut.Rung}}) {
			t.Errorf("%s: %+v; want member %d stuck on its way to rung %d", c.name, res, cut.Member, cut.Rung)
		}
		if c.code == 130 && (res.Signal != syscall.SIGINT || len(launched) != c.at+1) {
			t.Errorf("%s: signal %v, %d launches; want SIGINT and none after it", c.name, res.Signal, len(launched))
		}
		if c.code == 1 && !strings.Contains(out, "failed on the way to ") {
			t.Errorf("%s: output:\n%s", c.name, out)
		}
		res, again, _ := fakeSession(t, s, 1, ok)
		if !res.Complete || len(again) == 0 || again[0].Member != cut.Member || again[0].Rung != cut.Rung || again[0].StopAt != cut.StopAt {
			t.Errorf("%s: the next session %+v launched %+v first; want member %d to rung %d again", c.name, res, again, cut.Member, cut.Rung)
		}
		if got := decisionsOf(t, s); c.code == 130 && !reflect.DeepEqual(got, want) {
			t.Errorf("%s and resumed: decisions\n%s\nwant\n%s", c.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// Three at a time, the schedule still ends with every member ranked at
// rung 0 and one run to the end; a signal stops the launching at once.
func TestASHAParallel(t *testing.T) {
	s := sweeptest.NewASHA(t, halvingSpec)
	res, _, _ := fakeSession(t, s, 3, ok)
	sc, err := s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || len(sc.Ranked(0)) != 9 || len(sc.Ranked(s.ASHA.Top())) < 1 {
		t.Errorf("complete %v, %d at rung 0, %d at the end", res.Complete, len(sc.Ranked(0)), len(sc.Ranked(s.ASHA.Top())))
	}
}
