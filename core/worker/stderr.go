package worker

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// lines collects a worker's stderr: the last few for error messages, and
// every one for the sink once there is one. It reads to the end whatever
// the worker writes — a line too long is cut, never fatal — so the worker
// never blocks on, or breaks, its stderr.
type lines struct {
	mu      sync.Mutex
	last    []string
	pending []string
	pendB   int // bytes in pending
	dropped int // lines dropped from pending
	sink    func(string)
	echo    func(string) // shown each line while there is no sink
	done    chan struct{}
}

const (
	keepLast = 20
	// MaxLine is the longest stderr line kept; the rest of a longer one is
	// cut and counted.
	MaxLine = 64 << 10
	// keepPending bounds the bytes of the lines kept until there is a
	// sink (a worker may write a lot while it pre-trains); the oldest go.
	keepPending = 1 << 20
)

func newLines() *lines { return &lines{done: make(chan struct{})} }

func (l *lines) read(r io.ReadCloser) {
	defer close(l.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<16)
	var line []byte
	cut := 0
	for {
		frag, err := br.ReadSlice('\n')
		eol := err == nil
		if eol {
			frag = frag[:len(frag)-1]
		}
		take := min(len(frag), MaxLine-len(line))
		line = append(line, frag[:take]...)
		cut += len(frag) - take
		if err == bufio.ErrBufferFull {
			continue
		}
		if eol || len(line) > 0 || cut > 0 {
			l.add(cutLine(line, cut))
		}
		if err != nil {
			return
		}
		line, cut = line[:0], 0
	}
}

// cutLine is a stderr line as kept: without its carriage return, and, if
// it was cut, ending on a whole character and saying how much was cut.
func cutLine(b []byte, cut int) string {
	if cut == 0 {
		return strings.TrimRight(string(b), "\r")
	}
	for n := 0; n < utf8.UTFMax && len(b) > 0; n++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
		cut++
	}
	return fmt.Sprintf("%s … [cut %d bytes]", b, cut)
}

func (l *lines) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = append(l.last, line)
	if len(l.last) > keepLast {
		l.last = l.last[len(l.last)-keepLast:]
	}
	// The sink runs under the lock so lines reach it in order; it must be
	// quick (a file append, a stream publish).
	if l.sink != nil {
		l.sink(line)
		return
	}
	if l.echo != nil {
		l.echo(line)
	}
	l.pending = append(l.pending, line)
	l.pendB += len(line) + 1
	for l.pendB > keepPending {
		l.pendB -= len(l.pending[0]) + 1
		l.pending[0] = ""
		l.pending = l.pending[1:]
		l.dropped++
	}
}

func (l *lines) setSink(f func(string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped > 0 {
		f(fmt.Sprintf("[selmix: %d earlier lines of the worker's stderr were dropped: only the last %d KiB before this point are kept]", l.dropped, keepPending>>10))
		l.dropped = 0
	}
	for _, line := range l.pending {
		f(line)
	}
	l.pending, l.pendB = nil, 0
	l.sink, l.echo = f, nil
}

// tail is the last n non-empty lines joined in one line.
func (l *lines) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for i := len(l.last) - 1; i >= 0 && len(out) < n; i-- {
		if s := strings.TrimSpace(l.last[i]); s != "" {
			out = append([]string{s}, out...)
		}
	}
	return strings.Join(out, " | ")
}

func (l *lines) wait() {
	select {
	case <-l.done:
	case <-time.After(2 * time.Second):
	}
}
