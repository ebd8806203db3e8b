package local

import (
	"bytes"
	"fmt"

	"selmix/assets"
	"selmix/core/data"
	"selmix/core/experiment"
	"selmix/core/model"
	"selmix/internal/boundedfile"
)

// ModelConfig is the architecture c asks for on split sp.
func ModelConfig(c experiment.Config, sp *data.Split) model.Config {
	return model.Config{
		Arch: c.Model.Arch, In: sp.Labeled.Dim, Hidden: append([]int(nil), c.Model.Hidden...),
		Adapter: c.Model.Adapter, Classes: sp.K, Batch: c.Finetune.Batch, Seed: uint64(c.Seed),
	}
}

// LoadModel returns the pre-trained model for c: the checkpoint it names,
// else the built-in one for the built-in data. needsPretrain is true when
// neither applies and the returned model is freshly initialised (with an
// imported head installed, if there is one).
func LoadModel(c experiment.Config, sp *data.Split, head *data.Head) (net *model.Net, needsPretrain bool, err error) {
	var ckpt []byte
	switch {
	case c.Model.Checkpoint != "":
		if ckpt, err = boundedfile.ReadFile(c.Model.Checkpoint, model.CheckpointFile); err != nil {
			return nil, false, fmt.Errorf("model.checkpoint: %w", err)
		}
	case c.Data.Source == "builtin":
		if ckpt, err = assets.DefaultCheckpoint(); err != nil {
			return nil, false, err
		}
	}
	if ckpt != nil {
		name := c.Model.Checkpoint
		if name == "" {
			name = "built-in checkpoint"
		}
		net, err := model.Load(bytes.NewReader(ckpt))
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", name, err)
		}
		mc := net.Config()
		if mc.In != sp.Labeled.Dim || mc.Classes != sp.K {
			return nil, false, fmt.Errorf("%s: model takes %d inputs and %d classes, data has %d and %d",
				name, mc.In, mc.Classes, sp.Labeled.Dim, sp.K)
		}
		if err := net.SetBatch(c.Finetune.Batch); err != nil {
			return nil, false, err
		}
		return net, false, nil
	}
	net, err = model.New(ModelConfig(c, sp))
	if err != nil {
		return nil, false, err
	}
	if head != nil {
		if head.D != net.Dim() || head.K != sp.K {
			return nil, false, fmt.Errorf("%s: head is %d×%d, model features are %d-dimensional with %d classes",
				c.Data.Head, head.D, head.K, net.Dim(), sp.K)
		}
		if err := net.SetHead(head.W, head.B); err != nil {
			return nil, false, fmt.Errorf("%s: %w", c.Data.Head, err)
		}
		// An imported head over an identity backbone is already a
		// pre-trained model.
		return net, c.Model.Arch != "identity", nil
	}
	return net, true, nil
}

// PretrainConfigOf is the pre-training configuration of c.
func PretrainConfigOf(c experiment.Config) PretrainConfig {
	p := c.Pretrain
	return PretrainConfig{
		LogitAdjust: p.Loss == "la-ce", Tau: p.Tau, Epochs: p.Epochs, LR: p.LR, Batch: p.Batch,
		WeightDecay: c.Finetune.WeightDecay, Momentum: c.Finetune.Momentum, Seed: uint64(c.Seed),
		FixMatch: p.FixMatch, Threshold: p.Threshold,
		CSST: p.Loss == "csst", Objective: c.Finetune.Objective, Params: c.Finetune.Params,
	}
}
