package local

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"selmix/core/loop"
)

// cpuClock measures the process's CPU use between two reports.
type cpuClock struct {
	wall time.Time
	cpu  time.Duration
}

// since returns CPU time over wall time since the last call (0 the first
// time) and restarts the clock.
func (c *cpuClock) since() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	now := time.Now()
	var f float64
	if !c.wall.IsZero() {
		if dt := now.Sub(c.wall); dt > 0 {
			f = float64(cpu-c.cpu) / float64(dt)
		}
	}
	c.wall, c.cpu = now, cpu
	return f
}

// rss is the resident memory of this process in bytes, 0 where /proc is
// not available.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

func (l *Local) system() *loop.System {
	return &loop.System{Device: l.Info().Device, RSS: rss(), CPU: l.cpu.since()}
}
