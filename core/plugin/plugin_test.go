package plugin_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"selmix/core/metric"
	"selmix/core/plugin"
)

// synth draws counts[k] samples of each class k from a model whose logits
// favour the head: logit_j = sep·[j = y] + head·log π_j + N(0, 1), with π
// the class frequencies of counts. Labels come in a shuffled order.
func synth(rng *rand.Rand, counts []int, sep, head float64) (*mat.Dense, []int) {
	K := len(counts)
	var y []int
	total := 0
	for k, c := range counts {
		total += c
		for range c {
			y = append(y, k)
		}
	}
	rng.Shuffle(len(y), func(a, b int) { y[a], y[b] = y[b], y[a] })
	L := mat.NewDense(len(y), K, nil)
	for i, c := range y {
		for j := range K {
			v := head*math.Log(float64(counts[j])/float64(total)) + rng.NormFloat64()
			if j == c {
				v += sep
			}
			L.Set(i, j, v)
		}
	}
	return L, y
}

// longTail is K class counts from n1 down to n1/rho, geometrically.
func longTail(K, n1 int, rho float64) []int {
	c := make([]int, K)
	for k := range c {
		c[k] = max(1, int(math.Round(float64(n1)*math.Pow(rho, -float64(k)/float64(K-1)))))
	}
	return c
}

// gridOracle searches a grid of step over (β_1, β_2) ∈ [−R, R]², β_0 = 0
// (the biases are defined up to a constant), without the package: its
// own argmax (lowest index on ties) and counts, and metric.Values. It
// returns, per objective of objs, the best reported ψ and where it is.
func gridOracle(t *testing.T, objs []metric.Objective, L *mat.Dense, y []int, R, step float64) ([]float64, [][2]float64) {
	t.Helper()
	N, _ := L.Dims()
	best := make([]float64, len(objs))
	at := make([][2]float64, len(objs))
	for o := range best {
		best[o] = math.Inf(-1)
	}
	seen := map[[9]int]bool{} // ψ depends on the counts alone
	n := int(math.Round(2 * R / step))
	for a := 0; a <= n; a++ {
		for c := 0; c <= n; c++ {
			b := [3]float64{0, -R + float64(a)*step, -R + float64(c)*step}
			var counts [9]int
			for i := range N {
				pred, bv := 0, L.At(i, 0)+b[0]
				for j := 1; j < 3; j++ {
					if v := L.At(i, j) + b[j]; v > bv {
						pred, bv = j, v
					}
				}
				counts[3*y[i]+pred]++
			}
			if seen[counts] {
				continue
			}
			seen[counts] = true
			C := mat.NewDense(3, 3, nil)
			for k, v := range counts {
				C.Set(k/3, k%3, float64(v)/float64(N))
			}
			vals, err := metric.Values(C, nil, metric.Params{})
			if err != nil {
				t.Fatal(err)
			}
			for o, obj := range objs {
				if v := obj.In(vals); v > best[o] {
					best[o], at[o] = v, [2]float64{b[1], b[2]}
				}
			}
		}
	}
	return best, at
}

// At K = 3 an exhaustive grid over the biases finds no ψ above Fit's: the
// ascent over exact breakpoints reaches the optimum the grid resolves. The
// ascent is a local search; on this problem it can end a little below the
// optimum for a seed past those tested here (one case in 200 at seeds
// 1–40 over five objectives).
func TestFitMatchesGridOracle(t *testing.T) {
	objs := []metric.Objective{metric.MinRecall, metric.MeanRecallCov, metric.HMean}
	for seed := uint64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		L, y := synth(rng, []int{30, 15, 8}, 1.5, 1)
		grid, at := gridOracle(t, objs, L, y, 5, 0.025)
		for o, obj := range objs {
			res, err := plugin.Fit(obj, L, y, nil, metric.Params{}, plugin.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Psi < grid[o]-1e-12 {
				t.Errorf("%s seed %d: Fit ψ = %.9f at β = %.4f, below the grid's %.9f at (β_1, β_2) = %.3f",
					obj, seed, res.Psi, res.Bias, grid[o], at[o])
			}
			if !(grid[o] > res.Argmax+0.01) {
				t.Errorf("%s seed %d: the grid's best %.6f is not above argmax's %.6f: the case tests nothing", obj, seed, grid[o], res.Argmax)
			}
		}
	}
}

