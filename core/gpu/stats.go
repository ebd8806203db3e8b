package gpu

import (
	"context"
	"strconv"
	"strings"

	"selmix/core/loop"
)

// Stat is one GPU as nvidia-smi sees it now: the whole GPU, whoever uses
// it. Zero fields are unknown.
type Stat struct {
	Index, UUID       string
	Util              float64 // 0–1
	MemUsed, MemTotal int64   // bytes
}

// StatsQuery is the nvidia-smi query ParseStats reads.
var StatsQuery = []string{"--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total", "--format=csv,noheader,nounits"}

// Query asks nvidia-smi for every GPU's utilisation and memory (under
// Deadline); no nvidia-smi is ErrNoSMI.
func Query(ctx context.Context) ([]Stat, error) {
	out, err := SMI(ctx, StatsQuery...)
	if err != nil {
		return nil, err
	}
	return ParseStats(out), nil
}

// ParseStats reads nvidia-smi's answer to StatsQuery: "index, uuid, util
// %, used MiB, total MiB" per line. A line that does not read so is left
// out; a figure nvidia-smi does not know ("[N/A]") is 0.
func ParseStats(out string) []Stat {
	var st []Stat
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ",")
		if len(f) != 5 {
			continue
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if _, err := strconv.ParseUint(f[0], 10, 16); err != nil {
			continue
		}
		s := Stat{Index: f[0]}
		if ValidID(f[1]) {
			s.UUID = f[1]
		}
		num := func(t string) float64 {
			v, err := strconv.ParseFloat(t, 64)
			if err != nil || v < 0 || v > 1<<40 {
				return 0
			}
			return v
		}
		s.Util = min(1, num(f[2])/100)
		s.MemUsed, s.MemTotal = int64(num(f[3]))<<20, int64(num(f[4]))<<20
		st = append(st, s)
		if len(st) == MaxGPUs {
			break
		}
	}
	return st
}

// Find is the stat of GPU id (an index or a UUID).
func Find(stats []Stat, id string) (Stat, bool) {
	for _, s := range stats {
		if s.Index == id || s.UUID != "" && s.UUID == id {
			return s, true
		}
	}
	return Stat{}, false
}

// NeedsFill reports whether sys names GPUs and lacks the utilisation or
// total memory of one of them.
func NeedsFill(sys *loop.System) bool {
	if sys == nil {
		return false
	}
	for _, g := range sys.GPUs {
		if g.Util == 0 || g.MemTotal == 0 {
			return true
		}
	}
	return false
}

// Fill gives each GPU of sys that lacks its utilisation or total memory
// nvidia-smi's figure for that GPU (matched by index or UUID; the box's
// other GPUs never count), and sys the mean utilisation of its GPUs when
// it has none.
func Fill(sys *loop.System, stats []Stat) {
	if sys == nil || len(stats) == 0 {
		return
	}
	sum, n := 0.0, 0
	for i := range sys.GPUs {
		g := &sys.GPUs[i]
		if s, ok := Find(stats, g.ID); ok {
			if g.Util == 0 {
				g.Util = s.Util
			}
			if g.MemTotal == 0 {
				g.MemTotal = s.MemTotal
			}
		}
		if g.Util > 0 {
			sum += g.Util
			n++
		}
	}
	if sys.Util == 0 && n > 0 {
		sys.Util = sum / float64(n)
	}
}
