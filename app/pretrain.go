package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"selmix/core/blas"
	"selmix/core/data"
	"selmix/core/experiment"
	"selmix/core/local"
	"selmix/core/loop"
	"selmix/core/model"
	"selmix/internal/atomicfile"
	"selmix/internal/boundedfile"
)

// PretrainTo builds c's split, pre-trains a fresh model on its labeled
// set with one progress line per epoch to w, and writes its checkpoint
// to out and, when splitOut is set, the split (the format data.LoadSplit reads) to splitOut.
func PretrainTo(ctx context.Context, w io.Writer, c experiment.Config, out, splitOut string) error {
	sp, head, err := experiment.LoadData(c)
	if err != nil {
		return UsageError{err}
	}
	net, err := model.New(local.ModelConfig(c, sp))
	if err != nil {
		return UsageError{err}
	}
	if head != nil {
		if err := net.SetHead(head.W, head.B); err != nil {
			return UsageError{err}
		}
	}
	if err := Pretrain(ctx, w, c, net, sp, false); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := net.Save(&buf); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(out, buf.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s (%d bytes)\n", out, buf.Len())
	if splitOut == "" {
		return nil
	}
	raw, err := data.MarshalSplit(sp)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(splitOut, raw); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s (%d bytes)\n", splitOut, len(raw))
	return nil
}

// Pretrain runs pre-training with one progress line per epoch.
func Pretrain(ctx context.Context, w io.Writer, c experiment.Config, net *model.Net, sp *data.Split, quiet bool) error {
	pc := local.PretrainConfigOf(c)
	start := time.Now()
	if !quiet {
		fmt.Fprintf(w, "pre-training %s on %d labeled samples: %s, %d epochs\n", c.Model.Arch, sp.Labeled.N, c.Pretrain.Loss, pc.Epochs)
	}
	err := local.Pretrain(ctx, net, sp, pc, func(p local.PretrainProgress) {
		if !quiet {
			fmt.Fprintf(w, "epoch %3d/%d  loss %.4f", p.Epoch, p.Epochs, p.Loss)
			if pc.FixMatch && sp.Unlabeled.N > 0 {
				fmt.Fprintf(w, "  pseudo-labelled %.0f%%", 100*p.Confident)
			}
			fmt.Fprintf(w, "  (%.1fs)\n", time.Since(start).Seconds())
		}
	})
	return err
}

// PretrainCached pre-trains net as Pretrain does, sharing the result
// through pretrain.cache when it is set: runs that would pre-train the
// same model (a sweep's members of one seed) find its checkpoint under a
// name hashed from everything pre-training reads; the first writes it
// while the others wait on its lock. Every run, the first included,
// continues from the checkpoint as saved, so sharing changes no result.
func PretrainCached(ctx context.Context, w io.Writer, c experiment.Config, net *model.Net, sp *data.Split, quiet bool) (*model.Net, error) {
	if c.Pretrain.Cache == "" {
		return net, Pretrain(ctx, w, c, net, sp, quiet)
	}
	path, err := pretrainCachePath(c)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Pretrain.Cache, 0o755); err != nil {
		return nil, fmt.Errorf("pretrain.cache: %w", err)
	}
	lock, err := waitLock(ctx, path+".lock")
	if err != nil {
		return nil, fmt.Errorf("pretrain.cache: %w", err)
	}
	defer lock.Close()
	b, err := boundedfile.ReadFile(path, model.CheckpointFile)
	if errors.Is(err, os.ErrNotExist) {
		if err := Pretrain(ctx, w, c, net, sp, quiet); err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if err := net.Save(&buf); err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(path, buf.Bytes()); err != nil {
			return nil, fmt.Errorf("pretrain.cache: %w", err)
		}
		b = buf.Bytes()
	} else if err != nil {
		return nil, fmt.Errorf("pretrain.cache: %w", err)
	} else if !quiet {
		fmt.Fprintf(w, "pre-trained model from the cache: %s\n", path)
	}
	loaded, err := model.Load(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w (delete it to pre-train again)", path, err)
	}
	return loaded, nil
}

// pretrainCachePath is where pretrain.cache keeps the model c pre-trains:
// a name hashed from everything pre-training reads.
func pretrainCachePath(c experiment.Config) (string, error) {
	// CSST pre-training reads the objective and its parameters; the
	// others do not, so every objective shares their model.
	pc := local.PretrainConfigOf(c)
	var objective *loop.Hyper
	if pc.CSST {
		objective = &c.Finetune.Hyper
	} else {
		pc.Objective = ""
	}
	key, err := json.Marshal(struct {
		Data      experiment.Data
		Arch      string
		Hidden    []int
		Adapter   int
		Pretrain  local.PretrainConfig
		Objective *loop.Hyper
		BLAS      string
		Threads   int
	}{c.Data, c.Model.Arch, c.Model.Hidden, c.Model.Adapter, pc, objective, blas.Name, blas.Threads()})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(key)
	return filepath.Join(c.Pretrain.Cache, "pretrained-"+hex.EncodeToString(sum[:8])+".npz"), nil
}

// waitLock takes an exclusive lock on path, waiting while another process
// holds it, until ctx ends.
func waitLock(ctx context.Context, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
