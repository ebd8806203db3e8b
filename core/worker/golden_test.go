package worker_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"selmix/core/loop"
	"selmix/core/train"
	"selmix/core/worker"
)

// The corpus of docs/worker-protocol/, the examples both sides of the
// protocol replay: requests/NAME.frame are the exact bytes this client
// sends, replies/NAME.frame replies a worker may send, and sessions.json
// the exchanges they make, in order. The Python worker's
// tests/test_golden.py answers the requests and reads the replies.
var update = flag.Bool("update", false, "rewrite the frames of docs/worker-protocol/ from this client")

const corpus = "../../docs/worker-protocol"

// goldenEnv makes the test binary a recording worker (serveGolden); its
// value is a recording in JSON.
const goldenEnv = "SELMIX_GOLDEN_WORKER"

// recording is what a recording worker answers and where it writes what
// it reads.
type recording struct {
	Corpus  string   `json:"corpus"`  // the corpus folder
	Capture string   `json:"capture"` // request i goes to Capture/i.frame
	Replies []string `json:"replies"` // request i is answered replies/Replies[i].frame
}

// serveGolden serves a recording: each request's bytes are written as
// they came, each reply is the corpus's file as it is. It ends at the end
// of input or of its replies.
func serveGolden(spec string) int {
	var rec recording
	if err := json.Unmarshal([]byte(spec), &rec); err != nil {
		fmt.Fprintln(os.Stderr, "golden worker:", err)
		return 2
	}
	var got bytes.Buffer
	in := io.TeeReader(os.Stdin, &got) // ReadFrame reads exactly one frame
	for i, name := range rec.Replies {
		if _, err := worker.ReadFrame(in); err != nil {
			return 0
		}
		if err := os.WriteFile(filepath.Join(rec.Capture, fmt.Sprintf("%d.frame", i)), got.Bytes(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "golden worker:", err)
			return 2
		}
		got.Reset()
		rep, err := os.ReadFile(filepath.Join(rec.Corpus, "replies", name+".frame"))
		if err == nil {
			_, err = os.Stdout.Write(rep)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "golden worker:", err)
			return 2
		}
	}
	return 0
}

// exchange is one request and the reply it gets, by corpus name.
type exchange struct {
	Request string `json:"request"`
	Reply   string `json:"reply"`
}

// session is a run of exchanges the client makes as drive says.
type session struct {
	Name      string     `json:"name"`
	Exchanges []exchange `json:"exchanges"`
	// drive makes the requests, given a function that starts the client
	// (its hello), and checks what the client made of the replies.
	drive func(t *testing.T, start func() (*worker.Client, error)) `json:"-"`
}

// K, d and the sizes are those of the Python tests' fixtures.built(), so
// that the reference worker can answer the requests on its own toy
// problem.
const goldenK, goldenD = 3, 4

var (
	goldenP1      = []float64{0.3, 0.1, 0.1, 0.1, 0.2, 0, 0.1, 0, 0.1}
	goldenP2      = []float64{0.2, 0.1, 0, 0.1, 0.2, 0.1, 0, 0.1, 0.2}
	goldenTargets = []float64{0.8, 0.1, 0.1, 0.1, 0.8, 0.1, 0.1, 0.1, 0.8}
	goldenAdjust  = []float64{-0.5, 0, 0.25}
	goldenState   = []byte("an opaque state of 32 bytes.\x00\x01\x02\xff")
)

// trainOf is a train request of the corpus: mode, its learning rates
// and (for pairs) its P.
func trainOf(mode train.Mode, lr []float64, P []float64) *train.TrainRequest {
	return &train.TrainRequest{Mode: mode, LR: lr, P: P, Batch: 4, BetaMin: 0.6, WeightDecay: 5e-4, Momentum: 0.9}
}

