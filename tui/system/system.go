// Package system formats what the trainer reports of its device and
// process (loop.System) for the header and the event log: one line that
// drops fields until it fits.
package system

import (
	"fmt"
	"strings"

	"selmix/core/loop"
)

// Bytes formats a size in binary units, as nvidia-smi and htop count
// memory: "410 MiB", "3.1 GiB".
func Bytes(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k*k:
		return fmt.Sprintf("%.1f TiB", float64(n)/(k*k*k*k))
	case n >= k*k*k:
		return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
	case n >= k*k:
		return fmt.Sprintf("%.0f MiB", float64(n)/(k*k))
	case n >= k:
		return fmt.Sprintf("%.0f KiB", float64(n)/k)
	}
	return fmt.Sprintf("%d B", n)
}

// systemFields are the figures of s, each as text: device (in full and
// its first word), training throughput, memory, peak memory, utilisation,
// resident memory, CPU. Zero fields are unknown and left empty.
type systemFields struct{ device, short, imgs, mem, peak, util, rss, cpu string }

func fieldsOf(s *loop.System) systemFields {
	var f systemFields
	f.device = strings.TrimSpace(s.Device)
	if i := strings.IndexAny(f.device, " \t"); i >= 0 {
		f.short = f.device[:i]
	} else {
		f.short = f.device
	}
	switch {
	case s.MemUsed > 0 && s.MemReserved > 0:
		// One unit for both, the reserved size's: "3.1/4.0 GiB".
		u, r := Bytes(s.MemUsed), Bytes(s.MemReserved)
		unit := r[strings.LastIndexByte(r, ' '):]
		if strings.HasSuffix(u, unit) {
			u = strings.TrimSuffix(u, unit)
		}
		f.mem = "mem " + u + "/" + r
	case s.MemUsed > 0:
		f.mem = "mem " + Bytes(s.MemUsed)
	case s.MemReserved > 0:
		f.mem = "mem reserved " + Bytes(s.MemReserved)
	}
	if s.MemPeak > 0 {
		f.peak = "peak " + Bytes(s.MemPeak)
	}
	switch {
	case s.ImgS >= 10:
		f.imgs = fmt.Sprintf("%.0f img/s", s.ImgS)
	case s.ImgS > 0:
		f.imgs = fmt.Sprintf("%.1f img/s", s.ImgS)
	}
	if s.Util > 0 {
		f.util = fmt.Sprintf("util %.0f%%", 100*s.Util)
	}
	if s.RSS > 0 {
		f.rss = "rss " + Bytes(s.RSS)
	}
	if s.CPU > 0 {
		f.cpu = fmt.Sprintf("cpu %.1f", s.CPU)
	}
	return f
}

