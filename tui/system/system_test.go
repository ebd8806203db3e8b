package system

import (
	"testing"

	"selmix/core/loop"
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

func TestLine(t *testing.T) {
	gpu := &loop.System{Device: "cuda:0 NVIDIA A100", MemUsed: 3_300_000_000, MemReserved: 4 << 30, Util: 0.87, RSS: 2_469_606_195, CPU: 1.2}
	cpu := &loop.System{Device: "cpu (gorgonia, openblas)", RSS: 410 << 20, CPU: 1.93}
	fed := &loop.System{Device: "cuda:0 NVIDIA H100", ImgS: 2470.4, MemUsed: 3_300_000_000, MemReserved: 4 << 30, MemPeak: 5_600_000_000,
		Util: 0.97, RSS: 2_469_606_195, CPU: 3.4}
	cases := []struct {
		name string
		s    *loop.System
		w    int
		want string
	}{
		{"gpu, room", gpu, 100, "cuda:0 NVIDIA A100 · mem 3.1/4.0 GiB · util 87% · rss 2.3 GiB · cpu 1.2"},
		{"gpu, no cpu nor rss", gpu, 60, "cuda:0 NVIDIA A100 · mem 3.1/4.0 GiB · util 87%"},
		{"gpu, still the device", gpu, 50, "cuda:0 NVIDIA A100 · mem 3.1/4.0 GiB · util 87%"},
		{"gpu, short device", gpu, 40, "cuda:0 · mem 3.1/4.0 GiB · util 87%"},
		{"gpu, memory and util", gpu, 26, "mem 3.1/4.0 GiB · util 87%"},
		{"gpu, util", gpu, 10, "util 87%"},
		{"gpu, nothing fits", gpu, 7, ""},
		{"cpu", cpu, 80, "cpu (gorgonia, openblas) · rss 410 MiB · cpu 1.9"},
		{"cpu, short", cpu, 30, "cpu · rss 410 MiB · cpu 1.9"},
		{"cpu, shorter", cpu, 26, "rss 410 MiB · cpu 1.9"},
		{"cpu, shortest", cpu, 8, "cpu 1.9"},
		{"used only", &loop.System{MemUsed: 512 << 20}, 80, "mem 512 MiB"},
		{"units differ", &loop.System{MemUsed: 512 << 20, MemReserved: 2 << 30}, 80, "mem 512 MiB/2.0 GiB"},
		{"reserved only", &loop.System{MemReserved: 2 << 30}, 80, "mem reserved 2.0 GiB"},
		{"nothing known", &loop.System{}, 80, ""},
		{"fed gpu", fed, 120, "cuda:0 NVIDIA H100 · 2470 img/s · mem 3.1/4.0 GiB · peak 5.2 GiB · util 97% · rss 2.3 GiB · cpu 3.4"},
		{"fed gpu, no cpu", fed, 90, "cuda:0 NVIDIA H100 · 2470 img/s · mem 3.1/4.0 GiB · peak 5.2 GiB · util 97% · rss 2.3 GiB"},
		{"fed gpu, no rss", fed, 80, "cuda:0 NVIDIA H100 · 2470 img/s · mem 3.1/4.0 GiB · peak 5.2 GiB · util 97%"},
		{"fed gpu, short device", fed, 70, "cuda:0 · 2470 img/s · mem 3.1/4.0 GiB · peak 5.2 GiB · util 97%"},
		{"fed gpu, no device", fed, 60, "2470 img/s · mem 3.1/4.0 GiB · peak 5.2 GiB · util 97%"},
		{"fed gpu, no peak", fed, 50, "2470 img/s · mem 3.1/4.0 GiB · util 97% · cpu 3.4"},
		{"fed gpu, no cpu", fed, 40, "2470 img/s · mem 3.1/4.0 GiB · util 97%"},
		{"fed gpu, img/s and util", fed, 25, "2470 img/s · util 97%"},
		{"fed gpu, util", fed, 12, "util 97%"},
		{"slow cpu", &loop.System{Device: "cpu", ImgS: 7.25, CPU: 1.5}, 80, "cpu · 7.2 img/s · cpu 1.5"},
		{"slow cpu, img/s", &loop.System{Device: "cpu", ImgS: 7.25, CPU: 1.5}, 10, "7.2 img/s"},
		{"nil", nil, 80, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Line(c.s, c.w); got != c.want {
				t.Errorf("Line(%d) = %q, want %q", c.w, got, c.want)
			}
		})
	}
}

