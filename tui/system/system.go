// Package system formats what the trainer reports of its device and
// process (train.System) for the header and the event log: one line that
// drops fields until it fits.
package system

import (
	"fmt"
	"strings"

	"selmix/core/train"
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

func fieldsOf(s *train.System) systemFields {
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
// shorter forms that fits (the device's first word only, then without the
// device, without the peak, without rss, without cpu, img/s and
// utilisation, utilisation alone), "" if none does or s is nil.
func Line(s *train.System, w int) string {
	if s == nil {
		return ""
	}
	f := fieldsOf(s)
	for _, form := range [][]string{
		{f.device, f.imgs, f.mem, f.peak, f.util, f.rss, f.cpu},
		{f.short, f.imgs, f.mem, f.peak, f.util, f.rss, f.cpu},
		{f.imgs, f.mem, f.peak, f.util, f.rss, f.cpu},
		{f.imgs, f.mem, f.util, f.rss, f.cpu},
		{f.imgs, f.mem, f.util, f.cpu},
		{f.imgs, f.mem, f.util},
		{f.imgs, f.util},
		{f.util},
	} {
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
	return ""
}
