package data

import (
	"bytes"
	"reflect"
	"testing"
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

func FuzzReadNPY(f *testing.F) {
	f.Add(rawNPY("<f4", false, "(1, 2)", []byte{0, 0, 128, 63, 0, 0, 0, 64}))
	f.Add(rawNPY("<i8", true, "(2, 1)", make([]byte, 16)))
	f.Add(rawNPY("|O", false, "(2,)", make([]byte, 16)))
	f.Add(rawNPY("<U3", false, "(2,)", make([]byte, 24)))
	f.Add(rawNPY("<f8", false, "(-1, 2)", nil))
	f.Add(rawNPY("<f8", false, "(99999999999, 99999999999)", nil))
	f.Add([]byte("\x93NUMPY\x01\x00\x05\x00abcde"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := readNPY(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		n := 1
		for _, d := range a.shape {
			n *= d
		}
		if len(a.f)+len(a.i) != n || (a.f == nil) == (a.i == nil) {
			t.Fatalf("shape %v but %d floats, %d ints", a.shape, len(a.f), len(a.i))
		}
	})
}
