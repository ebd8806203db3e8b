package npy

import (
	"bytes"
	"testing"
)

// BenchmarkReadFloat32 reads 4M elements (a 107k×40 feature split's worth)
// stored as float32 and as float64: the feature loader's hot path.
func BenchmarkReadFloat32(b *testing.B) {
	const n = 1 << 22
	for _, c := range []struct {
		name string
		v    any
	}{{"from-f4", make([]float32, n)}, {"from-f8", make([]float64, n)}} {
		var buf bytes.Buffer
		if err := Encode(&buf, []int{n}, c.v); err != nil {
			b.Fatal(err)
		}
		dst := make([]float32, n)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(buf.Len()))
			for b.Loop() {
				a, err := openBytes("x.npy", buf.Bytes())
				if err != nil {
					b.Fatal(err)
				}
				if err := a.ReadFloat32(dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
