package sweep

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"selmix/core/search"
	"selmix/runs/sweep"
	"selmix/tui/internal/fixture"
)

// status is a 6-member Slurm sweep caught mid-way.
func status() *sweep.Status {
	nan := math.NaN()
	hist := func(n int, base float64) []float64 {
		h := make([]float64, n)
		for i := range h {
			h[i] = base + 0.3*math.Sin(float64(i)/2) + 0.01*float64(i)
		}
		return h
	}
	m := func(i int, pol, seed, id, state, slurm string, step, total int, h []float64, cat sweep.Category, active bool) sweep.MemberStatus {
		ms := sweep.MemberStatus{Index: i, Values: []string{pol, seed}, RunID: id, State: state, Slurm: slurm, Step: step, Total: total,
			History: h, Psi: nan, Best: nan, TestEnd: nan, TestBest: nan, Category: cat, Active: active}
		if cat == sweep.Finished {
			// Finished: test at the end below ψ now, at best a little above.
			ms.TestEnd, ms.TestBest = h[len(h)-1]-0.05, h[len(h)-1]+0.1
		}
		if len(h) > 0 {
			ms.Psi, ms.Best = h[len(h)-1], h[0]
			for _, x := range h {
				ms.Best = math.Max(ms.Best, x)
			}
		}
		return ms
	}
	return &sweep.Status{
		ID: "grid-a3f9", Executor: "slurm", Slurm: true, Columns: []string{"finetune.policy", "seed"},
		Members: []sweep.MemberStatus{
			m(0, "selmix", "1", "20261123-1041-370b", "finished", "COMPLETED", 300, 300, hist(13, 0.4), sweep.Finished, false),
			m(1, "selmix", "2", "20261123-1042-a317", "finished", "COMPLETED", 300, 300, hist(13, 0.35), sweep.Finished, false),
			m(2, "uniform", "1", "20261123-1042-4f11", "running", "RUNNING", 175, 300, hist(8, 0.3), sweep.Running, true),
			m(3, "uniform", "2", "20261123-1042-c6c3", "stopped", "CANCELLED", 100, 300, hist(5, 0.3), sweep.Failed, false),
			m(4, "greedy", "1", "", "", "PENDING", 0, 0, nil, sweep.Pending, true),
			m(5, "greedy", "2", "", "", "PENDING", 0, 0, nil, sweep.Pending, true),
		},
	}
}

func withNote(st *sweep.Status, note string) *sweep.Status {
	st.Notes = append(st.Notes, note)
	return st
}

// withGPUs is st run locally on a GPU box: each started member on a GPU.
func withGPUs(st *sweep.Status) *sweep.Status {
	st.Executor, st.Slurm = "local", false
	for i := range st.Members[:4] {
		st.Members[i].Slurm = ""
		st.Members[i].GPUs = []string{[]string{"0", "1", "2", "3"}[i]}
	}
	st.Members[3].GPUs = []string{"2", "3"}
	return st
}

// withPopulation is st as a population on this box mid-way through its
// second generation: member 3 a copy of member 0.
func withPopulation(st *sweep.Status) *sweep.Status {
	st.Executor, st.Slurm = "local", false
	st.PBT = &search.PBT{Interval: 100, Steps: 300, Quantile: 0.25, Explore: search.ExplorePerturb, Keys: []string{"s"}}
	for i, g := range []string{"2", "2", "1", "1 ←0", "1", "1"} {
		st.Members[i].Slurm, st.Members[i].Gen = "", g
		st.Members[i].Now = []string{"s=5", "s=5", "s=10", "s=6", "", "s=20"}[i]
	}
	st.Gen, st.Exploits = 1, 1
	return st
}

func TestView(t *testing.T) {
	cases := []struct {
		name string
		msgs []tea.Msg
		w, h int
	}{
		{"loading", nil, 120, 30},
		{"sweep", []tea.Msg{StatusMsg{status()}, fixture.Key("j"), fixture.Key("j")}, 120, 30},
		{"no-run-yet", []tea.Msg{StatusMsg{status()}, fixture.Key("G"), fixture.Key("enter")}, 120, 30},
		{"read-error", []tea.Msg{StatusMsg{status()}, ErrMsg{errors.New("squeue: slurm_load_jobs error: Unable to contact slurm controller")}}, 120, 30},
		{"scrolled", []tea.Msg{StatusMsg{status()}, fixture.Key("G")}, 100, 8},
		{"slurm-unreachable", []tea.Msg{StatusMsg{withNote(status(), "slurm: squeue: command not found")}}, 120, 30},
		{"by-best-desc", []tea.Msg{StatusMsg{status()}, fixture.Key("h"), fixture.Key("r")}, 120, 30},
		{"help", []tea.Msg{StatusMsg{status()}, fixture.Key("?")}, 120, 30},
		{"gpus", []tea.Msg{StatusMsg{withGPUs(status())}}, 120, 30},
		{"population", []tea.Msg{StatusMsg{withPopulation(status())}}, 120, 30},
		// Room for the sparkline: it is drawn; without (gpus, above) none is.
		{"wide", []tea.Msg{StatusMsg{status()}}, 160, 12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New(fixture.Plain(), "grid-a3f9")
			m.Update(tea.WindowSizeMsg{Width: c.w, Height: c.h})
			for _, msg := range c.msgs {
				m.Update(msg)
			}
			fixture.GoldenScreen(t, m.Render(), c.w, c.h)
		})
	}
}

