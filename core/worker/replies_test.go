package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"selmix/core/train"
	"selmix/internal/safetext"
)

// readBack writes f and reads it again, as a reply arrives from a pipe.
func readBack(t testing.TB, f *Frame) *Frame {
	var b bytes.Buffer
	if err := WriteFrame(&b, f); err != nil {
		t.Fatal(err)
	}
	rep, err := ReadFrame(&b)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// A field of the wrong type is one error naming the request and the
// field; a missing required field is named too.
func TestReplyFields(t *testing.T) {
	cases := []struct {
		name, op string
		header   map[string]any
		dst      any
		want     string // "" = decodes
	}{
		{"status ok", "train", map[string]any{"ok": true, "seconds": 0.5}, &status{}, ""},
		{"ok a string", "train", map[string]any{"ok": "yes"}, &status{}, `bad reply to "train": field "ok" is a JSON string, want true or false`},
		{"error a number", "load", map[string]any{"ok": false, "error": 3.0}, &status{}, `bad reply to "load": field "error" is a JSON number, want a string`},
		{"loss a string", "train", map[string]any{"loss": "0.5"}, &trainReply{}, `bad reply to "train": field "loss" is a JSON string, want a number`},
		{"rows a list", "evaluate", map[string]any{"rows": []any{1.0}}, &evaluateReply{}, `bad reply to "evaluate": field "rows" is a JSON array, want a number`},
		{"system of any shape", "evaluate", map[string]any{"rows": 4.0, "system": "busy"}, &evaluateReply{}, ""},
		{"format a bool", "save", map[string]any{"format": true}, &saveReply{}, `bad reply to "save": field "format" is a JSON bool, want a string`},
		{"sizes a number", "hello", map[string]any{"sizes": 3.0}, &helloReply{}, `bad reply to "hello": field "sizes" is a JSON number, want an object`},
		{"a size a string", "hello", map[string]any{"sizes": map[string]any{"val": "4"}}, &helloReply{}, `bad reply to "hello": field "sizes.val" is a JSON string, want a number`},
		{"class names numbers", "hello", map[string]any{"class_names": []any{1.0, 2.0}}, &helloReply{}, `bad reply to "hello": field "class_names" is a JSON number, want a string`},
		{"unknown keys ignored", "train", map[string]any{"loss": 0.25, "new_key": []any{}}, &trainReply{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := decodeReply(c.op, readBack(t, &Frame{Header: c.header}), c.dst)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("decode: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("decode: %v, want %q", err, c.want)
			}
		})
	}
	var tr trainReply
	if err := decodeReply("train", readBack(t, &Frame{Header: map[string]any{"loss": 0.25}}), &tr); err != nil || tr.Loss == nil || *tr.Loss != 0.25 {
		t.Errorf("loss 0.25 decoded as %v, %v", tr.Loss, err)
	}
}

func TestRefusal(t *testing.T) {
	s := func(v string) *string { return &v }
	no := false
	cases := []struct {
		name, op string
		st       status
		want     string
		marks    []error
	}{
		{"plain", "train", status{OK: &no, Error: s("loss is nan")}, "worker: train: loss is nan", nil},
		{"silent", "train", status{}, "worker: train: the reply says neither ok nor why", nil},
		{"out of memory", "train", status{OK: &no, Error: s("CUDA out of memory\ntraceback"), Reason: ReasonOutOfMemory},
			"worker ran out of memory in \"train\": CUDA out of memory …; lower " + MemoryKnobs, []error{train.ErrHalt, ErrOutOfMemory}},
		{"bad input at hello", "hello", status{OK: &no, Error: s("no such folder\x1b[2J"), Reason: ReasonBadInput}, "worker: hello: no such folder", []error{ErrBadInput}},
		{"bad input later is no bad input", "evaluate", status{OK: &no, Error: s("x"), Reason: ReasonBadInput}, "worker: evaluate: x", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := refusal(c.op, c.st)
			if err.Error() != c.want {
				t.Errorf("error %q, want %q", err, c.want)
			}
			for _, m := range c.marks {
				if !errors.Is(err, m) {
					t.Errorf("error %q does not wrap %v", err, m)
				}
			}
			if len(c.marks) == 0 && (errors.Is(err, ErrBadInput) || errors.Is(err, train.ErrHalt)) {
				t.Errorf("error %q is marked", err)
			}
		})
	}
	long := strings.Repeat("é", maxMessage)
	if got := refusal("train", status{Error: &long}).Error(); len(got) > maxMessage+64 {
		t.Errorf("a message of %d bytes repeated as %d", len(long), len(got))
	}
}

