package app

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"selmix/core/blas"
	"selmix/runs"
)

// The environment of a restart under a run's recorded kernel.
const (
	// RestartedEnv holds, in a selmix restarted under a run's recorded
	// OpenBLAS kernel, the kernel the CPU picked before it: a process that
	// has it set never restarts again.
	RestartedEnv = "SELMIX_BLAS_RESTARTED"
	// KernelEnv set to "here" keeps the kernel this process runs: resume
	// and replay then go on without restarting (replay compares within
	// ReplayTolerance).
	KernelEnv = "SELMIX_BLAS_KERNEL"
)

// RecordedKernel is the one OpenBLAS kernel run m ran on: "" when it ran
// on none recorded (gonum's BLAS, a run made before kernels were
// recorded) or on several (resumed where the first could not run).
func RecordedKernel(m runs.Meta) string {
	if m.BLAS != "openblas" || strings.Contains(m.BLASCore, ",") {
		return ""
	}
	return m.BLASCore
}

// RestartKernel is the OpenBLAS kernel this process should restart under
// before it resumes or replays run m, so that the result equals the
// run's bit for bit: m's recorded kernel where it is not this process's
// and this CPU can run it; "" otherwise (UseRunBLAS then says why in one
// line). A process restarted once, or told KernelEnv=here, gets "".
func RestartKernel(m runs.Meta) string {
	rec := RecordedKernel(m)
	if !blas.OpenBLAS() || rec == "" || strings.EqualFold(rec, blas.Core()) ||
		os.Getenv(RestartedEnv) != "" || os.Getenv(KernelEnv) == "here" {
		return ""
	}
	if ok, known := blas.CanRun(rec); !ok || !known {
		return ""
	}
	return rec
}

// RestartEnv is the environment a restart under kernel runs with: this
// process's, with blas.CoreEnv and RestartedEnv replaced (the C library
// reads the first of two entries of one name).
func RestartEnv(kernel string) []string {
	env := slices.DeleteFunc(os.Environ(), func(e string) bool {
		k, _, _ := strings.Cut(e, "=")
		return k == blas.CoreEnv || k == RestartedEnv
	})
	return append(env, blas.CoreEnv+"="+kernel, RestartedEnv+"="+blas.Core())
}

// UseRunBLAS makes this process split its products over the threads run m
// was made with (run.json's blas_threads), so that resuming or replaying
// it gives the same bits whatever this shell's OPENBLAS_NUM_THREADS, and
// says in one line when the kernel it runs is not the run's (or when it
// switched to it). It reports whether this process computes as m's did:
// false when it cannot tell or knows it does not, and then why.
func UseRunBLAS(w io.Writer, m runs.Meta) (exact bool, why string) {
	if m.BLASThreads < 1 {
		if blas.OpenBLAS() {
			fmt.Fprintf(w, "blas: run %s predates the record of its BLAS; this process runs OpenBLAS kernel %s: the result may differ in the last bits\n", m.ID, blas.Core())
			return false, fmt.Sprintf("BLAS not recorded, OpenBLAS kernel %s here", blas.Core())
		}
		return true, "" // gonum's result depends neither on threads nor on the CPU
	}
	if m.BLAS != blas.Name {
		fmt.Fprintf(w, "blas: run %s was made with %s, this selmix uses %s: the result may differ in the last bits\n", m.ID, m.BLAS, blas.Name)
		return false, fmt.Sprintf("BLAS %s recorded, %s here", m.BLAS, blas.Name)
	}
	if !blas.OpenBLAS() {
		return true, ""
	}
	exact = true
	os.Setenv("OPENBLAS_NUM_THREADS", strconv.Itoa(m.BLASThreads))
	if now := blas.Threads(); now != m.BLASThreads {
		blas.SetThreads(m.BLASThreads)
		if got := blas.Threads(); got != m.BLASThreads {
			fmt.Fprintf(w, "blas: run %s was made with %d OpenBLAS threads, this machine allows %d: the result may differ in the last bits\n", m.ID, m.BLASThreads, got)
			exact, why = false, fmt.Sprintf("%d OpenBLAS threads recorded, %d here", m.BLASThreads, got)
		} else {
			fmt.Fprintf(w, "blas: %d OpenBLAS thread(s), as run %s was made with (this shell had %d)\n", m.BLASThreads, m.ID, now)
		}
	}
	here := blas.Core()
	rec := RecordedKernel(m)
	switch {
	case m.BLASCore == "":
		fmt.Fprintf(w, "blas: run %s predates the record of its OpenBLAS kernel; this process runs %s: the result may differ in the last bits\n", m.ID, here)
		return false, joinWhy(why, fmt.Sprintf("kernel not recorded, %s here", here))
	case rec == "":
		fmt.Fprintf(w, "blas: run %s ran on OpenBLAS kernels %s; this process runs %s: the result may differ in the last bits\n", m.ID, m.BLASCore, here)
		return false, joinWhy(why, fmt.Sprintf("kernels %s recorded, %s here", m.BLASCore, here))
	case strings.EqualFold(rec, here):
		if was := os.Getenv(RestartedEnv); was != "" && !strings.EqualFold(was, here) {
			fmt.Fprintf(w, "blas: OpenBLAS kernel %s, as run %s was made with (before the restart: %s)\n", here, m.ID, was)
		}
		return exact, why
	}
	reason := "this CPU cannot run it"
	if ok, known := blas.CanRun(rec); !known {
		reason = "selmix cannot tell whether this CPU runs it"
	} else if ok && os.Getenv(KernelEnv) == "here" {
		reason = KernelEnv + "=here"
	} else if ok {
		reason = "restarting under it did not take"
	}
	fmt.Fprintf(w, "blas: run %s was made on OpenBLAS kernel %s, this process runs %s (%s): the result may differ in the last bits\n", m.ID, rec, here, reason)
	return false, joinWhy(why, fmt.Sprintf("kernel %s recorded, %s here", rec, here))
}

func joinWhy(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// withKernel is m's BLASCore once this process has run a session of it:
// this process's kernel added where it is not there yet.
func withKernel(cores string) string {
	here := blas.Core()
	if here == "" {
		return cores
	}
	if cores == "" {
		return here
	}
	for _, c := range strings.Split(cores, ",") {
		if strings.EqualFold(c, here) {
			return cores
		}
	}
	return cores + "," + here
}

// envDiff names what differs between the worker environments a and b
// (hello's "env" of the original and of the replay), "" where nothing
// does.
func envDiff(a, b map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(mergeKeys(a, b))) {
		if a[k] != b[k] {
			out = append(out, fmt.Sprintf("worker %s %s recorded, %s here", k, orNone(a[k]), orNone(b[k])))
		}
	}
	return strings.Join(out, "; ")
}

func mergeKeys(a, b map[string]string) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
