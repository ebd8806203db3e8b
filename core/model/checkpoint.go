package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"selmix/core/npy"
	"selmix/internal/boundedfile"

	"gorgonia.org/tensor"
)

// Checkpoint layout (a NumPy .npz archive, readable with numpy.load):
//
//	config.json      uint8 array: the Config as JSON
//	param/<name>     weights, float32 or float64, in their true shapes
//	momentum/<name>  SGD momentum buffers, same dtype and shape
const (
	configKey   = "config.json"
	paramPfx    = "param/"
	momentumPfx = "momentum/"
)

// CheckpointFile bounds a model checkpoint file (its arrays are checked
// against their headers as they are read).
var CheckpointFile = boundedfile.Limit{What: "model checkpoint", Max: 4 << 30}

// Save writes the configuration, weights and momentum buffers as an .npz
// archive. Load(Save(n)) continues training bit-identically.
func (n *Net) Save(w io.Writer) error {
	cfg, err := json.Marshal(n.cfg)
	if err != nil {
		return fmt.Errorf("model: encoding config: %w", err)
	}
	zw := npy.NewNPZWriter(w)
	if err := zw.Add(configKey, []int{len(cfg)}, cfg); err != nil {
		return fmt.Errorf("model: writing checkpoint: %w", err)
	}
	for _, p := range n.params {
		for _, e := range []struct {
			pfx string
			t   *tensor.Dense
		}{{paramPfx, p.val}, {momentumPfx, p.mom}} {
			if err := zw.Add(e.pfx+p.name, p.shape, e.t.Data()); err != nil {
				return fmt.Errorf("model: writing checkpoint: %w", err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("model: writing checkpoint: %w", err)
	}
	return nil
}

// checkpointName prefixes the errors of a checkpoint's archive.
const checkpointName = "model checkpoint"

// Load reads a checkpoint written by Save. Errors name the missing or
// malformed array and what was expected.
func Load(r io.Reader) (*Net, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("model: reading checkpoint: %w", err)
	}
	z, err := npy.NewNPZ(checkpointName, bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	raw, err := readConfig(z)
	if err != nil {
		return nil, err
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, z.Errorf(configKey, "not a valid config: %v", err)
	}
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, z.Errorf(configKey, "%v", err)
	}
	// Check every array's header against the configuration before the
	// network is allocated, so a forged config cannot make it larger than
	// the arrays the checkpoint actually holds.
	if len(c.Hidden) > len(z.Keys()) {
		return nil, z.Errorf(configKey, "%d hidden layers, but the checkpoint holds only %d arrays", len(c.Hidden), len(z.Keys()))
	}
	size := 4
	if c.Dtype == "float64" {
		size = 8
	}
	specs, _ := c.layout()
	arrays := make([]*npy.Array, 0, 2*len(specs))
	defer func() {
		for _, a := range arrays {
			a.Close()
		}
	}()
	for _, s := range specs {
		for _, key := range []string{paramPfx + s.name, momentumPfx + s.name} {
			a, err := openParam(z, key, size, s.shape, c.Dtype)
			if err != nil {
				return nil, err
			}
			arrays = append(arrays, a)
		}
	}
	n, err := New(c)
	if err != nil {
		return nil, z.Errorf(configKey, "%v", err)
	}
	for i, p := range n.params {
		for j, t := range []*tensor.Dense{p.val, p.mom} {
			a := arrays[2*i+j]
			switch v := t.Data().(type) {
			case []float32:
				err = a.ReadFloat32(v)
			case []float64:
				err = a.ReadFloat64(v)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

// readConfig reads the configuration array (uint8, 1-D).
func readConfig(z *npy.NPZ) ([]byte, error) {
	if !z.Has(configKey) {
		return nil, fmt.Errorf("%s: no %q array (not a selmix checkpoint?)", checkpointName, configKey)
	}
	a, err := z.Open(configKey)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	if err := a.CheckShape(-1); err != nil {
		return nil, err
	}
	raw := make([]byte, a.Len())
	if err := a.ReadUint8(raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// openParam opens one weight or momentum array after checking its dtype
// (exactly the model's: no silent narrowing or widening) and shape.
func openParam(z *npy.NPZ, key string, size int, shape []int, dtype string) (*npy.Array, error) {
	want := fmt.Sprintf("%s %s", dtype, npy.ShapeString(shape))
	if !z.Has(key) {
		return nil, fmt.Errorf("%s: missing array %q (want %s)", checkpointName, key, want)
	}
	a, err := z.Open(key)
	if err != nil {
		return nil, err
	}
	if a.DType.Kind != npy.Float || a.DType.Size != size || !slices.Equal(a.Shape, shape) {
		a.Close()
		return nil, a.Errorf("array is %s %s, want %s", a.DType, npy.ShapeString(a.Shape), want)
	}
	return a, nil
}
