package runs_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"selmix/runs"
)

// Create starts a run folder (run.json, config.toml, the event log),
// Append logs events, SetMeta updates run.json atomically; Open reads the
// run back as every reader does, and FlatConfig gives its configuration
// as "section.key" → value: every key, those config.toml does not name
// as a run's recorded configuration reads them (Run.Recorded).
func ExampleCreate() {
	dir, err := os.MkdirTemp("", "runs-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "runs")
	w, err := runs.Create(root, "baseline", "seed = 1\n[finetune]\npolicy = \"selmix\"\nsteps = 100\n",
		runs.Meta{Objective: "min-recall", Policy: "selmix", Steps: 100, Best: math.NaN(), BestStep: -1})
	if err != nil {
		panic(err)
	}
	if _, err := w.Append("note", 0, map[string]string{"text": "started"}, true); err != nil {
		panic(err)
	}
	if err := w.SetMeta(func(m *runs.Meta) { m.Best, m.BestStep, m.Status = 0.75, 30, runs.StatusFinished }); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}

	r, err := runs.Open(root, w.ID())
	if err != nil {
		panic(err)
	}
	evs, _, err := r.Events()
	if err != nil {
		panic(err)
	}
	cfg, err := r.FlatConfig()
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Meta.Name, r.EffectiveStatus(), r.Meta.Objective, r.Best())
	fmt.Println(len(evs), "event:", evs[0].Kind, string(evs[0].Data))
	fmt.Println(cfg.Text("finetune.policy"), cfg.Text("finetune.steps"), cfg.Text("record.checkpoint_every"))
	// Output:
	// baseline finished min-recall 0.75
	// 1 event: note {"text":"started"}
	// selmix 100 5
}

// GroupBy splits runs by a config key's value, groups in order of first
// member, those without the key apart.
func ExampleGroupBy() {
	cfgs := []runs.Config{
		{"finetune.policy": "selmix", "seed": int64(1)},
		{"finetune.policy": "uniform", "seed": int64(1)},
		{"seed": int64(2)},
		{"finetune.policy": "selmix", "seed": int64(2)},
	}
	for _, g := range runs.GroupBy(len(cfgs), func(i int) (string, bool) {
		_, ok := cfgs[i]["finetune.policy"]
		return cfgs[i].Text("finetune.policy"), ok
	}) {
		fmt.Println(g.Value, g.Members)
	}
	// Output:
	// selmix [0 3]
	// uniform [1]
	// (unset) [2]
}
