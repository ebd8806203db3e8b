package train

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"selmix/core/data"
	"selmix/core/gain"
	"selmix/core/metric"
)

// evalState is what a refresh measured; recompute derives G and P from it
// again when a hyperparameter changes between refreshes.
type evalState struct {
	C, Z *mat.Dense
	W    *mat.Dense
	b    []float64
	tail []bool
}

// evaluate runs set through the model: the joint confusion matrix, the
// per-class feature centroids (by true label) and the predictions.
func (e *Engine) evaluate(set *data.Set) (C, Z *mat.Dense, pred []int, err error) {
	K, d, n := e.K, e.d, set.N
	if cap(e.feat) < n*d {
		e.feat = make([]float32, n*d)
	}
	if cap(e.logit) < n*K {
		e.logit = make([]float32, n*K)
	}
	feat, logit := e.feat[:n*d], e.logit[:n*K]
	if err := e.net.Forward(feat, logit, set.X, n); err != nil {
		return nil, nil, nil, err
	}
	C = mat.NewDense(K, K, nil)
	Z = mat.NewDense(K, d, nil)
	count := make([]float64, K)
	pred = make([]int, n)
	cd, zd := C.RawMatrix().Data, Z.RawMatrix().Data
	for i := 0; i < n; i++ {
		y := set.Y[i]
		p := argmax(logit[i*K : (i+1)*K])
		pred[i] = p
		cd[y*K+p]++
		count[y]++
		row := zd[y*d : (y+1)*d]
		for j, v := range feat[i*d : (i+1)*d] {
			row[j] += float64(v)
		}
	}
	C.Scale(1/float64(n), C)
	for k := 0; k < K; k++ {
		if count[k] == 0 {
			continue // metric.Check reports the empty class by name
		}
		r := Z.RawRowView(k)
		for j := range r {
			r[j] /= count[k]
		}
	}
	return C, Z, pred, nil
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

func (e *Engine) tail() []bool {
	c := make([]float64, e.K)
	for k := range c {
		c[k] = float64(e.sp.TrainCounts[k])
	}
	return metric.TailSplit(c)
}

// objectiveValues evaluates every objective at C with its own multipliers.
func objectiveValues(C *mat.Dense, tail []bool, p metric.Params) ([]float64, error) {
	objs := metric.Objectives()
	v := make([]float64, len(objs))
	for i, o := range objs {
		ev, err := metric.Evaluate(o, C, tail, p)
		if err != nil {
			return nil, err
		}
		v[i] = ev.Psi
	}
	return v, nil
}

func (e *Engine) testReport() (metric.Report, []float64, error) {
	C, _, _, err := e.evaluate(&e.sp.Test)
	if err != nil {
		return metric.Report{}, nil, err
	}
	tail := e.tail()
	r, err := metric.NewReport(C, tail)
	if err != nil {
		return metric.Report{}, nil, err
	}
	v, err := objectiveValues(C, tail, e.hyper.Params(e.K))
	return r, v, err
}

// refresh is the top of Alg. 2's outer loop: evaluate on validation,
// recompute multipliers, D, G and P, and refresh pseudo-labels.
func (e *Engine) refresh() error {
	C, Z, _, err := e.evaluate(&e.sp.Val)
	if err != nil {
		return fmt.Errorf("evaluating on validation at step %d: %w", e.step, err)
	}
	W, b := e.net.Head()
	e.es = evalState{C: C, Z: Z, W: mat.NewDense(e.d, e.K, W), b: b, tail: e.tail()}
	e.lastRefresh = e.step
	e.refreshes++
	if err := e.updatePartners(); err != nil {
		return err
	}
	if err := e.recompute(); err != nil {
		return err
	}
	e.publish(e.snapshot(KindRefresh))
	return nil
}

// scaled is G as the softmax sees it: divided by max|G| when the run
// normalises gains (the paper's analysis assumes |G_ij| ≤ 1), so that s
// means the same whatever the scale of the features and of ψ.
func (e *Engine) scaled(G *mat.Dense) *mat.Dense {
	if !e.cfg.NormalizeGain {
		return G
	}
	m := 0.0
	for _, v := range G.RawMatrix().Data {
		if a := math.Abs(v); a > m && !math.IsInf(a, 0) {
			m = a
		}
	}
	if m == 0 || math.IsNaN(m) {
		return G
	}
	var out mat.Dense
	out.Scale(1/m, G)
	return &out
}

// recompute derives the multipliers, D, G and P from the last evaluation
// under the current hyperparameters. It publishes nothing: a refresh
// publishes its snapshot, and a control's acknowledgement carries the new
// G and P (a second "refresh" event would show the old evaluation's
// metrics at a later step).
func (e *Engine) recompute() error {
	es, K := e.es, e.K
	p := e.hyper.Params(K)
	rep, err := metric.NewReport(es.C, es.tail)
	if err != nil {
		return fmt.Errorf("validation at step %d: %w", e.step, err)
	}
	ev, err := metric.Evaluate(e.hyper.Objective, es.C, es.tail, p)
	if err != nil {
		return fmt.Errorf("validation at step %d: %w", e.step, err)
	}
	objs, err := objectiveValues(es.C, es.tail, p)
	if err != nil {
		return err
	}
	G := mat.NewDense(K, K, nil)
	if err := e.gc.Gain(G, ev.D, es.Z, es.W, es.b, gain.BetaBar(e.hyper.BetaMin), e.hyper.Form); err != nil {
		return fmt.Errorf("gain at step %d: %w", e.step, err)
	}
	P := mat.NewDense(K, K, nil)
	gain.Distribution(P, e.scaled(G), e.hyper.S, e.hyper.Policy)
	pd := P.RawMatrix().Data
	if len(e.cum) != K*K {
		e.cum = make([]float64, K*K)
	}
	acc := 0.0
	for i, v := range pd {
		acc += v
		e.cum[i] = acc
	}
	e.last = &RefreshStats{
		Step: e.lastRefresh, Report: rep, Objectives: objs, Psi: ev.Psi,
		Lambda: append([]float64(nil), ev.Lambda...),
		G:      append([]float64(nil), G.RawMatrix().Data...),
		P:      append([]float64(nil), pd...),
		K:      K, S: e.hyper.S,
	}
	return nil
}

// updatePartners decides where x2 is drawn from: the labeled set
// (supervised), or the unlabeled set by pseudo-label (semi-supervised), or
// by its true labels with OracleLabels.
func (e *Engine) updatePartners() error {
	u := &e.sp.Unlabeled
	if u.N == 0 {
		e.partnerSet, e.partnerIdx = &e.sp.Labeled, e.labeledIdx
		return nil
	}
	var labels []int
	if e.cfg.OracleLabels {
		labels = u.Y
	} else {
		pred, err := e.predict(u)
		if err != nil {
			return fmt.Errorf("pseudo-labelling at step %d: %w", e.step, err)
		}
		labels = pred
	}
	idx := make([][]int, e.K)
	for i, y := range labels {
		if y >= 0 && y < e.K {
			idx[y] = append(idx[y], i)
		}
	}
	e.partnerSet, e.partnerIdx = u, idx
	return nil
}

// predict returns the model's predicted class for every row of u.
func (e *Engine) predict(u *data.Set) ([]int, error) {
	K, d, n := e.K, e.d, u.N
	feat, logit := make([]float32, n*d), make([]float32, n*K)
	if err := e.net.Forward(feat, logit, u.X, n); err != nil {
		return nil, err
	}
	pred := make([]int, n)
	for i := range pred {
		pred[i] = argmax(logit[i*K : (i+1)*K])
	}
	return pred, nil
}
