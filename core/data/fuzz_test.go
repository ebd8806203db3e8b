package data

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"selmix/core/npy"
	"selmix/core/npy/npytest"
)

func FuzzReadIDXImages(f *testing.F) {
	good := idxBytes([]int{2, 2, 3}, []byte{0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255})
	f.Add(good)
	f.Add(gzipBytes(f, good))
	f.Add(good[:7])
	f.Add(idxBytes([]int{1 << 30, 1 << 30, 1 << 30}, nil))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		x, n, rows, cols, err := ReadIDXImages(bytes.NewReader(b))
		if err != nil {
			return
		}
		if len(x) != n*rows*cols {
			t.Fatalf("len(x)=%d for %d×%d×%d", len(x), n, rows, cols)
		}
		for i, v := range x {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("x[%d]=%v outside [0,1]", i, v)
			}
		}
	})
}

func FuzzReadIDXLabels(f *testing.F) {
	good := idxBytes([]int{4}, []byte{0, 9, 3, 255})
	f.Add(good)
	f.Add(gzipBytes(f, good))
	f.Add(idxBytes([]int{1 << 31}, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		y, err := ReadIDXLabels(bytes.NewReader(b))
		if err != nil {
			return
		}
		for i, v := range y {
			if v < 0 || v > 255 {
				t.Fatalf("y[%d]=%d", i, v)
			}
		}
	})
}

func FuzzLoadSet(f *testing.F) {
	for _, s := range []Set{imageSet(), {X: []float32{}, Y: []int{}, N: 0, Dim: 3}, {X: []float32{-1, 2}, Y: []int{-1, 70000}, N: 2, Dim: 1}} {
		var buf bytes.Buffer
		if err := SaveSet(&buf, s); err == nil {
			f.Add(buf.Bytes())
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := LoadSet(bytes.NewReader(b))
		if err != nil {
			return
		}
		if err := s.shapeErr(); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := SaveSet(&buf, s); err != nil {
			t.Fatalf("loaded set does not save: %v", err)
		}
		again, err := LoadSet(&buf)
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("re-encoding changed the set: %v", err)
		}
	})
}

func FuzzLoadSplitBytes(f *testing.F) {
	b, err := MarshalSplit(testSplit(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:40])
	f.Add([]byte(splitMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		sp, err := LoadSplitBytes(b)
		if err != nil {
			return
		}
		if err := sp.check(); err != nil {
			t.Fatal(err)
		}
		if _, err := MarshalSplit(sp); err != nil {
			t.Fatalf("loaded split does not marshal: %v", err)
		}
	})
}

// npzSeed is an archive written by npyio: the fuzzers' seed.
func npzSeed(f *testing.F, arrays map[string]any) []byte {
	p := filepath.Join(f.TempDir(), "seed.npz")
	writeNPZ(f, p, arrays)
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

func FuzzFeatureSplit(f *testing.F) {
	f.Add(npzSeed(f, map[string]any{"x": feat[float32](3, 2, 0), "y": []int64{0, 1, -1}}), true)
	f.Add(npzSeed(f, map[string]any{"x": feat[float64](2, 2, 0), "y": []uint8{1, 0}, "names": []string{"a", "b"}}), false)
	f.Fuzz(func(t *testing.T, b []byte, labelsOptional bool) {
		checkSplit(t, b, labelsOptional)
		checkSplit(t, npytest.Archive(b), labelsOptional)
	})
}

// checkSplit loads archive b as a feature split and checks what it gets.
func checkSplit(t *testing.T, b []byte, labelsOptional bool) {
	z, err := npy.NewNPZ("f.npz", bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return
	}
	s, names, err := splitFromNPZ(z, labelsOptional, true)
	if err != nil {
		return
	}
	if err := s.shapeErr(); err != nil {
		t.Fatal(err)
	}
	for i, v := range s.X {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("x[%d] = %v accepted", i, v)
		}
	}
	lo := 0
	if labelsOptional {
		lo = -1
	}
	if err := s.checkLabels(maxClasses, lo); err != nil {
		t.Fatal(err)
	}
	if names != nil {
		for k, n := range names.names {
			if why := checkClassName(n); why != "" {
				t.Fatalf("name %d %q accepted: %s", k, n, why)
			}
		}
	}
}

func FuzzHead(f *testing.F) {
	W := [][]float64{{1, 2, 3}, {4, 5, 6}}
	f.Add(npzSeed(f, map[string]any{"W": W, "b": []float32{0.5, -1, 2}}), 2, 3)
	f.Fuzz(func(t *testing.T, b []byte, d, K int) {
		if d < 1 || K < 1 || d > 1<<10 || K > 1<<10 {
			return
		}
		checkHead(t, b, d, K)
		checkHead(t, npytest.Archive(b), d, K)
	})
}

// checkHead loads archive b as a d×K head and checks what it gets.
func checkHead(t *testing.T, b []byte, d, K int) {
	z, err := npy.NewNPZ("h.npz", bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return
	}
	h, err := headFromNPZ(z, d, K)
	if err != nil {
		return
	}
	if h.D != d || h.K != K || len(h.W) != d*K || len(h.B) != K {
		t.Fatalf("head %d×%d with %d, %d values for d=%d K=%d", h.D, h.K, len(h.W), len(h.B), d, K)
	}
	for _, v := range append(h.W, h.B...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%v accepted", v)
		}
	}
}
