package live

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/runs/live/livetest"
)

// Every part of a snapshot crosses the socket: the refresh with its
// vectors, multipliers, matrices and interval, the acknowledgement, the
// summary, the system line; non-finite floats as the log writes them.
func TestWireRoundTrip(t *testing.T) {
	pred, real := 0.25, -0.125
	rep := metric.Report{K: 2, Prior: []float64{0.75, 0.25}, Recall: []float64{0.5, 1}, Coverage: []float64{0.5, 0.5},
		MeanRecall: 0.75, MinRecall: 0.5, HMean: 2.0 / 3, GMean: math.Sqrt(0.5), MinCoverage: 0.5, Accuracy: 0.625,
		HeadRecall: 0.5, TailRecall: 1, MinHTRecall: 0.5, HeadCoverage: 0.5, TailCoverage: 0.5, MinHTCoverage: 0.5, Worst: 0}
	objs := make([]float64, len(metric.Objectives()))
	for i := range objs {
		objs[i] = float64(i) / 8
	}
	h := loop.DefaultHyper()
	h.S = 20
	snaps := []loop.Snapshot{
		{Kind: loop.KindStep, Step: 0, Total: 100, State: loop.Running, Hyper: h, LR: 3e-3, Loss: math.NaN(), StepsPerSec: math.Inf(1)},
		{Kind: loop.KindRefresh, Step: 50, Total: 100, State: loop.Running, Hyper: h, LR: 1e-3, Loss: 0.5, StepsPerSec: 12,
			Refresh: &loop.Refresh{Step: 50, Report: rep, Objectives: objs, Psi: 0.5, Lambda: []float64{1, 2}, G: []float64{0.5, -1, 2, 0}, P: []float64{0.25, 0.25, 0.5, 0},
				K: 2, S: 20, Predicted: &pred, Realised: &real},
			System: &loop.System{Device: "cuda:0 ×2 ranks", RSS: 1 << 20, CPU: 0.5, WorldSize: 2,
				GPUs: []loop.GPU{{ID: "3", Name: "H100", Ranks: 2, MemUsed: 1 << 30, MemReserved: 2 << 30, MemPeak: 3 << 30, MemTotal: 80 << 30, Util: 0.5}}}},
		{Kind: loop.KindControl, Step: 60, Total: 100, State: loop.Paused, Hyper: h, Loss: 0.25,
			Ack: &loop.Ack{Control: loop.Control{Op: loop.OpSet, Key: "s", Value: "20"}, Step: 60, Err: "out of range"}},
		{Kind: loop.KindFinal, Step: 100, Total: 100, State: loop.Finished, Hyper: h, Loss: 0.125,
			Summary: &loop.Summary{Steps: 100, Objective: metric.MinRecall, ValBefore: rep, ValAfter: rep, TestBefore: rep, TestAfter: rep,
				TestObjBefore: objs, TestObjAfter: objs, Seconds: 3,
				Best: &loop.Best{Step: 50, Objective: metric.MinRecall, Psi: 0.5, Val: rep, Test: rep, TestObj: objs}}},
		{Kind: loop.KindError, Step: 7, State: loop.Failed, Hyper: h, Loss: 1, Err: "diverged"},
		{Kind: loop.KindLog, Step: 7, State: loop.Running, Hyper: h, Loss: 1, Text: "epoch 3"},
	}
	for _, want := range snaps {
		t.Run(want.Kind.String(), func(t *testing.T) {
			b, err := json.Marshal(Message{Snapshot: Wire(want, true)})
			if err != nil {
				t.Fatal(err)
			}
			for _, goName := range []string{`"Loss"`, `"Refresh"`, `"Kind"`, `null`} {
				if strings.Contains(string(b), goName) {
					t.Errorf("line holds %s: %s", goName, b)
				}
			}
			got, err := decodeMessage(b, false)
			if err != nil {
				t.Fatal(err)
			}
			if want.Refresh != nil {
				// G and P travel as float32; these values are exact in it.
				if !reflect.DeepEqual(got.Refresh, want.Refresh) {
					t.Errorf("refresh\n got %+v\nwant %+v", got.Refresh, want.Refresh)
				}
				got.Refresh, want.Refresh = nil, nil
			}
			if math.IsNaN(want.Loss) != math.IsNaN(got.Loss) {
				t.Errorf("loss %v, want %v", got.Loss, want.Loss)
			}
			got.Loss, want.Loss = 0, 0
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("snapshot\n got %+v\nwant %+v", *got, want)
			}
		})
	}
	if b, _ := json.Marshal(Wire(snaps[0], false)); !strings.Contains(string(b), `"loss":"NaN"`) || !strings.Contains(string(b), `"steps_per_sec":"+Inf"`) {
		t.Errorf("non-finite floats not as the log writes them: %s", b)
	}
}

// A client of live protocol 1 (selmix before version 2: its hello says
// no version) is refused with one line it can print.
func TestOldClientRefused(t *testing.T) {
	dir, _, srv := serveFake(t)
	defer srv.Close()
	c, err := net.Dial("unix", filepath.Join(dir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(`{"hello":{"matrices":true}}` + "\n"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Error string } // what a version 1 client reads
	if json.Unmarshal([]byte(line), &m) != nil || !strings.Contains(m.Error, "this run speaks live protocol 2, the client 1") {
		t.Errorf("old client got %q, want an error naming both versions", line)
	}
}

// A run served by an older selmix (no hello, Go field names) or a newer
// one is refused by the client with one line.
func TestOldServerRefused(t *testing.T) {
	for name, c := range map[string]struct{ first, want string }{
		"version 1": {`{"snapshot":{"Kind":0,"Step":3,"Loss":null}}`, "the run's process speaks live protocol 1, this selmix 2"},
		"version 3": {`{"hello":{"version":3}}`, "the run's process speaks live protocol 3, this selmix 2"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := livetest.ShortDir(t)
			path := filepath.Join(dir, SocketName)
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			os.Chmod(path, 0o600)
			go func() {
				s, err := ln.Accept()
				if err != nil {
					return
				}
				defer s.Close()
				s.Write([]byte(c.first + "\n"))
				bufio.NewReader(s).ReadString('\n') // the client's hello
				time.Sleep(time.Second)
			}()
			cl, err := Dial(dir, Hello{})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if s, ok := cl.Next(ctx); ok || cl.Err() == nil || !strings.Contains(cl.Err().Error(), c.want) || strings.Contains(cl.Err().Error(), "\n") {
				t.Errorf("Next = %+v, %v; Err %v, want one line %q", s, ok, cl.Err(), c.want)
			}
		})
	}
}

// What a server says of its GPUs reaches terminals: made printable.
func TestWireSystemPrintable(t *testing.T) {
	line := `{"snapshot":{"kind":"step","state":"running","hyper":{},"lr":0,"loss":0,"steps_per_sec":0,"system":{"device":"cuda\u001b[2J","gpus":[{"id":"3\u001b]0;x\u0007","name":"H\u001b[31m100"}]}}}`
	got, err := decodeMessage([]byte(line), false)
	if err != nil {
		t.Fatal(err)
	}
	if g := got.System; g == nil || g.Device != "cuda" || len(g.GPUs) != 1 || g.GPUs[0].ID != "3" || g.GPUs[0].Name != "H100" {
		t.Errorf("system %+v", got.System)
	}
}