// The sessions of the corpus. "run" makes every request a run makes;
// "refusals" and "bad-input" get replies that are not ok.
func goldenSessions() []session {
	return []session{
		{
			Name: "run",
			Exchanges: []exchange{
				{"hello", "hello"}, {"load", "load"}, {"evaluate-centroids", "evaluate-centroids"}, {"evaluate", "evaluate"},
				{"pseudo", "pseudo"}, {"train-mixup", "train"}, {"train-mixup-same-p", "train"}, {"train-resample", "train"},
				{"train-ce", "train"}, {"train-soft", "train"}, {"features-val", "features-val"}, {"features-train", "features-train"},
				{"save", "save"}, {"bye", "bye"},
			},
			drive: driveRun,
		},
		{
			Name:      "refusals",
			Exchanges: []exchange{{"hello", "hello"}, {"train-ce", "error"}, {"train-ce", "error-out-of-memory"}, {"bye", "bye"}},
			drive: func(t *testing.T, start func() (*worker.Client, error)) {
				c, err := start()
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				_, err = c.Train(trainOf(train.ModeCE, []float64{0.01}, nil))
				if want := "worker: train: loss is nan at step 4"; err == nil || err.Error() != want || errors.Is(err, train.ErrHalt) {
					t.Errorf("an error reply: %v, want %q", err, want)
				}
				_, err = c.Train(trainOf(train.ModeCE, []float64{0.01}, nil))
				if !errors.Is(err, worker.ErrOutOfMemory) || !errors.Is(err, train.ErrHalt) {
					t.Errorf("an out-of-memory reply: %v, want ErrOutOfMemory and ErrHalt", err)
				}
			},
		},
		{
			Name:      "bad-input",
			Exchanges: []exchange{{"hello", "error-bad-input"}, {"bye", "bye"}},
			drive: func(t *testing.T, start func() (*worker.Client, error)) {
				c, err := start()
				if err == nil {
					c.Close()
				}
				if want := "worker: hello: --root /data/x: no such folder"; !errors.Is(err, worker.ErrBadInput) || err.Error() != want {
					t.Errorf("a bad_input reply to hello: %v, want %q marked ErrBadInput", err, want)
				}
			},
		},
	}
}

