package model

import (
	"bytes"
	"testing"

	"selmix/core/npy/npytest"
)

// FuzzLoad: a checkpoint either fails to load with an error or loads into
// a network that saves and loads back to the same bytes. The input is read
// as an archive and as the members of one (npytest), so that mutations
// reach the arrays past the CRC-32 checks.
func FuzzLoad(f *testing.F) {
	for _, cfg := range []Config{
		{In: 3, Hidden: []int{2}, Classes: 2},
		{Arch: "identity", In: 2, Adapter: 2, Classes: 3, Dtype: "float64"},
	} {
		n := newNet(f, cfg)
		f.Add(saved(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkLoad(t, b)
		checkLoad(t, npytest.Archive(b))
	})
}

// checkLoad loads checkpoint b and, if it loads, checks that the network
// saves and loads back to the same bytes.
func checkLoad(t *testing.T, b []byte) {
	n, err := Load(bytes.NewReader(b))
	if err != nil {
		return
	}
	var first, second bytes.Buffer
	if err := n.Save(&first); err != nil {
		t.Fatalf("a loaded network does not save: %v", err)
	}
	m, err := Load(bytes.NewReader(first.Bytes()))
	if err != nil {
		t.Fatalf("a saved network does not load: %v", err)
	}
	if err := m.Save(&second); err != nil || !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatalf("save/load/save is not stable (%v)", err)
	}
}
