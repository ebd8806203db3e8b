package sweep_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/search"
	"selmix/runs"
	"selmix/runs/record"
	"selmix/runs/sweep"
	"selmix/runs/sweep/sweeptest"
)

func TestCreateOpenList(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	if !strings.HasPrefix(s.ID, "small-") || len(s.ID) != len("small-")+4 || filepath.Base(s.Dir) != s.ID {
		t.Errorf("id %q in %s", s.ID, s.Dir)
	}
	b, err := os.ReadFile(filepath.Join(s.Dir, "spec.toml"))
	if err != nil || string(b) != sweeptest.SmallSpec {
		t.Errorf("spec copy: %v %q", err, b)
	}
	back, err := sweep.Load(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Manifest, s.Manifest) {
		t.Errorf("sweep.json round trip:\n got %+v\nwant %+v", back.Manifest, s.Manifest)
	}
	for _, q := range []string{s.ID, s.ID[:len("small-")+2], "small", s.Dir} {
		got, err := sweep.Open(s.Root, q)
		if err != nil || got.ID != s.ID {
			t.Errorf("Open(%q) = %v, %v", q, got, err)
		}
	}
	if _, err := sweep.Open(s.Root, "nope"); err == nil || !strings.Contains(err.Error(), "sweeps are: "+s.ID) {
		t.Errorf("Open(nope): %v", err)
	}
	all, bad, err := sweep.List(s.Root)
	if err != nil || len(all) != 1 || len(bad) != 0 {
		t.Errorf("List: %d sweeps, %v, %v", len(all), bad, err)
	}
	// The sweeps folder is no run: the run store lists nothing.
	rs, err := runs.List(s.Root)
	if err != nil || len(rs) != 0 {
		t.Errorf("runs.List sees %d runs in a root holding only a sweep (%v)", len(rs), err)
	}
	c, err := s.Config(5)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != s.ID+"-5" || c.Seed != 3 || c.Finetune.Policy != "uniform" || c.Finetune.Steps != 100 {
		t.Errorf("member 5 config: name %s seed %d policy %s steps %d", c.Name, c.Seed, c.Finetune.Policy, c.Finetune.Steps)
	}
	if got := s.Describe(5); got != "policy=uniform seed=3" {
		t.Errorf("Describe(5) = %q", got)
	}
}

// Members of one sweep are labelled by the values of its columns (the
// keys that vary), not by their generated run names; runs that are not
// all members of one sweep get no labels.
func TestMemberLabels(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	name := func(i int) string { return s.Members[i].Run }
	names := []string{name(5), name(0), name(2)}
	got := sweep.MemberLabels(s.Root, names, (*sweep.Sweep).Describe)
	if want := []string{"policy=uniform seed=3", "policy=selmix seed=1", "policy=selmix seed=3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("MemberLabels = %q, want %q", got, want)
	}
	got = sweep.MemberLabels(s.Root, names, (*sweep.Sweep).Label)
	if want := []string{"uniform · 3", "selmix · 1", "selmix · 3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("MemberLabels narrow = %q, want %q", got, want)
	}
	for _, c := range []struct {
		what  string
		names []string
	}{
		{"a run of no sweep", []string{name(0), "min-recall-selmix"}},
		{"an index the sweep lacks", []string{name(0), s.ID + "-6"}},
		{"a sweep that does not exist", []string{"other-a1b2-0"}},
		{"an index written oddly", []string{s.ID + "-01"}},
		{"no runs", nil},
	} {
		if got := sweep.MemberLabels(s.Root, c.names, (*sweep.Sweep).Describe); got != nil {
			t.Errorf("%s: labels %q, want none", c.what, got)
		}
	}
	if got := sweep.MemberLabels(t.TempDir(), []string{name(0)}, (*sweep.Sweep).Describe); got != nil {
		t.Errorf("another runs root: labels %q, want none", got)
	}
	// The narrow form, for the terminal, is the values alone.
	for _, c := range []struct {
		values []string
		want   string
	}{
		{[]string{"resample", "2"}, "resample · 2"},
		{[]string{"min-recall", "-", "1"}, "min-recall · 1"},
		{nil, ""},
	} {
		if got := sweep.Label(c.values); got != c.want {
			t.Errorf("Label(%q) = %q, want %q", c.values, got, c.want)
		}
	}
	if got := (sweep.MemberStatus{Values: []string{"uniform", "3"}}).Label(); got != "uniform · 3" {
		t.Errorf("MemberStatus.Label = %q", got)
	}
}