// driveRun makes a run's requests and checks what the client read from
// each reply.
func driveRun(t *testing.T, start func() (*worker.Client, error)) {
	c, err := start()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantInfo := train.Info{
		K: goldenK, D: goldenD, ClassNames: []string{"cat", "dog", "bird"}, TrainCounts: []int{15, 10, 5},
		Labeled: 30, Unlabeled: 12, Val: 9, Test: 6,
		Device:    "cuda:0 NVIDIA H100 80GB HBM3 (selmix-torch 1 (torch 2.11.0+cu128))",
		WorldSize: 1, GPUs: []string{"0"},
		Env: map[string]string{"torch": "2.11.0+cu128", "device": "cuda:0 NVIDIA H100 80GB HBM3", "threads": "8", "deterministic": "true"},
	}
	if info := c.Info(); !reflect.DeepEqual(info, wantInfo) {
		t.Errorf("hello: %+v\nwant %+v", info, wantInfo)
	}
	if err := c.Load(&train.Saved{Format: "selmix-torch/2", State: goldenState}); err != nil {
		t.Fatal(err)
	}
	ev, err := c.Evaluate(train.SplitVal, true)
	if err != nil {
		t.Fatal(err)
	}
	r := goldenReplies()["evaluate-centroids"]
	if ev.Rows != 9 || !reflect.DeepEqual(ev.C.RawMatrix().Data, scaled(r.Arrays[0].Floats(), 9)) ||
		!reflect.DeepEqual(ev.Z.RawMatrix().Data, r.Arrays[1].Floats()) || !reflect.DeepEqual(ev.W.RawMatrix().Data, r.Arrays[2].Floats()) ||
		!reflect.DeepEqual(ev.B, r.Arrays[3].Floats()) {
		t.Errorf("evaluate with centroids: rows %d, C %v, Z %v, W %v, b %v", ev.Rows, ev.C.RawMatrix().Data, ev.Z.RawMatrix().Data, ev.W.RawMatrix().Data, ev.B)
	}
	wantSys := &loop.System{
		Device: "cuda:0 NVIDIA H100 80GB HBM3", WorldSize: 1, MemUsed: 1 << 30, MemReserved: 2 << 30, MemPeak: 3 << 29,
		Util: 0.5, RSS: 3 << 30, CPU: 1.5, ImgS: 1234.5,
		GPUs: []loop.GPU{{ID: "0", Name: "NVIDIA H100 80GB HBM3", Ranks: 1, MemUsed: 1 << 30, MemReserved: 2 << 30, MemPeak: 3 << 29, MemTotal: 85520809984, Util: 0.5}},
	}
	if !reflect.DeepEqual(ev.Sys, wantSys) {
		t.Errorf("evaluate's system: %+v\nwant %+v", ev.Sys, wantSys)
	}
	if ev, err = c.Evaluate(train.SplitTest, false); err != nil {
		t.Fatal(err)
	}
	if r := goldenReplies()["evaluate"]; ev.Rows != 6 || !reflect.DeepEqual(ev.C.RawMatrix().Data, scaled(r.Arrays[0].Floats(), 6)) || ev.Z != nil {
		t.Errorf("evaluate: rows %d, C %v, Z %v", ev.Rows, ev.C.RawMatrix().Data, ev.Z)
	}
	if err := c.Pseudo(false); err != nil {
		t.Fatal(err)
	}
	mixup := trainOf(train.ModeMixup, []float64{0.1, 0.09}, goldenP1)
	mixup.Ahead = 3
	soft := trainOf(train.ModeSoft, []float64{0.05}, nil)
	soft.Sampling, soft.Targets, soft.Adjust, soft.FreezeBackbone = train.SampleClass, goldenTargets, goldenAdjust, true
	for _, req := range []*train.TrainRequest{
		mixup,
		trainOf(train.ModeMixup, []float64{0.08}, goldenP1), // the same P: not sent again
		trainOf(train.ModeResample, []float64{0.07, 0.06, 0.05}, goldenP2),
		trainOf(train.ModeCE, []float64{0.01}, nil),
		soft,
	} {
		loss, err := c.Train(req)
		if err != nil {
			t.Fatal(err)
		}
		if loss != math.Log(3) {
			t.Errorf("train %v: loss %v, want ln 3", req.Mode, loss)
		}
	}
	if !c.HasFeatures() {
		t.Error("hello said features: true, the client did not hear it")
	}
	fr := goldenReplies()["features-val"]
	if X, L, y, err := c.Features(train.SplitVal); err != nil {
		t.Error(err)
	} else if !reflect.DeepEqual(X.RawMatrix().Data, fr.Arrays[0].Floats()) || !reflect.DeepEqual(L.RawMatrix().Data, fr.Arrays[1].Floats()) ||
		!reflect.DeepEqual(y, []int{0, 0, 0, 1, 1, 1, 2, 2, 2}) {
		t.Errorf("features of val: X %v, logits %v, y %v", X.RawMatrix().Data, L.RawMatrix().Data, y)
	}
	if X, err := c.TrainFeatures([][]int{{14}, {0}, {4}}); err != nil {
		t.Error(err)
	} else if !reflect.DeepEqual(X.RawMatrix().Data, goldenReplies()["features-train"].Arrays[0].Floats()) {
		t.Errorf("features of training samples: %v", X.RawMatrix().Data)
	}
	s, err := c.Save()
	if err != nil {
		t.Fatal(err)
	}
	r = goldenReplies()["save"]
	if want := (&train.Saved{Format: "selmix-torch/2", State: goldenState, W: r.Arrays[1].Floats(), B: r.Arrays[2].Floats()}); !reflect.DeepEqual(s, want) {
		t.Errorf("save: %+v\nwant %+v", s, want)
	}
	c.Close()
	// Every reply of the run said how long it took: 14 requests.
	if got, want := c.Busy().Seconds(), 0.25+0.5+2*0.125+0.0625+5*0.03125+0.125+0.0625+0.5+0.0078125; math.Abs(got-want) > 1e-9 {
		t.Errorf("busy %v s, want %v s", got, want)
	}
}