// Fit's ψ is what its biases give, counted without the package.
func TestFitPsiIsItsBiases(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	L, y := synth(rng, longTail(6, 50, 5), 1.5, 1)
	N, K := L.Dims()
	for _, obj := range metric.Objectives() {
		res, err := plugin.Fit(obj, L, y, nil, metric.Params{}, plugin.Config{})
		if err != nil {
			t.Fatal(err)
		}
		C := mat.NewDense(K, K, nil)
		for i := range N {
			pred, bv := 0, L.At(i, 0)+res.Bias[0]
			for j := 1; j < K; j++ {
				if v := L.At(i, j) + res.Bias[j]; v > bv {
					pred, bv = j, v
				}
			}
			C.Set(y[i], pred, C.At(y[i], pred)+1/float64(N))
		}
		vals, err := metric.Values(C, nil, metric.Params{})
		if err != nil {
			t.Fatal(err)
		}
		if got := obj.In(vals); math.Abs(got-res.Psi) > 1e-12 {
			t.Errorf("%s: Fit reports ψ = %.12f, its biases give %.12f", obj, res.Psi, got)
		}
		if res.Psi < res.Argmax-1e-12 || res.Psi < res.Starts[0]-1e-12 {
			t.Errorf("%s: ψ %.6f below argmax's %.6f or the start's %.6f", obj, res.Psi, res.Argmax, res.Starts[0])
		}
	}
}