func TestChoose(t *testing.T) {
	m := New(fixture.Plain(), "grid-a3f9")
	m.Update(StatusMsg{status()})
	if _, _, ok := m.Chosen(); ok {
		t.Fatal("chosen before Enter")
	}
	m.Update(fixture.Key("j"))
	m.Update(fixture.Key("j"))
	_, cmd := m.Update(fixture.Key("enter"))
	if cmd == nil {
		t.Fatal("Enter on a member with a run does not quit to open it")
	}
	i, id, ok := m.Chosen()
	if !ok || i != 2 || id != "20261123-1042-4f11" || !m.Live() {
		t.Errorf("chosen %d %q %v live=%v, want member 2, its run, live", i, id, ok, m.Live())
	}
	// A member without a run is not chosen.
	m = New(fixture.Plain(), "grid-a3f9")
	m.Update(StatusMsg{status()})
	m.Update(fixture.Key("G"))
	if _, cmd := m.Update(fixture.Key("enter")); cmd != nil {
		t.Error("Enter on a member without a run quit")
	}
	if _, _, ok := m.Chosen(); ok {
		t.Error("a member without a run was chosen")
	}
}

// c picks every member with a run, in the order shown, grouped by the
// first axis that is not seed; with no run yet it says so and stays.
func TestCompareMembers(t *testing.T) {
	m := New(fixture.Plain(), "grid-a3f9")
	m.Update(StatusMsg{status()})
	m.Update(fixture.Key("r")) // members by #, high to low
	_, cmd := m.Update(fixture.Key("c"))
	if cmd == nil {
		t.Fatal("c does not quit to compare")
	}
	ids, group, ok := m.Compared()
	want := []string{"20261123-1042-c6c3", "20261123-1042-4f11", "20261123-1042-a317", "20261123-1041-370b"}
	if !ok || !slices.Equal(ids, want) || group != "finetune.policy" {
		t.Errorf("compared %v by %q (%v), want %v by finetune.policy", ids, group, ok, want)
	}
	if _, _, ok := m.Chosen(); ok {
		t.Error("c also chose a member to open")
	}

	st := status()
	for i := range st.Members {
		st.Members[i].RunID = ""
	}
	st.Columns = []string{"seed"}
	m = New(fixture.Plain(), "grid-a3f9")
	m.Update(StatusMsg{st})
	if _, cmd := m.Update(fixture.Key("c")); cmd != nil {
		t.Error("c with no member run quit")
	}
	if _, _, ok := m.Compared(); ok {
		t.Error("compared with no member run")
	}
	if !strings.Contains(m.Render(), "no member has a run yet") {
		t.Errorf("no note:\n%s", m.Render())
	}
}

// Poll sends what read returns, again every interval, until ctx ends.
func TestPoll(t *testing.T) {
	var mu sync.Mutex
	var got []tea.Msg
	send := func(msg tea.Msg) { mu.Lock(); got = append(got, msg); mu.Unlock() }
	n := 0
	read := func(context.Context) (*sweep.Status, error) {
		n++
		if n == 2 {
			return nil, errors.New("boom")
		}
		if n == 3 {
			panic("bug")
		}
		return status(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	Poll(ctx, read, send, time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("got %d messages, want 3: %v", len(got), got)
	}
	if _, ok := got[0].(StatusMsg); !ok {
		t.Errorf("first message %T", got[0])
	}
	if e, ok := got[1].(ErrMsg); !ok || e.Err.Error() != "boom" {
		t.Errorf("second message %v", got[1])
	}
	if e, ok := got[2].(ErrMsg); !ok || !strings.Contains(e.Err.Error(), "bug") {
		t.Errorf("a panic in the reader becomes %v", got[2])
	}
}

// Any column sorts the groups (by their mean over seeds for ψ) and the
// members inside them; unknown values go last either way; r reverses.
func TestSort(t *testing.T) {
	cases := []struct {
		name string
		keys []string
		want []int
	}{
		{"by index", nil, []int{0, 1, 2, 3, 4, 5}},
		{"by test ψ at best (the kept model), low first", []string{"h"}, []int{1, 0, 2, 3, 4, 5}},
		{"by test ψ at end, high first", []string{"h", "h", "r"}, []int{0, 1, 2, 3, 4, 5}},
		{"by best ψ, high first", []string{"h", "h", "h", "r"}, []int{0, 1, 2, 3, 4, 5}},
		{"by best ψ, low first", []string{"h", "h", "h"}, []int{2, 3, 1, 0, 4, 5}},
		{"by ψ now, high first", []string{"h", "h", "h", "h", "r"}, []int{3, 2, 0, 1, 4, 5}},
		{"by policy", []string{"l"}, []int{4, 5, 0, 1, 2, 3}},
		{"by seed, high first", []string{"l", "l", "r"}, []int{1, 0, 3, 2, 5, 4}},
		{"by step", []string{"h", "h", "h", "h", "h"}, []int{4, 5, 3, 2, 0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New(fixture.Plain(), "grid-a3f9")
			m.Update(StatusMsg{status()})
			for _, k := range c.keys {
				m.Update(fixture.Key(k))
			}
			if got := m.memberOrder(); !slices.Equal(got, c.want) {
				t.Errorf("order %v, want %v", got, c.want)
			}
		})
	}
}

// ? opens the keys; any key closes them without acting.
func TestHelp(t *testing.T) {
	m := New(fixture.Plain(), "grid-a3f9")
	m.Update(StatusMsg{status()})
	m.Update(fixture.Key("?"))
	if v := m.Render(); !strings.Contains(v, "reverse the order") || !strings.Contains(v, "mean ± std") {
		t.Errorf("? shows no help:\n%s", v)
	}
	if _, cmd := m.Update(fixture.Key("q")); cmd != nil || strings.Contains(m.Render(), "reverse the order") {
		t.Errorf("q on the help quit (%v) or left it open", cmd)
	}
}