func scaled(v []float64, rows int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / float64(rows)
	}
	return out
}

// arange is n float64s from start by step.
func arange(n int, start, step float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = start + float64(i)*step
	}
	return out
}

// i8 is an i8 array.
func i8(name string, v []int64, shape ...int) worker.Array {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24), byte(x>>32), byte(x>>40), byte(x>>48), byte(x>>56))
	}
	return worker.Array{Name: name, Dtype: "i8", Shape: shape, Data: b}
}

// goldenReplies are the replies of the corpus, as a worker would send
// them: the reference worker's keys, for a worker on one GPU.
func goldenReplies() map[string]*worker.Frame {
	gpu := "NVIDIA H100 80GB HBM3"
	return map[string]*worker.Frame{
		"hello": {Header: map[string]any{
			"ok": true, "protocol": worker.Protocol, "worker": "selmix-torch 1 (torch 2.11.0+cu128)",
			"k": goldenK, "d": goldenD, "class_names": []string{"cat", "dog", "bird"}, "train_counts": []int{15, 10, 5},
			"sizes":  map[string]int{"labeled": 30, "unlabeled": 12, "val": 9, "test": 6},
			"device": "cuda:0 " + gpu, "world_size": 1, "gpus": []string{"0"},
			"env":     map[string]any{"torch": "2.11.0+cu128", "device": "cuda:0 " + gpu, "threads": 8, "deterministic": true},
			"seconds": 0.25, "features": true,
		}},
		"features-val": {
			Header: map[string]any{"ok": true, "rows": 9, "seconds": 0.125},
			Arrays: []worker.Array{
				worker.F32("X", arange(9*goldenD, -2, 0.125), 9, goldenD),
				worker.F32("logits", arange(9*goldenK, 1, -0.25), 9, goldenK),
				i8("y", []int64{0, 0, 0, 1, 1, 1, 2, 2, 2}, 9),
			},
		},
		"features-train": {
			Header: map[string]any{"ok": true, "rows": 3, "seconds": 0.0625},
			Arrays: []worker.Array{worker.F32("X", arange(3*goldenD, 0.5, 0.25), 3, goldenD)},
		},
		"load": {Header: map[string]any{"ok": true, "seconds": 0.5}},
		"evaluate-centroids": {
			Header: map[string]any{"ok": true, "rows": 9, "seconds": 0.125, "system": map[string]any{
				"device": "cuda:0 " + gpu, "world_size": 1, "mem_used": 1 << 30, "mem_reserved": 2 << 30, "mem_peak": 3 << 29,
				"util": 0.5, "rss": 3 << 30, "cpu": 1.5, "img_s": 1234.5,
				"gpus": []any{map[string]any{
					"id": "0", "name": gpu, "ranks": 1, "mem_used": 1 << 30, "mem_reserved": 2 << 30, "mem_peak": 3 << 29,
					"mem_total": 85520809984, "util": 0.5,
				}},
			}},
			Arrays: []worker.Array{
				i8("C", []int64{3, 0, 0, 1, 2, 0, 0, 1, 2}, goldenK, goldenK),
				worker.F64("Z", arange(goldenK*goldenD, -1, 0.25), goldenK, goldenD),
				worker.F64("W", arange(goldenD*goldenK, 0.5, -0.125), goldenD, goldenK),
				worker.F64("b", []float64{0.1, -0.2, 0.3}, goldenK),
			},
		},
		"evaluate": {
			Header: map[string]any{"ok": true, "rows": 6, "seconds": 0.125, "system": map[string]any{"device": "cuda:0 " + gpu}},
			Arrays: []worker.Array{i8("C", []int64{2, 0, 0, 0, 2, 0, 1, 0, 1}, goldenK, goldenK)},
		},
		"pseudo": {Header: map[string]any{"ok": true, "counts": []int{5, 4, 3}, "seconds": 0.0625}},
		"train":  {Header: map[string]any{"ok": true, "loss": math.Log(3), "seconds": 0.03125}},
		"save": {
			Header: map[string]any{"ok": true, "format": "selmix-torch/2", "seconds": 0.5},
			Arrays: []worker.Array{
				worker.Bytes("state", goldenState),
				worker.F64("W", arange(goldenD*goldenK, 0.5, -0.125), goldenD, goldenK),
				worker.F64("b", []float64{0.1, -0.2, 0.3}, goldenK),
			},
		},
		"bye":   {Header: map[string]any{"ok": true, "seconds": 0.0078125}},
		"error": {Header: map[string]any{"ok": false, "error": "train: loss is nan at step 4"}},
		"error-out-of-memory": {Header: map[string]any{
			"ok": false, "reason": worker.ReasonOutOfMemory,
			"error": "train: out of memory (CUDA out of memory. Tried to allocate 2.00 GiB.); the likely cause is the training batch " +
				"(mixup puts 2 × batch images through the backbone at once): lower finetune.batch, --eval-batch or --image-size",
		}},
		"error-bad-input": {Header: map[string]any{"ok": false, "reason": worker.ReasonBadInput, "error": "--root /data/x: no such folder"}},
	}
}

