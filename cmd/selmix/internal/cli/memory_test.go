package cli

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/npy"
	"selmix/core/npy/npytest"
	"selmix/runs/runstest"
)

// Under the 4 GB address space of the README's Slurm example, a 5 GB
// event log (a sparse tail of zeros) and a 2 MB .npz whose x inflates to
// a (100000, 6000) float32 array are refused with one line and exit 2;
// both ended the process with Go's "fatal error: out of memory" and a
// goroutine dump.
func TestLargerThanMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	const id = "20261123-1200-819c"
	root := t.TempDir()
	runstest.Copy(t, filepath.Join(vizRuns, id), filepath.Join(root, id), nil)
	log := filepath.Join(root, id, "events.jsonl")
	if err := os.Truncate(log, 5<<30); err != nil {
		t.Skip("no sparse 5 GB file here:", err)
	}
	env := append(os.Environ(), "SELMIX_RUNS="+root)
	lineRe := regexp.MustCompile(`^selmix: ` + regexp.QuoteMeta(log) + `:\d+ \(byte \d+\): line too long: more than 67108864 bytes$`)
	for _, args := range [][]string{
		{"runs", "show", id},
		{"resume", "-q", id},
		{"export", id, "--format", "tensorboard", "--out", t.TempDir()},
		{"runs", "export", id, "--csv", filepath.Join(t.TempDir(), "t.csv")},
	} {
		out, code := selmixtest.CodeLimited(t, env, args...)
		if out = strings.TrimSpace(out); code != 2 || !lineRe.MatchString(out) {
			t.Errorf("%v: exit %d, output\n%.1000s\nwant exit 2 and one line matching %s", args, code, out, lineRe)
		}
	}

	bomb := filepath.Join(t.TempDir(), "train.npz")
	writeZeroBomb(t, bomb, 100000, 6000)
	if fi, _ := os.Stat(bomb); fi.Size() > 4<<20 {
		t.Fatalf("the archive is %d bytes, want a few MB", fi.Size())
	}
	out, code := selmixtest.CodeLimited(t, env, "run", "--headless", "-q", "--set", "data.source=features", "--set", "model.arch=identity",
		"--set", "data.train="+bomb, "--set", "data.val="+bomb, "--set", "data.test="+bomb)
	want := "selmix: data.train: " + bomb + `: member "x.npy": a (100000, 6000) <f4 array takes 2.4 GB, more than the `
	if out = strings.TrimSpace(out); code != 2 || strings.Contains(out, "\n") || !strings.HasPrefix(out, want) {
		t.Errorf("data.train: exit %d, output\n%.1000s\nwant exit 2 and one line starting %q", code, out, want)
	}
}

// writeZeroBomb writes an .npz at path whose deflated member x.npy is a
// float32 array of rows×cols zeros, and y.npy rows int64 labels
// (npytest.WriteZeros: gigabytes from a few MB).
func writeZeroBomb(t *testing.T, path string, rows, cols int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	member := func(name, descr string, shape string, n int) {
		dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
		dict += strings.Repeat(" ", 63-(10+len(dict))%64) + "\n"
		hdr := append([]byte("\x93NUMPY\x01\x00"), byte(len(dict)), byte(len(dict)>>8))
		hdr = append(hdr, dict...)
		if err := npytest.WriteZeros(zw, name, hdr, n); err != nil {
			t.Fatal(err)
		}
	}
	member("x.npy", "<f4", fmt.Sprintf("(%d, %d)", rows, cols), rows*cols*4)
	member("y.npy", "<i8", fmt.Sprintf("(%d,)", rows), rows*8)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// The archive writeZeroBomb writes reads back as what it says: checked on
// a small one, whose arrays are read whole.
func TestZeroBomb(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.npz")
	writeZeroBomb(t, path, 1000, 700) // 2.8 MB of x: repeats and a remainder
	z, err := npy.OpenNPZ(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	a, err := z.Open("x")
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, a.Len())
	if err := a.ReadFloat32(x); err != nil || len(x) != 700_000 || slices.ContainsFunc(x, func(v float32) bool { return v != 0 }) {
		t.Fatalf("x: %v, shape %v", err, a.Shape)
	}
	a.Close()
	a, err = z.Open("y")
	if err != nil {
		t.Fatal(err)
	}
	y := make([]int, a.Len())
	if err := a.ReadInt(y); err != nil || len(y) != 1000 {
		t.Fatalf("y: %v, %d labels", err, len(y))
	}
	a.Close()
}
