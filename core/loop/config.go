package loop

import (
	"fmt"
	"math"
)

// Config is a fine-tuning run: the hyperparameters controls may change,
// and those fixed for the run. Every value is what it says (no zero
// stands for a default): start from DefaultConfig.
type Config struct {
	Hyper
	Steps        int     // fine-tuning steps
	WeightDecay  float64 // on weights, never biases
	Momentum     float64 // SGD momentum
	OracleLabels bool    // semi-supervised: draw x2 by the unlabeled set's true labels
	// Seed chooses the training samples the samples gain form draws at
	// each refresh (the run's seed).
	Seed uint64
	// Plugin measures the post-hoc plug-in classifier on the pre-trained
	// model and at the end (Summary.PluginBefore, PluginAfter), where the
	// trainer can give logits (Featurer).
	Plugin bool
}

// DefaultConfig is the paper's supervised fine-tuning (docs/method.md).
func DefaultConfig() Config {
	return Config{Hyper: DefaultHyper(), Steps: 2000, WeightDecay: 5e-4, Momentum: 0.9}
}

// Validate checks every field and names the first bad one.
func (c Config) Validate() error {
	if err := c.Hyper.Validate(); err != nil {
		return err
	}
	switch {
	case c.Steps < 1:
		return fmt.Errorf("steps: want ≥ 1, got %d", c.Steps)
	case !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 0):
		return fmt.Errorf("weight_decay: want a number ≥ 0, got %v", c.WeightDecay)
	case !(c.Momentum >= 0 && c.Momentum < 1):
		return fmt.Errorf("momentum: want a number in [0, 1), got %v", c.Momentum)
	}
	return nil
}
