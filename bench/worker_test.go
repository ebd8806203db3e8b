package bench

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestEvalPasses(t *testing.T) {
	for _, c := range []struct{ steps, refresh, val int }{{200, 50, 5}, {201, 50, 6}, {30, 10, 4}, {5, 50, 2}, {1, 1, 2}} {
		if v, test := EvalPasses(c.steps, c.refresh); v != c.val || test != 2 {
			t.Errorf("EvalPasses(%d, %d) = %d, %d; want %d, 2", c.steps, c.refresh, v, test, c.val)
		}
	}
}

func TestGPUWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	g := &gpuSampler{samples: []gpuSample{{t0, 10, 500}, {t0.Add(time.Second), 80, 900}, {t0.Add(2 * time.Second), 90, 700}, {t0.Add(3 * time.Second), 0, 2000}}}
	u, m := g.window(t0.Add(500*time.Millisecond), t0.Add(2*time.Second))
	if u != 0.85 || m != 900 {
		t.Errorf("window = %v, %v; want 0.85, 900", u, m)
	}
	if u, m := g.window(t0.Add(10*time.Second), t0.Add(11*time.Second)); !math.IsNaN(u) || !math.IsNaN(m) {
		t.Errorf("empty window = %v, %v; want NaN, NaN", u, m)
	}
}

func TestFinalTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	log := `{"seq":1,"time":"2026-11-23T10:31:55.1Z","kind":"start","step":0}
{"seq":2,"time":"2026-11-23T10:31:56.5Z","kind":"refresh","step":0}
{"seq":3,"time":"2026-11-23T10:32:01.25Z","kind":"final","step":10}
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := finalTime(path)
	if want := time.Date(2026, 11, 23, 10, 32, 1, 250e6, time.UTC); err != nil || !got.Equal(want) {
		t.Errorf("finalTime = %v, %v; want %v", got, err, want)
	}
	if err := os.WriteFile(path, []byte(log[:len(log)/2]), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := finalTime(path); err == nil {
		t.Error("a log without a final event: no error")
	}
}

func TestTailAndPrintable(t *testing.T) {
	b := &tailBuffer{max: 8}
	b.Write([]byte("0123456789"))
	b.Write([]byte("ab"))
	if got := b.String(); got != "456789ab" {
		t.Errorf("tailBuffer kept %q, want %q", got, "456789ab")
	}
	if got, want := tail("one\ntwo\x1b[2J\nthree\xff\tend\n", 2), "two\uFFFD[2J\nthree\uFFFD\tend"; got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
}