// encode is f's bytes.
func encode(t *testing.T, f *worker.Frame) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := worker.WriteFrame(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeOrCompare writes b to path with -update, else checks that path
// holds b.
func writeOrCompare(t *testing.T, path string, b []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./core/worker -run Golden -update writes it)", err)
	}
	if !bytes.Equal(old, b) {
		t.Errorf("%s differs from what this client makes:\n got  %q\n want %q", path, b, old)
	}
}

// The corpus's sessions: the client sends exactly the corpus's request
// bytes and reads its replies as each session's drive expects.
func TestGoldenSessions(t *testing.T) {
	sessions := goldenSessions()
	replies := goldenReplies()
	for name, f := range replies {
		writeOrCompare(t, filepath.Join(corpus, "replies", name+".frame"), encode(t, f))
	}
	manifest, err := json.MarshalIndent(sessions, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeOrCompare(t, filepath.Join(corpus, "sessions.json"), append(manifest, '\n'))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string][]byte{} // request name → its bytes, the same in every session
	for _, s := range sessions {
		capture := t.TempDir()
		rec := recording{Corpus: corpus, Capture: capture}
		for _, x := range s.Exchanges {
			rec.Replies = append(rec.Replies, x.Reply)
		}
		spec, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		s.drive(t, func() (*worker.Client, error) {
			return worker.Start(t.Context(), worker.Options{Command: []string{self}, Seed: 1, Env: []string{goldenEnv + "=" + string(spec)}})
		})
		for i, x := range s.Exchanges {
			b, err := os.ReadFile(filepath.Join(capture, fmt.Sprintf("%d.frame", i)))
			if err != nil {
				t.Fatalf("session %s: request %d (%s) never came: %v", s.Name, i, x.Request, err)
			}
			if old, ok := sent[x.Request]; ok && !bytes.Equal(old, b) {
				t.Errorf("session %s: request %s differs from the one of an earlier session", s.Name, x.Request)
			}
			sent[x.Request] = b
		}
	}
	for name, b := range sent {
		writeOrCompare(t, filepath.Join(corpus, "requests", name+".frame"), b)
	}
	if *update {
		return
	}
	// Nothing in the corpus that no session makes.
	for _, dir := range []string{"requests", "replies"} {
		files, _ := filepath.Glob(filepath.Join(corpus, dir, "*.frame"))
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".frame")
			if _, ok := sent[name]; dir == "requests" && !ok {
				t.Errorf("%s: no session sends it", f)
			}
			if _, ok := replies[name]; dir == "replies" && !ok {
				t.Errorf("%s: no longer a reply of the corpus", f)
			}
		}
	}
}

