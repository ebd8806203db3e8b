package app

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"selmix/core/local"
	"selmix/core/npy"
)

// ExportHead writes the head (W of shape d×K, b of K) of run id's
// checkpoint that sel selects to out: an .npz with arrays W and b, or for
// .npy the pair out_W.npy and out_b.npy. w is told what was written.
func ExportHead(w io.Writer, root, id string, sel Checkpoint, out string) error {
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
		if err := npy.WriteNPZ(out, arrays...); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s: W (%d×%d), b (%d) from run %s %s\n", out, d, K, K, r.Meta.ID, which)
	case ".npy":
		stem := strings.TrimSuffix(out, ext)
		for _, a := range arrays {
			p := stem + "_" + a.Name + ".npy"
			if err := npy.WriteFile(p, a.Shape, a.Data); err != nil {
				return err
			}
			fmt.Fprintf(w, "wrote %s (%v)\n", p, a.Shape)
		}
	default:
		return BadInput("--out %q: want a .npz or .npy file name", out)
	}
	return nil
}
