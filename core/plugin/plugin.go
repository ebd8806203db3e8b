// Package plugin is the post-hoc plug-in baseline for a non-decomposable
// objective: a trained model's logits are left as they are and K additive
// biases β, chosen on the validation set, make the classifier
//
//	h(x) = argmax_j (logit_j(x) + β_j)     (the lowest index on ties)
//
// maximise the objective's reported ψ (metric.Values) on validation
// (Narasimhan & Menon, NeurIPS 2021; Narasimhan et al., JMLR 2024).
//
// Fit climbs from logit adjustment, β_j = −log π_j (the plug-in of mean
// recall), and from plain argmax. A coordinate move takes one class's β_j
// to the best of all its values: ψ is constant between the breakpoints
// where some sample's prediction changes, so Fit sorts those and walks
// them, updating ψ in O(1) a sample. Where no coordinate move helps, plane
// moves change the biases of two often-confused classes together, along
// a few fixed directions, which the coordinates cannot (a class that must
// gain predictions from one class only, for a coverage constraint). ψ of
// hard predictions is piecewise constant and the search is local: it ends
// where no such move helps.
package plugin

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"selmix/core/metric"
)

// Config holds Fit's settings; a zero field takes the default it names.
type Config struct {
	// Sweeps caps the passes over the classes. Default 20.
	Sweeps int
	// Starts are the biases the ascent starts from, K values each; it
	// climbs from each in turn and keeps the best end (the first on
	// ties). Default (nil): logit adjustment, −log π_j with π the class
	// frequencies of the validation labels, then zero (plain argmax).
	// Where the validation set is balanced and the training set is not,
	// −log of the training prior is the adjustment to start from.
	Starts [][]float64
	// Partners is how many classes each class is paired with in the
	// plane moves, those it is most often confused with (all pairs when
	// K ≤ Partners + 1); negative: no plane moves. Default 3.
	Partners int
}

// Config's defaults.
const (
	defaultSweeps   = 20
	defaultPartners = 3
)

// Result is what Fit found.
type Result struct {
	// Bias is β, one per class.
	Bias []float64
	// Psi is the objective's reported ψ (metric.Values) on the
	// validation set with Bias; Argmax with no bias (plain argmax).
	Psi, Argmax float64
	// Starts is ψ at each start, in Config.Starts' order; From the start
	// whose ascent ended best.
	Starts []float64
	From   int
	// Sweeps is how many sweeps ran, over all starts; Moves how many
	// moves they made.
	Sweeps, Moves int
}

// tol is how much ψ must rise for a move to count, and how close two
// values of ψ are to tie: well above the rounding of ψ summed afresh.
const tol = 1e-12

// Fit chooses the biases β of the plug-in classifier argmax_j(logit_j +
// β_j) that maximise obj's reported ψ on the validation set: logits is
// N×K, row i the model's logits of sample i of label y[i]. tail marks the
// tail classes of the head/tail objectives; nil means metric.TailSplit of
// the validation class frequencies. ψ is metric.Values' (a coverage
// constraint at the bound α/K: the margin fields of p play no part).
//
// From each of Config.Starts a sweep moves every β_j in turn to the value
// of best ψ over its whole line, if that raises ψ by more than 1e-12;
// once no coordinate moves, a sweep of plane moves follows; the ascent
// stops when a sweep moves nothing or after Config.Sweeps. A move lands
// in the middle of the interval between breakpoints it picks (1 past the
// last for an unbounded one), ties going to the smallest change, so Fit
// is deterministic; no move lowers ψ, so Psi is at least the best start's
// ψ (to 1e-12, within which ends tie to the first). A sweep of
// coordinate moves costs O(K·N) (a radix sort orders the breakpoints)
// plus O(K) for each sample whose best classes include one that falls.
//
// Fit returns an error naming what is wrong if logits has no rows, fewer
// than 2 columns, a non-finite entry or a row count other than len(y), a
// label is outside [0, K) or a class has no sample, tail has a length
// other than K, Config.Starts is empty but not nil or a start has a length
// other than K or a non-finite bias, Sweeps is negative, or obj, p or the
// split is invalid (as metric.Values says).
func Fit(obj metric.Objective, logits *mat.Dense, y []int, tail []bool, p metric.Params, cfg Config) (Result, error) {
	f, err := newFitter(obj, logits, y, tail, p, cfg)
	if err != nil {
		return Result{}, err
	}
	return f.run()
}

// Apply writes into dst the plug-in classifier's prediction for each row of
// logits (N×K), argmax_j(logit_j + bias_j) with the lowest index on ties,
// and returns it; dst is reused if its capacity holds N, else a new slice
// is allocated. A bias of length other than K panics.
func Apply(dst []int, bias []float64, logits *mat.Dense) []int {
	N, K := logits.Dims()
	if len(bias) != K {
		panic(fmt.Sprintf("plugin: %d biases for %d classes", len(bias), K))
	}
	if cap(dst) < N {
		dst = make([]int, N)
	}
	dst = dst[:N]
	raw := logits.RawMatrix()
	for i := range N {
		dst[i] = argmax(raw.Data[i*raw.Stride:i*raw.Stride+K], bias)
	}
	return dst
}

