package plugin

import (
	"fmt"
	"math"

	"selmix/core/metric"
)

// clampEps is the floor metric puts under a recall where the G-mean and
// H-mean divide by it or take its log; TestScorerMatchesValues holds the
// two equal.
const clampEps = 1e-7

// scorer is the reported ψ of one objective (what metric.Values gives) as
// a function of a hard classifier's counts on the validation set: d_k of
// the n_k samples of class k predicted k, c_j samples predicted j. It keeps
// running sums, so moving one sample's prediction updates ψ in O(1) and the
// coordinate scan can evaluate ψ at every breakpoint of a bias.
type scorer struct {
	agg    metric.Aggregate
	con    metric.Constraint
	p      metric.Params // with its defaults
	aim    float64       // the bound α/K: reported ψ has no margin
	K      int
	N      float64
	n      []float64 // class sizes n_k
	tail   []bool
	nh, nt float64

	d, c []int // the counts ψ is at

	// The aggregate's sums over the recalls: Σ rec over the head and the
	// tail (mean, soft min of head/tail), Σ log rec or Σ 1/rec over the
	// recalls above the clamp (G-mean, H-mean), with nclamp recalls at it.
	sumH, sumT float64
	nclamp     int
	// The soft min: s0 = Σ w_k, s1 = Σ w_k·rec_k, w_k = exp(−ω(rec_k −
	// shift)); hw0 is s0's largest value since they were last summed
	// afresh, to sum afresh before cancellation costs precision.
	s0, s1, shift, hw0 float64
	// w[k] is class k's term in the sums, kept so a move computes one:
	// its weight w_k for the soft min, else its recall, log recall or
	// inverse recall (NaN at the clamp).
	w []float64

	// The constraint: pen = Σ_j λ_j(cov_j − α/K) over the classes, cnt[v]
	// the number of classes predicted v times and minc the least such v
	// (λ falls with the coverage: max_j λ_j = λ(minc/N)); covH, covT the
	// predictions into head and tail classes.
	pen        float64
	cnt        []int
	cntOf      []int // the count of each class cnt holds
	minc       int
	covH, covT int
	// penOf[c] and lamOf[c] are λ_j(cov_j − α/K) and λ_j of a class
	// predicted c times.
	penOf, lamOf []float64
}

// newScorer returns a scorer of obj for class sizes n (all positive) and
// the split tail; p must be valid. Its counts are zero until set and
// summed with rebuild.
func newScorer(obj metric.Objective, n []int, tail []bool, p metric.Params) (*scorer, error) {
	spec, ok := obj.Spec()
	if !ok {
		_, err := metric.ParseObjective(string(obj))
		return nil, err
	}
	switch spec.Aggregate {
	case metric.AggMean, metric.AggSoftMin, metric.AggSoftMinHT, metric.AggGMean, metric.AggHMean:
	default:
		return nil, fmt.Errorf("plugin: objective %s: aggregate %d is not implemented here", obj, spec.Aggregate)
	}
	switch spec.Constraint {
	case metric.NoConstraint, metric.ClassCoverage, metric.GroupCoverage:
	default:
		return nil, fmt.Errorf("plugin: objective %s: constraint %d is not implemented here", obj, spec.Constraint)
	}
	K := len(n)
	s := &scorer{
		agg: spec.Aggregate, con: spec.Constraint,
		p: p.WithDefaults(K), K: K,
		n: make([]float64, K), tail: tail,
		d: make([]int, K), c: make([]int, K),
		w: make([]float64, K),
	}
	s.aim = s.p.Alpha / float64(K)
	total := 0
	for k, v := range n {
		s.n[k] = float64(v)
		total += v
		if tail[k] {
			s.nt++
		} else {
			s.nh++
		}
	}
	s.N = float64(total)
	if s.con == metric.ClassCoverage {
		s.cnt, s.cntOf = make([]int, total+1), make([]int, K)
		s.cnt[0] = K
		s.penOf, s.lamOf = make([]float64, total+1), make([]float64, total+1)
		for c := range s.penOf {
			cov := float64(c) / s.N
			s.lamOf[c] = s.lambda(cov)
			s.penOf[c] = s.lamOf[c] * (cov - s.aim)
		}
	}
	return s, nil
}

func (s *scorer) rec(k, d int) float64 { return float64(d) / s.n[k] }

// rebuild sums everything afresh from d and c, in O(K).
func (s *scorer) rebuild() {
	s.sumH, s.sumT, s.nclamp = 0, 0, 0
	switch s.agg {
	case metric.AggSoftMin:
		s.resum()
	default:
		for k, d := range s.d {
			s.addRec(k, s.rec(k, d))
		}
	}
	s.pen, s.covH, s.covT = 0, 0, 0
	switch s.con {
	case metric.ClassCoverage:
		s.minc = len(s.cnt) - 1
		for j, c := range s.c {
			s.cnt[s.cntOf[j]]--
			s.cnt[c]++
			s.cntOf[j] = c
			s.minc = min(s.minc, c)
			s.pen += s.penOf[c]
		}
	case metric.GroupCoverage:
		for j, c := range s.c {
			if s.tail[j] {
				s.covT += c
			} else {
				s.covH += c
			}
		}
	}
}

