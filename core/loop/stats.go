package loop

import (
	"gonum.org/v1/gonum/mat"

	"selmix/core/gain"
)

// Stats is what a refresh measured on the validation set: the joint
// confusion matrix C, the class centroids Z (K×d), the head W (d×K) and b,
// the tail classes and the number of validation samples (the coverage
// margin's n; 0 where unknown, which a margin from cov_conf refuses).
type Stats struct {
	C, Z, W *mat.Dense
	B       []float64
	Tail    []bool
	N       int
	NTest   int // test samples (the margin of cov_scope = all; 0: unknown)
	// Samples is what the samples form reads (nil under the others).
	Samples *gain.SampleSet
	// Integral is the coverage multipliers' memory under multipliers =
	// integral (metric.Integrate; nil before the first refresh and under
	// memoryless).
	Integral []float64
}
