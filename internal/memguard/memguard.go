// Package memguard bounds the memory of a piece of work that holds no
// data of its own worth keeping (drawing figures): past its bound the
// process ends in one line, where Go would end it, at the address space's
// limit or the kernel's OOM killer, with "fatal error: out of memory" and
// a goroutine dump, or not at all.
package memguard

import (
	"runtime/metrics"
	"sync"
	"syscall"
	"time"
)

// Every is how often the guard reads the process's memory.
const Every = 5 * time.Millisecond

// Limit is the bound for work that draws figures: 4 GiB, or half the
// address space the process may take (ulimit -v) where that is less, so
// the guard trips before an allocation fails.
func Limit() uint64 {
	limit := uint64(4 << 30)
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur/2 < limit {
		limit = rl.Cur / 2
	}
	return limit
}

// Start watches the memory the Go runtime has mapped until the returned
// stop is called; once it exceeds limit bytes, over calls exceeded(used)
// once, from another goroutine (which would end the process).
func Start(limit uint64, exceeded func(used uint64)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
		t := time.NewTicker(Every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(s)
			if s[0].Value.Kind() == metrics.KindUint64 {
				if used := s[0].Value.Uint64(); used > limit {
					exceeded(used)
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done); wg.Wait() })
	}
}
