package worker

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"selmix/core/gpu"
	"selmix/core/loop"
)

func TestParseSystem(t *testing.T) {
	cases := []struct {
		name string
		in   any
		want *loop.System
	}{
		{"gpu", map[string]any{"device": "cuda:0 NVIDIA H100", "mem_used": 3.3e9, "mem_reserved": 4294967296.0, "mem_peak": 5.6e9,
			"util": 0.97, "rss": 2469606195.0, "cpu": 3.4, "img_s": 2470.5},
			&loop.System{Device: "cuda:0 NVIDIA H100", MemUsed: 3_300_000_000, MemReserved: 4 << 30, MemPeak: 5_600_000_000,
				Util: 0.97, RSS: 2469606195, CPU: 3.4, ImgS: 2470.5}},
		{"cpu, no training since the last report", map[string]any{"device": "cpu", "rss": 1048576.0, "cpu": 0.5},
			&loop.System{Device: "cpu", RSS: 1 << 20, CPU: 0.5}},
		{"unusable numbers are unknown", map[string]any{"img_s": -3.0, "mem_peak": math.Inf(1), "util": "high"}, &loop.System{}},
		{"two ranks on two GPUs", map[string]any{"device": "cuda:0 NVIDIA H100 ×2 ranks", "world_size": 2.0, "mem_used": 2e9, "util": 0.9,
			"gpus": []any{
				map[string]any{"id": "3", "name": "NVIDIA H100 80GB HBM3", "ranks": 1.0, "mem_used": 1e9, "mem_reserved": 2e9, "mem_peak": 3e9, "mem_total": 85899345920.0, "util": 0.93},
				map[string]any{"id": "GPU-8f2c\x1b[2J", "ranks": 1.5, "mem_used": -1.0, "util": 7.0},
				map[string]any{"id": ""},
				"not an object",
			}},
			&loop.System{Device: "cuda:0 NVIDIA H100 ×2 ranks", WorldSize: 2, MemUsed: 2e9, Util: 0.9, GPUs: []loop.GPU{
				{ID: "3", Name: "NVIDIA H100 80GB HBM3", Ranks: 1, MemUsed: 1e9, MemReserved: 2e9, MemPeak: 3e9, MemTotal: 80 << 30, Util: 0.93},
				{ID: "GPU-8f2c", Util: 1},
			}}},
		{"a world size that is no count is unknown", map[string]any{"world_size": 1.5, "gpus": "0"}, &loop.System{}},
		{"not an object", []any{1.0}, nil},
		{"absent", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := parseSystem(c.in)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("parseSystem(%v) = %+v, want %+v", c.in, got, c.want)
			}
		})
	}
}

// A GPU the worker reports without utilisation or total memory gets
// them from nvidia-smi's figures for that GPU only, asked at most every
// StatsEvery; once it failed (no nvidia-smi) it is never asked again.
func TestFillGPUs(t *testing.T) {
	asked := 0
	stats := []gpu.Stat{{Index: "0", Util: 0.05, MemTotal: 80 << 30}, {Index: "1", UUID: "GPU-b", Util: 0.91, MemTotal: 40 << 30}}
	c := &Client{ctx: context.Background(), stats: func(context.Context) ([]gpu.Stat, error) { asked++; return stats, nil }}
	sys := &loop.System{GPUs: []loop.GPU{{ID: "GPU-b", MemUsed: 1 << 30}}}
	c.fillGPUs(sys)
	want := []loop.GPU{{ID: "GPU-b", MemUsed: 1 << 30, MemTotal: 40 << 30, Util: 0.91}}
	if !reflect.DeepEqual(sys.GPUs, want) || sys.Util != 0.91 {
		t.Errorf("filled %+v (util %v), want %+v (0.91)", sys.GPUs, sys.Util, want)
	}
	c.fillGPUs(&loop.System{GPUs: []loop.GPU{{ID: "0"}}})
	c.fillGPUs(&loop.System{GPUs: []loop.GPU{{ID: "0", Util: 0.5, MemTotal: 1}}}) // complete: not asked
	if asked != 1 {
		t.Errorf("asked %d times within StatsEvery, want 1", asked)
	}
	c = &Client{ctx: context.Background(), stats: func(context.Context) ([]gpu.Stat, error) { asked++; return nil, gpu.ErrNoSMI }}
	asked = 0
	for range 3 {
		c.statsAt = time.Time{}
		c.fillGPUs(&loop.System{GPUs: []loop.GPU{{ID: "0"}}})
	}
	if asked != 1 {
		t.Errorf("without nvidia-smi: asked %d times, want 1", asked)
	}
}