// goldenRequests are the requests of the corpus as this package types
// them, with their arrays.
func goldenRequests() map[string]struct {
	req    worker.Request
	arrays []worker.Array
} {
	tr := func(mode string, lr []float64, more ...worker.Array) (*worker.TrainRequest, []worker.Array) {
		return &worker.TrainRequest{Mode: mode, Steps: len(lr), Batch: 4, BetaMin: 0.6, WeightDecay: 5e-4, Momentum: 0.9, BackboneLRScale: 0.1},
			append([]worker.Array{worker.F64("lr", lr, len(lr))}, more...)
	}
	type entry = struct {
		req    worker.Request
		arrays []worker.Array
	}
	out := map[string]entry{
		"hello":              {&worker.HelloRequest{Protocol: 1, Seed: 1}, nil},
		"load":               {&worker.LoadRequest{Format: "selmix-torch/2"}, []worker.Array{worker.Bytes("state", goldenState)}},
		"evaluate-centroids": {&worker.EvaluateRequest{Split: "val", Centroids: true}, nil},
		"evaluate":           {&worker.EvaluateRequest{Split: "test"}, nil},
		"pseudo":             {&worker.PseudoRequest{}, nil},
		"save":               {&worker.SaveRequest{}, nil},
		"bye":                {&worker.ByeRequest{}, nil},
		"features-val":       {&worker.FeaturesRequest{Split: "val"}, nil},
		"features-train":     {&worker.FeaturesRequest{Split: "train"}, []worker.Array{i8("pick", []int64{0, 14, 1, 0, 2, 4}, 3, 2)}},
	}
	r, a := tr("mixup", []float64{0.1, 0.09}, worker.F64("P", goldenP1, goldenK, goldenK))
	r.Ahead = 3
	out["train-mixup"] = entry{r, a}
	r, a = tr("mixup", []float64{0.08})
	out["train-mixup-same-p"] = entry{r, a}
	r, a = tr("resample", []float64{0.07, 0.06, 0.05}, worker.F64("P", goldenP2, goldenK, goldenK))
	out["train-resample"] = entry{r, a}
	r, a = tr("ce", []float64{0.01})
	out["train-ce"] = entry{r, a}
	r, a = tr("soft", []float64{0.05}, worker.F64("targets", goldenTargets, goldenK, goldenK), worker.F64("adjust", goldenAdjust, goldenK))
	r.BackboneLRScale, r.Sampling = 0, "class"
	out["train-soft"] = entry{r, a}
	return out
}

// Each request of the corpus decodes into its type, with no key the type
// does not know, and that value encodes to the same bytes.
func TestGoldenRequests(t *testing.T) {
	want := goldenRequests()
	files, err := filepath.Glob(filepath.Join(corpus, "requests", "*.frame"))
	if err != nil || len(files) != len(want) {
		t.Fatalf("%d request files (%v), want %d", len(files), err, len(want))
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".frame")
		w, ok := want[name]
		if !ok {
			t.Errorf("%s: not a request of the corpus", path)
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := worker.ReadFrame(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		req, err := worker.DecodeRequest(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !reflect.DeepEqual(req, w.req) || !reflect.DeepEqual(f.Arrays, w.arrays) {
			t.Errorf("%s: %#v with %d arrays\nwant %#v with %d", path, req, len(f.Arrays), w.req, len(w.arrays))
		}
		// Strictly: every key but "op" and "arrays" is a field of its type.
		fields := map[string]any{}
		for k, v := range f.Header {
			if k != "op" && k != "arrays" {
				fields[k] = v
			}
		}
		js, _ := json.Marshal(fields)
		d := json.NewDecoder(bytes.NewReader(js))
		d.DisallowUnknownFields()
		if err := d.Decode(reflect.New(reflect.TypeOf(w.req).Elem()).Interface()); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		var b bytes.Buffer
		if err := worker.WriteRequest(&b, req, f.Arrays...); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), raw) {
			t.Errorf("%s: encodes again as\n %q\nwant\n %q", path, b.Bytes(), raw)
		}
	}
}