// minRecall is the true least recall (Report.MinRecall) of argmax(L + b).
func minRecall(t *testing.T, L *mat.Dense, y []int, b []float64) float64 {
	t.Helper()
	_, K := L.Dims()
	C, err := plugin.Confusion(plugin.Apply(nil, b, L), y, K)
	if err != nil {
		t.Fatal(err)
	}
	r, err := metric.NewReport(C, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.MinRecall
}

// On a long-tailed problem whose model favours the head, the plug-in
// biases for min-recall lift the worst class far above plain argmax's, on
// validation and on a held-out draw from the same distribution.
func TestFitLiftsMinRecallLongTail(t *testing.T) {
	counts := longTail(10, 400, 20)
	rng := rand.New(rand.NewPCG(11, 12))
	val, yv := synth(rng, counts, 2.5, 1)
	test, yt := synth(rng, counts, 2.5, 1)
	zero := make([]float64, 10)

	res, err := plugin.Fit(metric.MinRecall, val, yv, nil, metric.Params{}, plugin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	valArg, valFit := minRecall(t, val, yv, zero), minRecall(t, val, yv, res.Bias)
	testArg, testFit := minRecall(t, test, yt, zero), minRecall(t, test, yt, res.Bias)
	t.Logf("min recall: validation %.3f → %.3f, test %.3f → %.3f; ψ %.4f (start %.4f, argmax %.4f), %d sweeps, %d moves",
		valArg, valFit, testArg, testFit, res.Psi, res.Starts[0], res.Argmax, res.Sweeps, res.Moves)
	if valFit < valArg+0.3 {
		t.Errorf("validation min recall %.3f with the biases, want at least argmax's %.3f + 0.3", valFit, valArg)
	}
	if testFit < testArg+0.25 {
		t.Errorf("test min recall %.3f with the biases, want at least argmax's %.3f + 0.25", testFit, testArg)
	}
	if !(res.Psi > res.Starts[0]) {
		t.Errorf("ψ %.6f after the ascent, want above logit adjustment's %.6f", res.Psi, res.Starts[0])
	}
}

// Fit is a function of its input: the same biases bit for bit from a
// copy of it.
func TestFitDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	L, y := synth(rng, longTail(20, 100, 10), 2, 1)
	first, err := plugin.Fit(metric.HMeanCov, L, y, nil, metric.Params{}, plugin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Moves == 0 {
		t.Fatal("Fit moved no bias: the check would prove nothing")
	}
	again, err := plugin.Fit(metric.HMeanCov, mat.DenseCopyOf(L), slices.Clone(y), nil, metric.Params{}, plugin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Bias, first.Bias) || again.Psi != first.Psi || again.Moves != first.Moves {
		t.Errorf("second run: β = %v, ψ = %v, %d moves; first %v, ψ = %v, %d moves",
			again.Bias, again.Psi, again.Moves, first.Bias, first.Psi, first.Moves)
	}
}

// With two classes a coordinate move is a search over the one free bias:
// Fit reaches the optimum over every interval between the breakpoints,
// enumerated here by hand.
func TestFitK2Exact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	L, y := synth(rng, []int{40, 9}, 1, 2)
	N, _ := L.Dims()
	// Sample i is predicted 1 where β_1 − β_0 > L_i0 − L_i1.
	var ts []float64
	for i := range N {
		ts = append(ts, L.At(i, 0)-L.At(i, 1))
	}
	slices.Sort(ts)
	cands := []float64{ts[0] - 1, ts[len(ts)-1] + 1}
	for i := 1; i < len(ts); i++ {
		cands = append(cands, (ts[i-1]+ts[i])/2)
	}
	for _, obj := range []metric.Objective{metric.MinRecall, metric.HMean, metric.MeanRecallCov, metric.GMean} {
		best := math.Inf(-1)
		for _, b1 := range cands {
			C := mat.NewDense(2, 2, nil)
			for i := range N {
				pred := 0
				if L.At(i, 1)+b1 > L.At(i, 0) {
					pred = 1
				}
				C.Set(y[i], pred, C.At(y[i], pred)+1/float64(N))
			}
			vals, err := metric.Values(C, nil, metric.Params{})
			if err != nil {
				t.Fatal(err)
			}
			best = max(best, obj.In(vals))
		}
		res, err := plugin.Fit(obj, L, y, nil, metric.Params{}, plugin.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(res.Psi-best) > 1e-12 {
			t.Errorf("%s: Fit ψ = %.12f, the best interval's %.12f", obj, res.Psi, best)
		}
		if !(best > res.Argmax+0.01) {
			t.Errorf("%s: the optimum %.6f is not above argmax's %.6f: the case tests nothing", obj, best, res.Argmax)
		}
	}
}

// K = 1000 runs, with 5 samples a class on average, and improves on its
// start.
func TestFitK1000(t *testing.T) {
	K := 1000
	counts := longTail(K, 9, 9)
	rng := rand.New(rand.NewPCG(8, 9))
	L, y := synth(rng, counts, 3, 1)
	res, err := plugin.Fit(metric.MeanRecallCov, L, y, nil, metric.Params{}, plugin.Config{Sweeps: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("K = %d, N = %d: ψ argmax %.4f, starts %.4f, Fit %.4f from start %d after %d sweeps, %d moves",
		K, len(y), res.Argmax, res.Starts, res.Psi, res.From, res.Sweeps, res.Moves)
	if len(res.Bias) != K {
		t.Fatalf("%d biases, want %d", len(res.Bias), K)
	}
	if !(res.Psi > res.Starts[0]+0.05) || !(res.Psi > res.Argmax+0.05) {
		t.Errorf("ψ %.4f, want above logit adjustment's %.4f and argmax's %.4f by 0.05", res.Psi, res.Starts[0], res.Argmax)
	}
	if res.Sweeps > 4 {
		t.Errorf("%d sweeps from 2 starts, want at most the cap of 2 each", res.Sweeps)
	}
}

// Bad input is an error that names what is wrong.
func TestFitRejects(t *testing.T) {
	L := mat.NewDense(4, 3, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0})
	y := []int{0, 1, 2, 0}
	nan := mat.DenseCopyOf(L)
	nan.Set(2, 1, math.NaN())
	for _, c := range []struct {
		name string
		obj  metric.Objective
		L    *mat.Dense
		y    []int
		tail []bool
		p    metric.Params
		cfg  plugin.Config
		want string
	}{
		{"label above K", metric.MinRecall, L, []int{0, 1, 3, 0}, nil, metric.Params{}, plugin.Config{}, "label 3 of sample 2 is outside [0, 3)"},
		{"negative label", metric.MinRecall, L, []int{0, -1, 2, 0}, nil, metric.Params{}, plugin.Config{}, "label -1 of sample 1"},
		{"rows and labels", metric.MinRecall, L, []int{0, 1, 2}, nil, metric.Params{}, plugin.Config{}, "4 rows for 3 labels"},
		{"empty class", metric.MinRecall, L, []int{0, 1, 1, 0}, nil, metric.Params{}, plugin.Config{}, "class 2 has no validation sample"},
		{"one column", metric.MinRecall, mat.NewDense(4, 1, nil), y, nil, metric.Params{}, plugin.Config{}, "1 column"},
		{"empty logits", metric.MinRecall, &mat.Dense{}, y, nil, metric.Params{}, plugin.Config{}, "logits are empty"},
		{"not finite", metric.MinRecall, nan, y, nil, metric.Params{}, plugin.Config{}, "logit (2,1) = NaN"},
		{"tail length", metric.MinHTRecall, L, y, []bool{true}, metric.Params{}, plugin.Config{}, "tail has 1 flags for 3 classes"},
		{"start length", metric.MinRecall, L, y, nil, metric.Params{}, plugin.Config{Starts: [][]float64{{0, 0, 0}, {0}}}, "Config.Starts[1] has 1 biases for 3 classes"},
		{"start not finite", metric.MinRecall, L, y, nil, metric.Params{}, plugin.Config{Starts: [][]float64{{0, math.Inf(1), 0}}}, "Config.Starts[0][1] = +Inf"},
		{"no start", metric.MinRecall, L, y, nil, metric.Params{}, plugin.Config{Starts: [][]float64{}}, "Config.Starts is empty"},
		{"sweeps", metric.MinRecall, L, y, nil, metric.Params{}, plugin.Config{Sweeps: -1}, "Config.Sweeps = -1"},
		{"objective", "min-recal", L, y, nil, metric.Params{}, plugin.Config{}, `unknown objective "min-recal"`},
		{"params", metric.MinRecall, L, y, nil, metric.Params{Tau: -1}, plugin.Config{}, "Params.Tau = -1"},
		{"empty tail group", metric.MinHTRecall, L, y, []bool{false, false, false}, metric.Params{}, plugin.Config{}, "at least one class in each group"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := plugin.Fit(c.obj, c.L, c.y, c.tail, c.p, c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Fit: error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	L := mat.NewDense(3, 3, []float64{
		2, 1, 0,
		1, 1, 0, // a tie: the lowest index
		0, 0.5, 0.4,
	})
	for _, c := range []struct {
		bias []float64
		want []int
	}{
		{[]float64{0, 0, 0}, []int{0, 0, 1}},
		{[]float64{0, 1.5, 0}, []int{1, 1, 1}},
		{[]float64{-1, 0, 0.2}, []int{0, 1, 2}},
	} {
		buf := make([]int, 0, 8)
		if got := plugin.Apply(buf, c.bias, L); !slices.Equal(got, c.want) {
			t.Errorf("Apply(%v) = %v, want %v", c.bias, got, c.want)
		} else if &got[0] != &buf[:1][0] {
			t.Errorf("Apply(%v) allocated with a dst of capacity 8", c.bias)
		}
	}
}

func TestConfusion(t *testing.T) {
	C, err := plugin.Confusion([]int{0, 1, 1, 2}, []int{0, 0, 1, 2}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := mat.NewDense(3, 3, []float64{
		0.25, 0.25, 0,
		0, 0.25, 0,
		0, 0, 0.25,
	})
	if !mat.Equal(C, want) {
		t.Errorf("Confusion = %v, want %v", mat.Formatted(C), mat.Formatted(want))
	}
	for _, c := range []struct {
		name    string
		pred, y []int
		K       int
		want    string
	}{
		{"lengths", []int{0}, []int{0, 1}, 2, "1 predictions for 2 labels"},
		{"empty", nil, nil, 2, "no samples"},
		{"label", []int{0, 1}, []int{0, 2}, 2, "label 2 of sample 1 is outside [0, 2)"},
		{"prediction", []int{0, 5}, []int{0, 1}, 2, "prediction 5 of sample 1 is outside [0, 2)"},
		{"K", []int{0}, []int{0}, 0, "K = 0"},
	} {
		if _, err := plugin.Confusion(c.pred, c.y, c.K); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}
