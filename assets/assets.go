// Package assets holds what the binary embeds so that the default
// experiment runs with no download: a Fashion-MNIST-LT slice and a
// pre-trained checkpoint. `make assets` regenerates both (see Makefile).
// It hands out bytes and imports nothing of selmix: core/experiment
// decodes them.
package assets

import (
	"embed"
	"fmt"
)

//go:embed default
var files embed.FS

const (
	splitFile      = "default/split.bin"
	checkpointFile = "default/model.npz"
)

// DefaultSplit is the embedded supervised Fashion-MNIST-LT slice
// (ρ = 100, N_1 = 5000, 500 validation images per class, a balanced test
// slice), in the format data.LoadSplitBytes reads. It is stored as it is
// read, not gzipped: inflating its 15 MB took every process that opens
// the built-in experiment 0.13 s, half its start.
func DefaultSplit() ([]byte, error) {
	b, err := files.ReadFile(splitFile)
	if err != nil {
		return nil, fmt.Errorf("built-in dataset missing from this binary (run `make assets`): %w", err)
	}
	return b, nil
}

// DefaultCheckpoint is the embedded pre-trained model for DefaultSplit.
func DefaultCheckpoint() ([]byte, error) {
	b, err := files.ReadFile(checkpointFile)
	if err != nil {
		return nil, fmt.Errorf("built-in checkpoint missing from this binary (run `make assets`): %w", err)
	}
	return b, nil
}
