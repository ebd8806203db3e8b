package record

import (
	"os"
	"strconv"
	"testing"
)

// TestWriteSyntheticRun writes a run of K = 1000 classes and 50 refreshes
// (one every 50 steps) of random numbers, without training, into the runs
// root $SELMIX_SYNTH_RUNS: what the run store's size and the readers'
// speed are measured on (docs/run-format.md targets). Set
// SELMIX_SYNTH_EVERY to thin its matrices, SELMIX_SYNTH_REFRESHES for
// another number of refreshes.
//
//	SELMIX_SYNTH_RUNS=/tmp/synth go test -run TestWriteSyntheticRun ./runs/record/
//	selmix runs show --runs /tmp/synth synth; selmix open --runs /tmp/synth synth
func TestWriteSyntheticRun(t *testing.T) {
	root := os.Getenv("SELMIX_SYNTH_RUNS")
	if root == "" {
		t.Skip("set SELMIX_SYNTH_RUNS to a runs root to write a K = 1000 run into")
	}
	config := ""
	if n := os.Getenv("SELMIX_SYNTH_EVERY"); n != "" {
		config = "[record]\nmatrices_every = " + n + "\n"
	}
	const K = 1000
	n := 50
	if s := os.Getenv("SELMIX_SYNTH_REFRESHES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 2 {
			t.Fatalf("SELMIX_SYNTH_REFRESHES=%q: want an integer ≥ 2", s)
		}
	}
	id := record(t, root, config, K, synth(K, n, 50, 1))
	r, _ := open(t, root, id)
	for _, name := range []string{"events.jsonl", "arrays.bin"} {
		fi, err := os.Stat(r.Dir + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes, %d per refresh", name, fi.Size(), fi.Size()/int64(n))
	}
	t.Logf("run %s", r.Dir)
}

// BenchmarkLoadHistory reads a K = 1000 run of 50 refreshes as selmix
// open does before its first frame: the log, every refresh's per-class
// vectors, the replayed snapshots; then the last refresh's G and P, as
// the workbench loads them afterwards.
func BenchmarkLoadHistory(b *testing.B) {
	const K = 1000
	root := b.TempDir()
	id := record(b, root, "", K, synth(K, 50, 50, 1))
	r, _ := open(b, root, id)
	b.ResetTimer()
	for b.Loop() {
		h, err := Load(r)
		if err != nil {
			b.Fatal(err)
		}
		if n := len(Snapshots(h)); n < 50 {
			b.Fatalf("%d snapshots", n)
		}
		if _, _, err := h.Matrices(h.LastMatrices()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordRefresh writes one K = 1000 refresh: its event, its
// vectors and its G and P, fsynced.
func BenchmarkRecordRefresh(b *testing.B) {
	const K = 1000
	snaps := refreshes(synth(K, 2, 50, 2))
	rec, err := New(b.TempDir(), "bench", "", Options{}, runMeta())
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close(false)
	b.ResetTimer()
	for b.Loop() {
		if err := rec.logRefresh(snaps[0]); err != nil {
			b.Fatal(err)
		}
	}
}
