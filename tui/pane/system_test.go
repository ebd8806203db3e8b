package pane

import (
	"testing"

	"selmix/core/train"
)

func TestBytes(t *testing.T) {
	cases := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1 KiB"}, {410 << 20, "410 MiB"},
		{3_300_000_000, "3.1 GiB"}, {4 << 30, "4.0 GiB"}, {3 << 40, "3.0 TiB"},
	}
	for _, c := range cases {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestSystemLine(t *testing.T) {
	gpu := &train.System{Device: "cuda:0 NVIDIA A100", MemUsed: 3_300_000_000, MemReserved: 4 << 30, Util: 0.87, RSS: 2_469_606_195, CPU: 1.2}
	cpu := &train.System{Device: "cpu (gorgonia, openblas)", RSS: 410 << 20, CPU: 1.93}
	cases := []struct {
		name string
		s    *train.System
		w    int
		want string
	}{
		{"gpu, room", gpu, 100, "cuda:0 NVIDIA A100 · mem 3.1/4.0 GiB · util 87% · rss 2.3 GiB · cpu 1.2"},
		{"gpu, short device", gpu, 60, "cuda:0 · mem 3.1/4.0 GiB · util 87% · rss 2.3 GiB · cpu 1.2"},
		{"gpu, no device", gpu, 50, "mem 3.1/4.0 GiB · util 87% · rss 2.3 GiB · cpu 1.2"},
		{"gpu, no rss", gpu, 49, "mem 3.1/4.0 GiB · util 87% · cpu 1.2"},
		{"gpu, memory and util", gpu, 26, "mem 3.1/4.0 GiB · util 87%"},
		{"gpu, util", gpu, 10, "util 87%"},
		{"gpu, nothing fits", gpu, 7, ""},
		{"cpu", cpu, 80, "cpu (gorgonia, openblas) · rss 410 MiB · cpu 1.9"},
		{"cpu, short", cpu, 30, "cpu · rss 410 MiB · cpu 1.9"},
		{"cpu, shorter", cpu, 26, "rss 410 MiB · cpu 1.9"},
		{"cpu, shortest", cpu, 8, "cpu 1.9"},
		{"used only", &train.System{MemUsed: 512 << 20}, 80, "mem 512 MiB"},
		{"units differ", &train.System{MemUsed: 512 << 20, MemReserved: 2 << 30}, 80, "mem 512 MiB/2.0 GiB"},
		{"reserved only", &train.System{MemReserved: 2 << 30}, 80, "mem reserved 2.0 GiB"},
		{"nothing known", &train.System{}, 80, ""},
		{"nil", nil, 80, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := SystemLine(c.s, c.w); got != c.want {
				t.Errorf("SystemLine(%d) = %q, want %q", c.w, got, c.want)
			}
		})
	}
}
