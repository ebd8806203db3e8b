package runs

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestMetaBestRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		best     float64
		wantJSON string
	}{
		{name: "finite", best: 0.8125, wantJSON: `"best":0.8125`},
		{name: "zero", best: 0, wantJSON: `"best":0`},
		{name: "nan", best: math.NaN(), wantJSON: `"best":"NaN"`},
		{name: "plus inf", best: math.Inf(1), wantJSON: `"best":"+Inf"`},
		{name: "minus inf", best: math.Inf(-1), wantJSON: `"best":"-Inf"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Meta{ID: "a", Created: "2026-01-01T00:00:00Z", Status: StatusRunning, Best: tt.best, BestStep: 7}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if !strings.Contains(string(b), tt.wantJSON) {
				t.Errorf("JSON %s does not contain %s", b, tt.wantJSON)
			}
			got, err := parseMeta(b, "run.json")
			if err != nil {
				t.Fatalf("parseMeta: %v", err)
			}
			same := got.Best == tt.best || (math.IsNaN(got.Best) && math.IsNaN(tt.best))
			if !same || got.BestStep != 7 {
				t.Errorf("best = %v at %d, want %v at 7", got.Best, got.BestStep, tt.best)
			}
		})
	}
}

// The BLAS a run was made with round-trips; a run.json from before it was
// recorded still reads, with none.
func TestMetaBLAS(t *testing.T) {
	m := Meta{ID: "a", Created: "2026-01-01T00:00:00Z", Status: StatusFinished, BLAS: "openblas", BLASThreads: 1}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"blas":"openblas","blas_threads":1`) {
		t.Errorf("run.json %s lacks the BLAS", b)
	}
	got, err := parseMeta(b, "run.json")
	if err != nil || got.BLAS != "openblas" || got.BLASThreads != 1 {
		t.Errorf("parseMeta = %q, %d, %v", got.BLAS, got.BLASThreads, err)
	}
	old, err := parseMeta([]byte(`{"format":2,"id":"a","created":"2026-01-01T00:00:00Z","status":"finished"}`), "run.json")
	if err != nil || old.BLAS != "" || old.BLASThreads != 0 {
		t.Errorf("an older run.json: %q, %d, %v", old.BLAS, old.BLASThreads, err)
	}
}

// The GPUs and world size a run used round-trip (one rank is not
// written); a run.json from before them still reads, with none.
func TestMetaGPUs(t *testing.T) {
	for _, c := range []struct {
		ws, back int
		json     string
	}{{2, 2, `"gpus":["2","GPU-8f2c"],"world_size":2`}, {1, 0, `"gpus":["2","GPU-8f2c"],"tags"`}} {
		m := Meta{ID: "a", Created: "2026-01-01T00:00:00Z", Status: StatusFinished, GPUs: []string{"2", "GPU-8f2c"}, WorldSize: c.ws, Tags: []string{"x"}}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.json) {
			t.Errorf("world size %d: run.json %s lacks %s", c.ws, b, c.json)
		}
		got, err := parseMeta(b, "run.json")
		if err != nil || strings.Join(got.GPUs, ",") != "2,GPU-8f2c" || got.WorldSize != c.back {
			t.Errorf("world size %d: parseMeta = %q, %d, %v", c.ws, got.GPUs, got.WorldSize, err)
		}
	}
	old, err := parseMeta([]byte(`{"format":2,"id":"a","created":"2026-01-01T00:00:00Z","status":"finished"}`), "run.json")
	if err != nil || old.GPUs != nil || old.WorldSize != 0 {
		t.Errorf("an older run.json: %q, %d, %v", old.GPUs, old.WorldSize, err)
	}
}

func TestParseMetaErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{name: "not json", in: `{"id":`, wantErr: "invalid run metadata"},
		{name: "no id", in: `{"created":"2026-01-01T00:00:00Z","status":"running"}`, wantErr: "id is empty"},
		{name: "path in id", in: `{"id":"a/x","created":"2026-01-01T00:00:00Z","status":"running"}`, wantErr: "path separator"},
		{name: "no status", in: `{"id":"a","created":"2026-01-01T00:00:00Z"}`, wantErr: "status is empty"},
		{name: "bad created", in: `{"id":"a","created":"today","status":"running"}`, wantErr: "RFC3339"},
		{name: "bad best", in: `{"id":"a","created":"2026-01-01T00:00:00Z","status":"running","best":"lots"}`, wantErr: "best"},
		{name: "negative parent step", in: `{"id":"a","created":"2026-01-01T00:00:00Z","status":"running","parent":"b","parent_step":-1}`, wantErr: "parent_step"},
		{name: "negative world size", in: `{"id":"a","created":"2026-01-01T00:00:00Z","status":"running","world_size":-2}`, wantErr: "world_size"},
		{name: "negative blas threads", in: `{"id":"a","created":"2026-01-01T00:00:00Z","status":"running","blas":"openblas","blas_threads":-2}`, wantErr: "blas_threads"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseMeta([]byte(tt.in), "x/run.json")
			if err == nil {
				t.Fatalf("parseMeta(%s) = nil error, want one containing %q", tt.in, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "x/run.json: ") {
				t.Errorf("error %q, want it to name x/run.json and contain %q", err, tt.wantErr)
			}
		})
	}
}

// FuzzMeta checks run.json parsing never panics and that what it accepts
// survives an encode/parse round trip unchanged.
func FuzzMeta(f *testing.F) {
	f.Add([]byte(`{"id":"20261122-0753-a3f9","name":"base","created":"2026-11-22T07:53:00+01:00","status":"running","steps":100,"best":0.5,"best_step":40}`))
	f.Add([]byte(`{"id":"a","created":"2026-11-22T07:53:00Z","status":"finished","parent":"b","parent_step":30,"best":"NaN","extra":{"k":"v"},"pinned":[3,1]}`))
	f.Add([]byte(`{"id":"a","created":"2026-11-22T07:53:00Z","status":"weird","best":"-Inf"}`))
	f.Add([]byte(`{"id":"a","created":"2026-11-22T07:53:00Z","status":"finished","blas":"openblas","blas_threads":1}`))
	f.Add([]byte(`{"id":"a","created":"2026-11-22T07:53:00Z","status":"finished","gpus":["0","GPU-1"],"world_size":1}`))
	f.Add([]byte(`{"id":"","status":""}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMeta(b, "run.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "run.json: ") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		enc, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", m, err)
		}
		m2, err := parseMeta(enc, "run.json")
		if err != nil {
			t.Fatalf("re-parse of %s: %v", enc, err)
		}
		enc2, err := json.Marshal(m2)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", m2, err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed run.json:\n%s\n%s", enc, enc2)
		}
	})
}
