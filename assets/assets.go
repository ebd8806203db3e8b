// Package assets holds what the binary embeds so that the default
// experiment runs with no download: a Fashion-MNIST-LT slice and a
// pre-trained checkpoint. `make assets` regenerates both (see Makefile).
// It hands out bytes and imports nothing of selmix: core/experiment
// decodes them.
package assets

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
)

//go:embed default
var files embed.FS

const (
	splitFile      = "default/split.bin.gz"
	checkpointFile = "default/model.npz"
)

// DefaultSplit is the embedded supervised Fashion-MNIST-LT slice
// (ρ = 100, N_1 = 5000, 500 validation images per class, a balanced test
// slice), in the format data.LoadSplitBytes reads.
func DefaultSplit() ([]byte, error) {
	b, err := files.ReadFile(splitFile)
	if err != nil {
		return nil, fmt.Errorf("built-in dataset missing from this binary (run `make assets`): %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("built-in dataset %s: %w", splitFile, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("built-in dataset %s: %w", splitFile, err)
	}
	return raw, nil
}

// DefaultCheckpoint is the embedded pre-trained model for DefaultSplit.
func DefaultCheckpoint() ([]byte, error) {
	b, err := files.ReadFile(checkpointFile)
	if err != nil {
		return nil, fmt.Errorf("built-in checkpoint missing from this binary (run `make assets`): %w", err)
	}
	return b, nil
}
