package train

import (
	"fmt"

	"selmix/core/loop"

	"gonum.org/v1/gonum/mat"
)

// Trainer takes the steps of a fine-tuning run: it owns the model, the data
// and the device. The engine owns everything else — objectives, multipliers,
// D, G, P, the schedule, controls, snapshots and checkpoints — and drives a
// Trainer through this interface: in process (local.Local, on gorgonia) or in a
// worker process in the model's own framework (docs/worker-protocol.md).
//
// A Trainer is used from the engine's goroutine only.
type Trainer interface {
	// Info describes the classes, the feature dimension and the data.
	Info() Info
	// Evaluate runs a split through the model. With centroids it also
	// returns the per-class feature centroids Z and the head (W, b) at this
	// moment, which a refresh needs; a test evaluation needs only C.
	Evaluate(split Split, centroids bool) (*Eval, error)
	// Pseudo relabels the unlabeled set, where x2 is drawn from in the
	// semi-supervised setting: by the model's predictions, or by the set's
	// true labels when oracle is set. A Trainer without an unlabeled set
	// does nothing.
	Pseudo(oracle bool) error
	// Train takes len(r.LR) SGD steps and returns the loss of the last.
	Train(r *TrainRequest) (loss float64, err error)
	// Save returns the Trainer's complete state: model, optimizer, sampler
	// RNG and pseudo-labels, so that a Trainer restored from it continues
	// bit for bit.
	Save() (*Saved, error)
	// Close releases what the Trainer holds (a worker process).
	Close() error
}

// Featurer is a Trainer that can give the head's inputs z(x) of its
// samples, which the samples gain form reads (docs/method.md, "The
// samples gain"). The engine asks for them at a refresh, right after
// Evaluate, so they are the features the evaluation saw.
type Featurer interface {
	// Features returns a split's samples: their head inputs (rows×d),
	// their logits (rows×K) and their labels.
	Features(split Split) (X, logits *mat.Dense, y []int, err error)
	// TrainFeatures returns the head inputs of labeled training samples:
	// pick[k] lists indices among class k's samples (0 ≤ i <
	// Info().TrainCounts[k]), the rows class-major in that order.
	TrainFeatures(pick [][]int) (*mat.Dense, error)
}

// CanFeature reports whether tr can give features: it is a Featurer and,
// where it says (a worker: the protocol's features request is optional),
// it serves them.
func CanFeature(tr Trainer) bool {
	f, ok := tr.(Featurer)
	if !ok {
		return false
	}
	if h, ok := f.(interface{ HasFeatures() bool }); ok {
		return h.HasFeatures()
	}
	return true
}

// Split names an evaluation split.
type Split int

const (
	SplitVal Split = iota
	SplitTest
)

func (s Split) String() string { return enumName(int(s), "split", "val", "test") }

// Info is what the engine knows of a Trainer's model and data.
type Info struct {
	K, D        int      // classes, feature dimension
	ClassNames  []string // may be empty
	TrainCounts []int    // labeled training samples per class (the head/tail split)
	Labeled     int      // sizes of the splits
	Unlabeled   int
	Val, Test   int
	Device      string // where the steps run, for display ("cpu (gorgonia, openblas)")
	// WorldSize is the number of ranks serving the run (0: unknown, one);
	// GPUs the GPUs they use, one per distinct GPU in rank order, as
	// CUDA_VISIBLE_DEVICES names them (empty on CPU and in process).
	WorldSize int
	GPUs      []string
	// Env is what the worker said its results depend on (hello's "env":
	// framework version, device, determinism settings); nil in process.
	Env map[string]string
}

// Eval is one split through the model.
type Eval struct {
	C    *mat.Dense   // K×K joint confusion matrix, sums to 1
	Z    *mat.Dense   // K×d feature centroids by true label (with centroids)
	W    *mat.Dense   // d×K head (with centroids)
	B    []float64    // K head biases (with centroids)
	Sys  *loop.System // device and process figures, if the Trainer measures them
	Rows int          // samples evaluated
}

// System is what a Trainer reports of its device and process. Zero fields
// Mode is the loss a Train request optimizes.
type Mode int

const (
	// ModeMixup is Alg. 2's step: B label pairs (y1, y2) ~ P, x1 of class
	// y1, x2 of (pseudo-)class y2, β ~ U[β_min, 1], CE on the mixed
	// features with label y1.
	ModeMixup Mode = iota
	// ModeCE is plain cross-entropy on a uniform labeled batch (policy none).
	ModeCE
	// ModeSoft is the soft-target loss −Σ_j T_{y j}·log softmax(h(x) + a)_j
	// on a labeled batch drawn by Sampling (policies csst and mislas2).
	ModeSoft
	// ModeResample draws what ModeMixup draws — B pairs (y1, y2) ~ P, x1
	// of class y1, x2 of (pseudo-)class y2, and β, which it does not use,
	// so the sampler's stream is mixup's — and trains without mixing:
	// mean CE over the 2B samples, x1 with label y1 and x2 with label y2,
	// each at full weight (policy resample).
	ModeResample
)

func (m Mode) String() string { return enumName(int(m), "mode", "mixup", "ce", "soft", "resample") }

// DrawsPairs reports whether m draws class pairs from P (and so needs it).
func (m Mode) DrawsPairs() bool { return m == ModeMixup || m == ModeResample }

// Sampling is how ModeSoft draws its labeled batch.
type Sampling int

const (
	// SampleInstance draws samples uniformly from the labeled set.
	SampleInstance Sampling = iota
	// SampleClass draws a class uniformly, then a sample of it: class-
	// balanced batches.
	SampleClass
)

func (s Sampling) String() string { return enumName(int(s), "sampling", "instance", "class") }

// enumName is names[i], the name of the i-th constant of an iota enum, or
// kind(i) for a value that is none of them.
func enumName(i int, kind string, names ...string) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("%s(%d)", kind, i)
}

// TrainRequest is a run of SGD steps with fixed hyperparameters. The
// schedule is the engine's: LR holds the head learning rate of each step
// (the backbone takes LR/10). SGD is PyTorch's: momentum without dampening,
// weight decay on weights only.
type TrainRequest struct {
	Mode        Mode
	P           []float64 // K×K mixup distribution, row-major (ModeMixup, ModeResample)
	LR          []float64
	Batch       int
	BetaMin     float64
	WeightDecay float64
	Momentum    float64
	// ModeSoft: Targets is K×K row-major (row y: the target weights of a
	// sample labelled y), Adjust the K logit adjustments (nil: none).
	Targets, Adjust []float64
	Sampling        Sampling // ModeSoft
	// FreezeBackbone leaves the backbone as it is (a worker's
	// backbone_lr_scale 0); otherwise it takes LR/10.
	FreezeBackbone bool
	// Ahead is how many steps after this run of steps will most likely
	// follow with the same settings (up to the next refresh, scheduled
	// control or the end): a hint that lets a worker read their data
	// while selmix is between requests. It changes no result.
	Ahead int
}

// Saved is a Trainer's checkpoint.
type Saved struct {
	Format string // what State holds: local.Format, or a worker's own
	State  []byte
	// The head at the checkpoint, so a run's head can be exported without
	// the Trainer (a worker's State is opaque to selmix).
	W []float64 // d×K row-major
	B []float64
}