// argmax is the index of the largest row_j + bias_j, the lowest on ties.
func argmax(row, bias []float64) int {
	best, bv := 0, row[0]+bias[0]
	for j := 1; j < len(row); j++ {
		if v := row[j] + bias[j]; v > bv {
			best, bv = j, v
		}
	}
	return best
}

// Confusion returns the K×K joint confusion matrix of predictions pred
// against labels y: C_ij = #{y = i, pred = j}/N, rows the true class, summing
// to 1 (the form metric takes). It returns an error if pred and y differ
// in length or are empty, K < 1, or a label or prediction is outside
// [0, K).
func Confusion(pred, y []int, K int) (*mat.Dense, error) {
	if len(pred) != len(y) {
		return nil, fmt.Errorf("plugin: %d predictions for %d labels", len(pred), len(y))
	}
	if len(y) == 0 {
		return nil, errors.New("plugin: no samples")
	}
	if K < 1 {
		return nil, fmt.Errorf("plugin: K = %d classes, want at least 1", K)
	}
	C := mat.NewDense(K, K, nil)
	raw := C.RawMatrix()
	for i, t := range y {
		if t < 0 || t >= K {
			return nil, fmt.Errorf("plugin: label %d of sample %d is outside [0, %d)", t, i, K)
		}
		if q := pred[i]; q < 0 || q >= K {
			return nil, fmt.Errorf("plugin: prediction %d of sample %d is outside [0, %d)", q, i, K)
		}
		raw.Data[t*raw.Stride+pred[i]]++
	}
	C.Scale(1/float64(len(y)), C)
	return C, nil
}

// reported is obj's reported ψ of the classifier with biases bias on the
// validation set.
func reported(obj metric.Objective, bias []float64, logits *mat.Dense, y []int, tail []bool, p metric.Params) (float64, error) {
	_, K := logits.Dims()
	C, err := Confusion(Apply(nil, bias, logits), y, K)
	if err != nil {
		return 0, err
	}
	vals, err := metric.Values(C, tail, p)
	if err != nil {
		return 0, err
	}
	return obj.In(vals), nil
}

// checkInput validates Fit's input and returns the class sizes and the
// resolved split.
func checkInput(obj metric.Objective, logits *mat.Dense, y []int, tail []bool, p metric.Params, cfg Config) ([]int, []bool, error) {
	if _, err := metric.ParseObjective(string(obj)); err != nil {
		return nil, nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	if logits == nil || logits.IsEmpty() {
		return nil, nil, errors.New("plugin: logits are empty")
	}
	N, K := logits.Dims()
	if K < 2 {
		return nil, nil, fmt.Errorf("plugin: logits have %d column, want one per class (at least 2)", K)
	}
	if N != len(y) {
		return nil, nil, fmt.Errorf("plugin: logits have %d rows for %d labels", N, len(y))
	}
	raw := logits.RawMatrix()
	for i := range N {
		for j, v := range raw.Data[i*raw.Stride : i*raw.Stride+K] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, fmt.Errorf("plugin: logit (%d,%d) = %v is not finite", i, j, v)
			}
		}
	}
	n := make([]int, K)
	for i, t := range y {
		if t < 0 || t >= K {
			return nil, nil, fmt.Errorf("plugin: label %d of sample %d is outside [0, %d)", t, i, K)
		}
		n[t]++
	}
	for k, c := range n {
		if c == 0 {
			return nil, nil, fmt.Errorf("plugin: class %d has no validation sample", k)
		}
	}
	if tail == nil {
		prior := make([]float64, K)
		for k, c := range n {
			prior[k] = float64(c) / float64(N)
		}
		tail = metric.TailSplit(prior)
	} else if len(tail) != K {
		return nil, nil, fmt.Errorf("plugin: tail has %d flags for %d classes", len(tail), K)
	}
	if cfg.Starts != nil && len(cfg.Starts) == 0 {
		return nil, nil, errors.New("plugin: Config.Starts is empty, want at least one start (nil: the defaults)")
	}
	for n, b := range cfg.Starts {
		if len(b) != K {
			return nil, nil, fmt.Errorf("plugin: Config.Starts[%d] has %d biases for %d classes", n, len(b), K)
		}
		for j, v := range b {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, fmt.Errorf("plugin: Config.Starts[%d][%d] = %v is not finite", n, j, v)
			}
		}
	}
	if cfg.Sweeps < 0 {
		return nil, nil, fmt.Errorf("plugin: Config.Sweeps = %d, want at least 0 (0: %d)", cfg.Sweeps, defaultSweeps)
	}
	return n, tail, nil
}
