package worker

import (
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
