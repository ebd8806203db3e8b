package app

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"selmix/core/local"
	"selmix/core/npy"
	"selmix/internal/atomicfile"
)

// ExportHead writes the head (W of shape d×K, b of K) of run id's
// checkpoint that sel selects to out: an .npz with arrays W and b, or for
// .npy the pair out_W.npy and out_b.npy, each written as every output a
// person names is (atomicfile.Out: a symbolic link or a named pipe is
// written through, not replaced). w is told what was written.
func ExportHead(w io.Writer, root, id string, sel Checkpoint, out string) error {
	if err := checkOutFile(out); err != nil {
		return err
	}
	r, _, err := OpenHistory(root, id) // damage is refused as by every reader
	if err != nil {
		return err
	}
	at, state, err := checkpointAt(w, r, sel)
	if err != nil {
		return err
	}
	which := fmt.Sprintf("step %d", at)
	if sel.Best {
		which = fmt.Sprintf("best checkpoint (step %d)", at)
	}
	ck, err := local.ParseCheckpoint(state)
	if err != nil {
		return fmt.Errorf("%s: checkpoint at step %d: %w", r.Dir, at, err)
	}
	W, b := ck.Trainer.W, ck.Trainer.B
	d, K := ck.D, ck.K
	arrays := []npy.Entry{{Name: "W", Shape: []int{d, K}, Data: W}, {Name: "b", Shape: []int{K}, Data: b}}
	switch ext := filepath.Ext(out); ext {
	case ".npz":
		err := atomicfile.Out(out, w, func(f io.Writer) error {
			z := npy.NewNPZWriter(f)
			for _, a := range arrays {
				if err := z.Add(a.Name, a.Shape, a.Data); err != nil {
					return err
				}
			}
			return z.Close()
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s: W (%d×%d), b (%d) from run %s %s\n", out, d, K, K, r.Meta.ID, which)
	case ".npy":
		stem := strings.TrimSuffix(out, ext)
		for _, a := range arrays {
			p := stem + "_" + a.Name + ".npy"
			if err := atomicfile.Out(p, w, func(f io.Writer) error { return npy.Encode(f, a.Shape, a.Data) }); err != nil {
				return err
			}
			fmt.Fprintf(w, "wrote %s (%v)\n", p, a.Shape)
		}
	}
	return nil
}

// checkOutFile checks export-head's --out before anything is read: a
// .npz or .npy name in a folder that is there, naming no folder itself.
func checkOutFile(out string) error {
	switch filepath.Ext(out) {
	case ".npz", ".npy":
	default:
		return BadInput("--out %q: want a .npz or .npy file name", out)
	}
	dir := filepath.Dir(out)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		why := "not a folder"
		if errors.Is(err, fs.ErrNotExist) {
			why = "no such folder"
		} else if err != nil {
			why = err.Error()
		}
		return BadInput("--out %q: %s: %s", out, dir, why)
	}
	if fi, err := os.Stat(out); err == nil && fi.IsDir() {
		return BadInput("--out %q: a folder, not a file", out)
	}
	return nil
}