func TestShortNames(t *testing.T) {
	got := sweep.ShortNames([]string{"finetune.policy", "finetune.tau", "pretrain.tau", "seed"})
	want := []string{"policy", "finetune.tau", "pretrain.tau", "seed"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ShortNames = %v, want %v", got, want)
	}
}

func TestMemberLock(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	f, err := s.LockMember(2)
	if err != nil {
		t.Fatal(err)
	}
	if !s.MemberBusy(2) || s.MemberBusy(1) {
		t.Errorf("busy: member 2 %v, member 1 %v", s.MemberBusy(2), s.MemberBusy(1))
	}
	if _, err := s.LockMember(2); err == nil || !strings.Contains(err.Error(), "member 2 is already being run by pid") {
		t.Errorf("second lock: %v", err)
	}
	f.Close()
	if s.MemberBusy(2) {
		t.Error("member 2 busy after release")
	}
}

// fakeRun records a run of member i through the recorder, as the engine
// would: refreshes with the given ψ values, then a final summary if sum is
// not nil. The writer stays open (a live run) until the caller closes it.
func fakeRun(t *testing.T, s *sweep.Sweep, i int, psis []float64, sum *loop.Summary) *runs.Writer {
	t.Helper()
	rec, err := record.New(s.Root, s.Members[i].Run, "seed = 1\n", record.Options{}, runs.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.LogStart(record.Start{Total: 100, K: 2}); err != nil {
		t.Fatal(err)
	}
	st := loop.NewStream()
	best := math.Inf(-1)
	for k, p := range psis {
		step := 25 * k
		rep := metric.Report{K: 2, Prior: []float64{0.5, 0.5}, Recall: []float64{p, p}, Coverage: []float64{0.5, 0.5}}
		rs := &loop.Refresh{Step: step, K: 2, Psi: p, Report: rep, Objectives: make([]float64, len(metric.Objectives())),
			G: []float64{0, 1, 1, 0}, P: []float64{0, 0.5, 0.5, 0}, Best: p > best}
		best = max(best, p)
		st.Publish(loop.Snapshot{Kind: loop.KindRefresh, Step: step, Total: 100, State: loop.Running, Hyper: loop.DefaultHyper(), Refresh: rs})
	}
	if sum != nil {
		st.Publish(loop.Snapshot{Kind: loop.KindFinal, Step: sum.Steps, Total: 100, State: loop.Finished, Hyper: loop.DefaultHyper(), Summary: sum})
	}
	st.Close()
	if err := rec.Follow(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	return rec.Writer()
}

// summary is a final summary whose test metrics after fine-tuning are all
// x, and ψ of its objective (min-recall) 2x.
func summary(x float64) *loop.Summary {
	objs := make([]float64, len(metric.Objectives()))
	for i, o := range metric.Objectives() {
		if o == metric.MinRecall {
			objs[i] = 2 * x
		}
	}
	r := metric.Report{MeanRecall: x, MinRecall: x, HMean: x, GMean: x, MinCoverage: x}
	return &loop.Summary{Steps: 100, Objective: metric.MinRecall, TestAfter: r, TestObjAfter: objs}
}

func TestStatusAndReport(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	// Members: 0-2 selmix seeds 1-3, 3-5 uniform seeds 1-3.
	// Member 0 kept a model whose optimized ψ on test is 0.9.
	kept := summary(0.2)
	bestObjs := make([]float64, len(metric.Objectives()))
	bestObjs[metric.MinRecall.Index()] = 0.9
	kept.Best = &loop.Best{Step: 50, Objective: metric.MinRecall, Psi: 0.3, Test: kept.TestAfter, TestObj: bestObjs}
	fakeRun(t, s, 0, []float64{0.1, 0.3, 0.2}, kept).Close()
	fakeRun(t, s, 1, []float64{0.1, 0.2}, summary(0.4)).Close()
	fakeRun(t, s, 2, []float64{0.5}, summary(0.6)).Close()
	live := fakeRun(t, s, 3, []float64{0.4, 0.45}, nil) // still writing: running
	defer live.Close()
	crashed := fakeRun(t, s, 4, []float64{0.3}, nil) // no writer, not finished: crashed
	crashed.Close()
	// member 5 never started.

	st, err := sweep.NewReader(s, nil).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		state    string
		cat      sweep.Category
		active   bool
		step     string
		psi      string
		best     string
		historyN int
	}
	want := []row{
		{"finished", sweep.Finished, false, "100/100", "0.2000", "0.3000", 3},
		{"finished", sweep.Finished, false, "100/100", "0.2000", "0.2000", 2},
		{"finished", sweep.Finished, false, "100/100", "0.5000", "0.5000", 1},
		{"running", sweep.Running, true, "25/100", "0.4500", "0.4500", 2},
		{"crashed", sweep.Failed, false, "0/100", "0.3000", "0.3000", 1},
		{"not started", sweep.Pending, false, "-", "-", "-", 0},
	}
	for i, w := range want {
		m := st.Members[i]
		got := row{m.StateText(), m.Category, m.Active, m.StepText(), m.PsiText(), m.BestText(), len(m.History)}
		if got != w {
			t.Errorf("member %d: got %+v, want %+v", i, got, w)
		}
	}
	// The optimized ψ on test at the end (2x) and at the best step.
	for i, w := range [][2]string{{"0.4000", "0.9000"}, {"0.8000", "-"}, {"1.2000", "-"}, {"-", "-"}, {"-", "-"}, {"-", "-"}} {
		if m := st.Members[i]; m.TestEndText() != w[0] || m.TestBestText() != w[1] {
			t.Errorf("member %d: test ψ end %s, at best %s; want %s, %s", i, m.TestEndText(), m.TestBestText(), w[0], w[1])
		}
	}
	if got, want := st.Summary(), "6 members: 3 finished, 1 running, 1 pending, 1 failed"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if got := st.Resumable(); !reflect.DeepEqual(got, []int{4, 5}) {
		t.Errorf("resumable %v, want [4 5]", got)
	}
	if st.Done() {
		t.Error("Done with a member running")
	}
	var tbl strings.Builder
	if err := st.WriteTable(&tbl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tbl.String(), "POLICY") || !strings.Contains(tbl.String(), "crashed") {
		t.Errorf("table:\n%s", tbl.String())
	}

	res, err := s.Results()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notes) > 0 {
		t.Errorf("notes: %v", res.Notes)
	}
	if res.ID != s.ID || res.Members != 6 || res.Finished() != 3 || !reflect.DeepEqual(res.Keys, []string{"policy"}) || len(res.Groups) != 2 {
		t.Fatalf("results %+v, want 6 members, 3 finished, grouped by policy into 2", res)
	}
	// Each finished member's seed, for the pairing of --vs.
	if !res.Seeded || !reflect.DeepEqual(res.Columns, []string{"finetune.policy"}) || !reflect.DeepEqual(res.Groups[0].Seeds, []string{"1", "2", "3"}) || len(res.Groups[1].Seeds) != 0 {
		t.Errorf("seeded %v, columns %q, seeds %q and %q; want seeded, finetune.policy, 1 2 3 and none", res.Seeded, res.Columns, res.Groups[0].Seeds, res.Groups[1].Seeds)
	}
	// selmix: members 0-2, all finished, min recall 0.2, 0.4, 0.6 and ψ
	// (min recall is optimized) twice that; uniform: none finished.
	for i, w := range []struct {
		key, label string
		members    int
		psi        []float64
		first      bool
	}{
		{"selmix", "policy=selmix", 3, []float64{0.4, 0.8, 1.2}, true},
		{"uniform", "policy=uniform", 3, nil, false},
	} {
		g := res.Groups[i]
		var psi []float64
		for _, sum := range g.Summaries {
			psi = append(psi, sweep.OptimizedColumn.After(sum))
		}
		if !reflect.DeepEqual(g.Key, []string{w.key}) || g.Label != w.label || g.Members != w.members || !reflect.DeepEqual(psi, w.psi) || (g.First != nil) != w.first {
			t.Errorf("group %d: key %v label %q, %d members, ψ %v, first %v; want %s, %q, %d, %v, %v", i, g.Key, g.Label, g.Members, psi, g.First != nil, w.key, w.label, w.members, w.psi, w.first)
		}
	}
	if g := res.Groups[0]; g.First == nil || g.First.Meta.Name != s.Members[0].Run || g.History == nil || len(g.History.Refreshes) != 3 {
		t.Errorf("selmix's first finished member is not member 0 with its log")
	}
	// Every finished member, with its log, for the spread over seeds.
	for i, want := range []int{3, 0} {
		g := res.Groups[i]
		if len(g.Runs) != want || len(g.Histories) != want {
			t.Errorf("group %d: %d runs and %d logs, want %d finished members", i, len(g.Runs), len(g.Histories), want)
		}
		for k, run := range g.Runs {
			if run.Meta.Name != s.Members[k].Run || g.Histories[k].Final == nil {
				t.Errorf("group %d run %d: %s, want member %d finished", i, k, run.Meta.Name, k)
			}
		}
	}
}

