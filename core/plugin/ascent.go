package plugin

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"selmix/core/metric"
)

// fitter is the ascent's state: the biases and, per sample, its three best
// classes under them (the lowest index first on ties) with their biased
// logits, which give every breakpoint of a move in O(N).
type fitter struct {
	obj    metric.Objective
	p      metric.Params
	tail   []bool
	logits *mat.Dense
	y      []int
	cfg    Config

	K, N   int
	data   []float64 // logits, row-major
	stride int

	bias  []float64
	top   []int32   // N×3: sample i's best classes, best first; −1 past K
	val   []float64 // N×3: their logits plus biases
	d, c  []int     // correct predictions per class, predictions per class
	psi   float64
	moves int

	sc     *scorer // the scan's counts; also ψ at the state's counts
	ev     []event
	sorter sorter
	// near[nearAt[j]:nearAt[j+1]] are the samples with j among their
	// three best classes, as of the last plane move.
	near, nearAt []int32
}

// event is where sample i's prediction changes from class from to class to
// as a move's offset rises through s.
type event struct {
	s        float64
	i        int32
	from, to int32
}

// planeDirs are the directions (Δβ_j, Δβ_k) of the plane moves: with the
// coordinate moves, eight directions about 22.5° apart. Small integers
// keep parallel lines exactly parallel.
var planeDirs = [][2]float64{{1, -1}, {1, 1}, {2, 1}, {1, 2}, {2, -1}, {1, -2}}

func newFitter(obj metric.Objective, logits *mat.Dense, y []int, tail []bool, p metric.Params, cfg Config) (*fitter, error) {
	n, tail, err := checkInput(obj, logits, y, tail, p, cfg)
	if err != nil {
		return nil, err
	}
	sc, err := newScorer(obj, n, tail, p)
	if err != nil {
		return nil, err
	}
	N, K := logits.Dims()
	raw := logits.RawMatrix()
	if cfg.Sweeps == 0 {
		cfg.Sweeps = defaultSweeps
	}
	if cfg.Partners == 0 {
		cfg.Partners = defaultPartners
	}
	if cfg.Starts == nil {
		adjust := make([]float64, K)
		for k, c := range n {
			adjust[k] = -math.Log(float64(c) / float64(N))
		}
		cfg.Starts = [][]float64{adjust, make([]float64, K)}
	}
	return &fitter{
		obj: obj, p: p, tail: tail, logits: logits, y: y, cfg: cfg,
		K: K, N: N, data: raw.Data, stride: raw.Stride,
		bias: make([]float64, K),
		top:  make([]int32, 3*N), val: make([]float64, 3*N),
		d: make([]int, K), c: make([]int, K),
		sc:   sc,
		ev:   make([]event, 0, 2*N),
		near: make([]int32, 3*N), nearAt: make([]int32, K+1),
	}, nil
}

func (f *fitter) run() (Result, error) {
	var res Result
	var err error
	if res.Argmax, err = reported(f.obj, make([]float64, f.K), f.logits, f.y, f.tail, f.p); err != nil {
		return Result{}, err
	}
	best := math.Inf(-1)
	for n, b := range f.cfg.Starts {
		psi, err := reported(f.obj, b, f.logits, f.y, f.tail, f.p)
		if err != nil {
			return Result{}, err
		}
		res.Starts = append(res.Starts, psi)
		f.reset(b)
		res.Sweeps += f.ascend()
		if n == 0 || f.psi > best+tol {
			best, res.From = f.psi, n
			res.Bias = append(res.Bias[:0], f.bias...)
		}
	}
	res.Moves = f.moves
	if res.Psi, err = reported(f.obj, res.Bias, f.logits, f.y, f.tail, f.p); err != nil {
		return Result{}, err
	}
	return res, nil
}

