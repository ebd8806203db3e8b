package train

import (
	"fmt"
	"math"

	"selmix/core/loop"
	"selmix/core/metric"
	"selmix/core/plugin"
)

// pluginLargeK is the K above which the plug-in fit takes one start (the
// logit adjustment) and at most pluginLargeSweeps sweeps: a full fit at
// K = 1000 on 20 000 validation samples takes about a minute.
const (
	pluginLargeK      = 100
	pluginLargeSweeps = 5
)

// plugin fits the plug-in classifier for the objective in force on the
// trainer's current model and measures it on test: nil where the run
// does not ask for it (Config.Plugin) or the trainer cannot give logits.
func (e *Engine) plugin() (*loop.Plugin, error) {
	f, ok := e.tr.(Featurer)
	if !e.cfg.Plugin || !ok || !CanFeature(e.tr) {
		return nil, nil
	}
	_, lv, yv, err := f.Features(SplitVal)
	if err != nil {
		return nil, fmt.Errorf("plug-in: validation logits: %w", err)
	}
	_, lt, yt, err := f.Features(SplitTest)
	if err != nil {
		return nil, fmt.Errorf("plug-in: test logits: %w", err)
	}
	// Starts: the logit adjustment of the training prior (a balanced
	// validation set's own prior would start at argmax) and argmax.
	adj := make([]float64, e.K)
	var n float64
	for _, c := range e.info.TrainCounts {
		n += float64(c)
	}
	for k, c := range e.info.TrainCounts {
		adj[k] = -math.Log(float64(c) / n)
	}
	cfg := plugin.Config{Starts: [][]float64{adj, make([]float64, e.K)}}
	if e.K > pluginLargeK {
		cfg.Starts, cfg.Sweeps = cfg.Starts[:1], pluginLargeSweeps
	}
	obj, p := e.hyper.Objective, e.params()
	res, err := plugin.Fit(obj, lv, yv, e.tail, p, cfg)
	if err != nil {
		return nil, fmt.Errorf("plug-in: %w", err)
	}
	C, err := plugin.Confusion(plugin.Apply(nil, res.Bias, lt), yt, e.K)
	if err != nil {
		return nil, fmt.Errorf("plug-in on test: %w", err)
	}
	r, err := metric.NewReport(C, e.tail)
	if err != nil {
		return nil, fmt.Errorf("plug-in on test: %w", err)
	}
	v, err := metric.Values(C, e.tail, p)
	if err != nil {
		return nil, fmt.Errorf("plug-in on test: %w", err)
	}
	return &loop.Plugin{Objective: obj, Test: r, TestObj: v}, nil
}

// pluginState is a Plugin in a checkpoint.
type pluginState struct {
	Objective metric.Objective `json:"objective"`
	Test      reportState      `json:"test"`
	TestObj   []float64        `json:"test_obj"`
}

func newPluginState(p *loop.Plugin) *pluginState {
	if p == nil {
		return nil
	}
	return &pluginState{Objective: p.Objective, Test: reportState(p.Test), TestObj: p.TestObj}
}

func (s *pluginState) plugin() *loop.Plugin {
	if s == nil {
		return nil
	}
	return &loop.Plugin{Objective: s.Objective, Test: metric.Report(s.Test), TestObj: s.TestObj}
}
