package local

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"reflect"
	"testing"

	"selmix/core/train"
)

// A version 1 engine checkpoint ("SELMIXCK": JSON, a model .npz, CRC) is a
// model and a sampler state: ParseCheckpoint turns them into a Local
// trainer's state with the model's head, which Load restores; the engine's
// own parser, which reads no model, refuses it.
func TestParseCheckpointVersion1(t *testing.T) {
	sp := toySplit(3, 5, 30, 4)
	net := toyNet(t, sp, 8)
	var npz bytes.Buffer
	if err := net.Save(&npz); err != nil {
		t.Fatal(err)
	}
	src := rand.NewPCG(7, samplerStream)
	rng, err := src.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	js := []byte(`{"Version":1,"Step":40,"LastRefresh":30,"Refreshes":3,"Acks":2,"RNG":"` + base64.StdEncoding.EncodeToString(rng) + `"}`)
	b := []byte("SELMIXCK")
	b = binary.LittleEndian.AppendUint32(b, uint32(len(js)))
	b = append(b, js...)
	b = append(b, npz.Bytes()...)
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))

	ck, err := ParseCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	W, bias := net.Head()
	if ck.Step != 40 || ck.K != 3 || ck.D != net.Dim() || ck.Trainer.Format != Format {
		t.Errorf("step %d, K %d, d %d, format %q; want 40, 3, %d, %q", ck.Step, ck.K, ck.D, ck.Trainer.Format, net.Dim(), Format)
	}
	if !reflect.DeepEqual(ck.Trainer.W, W) || !reflect.DeepEqual(ck.Trainer.B, bias) {
		t.Error("the checkpoint's head is not the model's")
	}
	l, err := Load(sp, ck.Trainer)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Net().Params(), net.Params()) {
		t.Error("the restored model's weights differ from the saved model's")
	}
	if got, want := l.rng.Uint64(), rand.New(rand.NewPCG(7, samplerStream)).Uint64(); got != want {
		t.Errorf("restored sampler draws %d, want %d", got, want)
	}

	if _, err := train.ParseCheckpoint(b); !errors.Is(err, train.ErrCheckpoint) {
		t.Errorf("train.ParseCheckpoint of a version 1 file: %v, want ErrCheckpoint", err)
	}
}
