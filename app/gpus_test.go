package app

import (
	"bytes"
	"slices"
	"testing"

	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
)

// A resumed run records its session's GPUs and world size, and says in
// one line when the world size is not the one it was saved with.
func TestRecordGPUs(t *testing.T) {
	root := t.TempDir()
	rec, err := record.New(root, "r", "", runs.Meta{GPUs: []string{"0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close(false)
	was := rec.Writer().Meta()
	for _, c := range []struct {
		in   train.Info
		line string
		gpus []string
		ws   int
	}{
		{train.Info{GPUs: []string{"0"}, WorldSize: 1}, "", []string{"0"}, 0},
		{train.Info{GPUs: []string{"2", "3"}, WorldSize: 2}, "world size 2, was 1 when the run was saved: resuming with 2 ranks\n", []string{"2", "3"}, 2},
		{train.Info{}, "world size 1, was 2 when the run was saved: resuming with 1 rank\n", nil, 0},
	} {
		var b bytes.Buffer
		if err := recordGPUs(&b, rec, was, c.in); err != nil {
			t.Fatal(err)
		}
		r, err := runs.Open(root, was.ID)
		if err != nil {
			t.Fatal(err)
		}
		if b.String() != c.line || !slices.Equal(r.Meta.GPUs, c.gpus) || r.Meta.WorldSize != c.ws {
			t.Errorf("%+v: said %q, run.json gpus %q world size %d; want %q, %q, %d", c.in, b.String(), r.Meta.GPUs, r.Meta.WorldSize, c.line, c.gpus, c.ws)
		}
		was = r.Meta
	}
}
