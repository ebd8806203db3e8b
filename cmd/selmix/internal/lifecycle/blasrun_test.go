package lifecycle

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

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
