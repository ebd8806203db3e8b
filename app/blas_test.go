package app

import (
	"bytes"
	"io"
	"maps"
	"math"
	"reflect"
	"strings"
	"testing"

	"selmix/core/blas"
	"selmix/core/train"
	"selmix/runs"
	"selmix/runs/record"
)

// What UseRunBLAS says and concludes for each kind of record: exact only
// where the run's BLAS, threads and single kernel are this process's.
func TestUseRunBLASKernel(t *testing.T) {
	if !blas.OpenBLAS() {
		t.Skip("needs OpenBLAS")
	}
	t.Setenv(RestartedEnv, "")
	t.Setenv(KernelEnv, "")
	here, th := blas.Core(), blas.Threads()
	defer blas.SetThreads(th)
	for _, c := range []struct {
		name  string
		meta  runs.Meta
		exact bool
		why   string // in the reason and the line said
	}{
		{"same kernel", runs.Meta{BLAS: "openblas", BLASThreads: th, BLASCore: here}, true, ""},
		{"same kernel, other case", runs.Meta{BLAS: "openblas", BLASThreads: th, BLASCore: strings.ToUpper(here)}, true, ""},
		{"predates the BLAS record", runs.Meta{}, false, "BLAS not recorded, OpenBLAS kernel " + here + " here"},
		{"predates the kernel record", runs.Meta{BLAS: "openblas", BLASThreads: th}, false, "kernel not recorded, " + here + " here"},
		{"an unknown kernel", runs.Meta{BLAS: "openblas", BLASThreads: th, BLASCore: "Abacus"}, false, "kernel Abacus recorded, " + here + " here"},
		{"two kernels", runs.Meta{BLAS: "openblas", BLASThreads: th, BLASCore: "Haswell," + here}, false, "kernels Haswell," + here + " recorded"},
		{"gonum", runs.Meta{BLAS: "gonum", BLASThreads: 1}, false, "BLAS gonum recorded, openblas here"},
	} {
		c.meta.ID = "20261128-0000-abcd"
		var w bytes.Buffer
		exact, why := UseRunBLAS(&w, c.meta)
		if exact != c.exact || !strings.Contains(why, c.why) {
			t.Errorf("%s: exact %v, why %q; want %v, %q", c.name, exact, why, c.exact, c.why)
		}
		if said := w.String(); c.exact && said != "" || !c.exact && strings.Count(said, "\n") != 1 {
			t.Errorf("%s: said %q; want one line exactly where the run cannot be reproduced bit for bit", c.name, said)
		}
	}
	var w bytes.Buffer
	UseRunBLAS(&w, runs.Meta{ID: "x", BLAS: "openblas", BLASThreads: th, BLASCore: "Abacus"})
	if !strings.Contains(w.String(), "(selmix cannot tell whether this CPU runs it)") {
		t.Errorf("unknown kernel: %q", w.String())
	}
}

// A restart goes to the recorded kernel only where it differs, the CPU
// runs it, and this process was not restarted already or told to stay.
func TestRestartKernel(t *testing.T) {
	if !blas.OpenBLAS() {
		t.Skip("needs OpenBLAS")
	}
	t.Setenv(RestartedEnv, "")
	t.Setenv(KernelEnv, "")
	here := blas.Core()
	other := ""
	for _, k := range []string{"Sandybridge", "Haswell"} {
		if ok, _ := blas.CanRun(k); ok && !strings.EqualFold(k, here) && other == "" {
			other = k
		}
	}
	m := func(core string) runs.Meta { return runs.Meta{BLAS: "openblas", BLASThreads: 1, BLASCore: core} }
	for _, c := range []struct {
		core, want string
	}{{here, ""}, {"", ""}, {"Abacus", ""}, {"Haswell,Zen", ""}} {
		if got := RestartKernel(m(c.core)); got != c.want {
			t.Errorf("recorded %q: restart under %q, want %q", c.core, got, c.want)
		}
	}
	if other == "" {
		t.Skipf("the CPU runs neither Sandybridge nor Haswell beside its own %s", here)
	}
	if got := RestartKernel(m(other)); got != other {
		t.Errorf("recorded %s: restart under %q", other, got)
	}
	t.Setenv(blas.CoreEnv, "Prescott") // replaced, not shadowed
	env := "\n" + strings.Join(RestartEnv(other), "\n")
	if strings.Count(env, "\n"+blas.CoreEnv+"=") != 1 || !strings.Contains(env, "\n"+blas.CoreEnv+"="+other+"\n") || !strings.HasSuffix(env, "\n"+RestartedEnv+"="+here) {
		t.Errorf("restart environment: want one %s=%s and %s=%s in %q", blas.CoreEnv, other, RestartedEnv, here, env)
	}
	t.Setenv(RestartedEnv, here)
	if got := RestartKernel(m(other)); got != "" {
		t.Errorf("restarted already: restart again under %q", got)
	}
	t.Setenv(RestartedEnv, "")
	t.Setenv(KernelEnv, "here")
	if got := RestartKernel(m(other)); got != "" {
		t.Errorf("%s=here: restart under %q", KernelEnv, got)
	}
}

