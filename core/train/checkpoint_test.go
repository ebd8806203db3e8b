package train_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"selmix/core/gain"
	"selmix/core/local"
	"selmix/core/loop"
	"selmix/core/train"
)

// Resuming from any checkpoint reproduces the uninterrupted run exactly:
// same summary, same final weights.
func TestResumeEqualsUninterrupted(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	ctl := []loop.Control{{Op: loop.OpSet, Key: "s", Value: "3", At: 25}, {Op: loop.OpSet, Key: "batch", Value: "8", At: 44}}
	e, err := train.New(cfg, toyLocal(t, sp, cfg.Batch))
	if err != nil {
		t.Fatal(err)
	}
	ckpts := map[int][]byte{}
	var finals int
	e.SetCheckpointer(1, func(step int, b []byte, final bool) error {
		if final {
			finals++
			return nil
		}
		ckpts[step] = b
		return nil
	})
	for _, c := range ctl {
		e.Send(c)
	}
	want, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantParams := e.Trainer().(*local.Local).Net().Params()
	if finals != 1 {
		t.Errorf("%d final checkpoints, want 1", finals)
	}
	for _, step := range []int{10, 20, 30, 40, 50} {
		b, ok := ckpts[step]
		if !ok {
			t.Fatalf("no checkpoint at step %d (have %d)", step, len(ckpts))
		}
		r, err := resumeToy(cfg, sp, b)
		if err != nil {
			t.Fatalf("resume at %d: %v", step, err)
		}
		// Controls not yet applied at the checkpoint are sent again, as
		// the run store does from its log.
		for _, c := range ctl {
			if c.At >= step {
				r.Send(c)
			}
		}
		got, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got.Seconds, want.Seconds = 0, 0
		if !reflect.DeepEqual(got, want) {
			t.Errorf("resumed at %d: summary differs\n got %+v\nwant %+v", step, got, want)
		}
		if !reflect.DeepEqual(r.Trainer().(*local.Local).Net().Params(), wantParams) {
			t.Errorf("resumed at %d: final weights differ", step)
		}
	}
}

func TestResumeRejectsDamage(t *testing.T) {
	sp := toySplit(3, 5, 60, 2)
	cfg := toyConfig()
	e, err := train.New(cfg, toyLocal(t, sp, cfg.Batch))
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resumeToy(cfg, sp, b); err != nil {
		t.Fatalf("intact checkpoint: %v", err)
	}
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"truncated", b[:len(b)/2]},
		{"flipped byte", func() []byte { c := append([]byte(nil), b...); c[len(c)/3] ^= 1; return c }()},
		{"wrong magic", append([]byte("NOTSELMX"), b[8:]...)},
	} {
		if _, err := resumeToy(cfg, sp, c.b); !errors.Is(err, train.ErrCheckpoint) {
			t.Errorf("%s: err = %v, want ErrCheckpoint", c.name, err)
		}
	}
}