// Replies are input from another process: decoding any frame into any
// reply type never panics, and a hello it accepts is within bounds.
func FuzzReplies(f *testing.F) {
	f.Add([]byte(`{"ok":true,"protocol":1,"k":2,"d":3,"train_counts":[5,1],"sizes":{"labeled":6,"unlabeled":0,"val":4,"test":4}}`))
	f.Add([]byte(`{"ok":false,"error":"x","reason":"out_of_memory","seconds":1e308}`))
	f.Add([]byte(`{"rows":3,"system":{"device":"cpu","rss":-1},"loss":"a","format":null}`))
	f.Add([]byte(`{"ok":true,"protocol":1,"k":2,"d":3,"train_counts":[5,1],"sizes":{"labeled":6,"unlabeled":0,"val":4,"test":4},"world_size":2,"gpus":["0","GPU-\u001b]0;x"]}`))
	f.Add([]byte(`{"ok":true,"protocol":1,"k":2,"d":3,"train_counts":[5,1],"sizes":{"labeled":6,"unlabeled":0,"val":4,"test":4},"env":{"torch":"2.11\u202e","deterministic":true,"cudnn":9.1e300,"":"x","n":null,"o":{}}}`))
	f.Add([]byte(`{"rows":3,"system":{"device":"cuda:0","world_size":2,"gpus":[{"id":"3","name":"H100\u009b","mem_used":-5,"util":0.5},7,{"id":null}]}}`))
	f.Add([]byte(`{"ok":true,"protocol":1,"k":2,"d":3,"train_counts":[5,1],"sizes":{"labeled":6,"unlabeled":0,"val":4,"test":4},"features":"yes"}`))
	f.Fuzz(func(t *testing.T, header []byte) {
		rep := &Frame{header: header}
		var st status
		if decodeReply("train", rep, &st) == nil && st.OK == nil {
			_ = refusal("train", st).Error()
		}
		decodeReply("train", rep, &trainReply{})
		decodeReply("save", rep, &saveReply{})
		var ev evaluateReply
		if decodeReply("evaluate", rep, &ev) == nil && ev.System != nil && ev.System.sys != nil {
			s := ev.System.sys
			if len(s.GPUs) > maxGPUs || s.WorldSize < 0 || safetext.Control(s.Device) >= 0 {
				t.Fatalf("accepted system %+v", s)
			}
			for _, g := range s.GPUs {
				if safetext.Control(g.ID) >= 0 || safetext.Control(g.Name) >= 0 || g.MemUsed < 0 || g.Util < 0 {
					t.Fatalf("accepted GPU %+v", g)
				}
			}
		}
		helloFeatures(rep) // true or false, never a panic
		if info, err := parseHello(rep); err == nil {
			if info.K < 2 || info.K > 1<<20 || len(info.TrainCounts) != info.K || info.Labeled == 0 ||
				len(info.GPUs) > maxGPUs || info.WorldSize < 0 || slices.ContainsFunc(info.GPUs, func(id string) bool { return safetext.Control(id) >= 0 }) {
				t.Fatalf("accepted hello %+v", info)
			}
		}
	})
}

// Every key of every reply in the corpus (docs/worker-protocol/replies,
// which tests/test_golden.py holds to the keys the reference worker
// sends) is a field of its request's reply type, or one selmix reads
// nowhere by design.
func TestGoldenRepliesKnown(t *testing.T) {
	type known struct {
		status
		helloReply
		evaluateReply
		trainReply
		saveReply
	}
	unread := map[string]bool{"counts": true} // pseudo's: documented, not needed
	files, err := filepath.Glob("../../docs/worker-protocol/replies/*.frame")
	if err != nil || len(files) < 10 {
		t.Fatalf("%d reply files (%v)", len(files), err)
	}
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ReadFrame(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		fields := map[string]any{}
		for k, v := range f.Header {
			if k != "arrays" && !unread[k] {
				fields[k] = v
			}
		}
		js, _ := json.Marshal(fields)
		d := json.NewDecoder(bytes.NewReader(js))
		d.DisallowUnknownFields()
		var dst known
		if err := d.Decode(&dst); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}