// resum sums the soft min's weights afresh, shifted by the least recall so
// the largest weight is 1.
func (s *scorer) resum() {
	s.shift = math.Inf(1)
	for k, d := range s.d {
		s.shift = min(s.shift, s.rec(k, d))
	}
	s.s0, s.s1 = 0, 0
	for k, d := range s.d {
		r := s.rec(k, d)
		w := math.Exp(-s.p.Omega * (r - s.shift))
		s.w[k] = w
		s.s0 += w
		s.s1 += w * r
	}
	s.hw0 = s.s0
}

// addRec adds class k's recall r to the sums of every aggregate but the
// soft min, keeping its term to take back.
func (s *scorer) addRec(k int, r float64) {
	if (s.agg == metric.AggGMean || s.agg == metric.AggHMean) && r < clampEps {
		s.nclamp++
		s.w[k] = math.NaN() // the clamp's term, counted in nclamp
		return
	}
	v := r
	switch s.agg {
	case metric.AggGMean:
		v = math.Log(r)
	case metric.AggHMean:
		v = 1 / r
	}
	s.w[k] = v
	s.add(k, v)
}

// dropRec takes class k's term back out of the sums.
func (s *scorer) dropRec(k int) {
	if v := s.w[k]; math.IsNaN(v) {
		s.nclamp--
	} else {
		s.add(k, -v)
	}
}

// add adds v to the tail's sum if k is a tail class of an aggregate that
// splits them, else to the head's (the only sum of the others).
func (s *scorer) add(k int, v float64) {
	if s.tail[k] && (s.agg == metric.AggMean || s.agg == metric.AggSoftMinHT) {
		s.sumT += v
	} else {
		s.sumH += v
	}
}

// setD moves class k's correct count to d.
func (s *scorer) setD(k, d int) {
	old := s.d[k]
	s.d[k] = d
	rn := s.rec(k, d)
	if s.agg != metric.AggSoftMin {
		s.dropRec(k)
		s.addRec(k, rn)
		return
	}
	ro := s.rec(k, old)
	en := -s.p.Omega * (rn - s.shift)
	if en > 300 { // a weight about to overflow: shift afresh
		s.resum()
		return
	}
	wo, wn := s.w[k], math.Exp(en)
	s.w[k] = wn
	s.s0 += wn - wo
	s.s1 += wn*rn - wo*ro
	s.hw0 = max(s.hw0, s.s0)
	if s.s0 < 0.5*s.hw0 { // the sum lost its largest terms: cancellation
		s.resum()
	}
}

// setC moves class j's prediction count to c.
func (s *scorer) setC(j, c int) {
	old := s.c[j]
	s.c[j] = c
	switch s.con {
	case metric.ClassCoverage:
		s.pen += s.penOf[c] - s.penOf[old]
		s.cnt[old]--
		s.cnt[c]++
		s.cntOf[j] = c
		if c < s.minc {
			s.minc = c
		}
		for s.cnt[s.minc] == 0 {
			s.minc++
		}
	case metric.GroupCoverage:
		if s.tail[j] {
			s.covT += c - old
		} else {
			s.covH += c - old
		}
	}
}

// move moves one sample of class y from prediction from to prediction to.
func (s *scorer) move(y, from, to int) {
	if from == to {
		return
	}
	if from == y {
		s.setD(y, s.d[y]-1)
	}
	if to == y {
		s.setD(y, s.d[y]+1)
	}
	s.setC(from, s.c[from]-1)
	s.setC(to, s.c[to]+1)
}

// lambda is a coverage multiplier at coverage cov (metric's rule at the
// bound): max(0, λ_max·(1 − exp((cov − α/K)/τ))).
func (s *scorer) lambda(cov float64) float64 {
	return math.Max(0, s.p.LambdaMax*(1-math.Exp((cov-s.aim)/s.p.Tau)))
}

// value is ψ at the counts.
func (s *scorer) value() float64 {
	K := float64(s.K)
	var base float64
	switch s.agg {
	case metric.AggMean:
		base = (s.sumH + s.sumT) / K
	case metric.AggSoftMin:
		base = s.s1 / s.s0
	case metric.AggSoftMinHT:
		h, t := s.sumH/s.nh, s.sumT/s.nt
		m := min(h, t)
		wh, wt := math.Exp(-s.p.Omega*(h-m)), math.Exp(-s.p.Omega*(t-m))
		base = (wh*h + wt*t) / (wh + wt)
	case metric.AggGMean:
		base = math.Exp((s.sumH + float64(s.nclamp)*math.Log(clampEps)) / K)
	case metric.AggHMean:
		base = K / (s.sumH + float64(s.nclamp)/clampEps)
	}
	switch s.con {
	case metric.ClassCoverage:
		return (base + s.pen) / (s.lamOf[s.minc] + 1)
	case metric.GroupCoverage:
		ch, ct := float64(s.covH)/(s.N*s.nh), float64(s.covT)/(s.N*s.nt)
		lh, lt := s.lambda(ch), s.lambda(ct)
		return (base + lh*(ch-s.aim) + lt*(ct-s.aim)) / (max(lh, lt) + 1)
	}
	return base
}
