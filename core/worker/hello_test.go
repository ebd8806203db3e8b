package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
)

func hello(names []any, device string) *Frame {
	return &Frame{Header: map[string]any{
		"protocol": float64(Protocol), "worker": "fake", "device": device, "k": 2.0, "d": 3.0,
		"train_counts": []any{5.0, 1.0}, "class_names": names,
		"sizes": map[string]any{"labeled": 6.0, "unlabeled": 0.0, "val": 4.0, "test": 4.0},
	}}
}

// A worker's strings reach terminals: class names with control characters
// are refused (as from a features file), its device is made printable.
func TestHelloStrings(t *testing.T) {
	for _, names := range [][]any{{"\x1b[31mRED", "b"}, {"a", "a\nb"}} {
		_, err := parseHello(hello(names, "cpu"))
		if err == nil || !strings.Contains(err.Error(), "holds a control character") || strings.ContainsAny(err.Error(), "\x1b\n") {
			t.Errorf("class names %q: error %v, want one printable line refusing them", names, err)
		}
	}
	info, err := parseHello(hello([]any{"cat", "猫"}, "cuda:0\x1b]0;pwned\x07"))
	if err != nil {
		t.Fatal(err)
	}
	if info.ClassNames[1] != "猫" || info.Device != "cuda:0 (fake)" {
		t.Errorf("names %q, device %q", info.ClassNames, info.Device)
	}
	if s := parseSystem(map[string]any{"device": "gpu\x1b[2J"}); s.Device != "gpu" {
		t.Errorf("system device %q", s.Device)
	}
}

// world_size and gpus are optional: a bad value reads as unknown, never
// as an error; ids are made printable and at most 64 kept.
func TestHelloGPUs(t *testing.T) {
	f := hello(nil, "cuda:0")
	if info, err := parseHello(f); err != nil || info.WorldSize != 0 || info.GPUs != nil {
		t.Fatalf("without them: %+v, %v", info, err)
	}
	f.Header["world_size"], f.Header["gpus"] = 2.0, []any{"2", "GPU-8f2c\x1b[31m", 3.0, ""}
	info, err := parseHello(f)
	if err != nil || info.WorldSize != 2 || strings.Join(info.GPUs, "|") != "2|GPU-8f2c" {
		t.Fatalf("got world size %d, gpus %q, %v", info.WorldSize, info.GPUs, err)
	}
	many := make([]any, 100)
	for i := range many {
		many[i] = "0"
	}
	f.Header["world_size"], f.Header["gpus"] = "two", many
	if info, err = parseHello(f); err != nil || info.WorldSize != 0 || len(info.GPUs) != 64 {
		t.Fatalf("got world size %d, %d gpus, %v; want unknown and 64", info.WorldSize, len(info.GPUs), err)
	}
	f.Header["world_size"], f.Header["gpus"] = 0.0, map[string]any{}
	if info, err = parseHello(f); err != nil || info.WorldSize != 0 || info.GPUs != nil {
		t.Fatalf("got %+v, %v", info, err)
	}
}

// env is optional: what the worker's results depend on, kept as printable
// strings (numbers and booleans as JSON writes them), at most maxEnv
// entries; anything else reads as none, never as an error.
func TestHelloEnv(t *testing.T) {
	f := hello(nil, "cuda:0")
	if info, err := parseHello(f); err != nil || info.Env != nil {
		t.Fatalf("without it: %v, %v", info.Env, err)
	}
	f.Header["env"] = map[string]any{"torch": "2.11.0+cu128", "device": "NVIDIA H200\x1b[2J", "deterministic": true, "cudnn": 91002.0, "nested": map[string]any{}, "": "x"}
	info, err := parseHello(f)
	want := map[string]string{"torch": "2.11.0+cu128", "device": "NVIDIA H200", "deterministic": "true", "cudnn": "91002"}
	if err != nil || !maps.Equal(info.Env, want) {
		t.Fatalf("env %v, %v; want %v", info.Env, err, want)
	}
	many := map[string]any{}
	for i := range 100 {
		many[fmt.Sprint("k", i)] = "v"
	}
	f.Header["env"] = many
	if info, err = parseHello(f); err != nil || len(info.Env) != maxEnv {
		t.Fatalf("%d entries, %v; want %d", len(info.Env), err, maxEnv)
	}
	for _, bad := range []any{"torch", 3.0, []any{"a"}, map[string]any{"a": nil}} {
		f.Header["env"] = bad
		if info, err = parseHello(f); err != nil || info.Env != nil {
			t.Fatalf("env %v: %v, %v; want none", bad, info.Env, err)
		}
	}
}

// A worker that refuses its own options or environment (argparse: a usage
// line, then the error, and exit status 2) before it answers hello is bad
// input, in its own last line made printable; another exit is not.
func TestHelloUsageExit(t *testing.T) {
	for _, c := range []struct {
		script, want string
		bad          bool
	}{
		{`echo 'usage: selmix_worker.py [-h] --recipe NAME|PATH.py' >&2; printf 'selmix_worker.py: error: --nproc 0: want \342\211\245 1\033[31m\n' >&2; exit 2`,
			"worker: selmix_worker.py: error: --nproc 0: want ≥ 1", true},
		{`exit 2`, `worker refused its command line or environment (exit status 2 during "hello")`, true},
		{`echo 'Traceback: boom' >&2; exit 1`, `worker exited during "hello" (exit status 1); its last words: Traceback: boom`, false},
	} {
		_, err := Start(context.Background(), Options{Command: []string{"/bin/sh", "-c", c.script}})
		if err == nil || err.Error() != c.want || errors.Is(err, ErrBadInput) != c.bad {
			t.Errorf("%s: got %v (bad input %v), want %q (bad input %v)", c.script, err, errors.Is(err, ErrBadInput), c.want, c.bad)
		}
	}
}
