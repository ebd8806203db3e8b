// Package workertest is a fake worker for tests. A test binary whose
// TestMain calls Serve when Env is set doubles as a worker: it serves the
// protocol of docs/worker-protocol.md on stdin/stdout over an in-process
// local.Local on a toy problem, misbehaving as Env says. A run through it
// equals the same run in process, bit for bit.
package workertest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"selmix/core/data"
	"selmix/core/data/datatest"
	"selmix/core/local"
	"selmix/core/model"
	"selmix/core/train"
	"selmix/core/worker"
)

// Env names the variable that makes a test binary a fake worker; its
// value is the mode (see Serve).
const Env = "SELMIX_FAKE_WORKER"

// ToySplit is K Gaussian blobs in dim dimensions, long-tailed labeled set,
// with an unlabeled set when unl > 0.
func ToySplit(K, dim, n1, unl int, seed uint64) *data.Split {
	counts := make([]int, K)
	for k := range counts {
		counts[k] = max(2, n1>>k)
	}
	return datatest.Blobs(dim, counts, 30, unl, seed)
}

// ToyLocal is the in-process trainer the fake worker serves.
func ToyLocal(seed uint64, unl int) (*local.Local, error) {
	sp := ToySplit(4, 6, 80, unl, 1)
	net, err := model.New(model.Config{Arch: "mlp", In: 6, Hidden: []int{12, 8}, Classes: 4, Batch: 16, EvalBatch: 32, Seed: 3})
	if err != nil {
		return nil, err
	}
	return local.New(net, sp, seed)
}