// A run on GPUs shows its own GPUs, each where there is room, else
// together, and its ranks; the process's cpu and rss give way before the
// device and the peak memory do (issue 46).
func TestLineGPUs(t *testing.T) {
	const G = 1 << 30
	two := &loop.System{Device: "cuda:0 NVIDIA H100 ×2 ranks", WorldSize: 2, ImgS: 4100, MemUsed: 60 * G, MemReserved: 81 * G, Util: 0.915, RSS: 5 * G, CPU: 2.1,
		GPUs: []loop.GPU{{ID: "3", MemUsed: 30 * G, MemReserved: 41 * G, MemTotal: 80 * G, Util: 0.93}, {ID: "5", MemUsed: 30 * G, MemReserved: 40 * G, MemTotal: 80 * G, Util: 0.90}}}
	four := &loop.System{Device: "cuda:0", WorldSize: 4, GPUs: []loop.GPU{
		{ID: "0", MemReserved: 40 * G, MemTotal: 80 * G, Util: 0.91}, {ID: "1", MemReserved: 40 * G, MemTotal: 80 * G, Util: 0.92},
		{ID: "2", MemReserved: 40 * G, MemTotal: 80 * G, Util: 0.90}, {ID: "3", MemReserved: 40 * G, MemTotal: 80 * G, Util: 0.91}}}
	one := &loop.System{Device: "cuda:0 NVIDIA A100", MemUsed: 3 * G, GPUs: []loop.GPU{{ID: "GPU-8f2c1a3e-77aa-4b1e", MemUsed: 3 * G}}}
	cases := []struct {
		name string
		s    *loop.System
		w    int
		want string
	}{
		{"two, room", two, 120, "cuda:0 NVIDIA H100 ×2 ranks · 4100 img/s · gpu3 93% 41/80 GiB, gpu5 90% 40/80 GiB · rss 5.0 GiB · cpu 2.1"},
		{"two, no cpu", two, 100, "cuda:0 NVIDIA H100 ×2 ranks · 4100 img/s · gpu3 93% 41/80 GiB, gpu5 90% 40/80 GiB · rss 5.0 GiB"},
		{"two, per GPU", two, 72, "cuda:0 · 4100 img/s · 2 ranks · gpu3 93% 41/80 GiB, gpu5 90% 40/80 GiB"},
		{"two, per GPU, less", two, 65, "4100 img/s · 2 ranks · gpu3 93% 41/80 GiB, gpu5 90% 40/80 GiB"},
		{"two, together", two, 60, "cuda:0 · 4100 img/s · 2 ranks · 2 GPUs 92% 81/160 GiB"},
		{"two, together, less", two, 45, "4100 img/s · 2 ranks · 2 GPUs 92% 81/160 GiB"},
		{"two, together alone", two, 25, "2 GPUs 92% 81/160 GiB"},
		{"four, per GPU", four, 120, "cuda:0 · 4 ranks · gpu0 91% 40/80 GiB, gpu1 92% 40/80 GiB, gpu2 90% 40/80 GiB, gpu3 91% 40/80 GiB"},
		{"four, together", four, 80, "cuda:0 · 4 ranks · 4 GPUs 91% 160/320 GiB"},
		{"one, a UUID", one, 80, "cuda:0 NVIDIA A100 · GPU-8f2c1a3e… 3.0 GiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Line(c.s, c.w); got != c.want {
				t.Errorf("Line(%d) = %q, want %q", c.w, got, c.want)
			}
		})
	}
}