// A sweep whose sweep.json is damaged is named as damaged — by id, id
// prefix, name or folder — not reported missing.
func TestOpenDamaged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content func(good []byte) []byte
		reason  string
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }, "unexpected end of JSON input"},
		{"empty", func([]byte) []byte { return nil }, "unexpected end of JSON input"},
		{"inconsistent", func([]byte) []byte { return []byte(`{"id": "x", "name": "small"}`) }, `bad id "x" or name "small"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
			path := filepath.Join(s.Dir, "sweep.json")
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.content(good), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{s.ID, s.ID[:len("small-")+2], "small", s.Dir} {
				_, err := sweep.Open(s.Root, q)
				want := path + " is damaged: " + tc.reason
				if err == nil || err.Error() != want {
					t.Errorf("Open(%q): %v, want %q", q, err, want)
				}
			}
			if _, err := sweep.Open(s.Root, "nope"); err == nil || !strings.HasPrefix(err.Error(), `no sweep "nope"`) {
				t.Errorf("Open(nope): %v", err)
			}
		})
	}
}

// sweep.json's fields name runs and folders selmix acts on: a member run
// that is not <id>-<index> (a path with an escape sequence was shown as
// "not started" and sweep resume started a second run beside the crashed
// one) and a runs_root that is not the root the sweep is in (sweep resume
// created /nonexistent/root and ran every member there) are damage,
// refused in one line.
func TestLoadRefusesForeignFields(t *testing.T) {
	s := sweeptest.New(t, sweeptest.SmallSpec, search.ExecLocal)
	other := t.TempDir()
	for _, c := range []struct {
		name string
		edit func(m *sweep.Manifest)
		want string
	}{
		{"member run", func(m *sweep.Manifest) { m.Members[1].Run = "../../../x/pwn\x1b]0;X\x07" }, `member 1: run "../../../x/pwn\x1b]0;X\a", want "` + s.ID + `-1"`},
		{"runs_root missing", func(m *sweep.Manifest) { m.Root = "/nonexistent/root" }, `runs_root "/nonexistent/root": stat /nonexistent/root: no such file or directory`},
		{"runs_root elsewhere", func(m *sweep.Manifest) { m.Root = other }, `runs_root "` + other + `" is not the runs root the sweep is in`},
		{"id of another folder", func(m *sweep.Manifest) { m.ID = m.Name + "-beef" }, `id "small-beef" is not its folder's name`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cp := *s
			cp.Members = append([]search.Member(nil), s.Members...)
			c.edit(&cp.Manifest)
			if err := cp.Save(); err != nil {
				t.Fatal(err)
			}
			defer s.Save()
			_, err := sweep.Load(s.Dir)
			if !errors.Is(err, runs.ErrDamaged) || !strings.Contains(err.Error(), c.want) || strings.ContainsAny(err.Error(), "\x1b\x07") {
				t.Errorf("error %v, want damage saying %s", err, c.want)
			}
		})
	}
	if _, err := sweep.Load(s.Dir); err != nil {
		t.Errorf("the sweep as written: %v", err)
	}
}