// A typed request writes the bytes of the map headers that requests were
// built as before them (json.Marshal of a map: sorted keys, compact,
// HTML-escaped), whatever its values.
func TestTypedRequestsEncodeAsMaps(t *testing.T) {
	state := worker.Bytes("state", []byte{0, 1, 2})
	lr := worker.F64("lr", []float64{0.1, 1e-7}, 2)
	P := worker.F64("P", []float64{0.25, 0.25, 0.25, 0.25}, 2, 2)
	for _, c := range []struct {
		typed  worker.Request
		old    map[string]any
		arrays []worker.Array
	}{
		{worker.HelloRequest{Protocol: worker.Protocol, Seed: 0}, map[string]any{"op": "hello", "protocol": worker.Protocol, "seed": uint64(0)}, nil},
		{worker.HelloRequest{Protocol: worker.Protocol, Seed: 1<<64 - 1}, map[string]any{"op": "hello", "protocol": worker.Protocol, "seed": uint64(1<<64 - 1)}, nil},
		{worker.LoadRequest{Format: "selmix-torch/2"}, map[string]any{"op": "load", "format": "selmix-torch/2"}, []worker.Array{state}},
		{worker.LoadRequest{Format: "<a&b>\u2028\"é\xff"}, map[string]any{"op": "load", "format": "<a&b>\u2028\"é\xff"}, []worker.Array{state}},
		{worker.EvaluateRequest{Split: "val", Centroids: true}, map[string]any{"op": "evaluate", "split": "val", "centroids": true}, nil},
		{worker.EvaluateRequest{Split: "test"}, map[string]any{"op": "evaluate", "split": "test", "centroids": false}, nil},
		{worker.PseudoRequest{Oracle: true}, map[string]any{"op": "pseudo", "oracle": true}, nil},
		{worker.PseudoRequest{}, map[string]any{"op": "pseudo", "oracle": false}, nil},
		{
			worker.TrainRequest{Mode: "mixup", Steps: 2, Batch: 128, BetaMin: 0.6, WeightDecay: 5e-4, Momentum: 0.9, BackboneLRScale: 0.1, Ahead: 48},
			map[string]any{
				"op": "train", "mode": "mixup", "steps": 2, "batch": 128, "beta_min": 0.6, "weight_decay": 0.0005, "momentum": 0.9,
				"backbone_lr_scale": 0.1, "ahead": 48,
			},
			[]worker.Array{lr, P},
		},
		{
			worker.TrainRequest{Mode: "ce", Steps: 2, Batch: 1, BetaMin: 1e-21, WeightDecay: 0, Momentum: 1, BackboneLRScale: 0.1},
			map[string]any{
				"op": "train", "mode": "ce", "steps": 2, "batch": 1, "beta_min": 1e-21, "weight_decay": 0.0, "momentum": 1.0,
				"backbone_lr_scale": 0.1,
			},
			[]worker.Array{lr},
		},
		{
			worker.TrainRequest{Mode: "soft", Steps: 2, Batch: 7, BetaMin: 0.6, WeightDecay: 1e21, Momentum: 0.9, Sampling: "instance"},
			map[string]any{
				"op": "train", "mode": "soft", "steps": 2, "batch": 7, "beta_min": 0.6, "weight_decay": 1e21, "momentum": 0.9,
				"backbone_lr_scale": 0.0, "sampling": "instance",
			},
			[]worker.Array{lr},
		},
		{worker.SaveRequest{}, map[string]any{"op": "save"}, nil},
		{worker.ByeRequest{}, map[string]any{"op": "bye"}, nil},
	} {
		var typed bytes.Buffer
		if err := worker.WriteRequest(&typed, c.typed, c.arrays...); err != nil {
			t.Fatal(err)
		}
		if old := encode(t, &worker.Frame{Header: c.old, Arrays: c.arrays}); !bytes.Equal(typed.Bytes(), old) {
			t.Errorf("%#v:\n got  %q\n want %q", c.typed, typed.Bytes(), old)
		}
	}
}