// Line is what the trainer reports of its device and process in at
// most w columns, e.g. "cuda:0 NVIDIA A100 · 2470 img/s · mem 3.1/4.0 GiB
// · peak 5.2 GiB · util 87% · rss 2.3 GiB · cpu 1.2": the longest of ever
// shorter forms that fits (without cpu, without rss, the device's first
// word only, without the device, without the peak, then img/s, memory and
// utilisation, utilisation alone), "" if none does or s is nil.
//
// A run on GPUs shows its own GPUs in place of memory and utilisation:
// each where there is room ("gpu3 93% 41/80 GiB, gpu5 90% 40/80 GiB"),
// else all together ("4 GPUs 91% 160/320 GiB"), and its ranks when more
// than one ("2 ranks").
func Line(s *loop.System, w int) string {
	if s == nil {
		return ""
	}
	f := fieldsOf(s)
	type variant struct {
		mem, util string
		least     bool // down to the last form; else while img/s and the ranks stay
	}
	variants := []variant{{f.mem, f.util, true}}
	if len(s.GPUs) == 1 {
		variants = []variant{{PerGPU(s.GPUs), "", true}}
	} else if len(s.GPUs) > 1 {
		variants = []variant{{PerGPU(s.GPUs), "", false}, {AllGPUs(s.GPUs), "", true}}
	}
	ranks := ""
	if s.WorldSize > 1 {
		ranks = fmt.Sprintf("%d ranks", s.WorldSize)
	}
	// The full device says its ranks itself (" ×2 ranks").
	devRanks := ranks
	if strings.Contains(f.device, "rank") {
		devRanks = ""
	}
	for _, v := range variants {
		// On a GPU the process's cpu and rss go before the device and the
		// peak memory, which say what the run runs on and what it needs
		// (issue 46: at 140 columns img/s pushed out device and peak); on
		// the CPU the process's figures are the ones to keep.
		forms := [][]string{
			{f.device, f.imgs, devRanks, v.mem, f.peak, v.util, f.rss, f.cpu},
			{f.device, f.imgs, devRanks, v.mem, f.peak, v.util, f.rss},
			{f.device, f.imgs, devRanks, v.mem, f.peak, v.util},
			{f.short, f.imgs, ranks, v.mem, f.peak, v.util},
			{f.imgs, ranks, v.mem, f.peak, v.util},
			{f.imgs, ranks, v.mem, v.util, f.rss, f.cpu},
			{f.imgs, ranks, v.mem, v.util, f.cpu},
			{f.imgs, ranks, v.mem, v.util},
			{f.imgs, v.mem, v.util},
			{f.imgs, v.util},
			{v.util},
		}
		if v.mem == "" && f.peak == "" {
			forms = [][]string{
				{f.device, f.imgs, devRanks, v.util, f.rss, f.cpu},
				{f.short, f.imgs, ranks, v.util, f.rss, f.cpu},
				{f.imgs, ranks, v.util, f.rss, f.cpu},
				{f.imgs, ranks, v.util, f.cpu},
				{f.imgs, v.util},
				{v.util},
			}
		}
		switch {
		case !v.least:
			forms = append(forms[:8], []string{f.imgs, ranks, v.mem})
		case len(s.GPUs) > 0:
			forms = append(forms[:8], []string{f.imgs, ranks, v.mem}, []string{v.mem})
		}
		for _, form := range forms {
			var parts []string
			for _, p := range form {
				if p != "" {
					parts = append(parts, p)
				}
			}
			if l := strings.Join(parts, " · "); l != "" && len([]rune(l)) <= w {
				return l
			}
		}
	}
	return ""
}

// PerGPU describes each GPU: "gpu3 93% 41/80 GiB, gpu5 90% 40/80 GiB"
// (the memory the run holds on it, of its total; unknown figures left
// out).
func PerGPU(gs []loop.GPU) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = gpuText(Name(g.ID), g.Util, held(g), g.MemTotal)
	}
	return strings.Join(parts, ", ")
}

// AllGPUs describes GPUs together: "4 GPUs 91% 160/320 GiB" (mean
// utilisation of those that report one, memory summed).
func AllGPUs(gs []loop.GPU) string {
	var util float64
	var n int
	var mem, total int64
	for _, g := range gs {
		if g.Util > 0 {
			util += g.Util
			n++
		}
		mem += held(g)
		total += g.MemTotal
	}
	if n > 0 {
		util /= float64(n)
	}
	return gpuText(fmt.Sprintf("%d GPUs", len(gs)), util, mem, total)
}

// Name is how a GPU is named on screen: "gpu3" for index 3, a UUID or
// MIG id cut to 12 runes.
func Name(id string) string {
	if id != "" && strings.Trim(id, "0123456789") == "" {
		return "gpu" + id
	}
	if r := []rune(id); len(r) > 12 {
		return string(r[:12]) + "…"
	}
	return id
}

// held is the memory the run holds on g: what its allocator reserved,
// else what it uses.
func held(g loop.GPU) int64 {
	if g.MemReserved > 0 {
		return g.MemReserved
	}
	return g.MemUsed
}

// gpuText is "NAME UTIL% MEM/TOTAL", unknown figures left out.
func gpuText(name string, util float64, mem, total int64) string {
	t := name
	if util > 0 {
		t += fmt.Sprintf(" %.0f%%", 100*util)
	}
	switch {
	case mem > 0 && total > 0:
		u, r := gpuBytes(mem), gpuBytes(total)
		unit := r[strings.LastIndexByte(r, ' '):]
		u = strings.TrimSuffix(u, unit)
		t += " " + u + "/" + r
	case mem > 0:
		t += " " + gpuBytes(mem)
	case total > 0:
		t += " of " + gpuBytes(total)
	}
	return t
}

// gpuBytes is Bytes in whole GiB from 10 GiB on, as GPUs' memory is read
// ("41/80 GiB").
func gpuBytes(n int64) string {
	const g = 1 << 30
	if n >= 10*g && n < 1<<40 {
		return fmt.Sprintf("%.0f GiB", float64(n)/g)
	}
	return Bytes(n)
}
