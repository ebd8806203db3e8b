package cli

import (
	"os"

	"github.com/sbinet/npyio/npz"
)

func writeFloat32(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := npz.NewWriter(f)
	if err := w.Write("C.npy", []float32{0.5, 0, 0, 0.5}); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Close()
}
