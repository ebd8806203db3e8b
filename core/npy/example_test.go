package npy_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"selmix/core/npy"
)

// Encode writes a .npy array; NewReader checks its header against the
// bytes present, and a Read method decodes it into the destination type
// (float64 data read as float32 here).
func ExampleEncode() {
	var buf bytes.Buffer
	if err := npy.Encode(&buf, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6.5}); err != nil {
		panic(err)
	}
	a, err := npy.NewReader("x.npy", &buf, int64(buf.Len()))
	if err != nil {
		panic(err)
	}
	defer a.Close()
	dst := make([]float32, a.Len())
	if err := a.ReadFloat32(dst); err != nil {
		panic(err)
	}
	fmt.Println(a.DType, npy.ShapeString(a.Shape), dst)
	// Output: <f8 (2, 3) [1 2 3 4 5 6.5]
}

// WriteNPZ writes several arrays into one .npz archive; OpenNPZ lists
// them, and Float64s reads one checking its dtype and shape (-1: any).
func ExampleWriteNPZ() {
	dir, err := os.MkdirTemp("", "npy-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "heads.npz")
	err = npy.WriteNPZ(path,
		npy.Entry{Name: "W", Shape: []int{2, 2}, Data: []float64{1, 0, 0, 1}},
		npy.Entry{Name: "b", Shape: []int{2}, Data: []float64{0.5, -0.5}},
	)
	if err != nil {
		panic(err)
	}
	z, err := npy.OpenNPZ(path)
	if err != nil {
		panic(err)
	}
	defer z.Close()
	b, shape, err := z.Float64s("b", -1)
	if err != nil {
		panic(err)
	}
	fmt.Println(z.Keys(), b, shape)
	_, _, err = z.Float64s("W", 3, 2)
	fmt.Println(err != nil)
	// Output:
	// [W b] [0.5 -0.5] [2]
	// true
}
