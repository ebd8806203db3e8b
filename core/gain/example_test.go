package gain_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"selmix/core/gain"
)

// SelMix's mixup distribution is a softmax of s·G over the positive gains
// only: here e^(2·0.5) and e^(2·0.2) share the mass, 0.6457 and 0.3543, and
// the pairs of non-positive gain are never drawn.
func ExampleDistribution() {
	G := mat.NewDense(2, 2, []float64{
		0.5, -0.1,
		0.2, 0,
	})
	var P mat.Dense
	gain.Distribution(&P, G, 2, gain.SelMix)
	fmt.Printf("%.4f\n", mat.Formatted(&P))

	gain.Distribution(&P, G, 2, gain.Greedy)
	fmt.Printf("%.0f\n", mat.Formatted(&P))
	// Output:
	// ⎡0.6457  0.0000⎤
	// ⎣0.3543  0.0000⎦
	// ⎡1  0⎤
	// ⎣0  0⎦
}

// β̄ is the mean of β ~ U[β_min, 1], the mixing weight the gain assumes.
func ExampleBetaBar() {
	fmt.Println(gain.BetaBar(0.6), gain.BetaBar(0))
	// Output:
	// 0.8 0.5
}
