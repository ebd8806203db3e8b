// Package local is the in-process trainer: a train.Trainer over a gorgonia
// model (core/model) and a data split in memory, with supervised
// pre-training (Pretrain) and the reading of version 1 engine checkpoints,
// whose state is a model (ParseCheckpoint).
//
// It is the only path from the engine's vocabulary (core/train) to
// gorgonia: packages that only read snapshots (runs, viz, tui) and the
// worker client (core/worker) do not import it.
package local