func FuzzResume(f *testing.F) {
	sp := toySplit(3, 5, 60, 2)
	cfg := toyConfig()
	tr, _ := local.New(toyNetF(sp, cfg.Batch), sp, toySeed)
	e, _ := train.New(cfg, tr)
	b, _ := e.MarshalState()
	f.Add(b)
	f.Add([]byte("SELMIXCK\x05\x00\x00\x00{}"))
	// A checkpoint with the samples form's features and the multipliers'
	// memory, taken after a refresh: the float32 block and its labels.
	sc := cfg
	sc.Form, sc.Memory, sc.Draws, sc.Objective = gain.Samples, loop.MemoryIntegral, 2, "mean-recall@cov"
	sc.Steps = 12
	if tr, err := local.New(toyNetF(sp, sc.Batch), sp, toySeed); err == nil {
		if e, err := train.New(sc, tr); err == nil {
			var last []byte
			e.SetCheckpointer(1, func(_ int, b []byte, _ bool) error { last = b; return nil })
			if _, err := e.Run(context.Background()); err == nil && last != nil {
				f.Add(last)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		resumeToy(cfg, sp, b) // must not panic
	})
}

// A fork sets hyperparameters at the checkpoint step, before the resumed
// engine has evaluated anything: it must not touch the missing evaluation,
// and must equal a run that made the same change at that step. Acked
// counts the controls the checkpoint already holds.
func TestSetRightAfterResume(t *testing.T) {
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	run := func(e *train.Engine, ctl ...loop.Control) *loop.Summary {
		t.Helper()
		for _, c := range ctl {
			e.Send(c)
		}
		s, err := e.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		s.Seconds = 0
		return s
	}
	set := loop.Control{Op: loop.OpSet, Key: "s", Value: "2", At: 20}
	first, err := train.New(cfg, toyLocal(t, sp, cfg.Batch))
	if err != nil {
		t.Fatal(err)
	}
	var ckpt []byte
	first.SetCheckpointer(2, func(step int, b []byte, final bool) error {
		if step == 20 && !final {
			ckpt = b
		}
		return nil
	})
	run(first, loop.Control{Op: loop.OpSet, Key: "omega", Value: "30", At: 5})
	if ckpt == nil {
		t.Fatal("no checkpoint at step 20")
	}
	forked, err := resumeToy(cfg, sp, ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if forked.Acked() != 1 {
		t.Errorf("Acked() = %d after resume, want 1 (the omega change)", forked.Acked())
	}
	got := run(forked, set)
	straight, err := train.New(cfg, toyLocal(t, sp, cfg.Batch))
	if err != nil {
		t.Fatal(err)
	}
	want := run(straight, loop.Control{Op: loop.OpSet, Key: "omega", Value: "30", At: 5}, set)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fork with s=2 at step 20 differs from a run that set it there\n got %+v\nwant %+v", got, want)
	}
}

// A stop at any step — mid-interval, at a refresh boundary, right after a
// control, while a resumed run goes on — leaves a checkpoint from which the
// run continues exactly: the events of the stopped sessions (without their
// stop) and of the last one together equal the uninterrupted run's, and so
// do the summary and the weights.
func TestStopResumeEqualsUninterrupted(t *testing.T) {
	for _, adapt := range []loop.Adapt{loop.AdaptNone, loop.AdaptRefresh, loop.AdaptLR} {
		t.Run(string(adapt), func(t *testing.T) { testStopResume(t, adapt, gain.SelMix, nil) })
	}
	// The baselines' losses are recomputed from the checkpoint's evaluation.
	for _, pol := range []gain.Policy{gain.CSST, gain.MiSLAS2} {
		t.Run(string(pol), func(t *testing.T) { testStopResume(t, loop.AdaptNone, pol, nil) })
	}
	// The samples form's G is recomputed from the samples the checkpoint
	// keeps (the features have moved since), the memory of the
	// multipliers restored.
	t.Run("samples", func(t *testing.T) {
		testStopResume(t, loop.AdaptLR, gain.SelMix, func(c *loop.Config) {
			c.Form, c.Memory, c.Draws, c.Seed, c.Objective = gain.Samples, loop.MemoryIntegral, 3, 5, "mean-recall@cov"
			c.Plugin = true // the pre-trained model's plug-in result travels in the checkpoint
		})
	})
}

func testStopResume(t *testing.T, adapt loop.Adapt, policy gain.Policy, more func(*loop.Config)) {
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	cfg.Adapt, cfg.Policy = adapt, policy
	if more != nil {
		more(&cfg)
	}
	// Scheduled controls: a checkpoint before their step keeps them
	// pending with their source (the events compare sources too).
	ctl := []loop.Control{{Op: loop.OpSet, Key: "s", Value: "3", At: 25, Source: loop.SourceSchedule}, {Op: loop.OpSet, Key: "batch", Value: "8", At: 44, Source: loop.SourceSchedule}}
	ref := runToy(t, cfg, ctl)
	for _, s := range ref.events {
		if s.Ack != nil && s.Ack.Control.Key == "s" && s.Ack.Control.Source != loop.SourceSchedule {
			t.Fatalf("ack of a scheduled control has source %q", s.Ack.Control.Source)
		}
		if s.Ack != nil && s.Ack.Control.Auto() && (s.Ack.Control.Key != "lr" && s.Ack.Control.Key != "refresh") {
			t.Fatalf("adapt changed %s", s.Ack.Control.Key)
		}
	}
	if adapt != loop.AdaptNone {
		auto := 0
		for _, s := range ref.events {
			if s.Ack != nil && s.Ack.Control.Auto() {
				auto++
			}
		}
		if auto == 0 {
			t.Fatalf("adapt %s made no change in the whole run: the test would say nothing of its state", adapt)
		}
	}
	for _, stops := range [][]int{{1}, {7}, {10}, {20}, {25}, {26}, {44}, {59}, {13, 25, 40}, {10, 11, 12}} {
		var events []loop.Snapshot
		var acks int // controls acknowledged so far, as the log would say
		var e *train.Engine
		var err error
		tr := toyLocal(t, sp, cfg.Batch)
		if e, err = train.New(cfg, tr); err != nil {
			t.Fatal(err)
		}
		var sum *loop.Summary
		for i := 0; ; i++ {
			var ckpt []byte
			e.SetCheckpointer(3, func(step int, b []byte, final bool) error {
				ckpt = b
				return nil
			})
			train.SetPace(e, 1+i%4) // sessions step in runs of different lengths
			if i == 0 {
				// Scheduled controls stay pending in every checkpoint
				// until their step.
				for _, c := range ctl {
					e.Send(c)
				}
			}
			if i < len(stops) {
				e.Send(loop.Control{Op: loop.OpStop, At: stops[i]})
			}
			st := e.Subscribe()
			done := make(chan []loop.Snapshot)
			go func() {
				var ev []loop.Snapshot
				for s, ok := st.Next(context.Background()); ok; s, ok = st.Next(context.Background()) {
					if s.Kind != loop.KindStep {
						ev = append(ev, s)
					}
				}
				done <- ev
			}()
			sum, err = e.Run(context.Background())
			evs := <-done
			if i == len(stops) {
				if err != nil {
					t.Fatalf("stops %v: last session: %v", stops, err)
				}
				events = append(events, evs...)
				break
			}
			if !errors.Is(err, train.ErrStopped) || sum.Steps != stops[i] {
				t.Fatalf("stops %v: session %d ended with %v at step %d", stops, i, err, sum.Steps)
			}
			last := evs[len(evs)-1]
			if last.Kind != loop.KindFinal || last.State != loop.Stopped {
				t.Fatalf("stops %v: session %d ends with %v (%s), want a stopped final", stops, i, last.Kind, last.State)
			}
			events = append(events, evs[:len(evs)-1]...)
			for _, s := range evs {
				if s.Kind == loop.KindControl && s.Ack != nil {
					acks++
				}
			}
			if e, err = resumeToy(cfg, sp, ckpt); err != nil {
				t.Fatalf("stops %v: resume after session %d: %v", stops, i, err)
			}
			if e.Acked() != acks {
				t.Fatalf("stops %v: resumed engine acknowledged %d controls, the log %d", stops, e.Acked(), acks)
			}
		}
		sum.Seconds, ref.sum.Seconds = 0, 0
		if !reflect.DeepEqual(sum, ref.sum) {
			t.Errorf("stops %v: summary differs\n got %+v\nwant %+v", stops, sum, ref.sum)
		}
		if !reflect.DeepEqual(e.Trainer().(*local.Local).Net().Params(), ref.params) {
			t.Errorf("stops %v: final weights differ", stops)
		}
		if g, w := eventKeys(events), eventKeys(ref.events); !reflect.DeepEqual(g, w) {
			t.Errorf("stops %v: events differ\n got %v\nwant %v", stops, g, w)
		}
	}
}

// A version 2 checkpoint (testdata/checkpoint-v2.ckpt: the toy run of
// TestResumeEqualsUninterrupted at step 20, written when the envelope
// named the fields of its pending controls, best and reports as Go does)
// still opens: they read as written, the version 3 checkpoint it is
// written as again names every field in snake_case, and both resume to
// the same end, the pending controls taking effect at their steps.
func TestCheckpointVersion2(t *testing.T) {
	v2, err := os.ReadFile(filepath.Join("testdata", "checkpoint-v2.ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(v2[:8]) != "SELMIXC2" {
		t.Fatalf("the fixture starts %q, not a version 2 checkpoint", v2[:8])
	}
	sp := toySplit(4, 6, 90, 1)
	cfg := toyConfig()
	old, err := resumeToy(cfg, sp, v2)
	if err != nil {
		t.Fatalf("version 2 checkpoint: %v", err)
	}
	if b := old.Best(); b == nil || b.Step != 0 || b.Objective != "min-recall" || b.Psi != 0.003884060087424092 ||
		b.Val.MeanRecall != 0.25625 || !reflect.DeepEqual(b.Test.Recall, []float64{0, 0, 0, 1}) || len(b.TestObj) != 10 {
		t.Errorf("best read from the version 2 checkpoint: %+v", b)
	}
	v3, err := old.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	js := string(v3[12 : 12+binary.LittleEndian.Uint32(v3[8:])])
	if string(v3[:8]) != "SELMIXC3" || !strings.HasPrefix(js, `{"version":3,`) {
		t.Errorf("written again as %q, JSON %.20s…; want SELMIXC3, version 3", v3[:8], js)
	}
	for _, want := range []string{
		`"pending":[{"op":"set","key":"s","value":"3","at":25},{"op":"set","key":"batch","value":"8","at":44}]`,
		`"val_before":{"k":4,"prior":[0.25,0.25,0.25,0.25],"recall":[0,0,0.025,1],`, `"mean_recall":0.25625,`,
		`"best":{"step":0,"objective":"min-recall","psi":0.003884060087424092,"val":{"k":4,`, `"test_obj":[0.25,`,
	} {
		if !strings.Contains(js, want) {
			t.Errorf("version 3 JSON lacks %s:\n%s", want, js)
		}
	}
	if m := regexp.MustCompile(`"[A-Z][A-Za-z]*":`).FindString(js); m != "" {
		t.Errorf("version 3 JSON has a Go field name %s:\n%s", m, js)
	}
	cur, err := resumeToy(cfg, sp, v3)
	if err != nil {
		t.Fatalf("version 3 checkpoint: %v", err)
	}
	run := func(e *train.Engine) (*loop.Summary, []string) {
		t.Helper()
		st := e.Subscribe()
		done := make(chan []string)
		go func() {
			var acks []string
			for s, ok := st.Next(context.Background()); ok; s, ok = st.Next(context.Background()) {
				if s.Ack != nil {
					acks = append(acks, fmt.Sprintf("%s@%d", s.Ack.Control, s.Ack.Step))
				}
			}
			done <- acks
		}()
		sum, err := e.Run(context.Background())
		acks := <-done
		if err != nil {
			t.Fatal(err)
		}
		sum.Seconds = 0
		return sum, acks
	}
	got, gotAcks := run(old)
	want, wantAcks := run(cur)
	if w := []string{"set s=3@25", "set batch=8@44"}; !reflect.DeepEqual(gotAcks, w) || !reflect.DeepEqual(wantAcks, w) {
		t.Errorf("controls acknowledged: from version 2 %v, from version 3 %v; want %v", gotAcks, wantAcks, w)
	}
	if got.ValBefore.MeanRecall != 0.25625 || got.TestBefore.MinCoverage != 0.00625 {
		t.Errorf("summary's before: val mean recall %v, test min coverage %v; want 0.25625, 0.00625", got.ValBefore.MeanRecall, got.TestBefore.MinCoverage)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("resumed from version 2 and from version 3: summaries differ\n got %+v\nwant %+v", got, want)
	}
}

// CheckpointHead accepts a checkpoint whose file is the size its header
// declares and refuses one cut short or grown (a sparse 5 GB tail made
// resume read 5 GB into memory), reading only the header.
func TestCheckpointHead(t *testing.T) {
	sp := toySplit(3, 5, 60, 2)
	cfg := toyConfig()
	e, err := train.New(cfg, toyLocal(t, sp, cfg.Batch))
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(b))
	for _, c := range []struct {
		name    string
		b       []byte
		size    int64
		wantErr string
	}{
		{"intact", b, n, ""},
		{"grown", b, 5 << 30, fmt.Sprintf("5368709120 bytes, its header declares %d", n)},
		{"one byte more", append(slices.Clone(b), 0), n + 1, fmt.Sprintf("%d bytes, its header declares %d", n+1, n)},
		{"cut", b[:n-9], n - 9, fmt.Sprintf("%d bytes, its header declares %d", n-9, n)},
		{"header past the end", b[:40], 40, "header length"},
		{"short", b[:10], 10, "truncated"},
		{"wrong magic", append([]byte("NOTSELMX"), b[8:]...), n, "bad header"},
		{"huge header length", append(append([]byte("SELMIXC3"), 0xff, 0xff, 0xff, 0x7f), b[12:]...), 5 << 30, "header length 2147483647"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// What is read past the header is zeros, as in a sparse file.
			r := io.MultiReader(bytes.NewReader(c.b), io.LimitReader(zeros{}, c.size-int64(len(c.b))))
			err := train.CheckpointHead(r, c.size)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			if !errors.Is(err, train.ErrCheckpoint) || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v, want ErrCheckpoint saying %q", err, c.wantErr)
			}
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// FuzzCheckpointHead: the header check never panics, and what a
// checkpoint's header accepts at its own size the whole parse does not
// refuse for its length.
func FuzzCheckpointHead(f *testing.F) {
	sp := toySplit(3, 5, 60, 2)
	cfg := toyConfig()
	tr, _ := local.New(toyNetF(sp, cfg.Batch), sp, toySeed)
	e, _ := train.New(cfg, tr)
	b, _ := e.MarshalState()
	f.Add(b)
	f.Add([]byte("SELMIXC3\x05\x00\x00\x00{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := train.CheckpointHead(bytes.NewReader(b), int64(len(b)))
		if err != nil && !errors.Is(err, train.ErrCheckpoint) {
			t.Fatalf("error %v does not wrap ErrCheckpoint", err)
		}
	})
}

// rewriteCheckpoint returns checkpoint b with its JSON changed by edit and
// its checksum made valid again: content no checksum can catch.
func rewriteCheckpoint(t *testing.T, b []byte, magic string, edit func(map[string]any)) []byte {
	t.Helper()
	jl := binary.LittleEndian.Uint32(b[8:])
	var m map[string]any
	if err := json.Unmarshal(b[12:12+jl], &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	js, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(magic), binary.LittleEndian.AppendUint32(nil, uint32(len(js)))...)
	out = append(append(out, js...), b[12+jl:len(b)-4]...)
	return binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(out))
}

// A checkpoint rewritten with a valid checksum around a state no engine
// could be in, and a version 2 header over version 3 JSON (whose reports
// then read as zeros, 18 fields of the summary showing 0.0000), are not
// valid checkpoints: resume passes them over as it does damage, where it
// failed with exit 1 or went on from zeros.
func TestCheckpointImpossibleContent(t *testing.T) {
	v2, err := os.ReadFile(filepath.Join("testdata", "checkpoint-v2.ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := resumeToy(toyConfig(), toySplit(4, 6, 90, 1), v2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.ParseCheckpoint(b); err != nil {
		t.Fatalf("intact: %v", err)
	}
	hyper := func(k string, v any) func(m map[string]any) {
		return func(m map[string]any) { m["hyper"].(map[string]any)[k] = v }
	}
	for _, c := range []struct {
		name, magic string
		edit        func(map[string]any)
		want        string
	}{
		{"batch 0", "SELMIXC3", hyper("batch", 0), "hyperparameters: batch"},
		{"refresh 0", "SELMIXC3", hyper("refresh", 0), "hyperparameters: refresh"},
		{"lr -1", "SELMIXC3", hyper("lr", -1), "hyperparameters: lr"},
		{"objective bogus", "SELMIXC3", hyper("objective", "bogus"), "objective"},
		{"step -5", "SELMIXC3", func(m map[string]any) { m["step"] = -5 }, "step -5"},
		{"unknown pending op", "SELMIXC3", func(m map[string]any) {
			m["pending"] = []any{map[string]any{"op": "bogus", "at": 50}}
		}, "pending control"},
		{"pending set of an unknown key", "SELMIXC3", func(m map[string]any) {
			m["pending"] = []any{map[string]any{"op": "set", "key": "nope", "value": "1", "at": 50}}
		}, "pending control"},
		{"min recall not the least", "SELMIXC3", func(m map[string]any) { m["val_before"].(map[string]any)["min_recall"] = 0.5 }, "val_before: min recall"},
		{"mean recall not the mean", "SELMIXC3", func(m map[string]any) { m["test_before"].(map[string]any)["mean_recall"] = 0.9 }, "test_before: mean recall"},
		{"version 2 header over version 3 JSON", "SELMIXC2", func(m map[string]any) { m["version"] = 2; delete(m, "pending") }, "version 3 JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := train.ParseCheckpoint(rewriteCheckpoint(t, b, c.magic, c.edit))
			if !errors.Is(err, train.ErrCheckpoint) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want ErrCheckpoint saying %q", err, c.want)
			}
		})
	}
}
