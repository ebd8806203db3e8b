package npy

import (
	"bytes"
	"math"
	"testing"
	"unicode/utf8"

	"selmix/core/npy/npytest"
)

// readAll decodes a by its kind and checks what came out: every element
// accounted for, strings valid UTF-8, and numbers that survive a round
// trip through Encode bit for bit.
func readAll(t *testing.T, a *Array) {
	t.Helper()
	n := a.Len()
	switch a.DType.Kind {
	case Float:
		roundTrip(t, a, (*Array).ReadFloat64, func(x float64) uint64 { return math.Float64bits(x) })
	case Int, Uint:
		roundTrip(t, a, (*Array).ReadInt, func(x int) int { return x })
	case Bytes, Unicode:
		s, err := a.ReadStrings()
		if err != nil {
			return
		}
		if len(s) != n {
			t.Fatalf("%d strings for shape %v", len(s), a.Shape)
		}
		for i, x := range s {
			if !utf8.ValidString(x) {
				t.Fatalf("string %d is not valid UTF-8", i)
			}
		}
	default:
		t.Fatalf("header with kind %q accepted", a.DType.Kind)
	}
}

// roundTrip reads a with read and, if it reads, checks that Encode and
// read again give the same elements (compared as key gives them: a float
// by its bits).
func roundTrip[T float64 | int, K comparable](t *testing.T, a *Array, read func(*Array, []T) error, key func(T) K) {
	t.Helper()
	v := make([]T, a.Len())
	if read(a, v) != nil {
		return
	}
	var buf bytes.Buffer
	if err := Encode(&buf, a.Shape, v); err != nil {
		t.Fatalf("re-encoding %v: %v", a.Header, err)
	}
	b, err := openBytes("re", buf.Bytes())
	if err != nil {
		t.Fatalf("re-encoded array does not read: %v", err)
	}
	w := make([]T, len(v))
	if err := read(b, w); err != nil {
		t.Fatalf("re-encoded array does not read: %v", err)
	}
	for i := range v {
		if key(v[i]) != key(w[i]) {
			t.Fatalf("element %d: %v became %v", i, v[i], w[i])
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add(rawNPY("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }", make([]byte, 32)))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := openBytes("f.npy", b)
		if err != nil {
			return
		}
		if int64(a.Len())*int64(a.DType.Size) > int64(len(b)) {
			t.Fatalf("header %v accepted for %d bytes", a.Header, len(b))
		}
		readAll(t, a)
	})
}

// FuzzReadNPZ reads its input as an archive, and as the members of one
// (npytest), so that mutations reach the arrays past the CRC-32 checks.
func FuzzReadNPZ(f *testing.F) {
	f.Add(npytest.Encode(npytest.Member{Name: "x.npy", Data: rawNPY("{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }", make([]byte, 6)), Deflate: true}))
	f.Fuzz(func(t *testing.T, b []byte) {
		readArchive(t, b)
		readArchive(t, npytest.Archive(b))
	})
}

// readArchive reads every array of archive b.
func readArchive(t *testing.T, b []byte) {
	z, err := NewNPZ("f.npz", bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return
	}
	for _, k := range z.Keys() {
		a, err := z.Open(k)
		if err != nil {
			continue
		}
		if int64(a.Len())*int64(a.DType.Size) > maxDeflateRatio*int64(len(b)+2) {
			t.Fatalf("%s: header %v accepted for %d bytes", k, a.Header, len(b))
		}
		readAll(t, a)
		a.Close()
	}
}
