package worker

import (
	"math"
	"testing"

	"selmix/core/train"
)

func TestParseSystem(t *testing.T) {
	cases := []struct {
		name string
		in   any
		want *train.System
	}{
		{"gpu", map[string]any{"device": "cuda:0 NVIDIA H100", "mem_used": 3.3e9, "mem_reserved": 4294967296.0, "mem_peak": 5.6e9,
			"util": 0.97, "rss": 2469606195.0, "cpu": 3.4, "img_s": 2470.5},
			&train.System{Device: "cuda:0 NVIDIA H100", MemUsed: 3_300_000_000, MemReserved: 4 << 30, MemPeak: 5_600_000_000,
				Util: 0.97, RSS: 2469606195, CPU: 3.4, ImgS: 2470.5}},
		{"cpu, no training since the last report", map[string]any{"device": "cpu", "rss": 1048576.0, "cpu": 0.5},
			&train.System{Device: "cpu", RSS: 1 << 20, CPU: 0.5}},
		{"unusable numbers are unknown", map[string]any{"img_s": -3.0, "mem_peak": math.Inf(1), "util": "high"}, &train.System{}},
		{"not an object", []any{1.0}, nil},
		{"absent", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := parseSystem(c.in)
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Errorf("parseSystem(%v) = %+v, want %+v", c.in, got, c.want)
			}
		})
	}
}
