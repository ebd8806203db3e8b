package loop

import (
	"fmt"
	"math"

	"selmix/core/metric"
)

// OneClassShare is the share of the validation set that one predicted
// class must take for CannotLearn to say the model predicts one class.
const OneClassShare = 0.95

// CannotLearn is the one line that says why fine-tuning from the model
// of report r, with gains G (K×K row-major; nil where the viewer has no
// matrices), cannot learn, naming the fix, or "" where nothing says so:
// the model predicts one class for nearly all of validation (a random
// backbone, a head pre-trained on features that say nothing), or every
// gain is zero (no mixup pair promises ψ anything). Viewers check the
// run's first refresh.
func CannotLearn(r metric.Report, G []float64) string {
	const fix = "a random backbone? give the worker --weights, or pre-train it whole with --pretrain full"
	top, share := -1, 0.0
	for k, c := range r.Coverage {
		if c > share {
			top, share = k, c
		}
	}
	if top >= 0 && share >= OneClassShare && r.K > 1 {
		return fmt.Sprintf("the starting model predicts class %d for %.0f%% of validation (accuracy %.4f): fine-tuning cannot learn from it — %s", top, 100*share, r.Accuracy, fix)
	}
	if len(G) > 0 {
		zero := true
		for _, g := range G {
			if math.Abs(g) > 1e-12 {
				zero = false
				break
			}
		}
		if zero {
			return "the gain G is zero everywhere: no mixup pair moves ψ, so fine-tuning cannot learn — " + fix
		}
	}
	return ""
}
