package lifecycle

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"selmix/app"
	"selmix/cmd/selmix/internal/selmixtest"
	"selmix/core/blas"
	"selmix/runs"
)

// envThreads is this process's environment with OPENBLAS_NUM_THREADS=n.
func envThreads(n int) []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "OPENBLAS_NUM_THREADS=") {
			env = append(env, e)
		}
	}
	return append(env, fmt.Sprintf("OPENBLAS_NUM_THREADS=%d", n))
}

// A run made with OPENBLAS_NUM_THREADS=1 (as every sweep member is)
// records it, and replays identical from a shell with more threads, which
// replay says it set aside. (Without the record, OpenBLAS's 2-thread
// partition changes the last bits and replay says "differs".)
func TestReplayUsesRecordedBLASThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	if !blas.OpenBLAS() || runtime.NumCPU() < 2 {
		t.Skip("needs OpenBLAS and two CPUs")
	}
	root := t.TempDir()
	// The default batch: products large enough for OpenBLAS to split.
	out, code := selmixtest.Code(t, envThreads(1), append(append([]string{"run", "--headless", "-q", "--runs", root}, shortRun...), "--set", "finetune.batch=128")...)
	m := selmixtest.RunIDRe.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	id := m[1]
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Meta.BLAS != "openblas" || r.Meta.BLASThreads != 1 {
		t.Errorf("run.json records blas %q, %d threads; want openblas, 1", r.Meta.BLAS, r.Meta.BLASThreads)
	}
	out, code = selmixtest.Code(t, envThreads(2), "replay", "--runs", root, id)
	if code != 0 || !strings.Contains(out, "is identical to "+id) {
		t.Fatalf("replay with OPENBLAS_NUM_THREADS=2: exit %d\n%s", code, out)
	}
	if line := fmt.Sprintf("blas: 1 OpenBLAS thread(s), as run %s was made with (this shell had 2)\n", id); !strings.Contains(out, line) {
		t.Errorf("replay does not say\n%s\n%s", line, out)
	}
}

// envWith is this process's environment with each of kv (KEY=VALUE) set
// and each KEY= of unset removed.
func envWith(unset []string, kv ...string) []string {
	var env []string
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		if !slices.Contains(unset, k) && !slices.ContainsFunc(kv, func(s string) bool { return strings.HasPrefix(s, k+"=") }) {
			env = append(env, e)
		}
	}
	return append(env, kv...)
}

// A run records the OpenBLAS kernel it ran on; replay and resume restart
// selmix under it where the CPU can run it, so a run made under another
// kernel replays identical (issue 43: a run made under Haswell said
// "differs" replayed under the CPU's own Cooperlake). With
// SELMIX_BLAS_KERNEL=here, replay keeps this process's kernel and
// compares within its tolerance, saying why.
func TestReplayOnRecordedKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary")
	}
	t.Parallel()
	here := blas.Core()
	other := ""
	for _, k := range []string{"Sandybridge", "Haswell"} {
		if ok, _ := blas.CanRun(k); ok && !strings.EqualFold(k, here) && other == "" {
			other = k
		}
	}
	if !blas.OpenBLAS() || other == "" {
		t.Skipf("needs OpenBLAS (kernel %q) and a CPU that runs another of Sandybridge and Haswell", here)
	}
	// The binary runs on this process's kernel (the CPU's pick, or the one
	// OPENBLAS_CORETYPE names) unless told another.
	clean := []string{app.RestartedEnv, app.KernelEnv}
	root := t.TempDir()
	args := append([]string{"run", "--headless", "-q", "--runs", root}, shortRun...)
	out, code := selmixtest.Code(t, envWith(append(clean, blas.CoreEnv), blas.CoreEnv+"="+other), append(args, "--set", "finetune.steps=60")...)
	m := selmixtest.RunIDRe.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("run under %s: exit %d\n%s", other, code, out)
	}
	id := m[1]
	r, err := runs.Open(root, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Meta.BLASCore != other || r.Meta.CPU != blas.CPU() {
		t.Errorf("run.json records kernel %q on cpu %q; want %q on %q", r.Meta.BLASCore, r.Meta.CPU, other, blas.CPU())
	}
	out, code = selmixtest.Code(t, envWith(clean), "replay", "--runs", root, id)
	for _, want := range []string{
		fmt.Sprintf("blas: run %s was made on OpenBLAS kernel %s: restarting selmix under it\n", id, other),
		fmt.Sprintf("blas: OpenBLAS kernel %s, as run %s was made with (before the restart: %s)\n", other, id, here), // here: the process's own

		"is identical to " + id,
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("replay: exit %d, want 0 and %q in\n%s", code, want, out)
		}
	}
	out, code = selmixtest.Code(t, envWith(clean, app.KernelEnv+"=here"), "replay", "--runs", root, id)
	line := fmt.Sprintf("blas: run %s was made on OpenBLAS kernel %s, this process runs %s (%s=here)", id, other, here, app.KernelEnv)
	within := fmt.Sprintf(" equals %s within 1e-05 (kernel %s recorded, %s here)", id, other, here)
	if !strings.Contains(out, line) || !(code == 0 && (strings.Contains(out, within) || strings.Contains(out, "is identical to "+id)) || code == app.ExitInexact && strings.Contains(out, "where its arithmetic is not the original's")) {
		t.Fatalf("replay on this kernel: exit %d, want %q and a comparison within tolerance in\n%s", code, line, out)
	}

}
