package memguard

import (
	"testing"
	"time"
)

// The guard calls exceeded once the runtime's memory passes the limit,
// and never while it stays below; stop ends it.
func TestStart(t *testing.T) {
	quiet := Start(1<<40, func(uint64) { t.Error("a terabyte exceeded") })
	time.Sleep(20 * Every)
	quiet()
	quiet() // twice is harmless

	hit := make(chan uint64, 1)
	stop := Start(256<<20, func(used uint64) { hit <- used })
	defer stop()
	var hold [][]byte
	for i := 0; i < 64; i++ {
		b := make([]byte, 8<<20)
		for j := range b {
			b[j] = byte(j)
		}
		hold = append(hold, b)
		select {
		case used := <-hit:
			if used <= 256<<20 {
				t.Errorf("exceeded at %d bytes, under the limit", used)
			}
			return
		case <-time.After(2 * Every):
		}
	}
	t.Errorf("no call after 512 MiB held (%d slices)", len(hold))
}

func TestLimit(t *testing.T) {
	if l := Limit(); l == 0 || l > 4<<30 {
		t.Errorf("Limit() = %d, want at most 4 GiB", l)
	}
}
