package plugin_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"selmix/core/metric"
	"selmix/core/plugin"
)

// A model that favours class 0: plain argmax gets one of class 1's three
// samples and one of class 2's two. Biases chosen for min-recall get them
// all. (ψ min-recall is the soft minimum, a little above the least recall.)
func ExampleFit() {
	logits := mat.NewDense(9, 3, []float64{
		2, 0, 0,
		1.5, 0.5, 0,
		1, 0, 0.2,
		2, 1, 0,
		1, 0.8, 0,
		0.5, 0.4, 0,
		0.2, 1, 0,
		1, 0, 0.6,
		0.3, 0, 0.9,
	})
	y := []int{0, 0, 0, 0, 1, 1, 1, 2, 2}
	res, err := plugin.Fit(metric.MinRecall, logits, y, nil, metric.Params{}, plugin.Config{})
	if err != nil {
		panic(err)
	}
	for _, b := range [][]float64{make([]float64, 3), res.Bias} {
		C, err := plugin.Confusion(plugin.Apply(nil, b, logits), y, 3)
		if err != nil {
			panic(err)
		}
		r, err := metric.NewReport(C, nil)
		if err != nil {
			panic(err)
		}
		fmt.Printf("recall %.2f\n", r.Recall)
	}
	fmt.Printf("ψ min-recall %.3f → %.3f\n", res.Argmax, res.Psi)
	// Output:
	// recall [1.00 0.33 0.50]
	// recall [1.00 1.00 1.00]
	// ψ min-recall 0.334 → 1.000
}
