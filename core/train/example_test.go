package train_test

import (
	"context"
	"fmt"

	"selmix/core/local"
	"selmix/core/local/localtest"
	"selmix/core/loop"
	"selmix/core/train"
)

// A few SelMix steps on a tiny long-tailed problem (three Gaussian blobs
// of 40, 13 and 4 labelled points) with the in-process trainer: the
// engine refreshes the gain matrix every 10 steps and reports ψ of the
// optimized objective on the test set before and after fine-tuning.
func ExampleEngine_Run() {
	sp := localtest.Split(3, 4, 40, 1)
	net, err := localtest.Net(sp, 16)
	if err != nil {
		panic(err)
	}
	tr, err := local.New(net, sp, 11)
	if err != nil {
		panic(err)
	}
	cfg := loop.DefaultConfig()
	cfg.Batch, cfg.Refresh, cfg.LR, cfg.Steps = 16, 10, 0.05, 30
	e, err := train.New(cfg, tr)
	if err != nil {
		panic(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d steps of %s\n", sum.Steps, sum.Objective)
	fmt.Printf("ψ on test: %.2f before, %.2f after\n", sum.Objective.In(sum.TestObjBefore), sum.Objective.In(sum.TestObjAfter))
	// Output:
	// 30 steps of min-recall
	// ψ on test: 0.00 before, 0.28 after
}
