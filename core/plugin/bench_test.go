package plugin_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"selmix/core/metric"
	"selmix/core/plugin"
)

// BenchmarkFitK1000 fits biases at K = 1000 classes on N = 20,000
// validation samples (long-tailed, 52 down to 5 a class), from logit
// adjustment alone with the sweeps capped at 3: an op is one Fit, and
// s/sweep the cost of one sweep of coordinate moves.
func BenchmarkFitK1000(b *testing.B) {
	K := 1000
	counts := longTail(K, 51, 10)
	for k, n := 0, sum(counts); n < 20000; k, n = k+1, n+1 {
		counts[k]++
	}
	L, y := synth(rand.New(rand.NewPCG(1, 2)), counts, 3, 1)
	adjust := make([]float64, K)
	for k, c := range counts {
		adjust[k] = -math.Log(float64(c) / float64(len(y)))
	}
	for _, obj := range []metric.Objective{metric.MinRecall, metric.MeanRecallCov, metric.HMean} {
		b.Run(string(obj), func(b *testing.B) {
			sweeps := 0
			for b.Loop() {
				res, err := plugin.Fit(obj, L, y, nil, metric.Params{}, plugin.Config{Sweeps: 3, Starts: [][]float64{adjust}})
				if err != nil {
					b.Fatal(err)
				}
				sweeps += res.Sweeps
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(sweeps), "s/sweep")
		})
	}
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}