func TestWithKernel(t *testing.T) {
	here := blas.Core()
	if here == "" {
		if got := withKernel("Haswell"); got != "Haswell" {
			t.Errorf("gonum: %q", got)
		}
		return
	}
	for _, c := range []struct{ in, want string }{
		{"", here}, {here, here}, {"Abacus", "Abacus," + here}, {"Abacus," + here, "Abacus," + here},
	} {
		if got := withKernel(c.in); got != c.want {
			t.Errorf("withKernel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// Floats are visited pairwise at the same places, NaN included; anything
// else that differs is named by its path.
func TestWalkValues(t *testing.T) {
	type inner struct {
		X    float64
		Name string
	}
	type outer struct {
		A   float64
		B   []float64
		In  *inner
		M   map[string]float64
		N   int
		nil *inner
	}
	nan := math.NaN()
	a := outer{A: 1, B: []float64{0.5, nan}, In: &inner{2, "min-recall"}, M: map[string]float64{"x": 3}, N: 4}
	b := outer{A: 1 + 5e-7, B: []float64{0.5 + 2e-5, nan}, In: &inner{2, "min-recall"}, M: map[string]float64{"x": 3}, N: 4}
	var nums, other []string
	walk := func(a, b outer) {
		nums, other = nil, nil
		walkValues("v", reflect.ValueOf(a), reflect.ValueOf(b), func(p string, x, y float64) {
			if x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
				nums = append(nums, p)
			}
		}, func(p string) { other = append(other, p) })
	}
	walk(a, b)
	if strings.Join(nums, ",") != "v.A,v.B[0]" || other != nil {
		t.Errorf("numbers %v, other %v; want v.A, v.B[0] and nothing else", nums, other)
	}
	b.In = &inner{2, "hmean"}
	b.B = b.B[:1]
	b.N = 5
	b.M = map[string]float64{"y": 3}
	walk(a, b)
	if strings.Join(other, ",") != "v.B,v.In.Name,v.M[x],v.N" {
		t.Errorf("other %v, want v.B, v.In.Name, v.M[x], v.N", other)
	}
	b = a
	b.In = nil
	walk(a, b)
	if strings.Join(other, ",") != "v.In" {
		t.Errorf("nil against a value: other %v", other)
	}
}

// A session resumed on another kernel than the run's adds its own to
// blas_core (a later replay then compares within tolerance), and records
// its worker's environment.
func TestRecordSessionKernel(t *testing.T) {
	if !blas.OpenBLAS() {
		t.Skip("needs OpenBLAS")
	}
	root := t.TempDir()
	rec, err := record.New(root, "r", "", record.Options{}, runs.Meta{BLAS: "openblas", BLASThreads: 1, BLASCore: "Abacus"})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close(false)
	env := map[string]string{"torch": "2.11.0", "device": "NVIDIA H200"}
	if err := recordSession(io.Discard, rec, rec.Writer().Meta(), train.Info{Env: env}); err != nil {
		t.Fatal(err)
	}
	r, err := runs.Open(root, rec.Writer().ID())
	if err != nil {
		t.Fatal(err)
	}
	if want := "Abacus," + blas.Core(); r.Meta.BLASCore != want || !maps.Equal(r.Meta.WorkerEnv, env) {
		t.Errorf("run.json: blas_core %q, worker_env %v; want %q, %v", r.Meta.BLASCore, r.Meta.WorkerEnv, want, env)
	}
	if RecordedKernel(r.Meta) != "" {
		t.Errorf("two kernels read as one: %q", RecordedKernel(r.Meta))
	}
}

// What differs between two workers' environments is named, key by key.
func TestEnvDiff(t *testing.T) {
	a := map[string]string{"torch": "2.11.0", "device": "NVIDIA H200", "deterministic": "true"}
	b := map[string]string{"torch": "2.10.0", "device": "NVIDIA H200"}
	if got, want := envDiff(a, b), "worker deterministic true recorded, none here; worker torch 2.11.0 recorded, 2.10.0 here"; got != want {
		t.Errorf("envDiff = %q, want %q", got, want)
	}
	if got := envDiff(a, a); got != "" {
		t.Errorf("same environments differ: %q", got)
	}
	if got := envDiff(nil, nil); got != "" {
		t.Errorf("in process: %q", got)
	}
}
