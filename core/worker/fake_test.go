package worker

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"selmix/core/data"
	"selmix/core/data/datatest"
	"selmix/core/local"
	"selmix/core/model"
	"selmix/core/train"
)

// The test binary doubles as a fake worker: with SELMIX_FAKE_WORKER set it
// serves the protocol on stdin/stdout over an in-process local.Local on a
// toy problem, misbehaving as the variable says. A run through it must
// equal the same run in process, bit for bit: every number crosses the
// protocol exactly.
func TestMain(m *testing.M) {
	if mode := os.Getenv("SELMIX_FAKE_WORKER"); mode != "" {
		os.Exit(fakeWorker(mode))
	}
	os.Exit(m.Run())
}

// toySplit is K Gaussian blobs in dim dimensions, long-tailed labeled set,
// with an unlabeled set when unl > 0.
func toySplit(K, dim, n1, unl int, seed uint64) *data.Split {
	counts := make([]int, K)
	for k := range counts {
		counts[k] = max(2, n1>>k)
	}
	return datatest.Blobs(dim, counts, 30, unl, seed)
}

func toyLocal(seed uint64, unl int) (*local.Local, error) {
	sp := toySplit(4, 6, 80, unl, 1)
	net, err := model.New(model.Config{Arch: "mlp", In: 6, Hidden: []int{12, 8}, Classes: 4, Batch: 16, EvalBatch: 32, Seed: 3})
	if err != nil {
		return nil, err
	}
	return local.New(net, sp, seed)
}

// fakeWorker serves one session. Modes: ok, semi (with an unlabeled set),
// crash (exits during the 3rd train), hang (never answers evaluate),
// garbage (answers evaluate with bytes that are no frame), shape (answers
// evaluate with a wrong shape), nan (a NaN in Z), protocol (speaks
// protocol 99), fail (answers train with ok:false).
func fakeWorker(mode string) int {
	r, w := bufio.NewReader(os.Stdin), bufio.NewWriter(os.Stdout)
	reply := func(h map[string]any, arrays ...Array) {
		h["ok"] = true
		if err := WriteFrame(w, &Frame{Header: h, Arrays: arrays}); err != nil {
			fmt.Fprintln(os.Stderr, "fake worker:", err)
			os.Exit(2)
		}
		w.Flush()
	}
	var l *local.Local
	var trains int
	var P, T, A []float64 // the last mixup distribution, soft targets and adjustment received
	for {
		f, err := ReadFrame(r)
		if err != nil {
			return 0
		}
		op, _ := f.Header["op"].(string)
		fmt.Fprintf(os.Stderr, "fake worker: %s\n", op)
		switch op {
		case "hello":
			seed := uint64(f.Header["seed"].(float64))
			unl := 0
			if mode == "semi" {
				unl = 20
			}
			if l, err = toyLocal(seed, unl); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			in := l.Info()
			proto := Protocol
			if mode == "protocol" {
				proto = 99
			}
			reply(map[string]any{"protocol": proto, "worker": "fake", "k": in.K, "d": in.D, "train_counts": in.TrainCounts,
				"sizes":  map[string]any{"labeled": in.Labeled, "unlabeled": in.Unlabeled, "val": in.Val, "test": in.Test},
				"device": "cpu"})
		case "load":
			s, err := local.Load(l.Split(), &train.Saved{Format: f.Header["format"].(string), State: f.Array("state").Data})
			if err != nil {
				reply(map[string]any{"ok": false})
				continue
			}
			l = s
			reply(map[string]any{})
		case "evaluate":
			switch mode {
			case "hang":
				time.Sleep(time.Hour)
			case "garbage":
				os.Stdout.Write([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3})
				time.Sleep(time.Hour)
			}
			split := train.SplitVal
			if f.Header["split"] == "test" {
				split = train.SplitTest
			}
			cent, _ := f.Header["centroids"].(bool)
			ev, err := l.Evaluate(split, cent)
			if err != nil {
				return 2
			}
			K := l.Info().K
			counts := make([]byte, 8*K*K)
			for i, v := range ev.C.RawMatrix().Data {
				binary.LittleEndian.PutUint64(counts[8*i:], uint64(math.Round(v*float64(ev.Rows))))
			}
			C := Array{Name: "C", Dtype: "i8", Shape: []int{K, K}, Data: counts}
			if mode == "shape" {
				C.Shape, C.Data = []int{K, K - 1}, counts[:8*K*(K-1)]
			}
			arrays := []Array{C}
			if cent {
				z := ev.Z.RawMatrix().Data
				if mode == "nan" {
					z[1] = math.NaN()
				}
				arrays = append(arrays, F64("Z", z, K, l.Info().D), F64("W", ev.W.RawMatrix().Data, l.Info().D, K), F64("b", ev.B, K))
			}
			reply(map[string]any{"rows": ev.Rows, "seconds": 0.001, "system": map[string]any{"device": "cpu", "rss": 1 << 20, "cpu": 0.5}}, arrays...)
		case "pseudo":
			oracle, _ := f.Header["oracle"].(bool)
			if err := l.Pseudo(oracle); err != nil {
				return 2
			}
			reply(map[string]any{})
		case "train":
			trains++
			if mode == "crash" && trains == 3 {
				fmt.Fprintln(os.Stderr, "RuntimeError: CUDA out of memory (simulated)")
				return 3
			}
			if mode == "fail" {
				w2 := map[string]any{"ok": false, "error": "loss is nan at step 4\nmore detail"}
				WriteFrame(w, &Frame{Header: w2})
				w.Flush()
				continue
			}
			if p := f.Array("P"); p != nil {
				P = p.Floats()
			}
			if a := f.Array("targets"); a != nil {
				T, A = a.Floats(), f.Array("adjust").Floats()
			}
			req := &train.TrainRequest{
				Mode: train.ModeMixup, P: P, LR: f.Array("lr").Floats(),
				Batch: int(f.Header["batch"].(float64)), BetaMin: f.Header["beta_min"].(float64),
				WeightDecay: f.Header["weight_decay"].(float64), Momentum: f.Header["momentum"].(float64),
			}
			switch f.Header["mode"] {
			case "ce":
				req.Mode, req.P = train.ModeCE, nil
			case "soft":
				req.Mode, req.P, req.Targets, req.Adjust = train.ModeSoft, nil, T, A
				req.FreezeBackbone = f.Header["backbone_lr_scale"].(float64) == 0
				if f.Header["sampling"] == "class" {
					req.Sampling = train.SampleClass
				}
			}
			loss, err := l.Train(req)
			if err != nil {
				WriteFrame(w, &Frame{Header: map[string]any{"ok": false, "error": err.Error()}})
				w.Flush()
				continue
			}
			reply(map[string]any{"loss": loss, "seconds": 0.002})
		case "save":
			s, err := l.Save()
			if err != nil {
				return 2
			}
			K, d := l.Info().K, l.Info().D
			reply(map[string]any{"format": s.Format}, Bytes("state", s.State), F64("W", s.W, d, K), F64("b", s.B, K))
		case "bye":
			reply(map[string]any{})
			return 0
		default:
			WriteFrame(w, &Frame{Header: map[string]any{"ok": false, "error": "unknown op " + strconv.Quote(op)}})
			w.Flush()
		}
	}
}

// fake starts this test binary as a worker in mode.
func fake(t *testing.T, mode string, seed uint64, timeout time.Duration) (*Client, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SELMIX_FAKE_WORKER", mode)
	return Start(Options{Command: []string{self}, Seed: seed, Timeout: timeout})
}
