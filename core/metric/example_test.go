package metric_test

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"selmix/core/metric"
)

// A joint confusion matrix of three classes with priors 0.5, 0.3 and 0.2:
// row i holds P(y = i, ŷ = j), so the recalls are 0.45/0.5 = 0.9,
// 0.21/0.3 = 0.7 and 0.10/0.2 = 0.5, and the coverages (column sums) 0.55,
// 0.30 and 0.15.
var joint = mat.NewDense(3, 3, []float64{
	0.45, 0.03, 0.02,
	0.06, 0.21, 0.03,
	0.04, 0.06, 0.10,
})

func ExampleNewReport() {
	r, err := metric.NewReport(joint, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("recall %.2f, coverage %.2f\n", r.Recall, r.Coverage)
	// H-mean 3/(1/0.9 + 1/0.7 + 1/0.5) and G-mean (0.9·0.7·0.5)^(1/3).
	fmt.Printf("mean %.4f  min %.4f (class %d)  H-mean %.4f  G-mean %.4f\n",
		r.MeanRecall, r.MinRecall, r.Worst, r.HMean, r.GMean)
	// Output:
	// recall [0.90 0.70 0.50], coverage [0.55 0.30 0.15]
	// mean 0.7000  min 0.5000 (class 2)  H-mean 0.6608  G-mean 0.6804
}

// The min-recall objective weighs the recalls by softmin(−ω·recall): with
// ω = 40 the worst class (recall 0.5) gets weight 1/(1 + e^−8 + e^−16) and
// class 1, 0.2 above it, e^−8 of that.
func ExampleMultipliers() {
	r, err := metric.NewReport(joint, nil)
	if err != nil {
		panic(err)
	}
	lambda := metric.Multipliers(metric.MinRecall, r, nil, metric.Params{Omega: 40})
	fmt.Printf("λ = [%.3g %.3g %.6f]\n", lambda[0], lambda[1], lambda[2])
	// Output:
	// λ = [1.12e-07 0.000335 0.999665]
}

// Evaluate gives ψ, its derivative D with respect to the confusion matrix's
// logits (each row of D sums to zero) and the multipliers in one call. The
// mean recall's ψ is the mean of the recalls.
func ExampleEvaluate() {
	e, err := metric.Evaluate(metric.MeanRecall, joint, nil, metric.Params{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("ψ = %.4f\n", e.Psi)
	// D_kl = C_kk/(K·π_k)·(δ_kl − C_kl/π_k): row 0 is 0.3·(1 − 0.9, −0.06, −0.04).
	for i := range 3 {
		row := mat.Row(nil, i, e.D)
		fmt.Printf("D[%d] = %+.4f  row sum zero: %t\n", i, row, math.Abs(row[0]+row[1]+row[2]) < 1e-15)
	}
	// Output:
	// ψ = 0.7000
	// D[0] = [+0.0300 -0.0180 -0.0120]  row sum zero: true
	// D[1] = [-0.0467 +0.0700 -0.0233]  row sum zero: true
	// D[2] = [-0.0333 -0.0500 +0.0833]  row sum zero: true
}

// LookupScalar finds a reported metric by its one name, the key every
// export, figure and view uses, or by a name it had before.
func ExampleLookupScalar() {
	r, err := metric.NewReport(joint, nil) // recalls 0.9, 0.7, 0.5
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"mean_recall", "worst-recall"} {
		s, _ := metric.LookupScalar(name)
		fmt.Printf("%s: %s (%s) = %.2f\n", name, s.Key, s.Title, s.Get(&r))
	}
	// Output:
	// mean_recall: mean_recall (mean recall) = 0.70
	// worst-recall: min_recall (worst recall (min over classes)) = 0.50
}
