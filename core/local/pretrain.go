package local

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"selmix/core/data"
	"selmix/core/metric"
	"selmix/core/model"
	"selmix/core/train"
)

// PretrainConfig is supervised pre-training on the labeled set.
type PretrainConfig struct {
	LogitAdjust bool    // logit-adjusted CE (Menon et al.): CE(h(x) + τ log π, y)
	Tau         float64 // adjustment strength τ
	Epochs      int
	LR          float64 // cosine to 0; same for backbone and head
	Batch       int
	WeightDecay float64
	Momentum    float64
	Seed        uint64
	// FixMatch adds FixMatch-style pseudo-labelling of the unlabeled set
	// (if the split has one): one unlabeled step after each labeled step.
	FixMatch  bool
	Threshold float64 // confidence for a pseudo-label; 0 = 0.95
	// CSST trains each epoch with CSST's consistent loss for the
	// linearisation of Objective at the validation confusion matrix of the
	// model at the start of the epoch (the first epoch: plain CE); it
	// replaces LogitAdjust (docs/method.md, "Baselines").
	CSST      bool
	Objective metric.Objective
	Params    func(K, n int) metric.Params `json:"-"` // the objective's parameters for K classes and n validation samples (Hyper.Params)
}

// PretrainProgress is reported after each epoch.
type PretrainProgress struct {
	Epoch, Epochs int
	Loss          float64 // mean training loss of the epoch
	Confident     float64 // FixMatch: mean fraction of unlabeled samples pseudo-labelled
}

// Pretrain trains net from its current weights with (logit-adjusted)
// cross-entropy over shuffled epochs of the labeled set. report may be nil.
func Pretrain(ctx context.Context, net *model.Net, sp *data.Split, c PretrainConfig, report func(PretrainProgress)) error {
	lab := &sp.Labeled
	if lab.N < c.Batch {
		return fmt.Errorf("pre-training: labeled set has %d samples, fewer than one batch of %d", lab.N, c.Batch)
	}
	if err := net.SetBatch(c.Batch); err != nil {
		return err
	}
	var adj []float32
	if c.LogitAdjust {
		adj = make([]float32, sp.K)
		for k, n := range lab.Counts(sp.K) {
			if n == 0 {
				return fmt.Errorf("pre-training: class %d (%s) has no labeled sample", k, className(sp.ClassNames, k))
			}
			adj[k] = float32(c.Tau * math.Log(float64(n)/float64(lab.N)))
		}
	}
	var csst *pretrainCSST
	if c.CSST {
		if err := train.CSSTObjective(c.Objective); err != nil {
			return fmt.Errorf("pre-training: %w", err)
		}
		var err error
		if csst, err = newPretrainCSST(net, sp, c); err != nil {
			return fmt.Errorf("pre-training: %w", err)
		}
	}
	rng := rand.New(rand.NewPCG(c.Seed, 0x9e7a))
	in, B := lab.Dim, c.Batch
	var fm *fixMatch
	if c.FixMatch && sp.Unlabeled.N > 0 {
		th := c.Threshold
		if th == 0 {
			th = 0.95
		}
		fm = newFixMatch(&sp.Unlabeled, sp.K, B, net.Dim(), th, rand.New(rand.NewPCG(c.Seed, 0xf1c5)))
	}
	x, y := make([]float32, B*in), make([]int, B)
	perEpoch := lab.N / B
	total := c.Epochs * perEpoch
	step := 0
	for ep := 0; ep < c.Epochs; ep++ {
		if csst != nil && ep > 0 {
			var err error
			if adj, err = csst.epoch(); err != nil {
				return fmt.Errorf("pre-training epoch %d: %w", ep+1, err)
			}
		}
		perm := rng.Perm(lab.N)
		sum, conf := 0.0, 0.0
		for it := 0; it < perEpoch; it++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			for i := 0; i < B; i++ {
				j := perm[it*B+i]
				copy(x[i*in:(i+1)*in], lab.Row(j))
				y[i] = lab.Y[j]
			}
			lr := float32(c.LR * 0.5 * (1 + math.Cos(math.Pi*float64(step)/float64(total))))
			o := model.StepOpts{LRHead: lr, LRBackbone: lr, WeightDecay: float32(c.WeightDecay), Momentum: float32(c.Momentum)}
			var loss float64
			var err error
			if csst != nil && csst.tgt != nil {
				loss, err = net.SoftStep(x, y, csst.tgt, adj, o)
			} else {
				loss, err = net.CEStep(x, y, adj, o)
			}
			if err != nil {
				return fmt.Errorf("pre-training epoch %d: %w", ep+1, err)
			}
			if math.IsNaN(loss) || math.IsInf(loss, 0) {
				return fmt.Errorf("pre-training diverged at epoch %d (loss %v): lower pretrain.lr", ep+1, loss)
			}
			sum += loss
			if fm != nil {
				ul, frac, err := fm.step(net, adj, model.StepOpts{LRHead: lr, LRBackbone: lr, WeightDecay: float32(c.WeightDecay), Momentum: float32(c.Momentum)})
				if err != nil {
					return fmt.Errorf("pre-training epoch %d (unlabeled): %w", ep+1, err)
				}
				if math.IsNaN(ul) || math.IsInf(ul, 0) {
					return fmt.Errorf("pre-training diverged on the unlabeled set at epoch %d: lower pretrain.lr", ep+1)
				}
				conf += frac
			}
			step++
		}
		if report != nil {
			report(PretrainProgress{Epoch: ep + 1, Epochs: c.Epochs, Loss: sum / float64(perEpoch), Confident: conf / float64(perEpoch)})
		}
	}
	return nil
}

// pretrainCSST is pre-training's CSST loss: each epoch, the linearisation
// of the objective at the validation confusion matrix.
type pretrainCSST struct {
	ev   *Local // evaluates the validation set (its sampler is unused)
	obj  metric.Objective
	p    metric.Params
	tail []bool
	tgt  []float32 // nil during the first epoch: plain CE
}

func newPretrainCSST(net *model.Net, sp *data.Split, c PretrainConfig) (*pretrainCSST, error) {
	ev, err := New(net, sp, 0)
	if err != nil {
		return nil, err
	}
	counts := make([]float64, sp.K)
	for k, n := range sp.Labeled.Counts(sp.K) {
		counts[k] = float64(n)
	}
	p := metric.Params{}.WithDefaults(sp.K)
	if c.Params != nil {
		p = c.Params(sp.K, sp.Val.N)
	}
	return &pretrainCSST{ev: ev, obj: c.Objective, p: p, tail: metric.TailSplit(counts)}, nil
}

// epoch evaluates the validation set and returns the adjustment of the
// epoch's loss, its targets left in tgt.
func (cs *pretrainCSST) epoch() ([]float32, error) {
	e, err := cs.ev.Evaluate(train.SplitVal, false)
	if err != nil {
		return nil, err
	}
	t, a, err := train.CSSTObjectiveLoss(cs.obj, e.C, cs.tail, cs.p)
	if err != nil {
		return nil, fmt.Errorf("validation: %w", err)
	}
	cs.tgt = toF32(cs.tgt, t)
	return toF32(nil, a), nil
}
