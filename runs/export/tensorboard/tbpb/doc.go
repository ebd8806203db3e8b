// Package tbpb holds the Go types of the TensorBoard protocol buffers
// selmix writes (events, summaries, tensors, histograms and the HParams
// plugin's data), generated from minimal copies of TensorBoard's .proto
// files under tensorboard/ that keep their package names and field
// numbers (only go_package is ours); the HParams plugin's, in package
// tensorboard.hparams, are in hparamspb. Regenerate with protoc (Debian:
// protobuf-compiler, which also has google/protobuf/struct.proto) and the
// protoc-gen-go of the google.golang.org/protobuf version in go.mod:
//
//	go generate ./runs/export/tensorboard/tbpb/
package tbpb

//go:generate go build -o .protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
//go:generate sh -c "protoc -I . -I /usr/include --plugin=protoc-gen-go=.protoc-gen-go --go_out=. --go_opt=module=selmix/runs/export/tensorboard/tbpb tensorboard/compat/proto/*.proto tensorboard/plugins/hparams/*.proto"
//go:generate rm .protoc-gen-go