// ascend climbs from the state's biases, sweep by sweep, until a sweep
// moves nothing or Config.Sweeps have run, and returns how many ran. A
// sweep moves each class's bias in turn; once those stop moving, the next
// sweep tries the plane moves of pairs of classes (K ≥ 3: with two
// classes every direction is a coordinate's).
func (f *fitter) ascend() int {
	sweeps := 0
	for sweeps < f.cfg.Sweeps {
		sweeps++
		moved := false
		for j := range f.K {
			if f.coordinate(j) {
				moved = true
			}
		}
		if !moved && f.K >= 3 && f.cfg.Partners > 0 && sweeps < f.cfg.Sweeps {
			sweeps++
			f.index()
			for _, pr := range f.pairs() {
				for _, dir := range planeDirs {
					if f.plane(int(pr[0]), int(pr[1]), dir[0], dir[1]) {
						moved = true
						f.index()
					}
				}
			}
		}
		if !moved {
			break
		}
	}
	return sweeps
}

func (f *fitter) row(i int) []float64 { return f.data[i*f.stride : i*f.stride+f.K] }

// reset sets the biases to b and every sample's best classes and the
// counts from scratch.
func (f *fitter) reset(b []float64) {
	copy(f.bias, b)
	clear(f.d)
	clear(f.c)
	for i := range f.N {
		f.rescan(i)
		p := int(f.top[3*i])
		f.c[p]++
		if p == f.y[i] {
			f.d[p]++
		}
	}
	f.psi = f.exact()
}

// beats reports whether score v of class j ranks above score w of class
// l: higher, or equal and a lower index.
func beats(v float64, j int32, w float64, l int32) bool {
	return v > w || (v == w && j < l)
}

// rescan finds sample i's three best classes afresh.
func (f *fitter) rescan(i int) {
	top, val := f.top[3*i:3*i+3], f.val[3*i:3*i+3]
	for r := range top {
		top[r], val[r] = -1, math.Inf(-1)
	}
	for j, x := range f.row(i) {
		insert(top, val, int32(j), x+f.bias[j])
	}
}

// insert puts class j of score v into the ranking top, val if it ranks
// among its three; j must not be in it.
func insert(top []int32, val []float64, j int32, v float64) {
	if top[2] >= 0 && !beats(v, j, val[2], top[2]) {
		return
	}
	p := 2
	for p > 0 && (top[p-1] < 0 || beats(v, j, val[p-1], top[p-1])) {
		top[p], val[p] = top[p-1], val[p-1]
		p--
	}
	top[p], val[p] = j, v
}

// exact is ψ at the state's counts, summed afresh.
func (f *fitter) exact() float64 {
	copy(f.sc.d, f.d)
	copy(f.sc.c, f.c)
	f.sc.rebuild()
	return f.sc.value()
}

// coordinate moves β_j by the offset of best ψ, if that raises ψ by more
// than tol, and reports whether it moved. As β_j rises, sample i turns to
// j where β_j + logit_j meets its best other class.
func (f *fitter) coordinate(j int) bool {
	copy(f.sc.d, f.d)
	copy(f.sc.c, f.c)
	j32 := int32(j)
	ev := f.ev[:0]
	for i := range f.N {
		top, val := f.top[3*i:3*i+3], f.val[3*i:3*i+3]
		r, m := top[0], val[0]
		if r == j32 {
			// Below every event no sample is predicted j.
			r, m = top[1], val[1]
			f.sc.c[j]--
			f.sc.c[r]++
			if y := f.y[i]; y == j {
				f.sc.d[j]--
			} else if y == int(r) {
				f.sc.d[y]++
			}
		}
		ev = append(ev, event{m - (f.data[i*f.stride+j] + f.bias[j]), int32(i), r, j32})
	}
	psi, s := f.walk(ev)
	if s == 0 || !(psi > f.psi+tol) {
		return false
	}
	old := f.bias[j]
	f.setBias(j, old+s)
	return f.accept(func() { f.setBias(j, old) })
}

// line is one class's score along a move's offset s: at + slope·s.
type line struct {
	slope, at float64
	class     int32
}