// Serve serves one session and returns the exit code. Modes:
//
//	ok          behaves
//	semi        with an unlabeled set
//	crash       exits 3 during the 3rd train, saying it ran out of memory
//	hang        never answers evaluate
//	garbage     answers evaluate with bytes that are no frame
//	shape       answers evaluate with a wrong shape
//	nan         a NaN in Z
//	protocol    speaks protocol 99
//	fail        answers train with ok:false
//	hang-hello  never answers hello
//	nofeatures  does not say it serves the features request
//	bad-input   answers hello with ok:false, reason bad_input
//	hang-train=N  never answers the Nth train
//	hang-at=S   never answers the first train that starts at step S or
//	            later, saying "fake worker: hanging" on stderr
//	oom=N       answers the Nth train with ok:false, reason out_of_memory
//	sigkill=N   kills itself with SIGKILL in the Nth train
//	oom-at=S, sigkill-at=S  the same in the first train that starts at
//	            step S or later (the engine sizes train requests by time,
//	            so how many come before a step depends on the machine)
//	orphan=N    in the Nth train, leaves a child holding its stdout and
//	            stderr, and exits 3
//	longline    writes a 2 MiB stderr line before each hello reply
//	flood=B     writes B bytes of stderr lines in every train
//	gpus=FILE   behaves as one rank on the first GPU CUDA_VISIBLE_DEVICES
//	            names (its hello's gpus, its system's per-GPU memory,
//	            no utilisation), appending "VISIBLE start|end UNIXNANO
//	            PID" lines to FILE as the session starts and ends,
//	            VISIBLE being the variable's value ("-" when unset)
func Serve(mode string) int {
	name, arg, _ := strings.Cut(mode, "=")
	n, _ := strconv.Atoi(arg)
	visible, vset := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	var gpus []any   // hello's
	var gpuSys []any // system's
	if name == "gpus" {
		if first, _, _ := strings.Cut(visible, ","); vset && first != "" {
			gpus = []any{first}
			gpuSys = []any{map[string]any{"id": first, "name": "Fake GPU", "ranks": 1, "mem_used": 1 << 30, "mem_reserved": 2 << 30}}
		}
		if !vset {
			visible = "-"
		}
		mark := func(what string) {
			f, err := os.OpenFile(arg, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err == nil {
				fmt.Fprintf(f, "%s %s %d %d\n", visible, what, time.Now().UnixNano(), os.Getpid())
				f.Close()
			}
		}
		mark("start")
		defer mark("end")
	}
	r, w := bufio.NewReader(os.Stdin), bufio.NewWriter(os.Stdout)
	reply := func(h map[string]any, arrays ...worker.Array) {
		h["ok"] = true
		if err := worker.WriteFrame(w, &worker.Frame{Header: h, Arrays: arrays}); err != nil {
			fmt.Fprintln(os.Stderr, "fake worker:", err)
			os.Exit(2)
		}
		w.Flush()
	}
	refuse := func(h map[string]any) {
		h["ok"] = false
		worker.WriteFrame(w, &worker.Frame{Header: h})
		w.Flush()
	}
	var l *local.Local
	var trains, stepsDone int
	var P, T, A []float64 // the last mixup distribution, soft targets and adjustment received
	for {
		f, err := worker.ReadFrame(r)
		if err != nil {
			return 0
		}
		op, _ := f.Header["op"].(string)
		fmt.Fprintf(os.Stderr, "fake worker: %s\n", op)
		req, err := worker.DecodeRequest(f)
		if err != nil {
			refuse(map[string]any{"error": err.Error()})
			continue
		}
		switch req := req.(type) {
		case *worker.HelloRequest:
			switch name {
			case "hang-hello":
				time.Sleep(time.Hour)
			case "bad-input":
				refuse(map[string]any{"error": "--root /data/x: no such folder", "reason": worker.ReasonBadInput})
				continue
			case "longline":
				os.Stderr.WriteString(strings.Repeat("x", 2<<20) + "\n")
			}
			unl := 0
			if name == "semi" {
				unl = 20
			}
			if l, err = ToyLocal(req.Seed, unl); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			in := l.Info()
			proto := worker.Protocol
			if name == "protocol" {
				proto = 99
			}
			h := map[string]any{"protocol": proto, "worker": "fake", "k": in.K, "d": in.D, "train_counts": in.TrainCounts,
				"sizes":  map[string]any{"labeled": in.Labeled, "unlabeled": in.Unlabeled, "val": in.Val, "test": in.Test},
				"device": "cpu"}
			if gpus != nil {
				h["world_size"], h["gpus"], h["device"] = 1, gpus, "cuda:0 Fake GPU"
			}
			if name != "nofeatures" {
				h["features"] = true
			}
			reply(h)
		case *worker.LoadRequest:
			s, err := local.Load(l.Split(), &train.Saved{Format: req.Format, State: f.Array("state").Data})
			if err != nil {
				refuse(map[string]any{"error": err.Error()})
				continue
			}
			l = s
			reply(map[string]any{})
		case *worker.EvaluateRequest:
			switch name {
			case "hang":
				time.Sleep(time.Hour)
			case "garbage":
				os.Stdout.Write([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3})
				time.Sleep(time.Hour)
			}
			split := train.SplitVal
			if req.Split == "test" {
				split = train.SplitTest
			}
			cent := req.Centroids
			ev, err := l.Evaluate(split, cent)
			if err != nil {
				return 2
			}
			K := l.Info().K
			counts := make([]byte, 8*K*K)
			for i, v := range ev.C.RawMatrix().Data {
				binary.LittleEndian.PutUint64(counts[8*i:], uint64(math.Round(v*float64(ev.Rows))))
			}
			C := worker.Array{Name: "C", Dtype: "i8", Shape: []int{K, K}, Data: counts}
			if name == "shape" {
				C.Shape, C.Data = []int{K, K - 1}, counts[:8*K*(K-1)]
			}
			arrays := []worker.Array{C}
			if cent {
				z := ev.Z.RawMatrix().Data
				if name == "nan" {
					z[1] = math.NaN()
				}
				arrays = append(arrays, worker.F64("Z", z, K, l.Info().D), worker.F64("W", ev.W.RawMatrix().Data, l.Info().D, K), worker.F64("b", ev.B, K))
			}
			sys := map[string]any{"device": "cpu", "rss": 1 << 20, "cpu": 0.5}
			if gpuSys != nil {
				sys["device"], sys["world_size"], sys["gpus"] = "cuda:0 Fake GPU", 1, gpuSys
			}
			reply(map[string]any{"rows": ev.Rows, "seconds": 0.001, "system": sys}, arrays...)
		case *worker.PseudoRequest:
			if err := l.Pseudo(req.Oracle); err != nil {
				return 2
			}
			reply(map[string]any{})
		case *worker.TrainRequest:
			trains++
			switch {
			case name == "crash" && trains == 3:
				fmt.Fprintln(os.Stderr, "RuntimeError: CUDA out of memory (simulated)")
				return 3
			case name == "fail":
				refuse(map[string]any{"error": "loss is nan at step 4\nmore detail"})
				continue
			case name == "hang-train" && trains == n, name == "hang-at" && stepsDone >= n:
				fmt.Fprintln(os.Stderr, "fake worker: hanging")
				time.Sleep(time.Hour)
			case name == "oom" && trains == n, name == "oom-at" && stepsDone >= n:
				refuse(map[string]any{"error": "CUDA out of memory. Tried to allocate 2.00 GiB", "reason": worker.ReasonOutOfMemory})
				continue
			case name == "sigkill" && trains == n, name == "sigkill-at" && stepsDone >= n:
				fmt.Fprintln(os.Stderr, "fake worker: killing itself")
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				time.Sleep(time.Hour)
			case name == "orphan" && trains == n:
				child := exec.Command("sleep", "3600")
				child.Stdout, child.Stderr = os.Stdout, os.Stderr
				if err := child.Start(); err != nil {
					return 2
				}
				fmt.Fprintln(os.Stderr, "fake worker: exiting, leaving a child")
				return 3
			case name == "flood":
				line := strings.Repeat("f", 1023) + "\n"
				for range n / len(line) {
					os.Stderr.WriteString(line)
				}
			}
			if p := f.Array("P"); p != nil {
				P = p.Floats()
			}
			if a := f.Array("targets"); a != nil {
				T, A = a.Floats(), f.Array("adjust").Floats()
			}
			tr := &train.TrainRequest{
				Mode: train.ModeMixup, P: P, LR: f.Array("lr").Floats(),
				Batch: req.Batch, BetaMin: req.BetaMin, WeightDecay: req.WeightDecay, Momentum: req.Momentum,
			}
			stepsDone += len(tr.LR)
			switch req.Mode {
			case "ce":
				tr.Mode, tr.P = train.ModeCE, nil
			case "resample":
				tr.Mode = train.ModeResample
			case "soft":
				tr.Mode, tr.P, tr.Targets, tr.Adjust = train.ModeSoft, nil, T, A
				tr.FreezeBackbone = req.BackboneLRScale == 0
				if req.Sampling == "class" {
					tr.Sampling = train.SampleClass
				}
			}
			loss, err := l.Train(tr)
			if err != nil {
				refuse(map[string]any{"error": err.Error()})
				continue
			}
			reply(map[string]any{"loss": loss, "seconds": 0.002})
		case *worker.SaveRequest:
			s, err := l.Save()
			if err != nil {
				return 2
			}
			K, d := l.Info().K, l.Info().D
			reply(map[string]any{"format": s.Format}, worker.Bytes("state", s.State), worker.F64("W", s.W, d, K), worker.F64("b", s.B, K))
		case *worker.FeaturesRequest:
			in := l.Info()
			if req.Split == "train" {
				pick := f.Array("pick")
				if pick == nil || pick.Dtype != "i8" || len(pick.Shape) != 2 || pick.Shape[1] != 2 {
					refuse(map[string]any{"error": "features: no array pick (i8 [M, 2])"})
					continue
				}
				by := make([][]int, in.K)
				v := pick.Ints()
				for i := 0; i+1 < len(v); i += 2 {
					by[v[i]] = append(by[v[i]], int(v[i+1]))
				}
				X, err := l.TrainFeatures(by)
				if err != nil {
					refuse(map[string]any{"error": err.Error()})
					continue
				}
				r, _ := X.Dims()
				reply(map[string]any{"rows": r}, worker.F32("X", X.RawMatrix().Data, r, in.D))
				continue
			}
			split := train.SplitVal
			if req.Split == "test" {
				split = train.SplitTest
			}
			X, L, y, err := l.Features(split)
			if err != nil {
				return 2
			}
			ys := make([]int64, len(y))
			for i, v := range y {
				ys[i] = int64(v)
			}
			reply(map[string]any{"rows": len(y)}, worker.F32("X", X.RawMatrix().Data, len(y), in.D),
				worker.F32("logits", L.RawMatrix().Data, len(y), in.K), worker.I64("y", ys, len(y)))
		case *worker.ByeRequest:
			reply(map[string]any{})
			return 0
		}
	}
}
