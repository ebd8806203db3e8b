package worker

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// Before there is a sink, the lines kept are bounded in bytes: the oldest
// go, and the sink is told how many.
func TestLinesPendingBounded(t *testing.T) {
	l := newLines()
	r, w := io.Pipe()
	go l.read(r)
	line := strings.Repeat("a", 1000)
	const n = 3000 // about 3 MiB
	for i := range n {
		fmt.Fprintf(w, "%04d%s\n", i, line)
	}
	w.Close()
	<-l.done
	var got []string
	l.setSink(func(s string) { got = append(got, s) })
	kept := keepPending / 1005
	if len(got) != kept+1 {
		t.Fatalf("%d lines handed on, want %d and a note", len(got), kept+1)
	}
	wantNote := fmt.Sprintf("[selmix: %d earlier lines of the worker's stderr were dropped: only the last 1024 KiB before this point are kept]", n-kept)
	if got[0] != wantNote {
		t.Errorf("first line %q, want %q", got[0], wantNote)
	}
	if last := got[len(got)-1]; last != fmt.Sprintf("%04d%s", n-1, line) {
		t.Errorf("last line %.10q…, want the last written", last)
	}
}

// A cut line ends on a whole character.
func TestCutLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		cut  int
		want string
	}{
		{"abc\r", 0, "abc"},
		{"abc", 5, "abc … [cut 5 bytes]"},
		{"ab\u00e9"[:3], 5, "ab … [cut 6 bytes]"}, // é's first byte
		{"a\u20ac"[:3], 2, "a … [cut 4 bytes]"},   // two of €'s three
		{"a\u00e9", 1, "a\u00e9 … [cut 1 bytes]"}, // whole
	} {
		if got := cutLine([]byte(tc.in), tc.cut); got != tc.want {
			t.Errorf("cutLine(%q, %d) = %q, want %q", tc.in, tc.cut, got, tc.want)
		}
	}
}

// Lines echoed before there is a sink (printed to the terminal while the
// worker starts) are kept for the sink too: worker.log lost every line
// from before the worker's hello unless -q was given. Once the sink is
// set, the echo stops.
func TestLinesEchoedAreKept(t *testing.T) {
	l := newLines()
	var echoed, got []string
	l.echo = func(s string) { echoed = append(echoed, s) }
	l.add("loading data")
	l.add("pre-training")
	l.setSink(func(s string) { got = append(got, s) })
	l.add("step 1")
	if strings.Join(echoed, "|") != "loading data|pre-training" || strings.Join(got, "|") != "loading data|pre-training|step 1" {
		t.Errorf("echoed %q, sink got %q", echoed, got)
	}
}
