// Package hparamspb holds the Go types of TensorBoard's HParams plugin
// data (package tensorboard.hparams), generated with package tbpb (see
// its go:generate lines).
package hparamspb