// plane moves β_j by p·s and β_k by q·s for the offset s of best ψ, if
// that raises ψ by more than tol: a direction the coordinates lack where,
// say, a class must gain predictions from one other class only (a
// coverage constraint at its bound). Along s sample i's prediction is the
// upper envelope of three lines: j's, k's and its best other class's.
// The scan follows the samples with j or k among their three best (all of
// them when K = 3) and holds the others at their prediction, which they
// keep for small offsets: a proposal, which accept judges on every sample.
func (f *fitter) plane(j, k int, p, q float64) bool {
	copy(f.sc.d, f.d)
	copy(f.sc.c, f.c)
	j32, k32 := int32(j), int32(k)
	ev := f.ev[:0]
	follow := func(i int32) {
		top, val := f.top[3*i:3*i+3], f.val[3*i:3*i+3]
		r := 0
		for top[r] == j32 || top[r] == k32 {
			r++
		}
		row := f.data[int(i)*f.stride:]
		ls := [3]line{
			{p, row[j] + f.bias[j], j32},
			{q, row[k] + f.bias[k], k32},
			{0, val[r], top[r]},
		}
		var first int32
		first, ev = envelope(ls, i, ev)
		// From its prediction now to its prediction below every event.
		y, now := f.y[i], top[0]
		f.sc.c[now]--
		f.sc.c[first]++
		if int(now) == y {
			f.sc.d[y]--
		}
		if int(first) == y {
			f.sc.d[y]++
		}
	}
	for _, i := range f.near[f.nearAt[j]:f.nearAt[j+1]] {
		follow(i)
	}
	for _, i := range f.near[f.nearAt[k]:f.nearAt[k+1]] {
		if !slices.Contains(f.top[3*i:3*i+3], j32) {
			follow(i)
		}
	}
	psi, s := f.walk(ev)
	if s == 0 || !(psi > f.psi+tol) {
		return false
	}
	oj, ok := f.bias[j], f.bias[k]
	f.setBias(j, oj+p*s)
	f.setBias(k, ok+q*s)
	return f.accept(func() {
		f.setBias(k, ok)
		f.setBias(j, oj)
	})
}

// index lists, for every class, the samples with it among their three
// best classes.
func (f *fitter) index() {
	clear(f.nearAt)
	for _, c := range f.top {
		if c >= 0 {
			f.nearAt[c+1]++
		}
	}
	for j := range f.K {
		f.nearAt[j+1] += f.nearAt[j]
	}
	fill := slices.Clone(f.nearAt[:f.K])
	for i := range f.N {
		for _, c := range f.top[3*i : 3*i+3] {
			if c >= 0 {
				f.near[fill[c]] = int32(i)
				fill[c]++
			}
		}
	}
}

// envelope appends to ev the events of sample i as the offset rises: where
// the best of three lines changes (the lowest class on equal lines). It
// returns the best as s → −∞.
func envelope(ls [3]line, i int32, ev []event) (int32, []event) {
	// By slope; of lines of one slope only the best can lead.
	slices.SortFunc(ls[:], func(a, b line) int { return cmp.Compare(a.slope, b.slope) })
	n := 0
	for _, l := range ls {
		if n > 0 && ls[n-1].slope == l.slope {
			if beats(l.at, l.class, ls[n-1].at, ls[n-1].class) {
				ls[n-1] = l
			}
			continue
		}
		ls[n] = l
		n++
	}
	cross := func(a, b line) float64 { return (a.at - b.at) / (b.slope - a.slope) }
	switch n {
	case 2:
		ev = append(ev, event{cross(ls[0], ls[1]), i, ls[0].class, ls[1].class})
	case 3:
		if x01, x12 := cross(ls[0], ls[1]), cross(ls[1], ls[2]); x01 < x12 {
			ev = append(ev, event{x01, i, ls[0].class, ls[1].class}, event{x12, i, ls[1].class, ls[2].class})
		} else {
			ev = append(ev, event{cross(ls[0], ls[2]), i, ls[0].class, ls[2].class})
		}
	}
	return ls[0].class, ev
}

