package loop

import (
	"selmix/core/metric"
)

// Plugin is the post-hoc plug-in classifier on one model: per-class
// additive logit biases chosen on validation for an objective
// (core/plugin; docs/method.md, "The plug-in baseline"), measured on test.
type Plugin struct {
	Objective metric.Objective // what the biases were chosen for
	Test      metric.Report
	TestObj   []float64 // ψ of every objective on test, metric.Objectives() order
}

// Clone is a deep copy of p (nil for nil).
func (p *Plugin) Clone() *Plugin {
	if p == nil {
		return nil
	}
	c := *p
	c.TestObj = append([]float64(nil), p.TestObj...)
	return &c
}
