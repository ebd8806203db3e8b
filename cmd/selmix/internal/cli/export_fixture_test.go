//go:build fixturegen

package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"selmix/app"
	"selmix/core/experiment"
	"selmix/core/loop"
	"selmix/runs/runstest"
)

// TestGenerateVizFixture records the small run viz's golden tests draw
// from: 200 steps, a refresh every 20, and two controls so the figures
// show control annotations. Regenerate with
//
//	go test -tags 'openblas fixturegen' -run TestGenerateVizFixture ./cmd/selmix/internal/cli/
func TestGenerateVizFixture(t *testing.T) {
	dstRoot := filepath.Join("..", "..", "..", "..", "viz", "testdata", "run")
	if err := os.RemoveAll(dstRoot); err != nil {
		t.Fatal(err)
	}
	// The SelMix run has two controls so figures show their marks; the
	// uniform-mixup run is what --compare sets it against.
	recordVizFixture(t, dstRoot, []string{"finetune.steps=200", "finetune.refresh=20", "name=viz-selmix"}, []loop.Control{
		{Op: loop.OpSet, Key: "s", Value: "30", At: 80},
		{Op: loop.OpSet, Key: "lr", Value: "0.001", At: 140},
	})
	recordVizFixture(t, dstRoot, []string{"finetune.steps=200", "finetune.refresh=20", "finetune.policy=uniform", "name=viz-uniform"}, nil)
}

func recordVizFixture(t *testing.T, dstRoot string, sets []string, ctls []loop.Control) {
	c, err := experiment.Load("", sets)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := newSession(io.Discard, root, true, false).Start(context.Background(), c, app.Origin{Controls: ctls}); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(root)
	if err != nil || len(ents) != 1 {
		t.Fatalf("want one run in %s, got %v (%v)", root, ents, err)
	}
	dst := filepath.Join(dstRoot, ents[0].Name())
	runstest.Copy(t, filepath.Join(root, ents[0].Name()), dst, nil)
	t.Logf("fixture written to %s", dst)
}