// pairs are the pairs of classes the plane moves try, j < k in order:
// each class with the Partners classes it is most often confused with
// (the samples whose two best classes are the two; the lower class first
// on ties), or every pair where K ≤ Partners + 1.
func (f *fitter) pairs() [][2]int32 {
	K := f.K
	var out [][2]int32
	if K <= 1+f.cfg.Partners {
		for j := range K {
			for k := j + 1; k < K; k++ {
				out = append(out, [2]int32{int32(j), int32(k)})
			}
		}
		return out
	}
	keys := make([]int64, f.N)
	for i := range f.N {
		a, b := f.top[3*i], f.top[3*i+1]
		keys[i] = int64(min(a, b))*int64(K) + int64(max(a, b))
	}
	slices.Sort(keys)
	type link struct{ other, n int32 }
	links := make([][]link, K)
	for g := 0; g < len(keys); {
		h := g
		for h < len(keys) && keys[h] == keys[g] {
			h++
		}
		a, b := int32(keys[g]/int64(K)), int32(keys[g]%int64(K))
		links[a] = append(links[a], link{b, int32(h - g)})
		links[b] = append(links[b], link{a, int32(h - g)})
		g = h
	}
	for j, l := range links {
		slices.SortFunc(l, func(a, b link) int {
			if c := cmp.Compare(b.n, a.n); c != 0 {
				return c
			}
			return cmp.Compare(a.other, b.other)
		})
		for _, e := range l[:min(len(l), f.cfg.Partners)] {
			out = append(out, [2]int32{min(int32(j), e.other), max(int32(j), e.other)})
		}
	}
	slices.SortFunc(out, func(a, b [2]int32) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	})
	return slices.Compact(out)
}

// accept keeps a move if ψ, summed afresh, rose by more than tol, and
// else undoes it: rounding may put a sample on the other side of a
// breakpoint than the scan did.
func (f *fitter) accept(undo func()) bool {
	if psi := f.exact(); psi > f.psi+tol {
		f.psi = psi
		f.moves++
		return true
	}
	undo()
	return false
}

// walk sorts the events of a move and walks the intervals of its offset
// upward, (−∞, s_1), (s_1, s_2), …, (s_G, ∞), from the scorer's counts
// below every event (not yet summed). It returns the best ψ and the offset
// to take for it: 0 in the interval holding 0, else the interval's
// midpoint (1 past the last event for an unbounded one); of values of ψ
// within tol of each other, the offset nearest 0.
func (f *fitter) walk(ev []event) (best, at float64) {
	f.ev = ev
	f.sc.rebuild()
	ev = f.sorter.sort(ev)
	best, dist := math.Inf(-1), math.Inf(1)
	lo := math.Inf(-1)
	for g := 0; ; {
		hi := math.Inf(1)
		if g < len(ev) {
			hi = ev[g].s
		}
		psi := f.sc.value()
		s := lo + (hi-lo)/2
		switch {
		case lo < 0 && 0 < hi:
			s = 0
		case math.IsInf(lo, -1):
			s = hi - 1
		case math.IsInf(hi, 1):
			s = lo + 1
		}
		if d := math.Abs(s); psi > best+tol || (psi >= best-tol && d < dist) {
			best, at, dist = psi, s, d
		}
		if g == len(ev) {
			return best, at
		}
		for ; g < len(ev) && ev[g].s == hi; g++ {
			e := ev[g]
			f.sc.move(f.y[e.i], int(e.from), int(e.to))
		}
		lo = hi
	}
}

// setBias sets β_j to b and updates every sample's best classes and the
// counts.
func (f *fitter) setBias(j int, b float64) {
	up := b > f.bias[j]
	f.bias[j] = b
	j32 := int32(j)
	for i := range f.N {
		top, val := f.top[3*i:3*i+3], f.val[3*i:3*i+3]
		old := top[0]
		p := slices.Index(top, j32)
		switch {
		case !up && p >= 0:
			f.rescan(i)
		case up && p >= 0:
			// Risen: it climbs past those it now beats.
			v := f.data[i*f.stride+j] + b
			for ; p > 0 && beats(v, j32, val[p-1], top[p-1]); p-- {
				top[p], val[p] = top[p-1], val[p-1]
			}
			top[p], val[p] = j32, v
		case up:
			insert(top, val, j32, f.data[i*f.stride+j]+b)
		}
		if now := top[0]; now != old {
			y := f.y[i]
			if int(old) == y {
				f.d[y]--
			}
			if int(now) == y {
				f.d[y]++
			}
			f.c[old]--
			f.c[now]++
		}
	}
}
