package app

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"selmix/core/blas"
	"selmix/runs"
)

// UseRunBLAS makes this process split its products over the threads run m
// was made with (run.json's blas_threads), so that resuming or replaying
// it gives the same bits whatever this shell's OPENBLAS_NUM_THREADS; it
// says so in one line when that changes anything, and warns when it
// cannot. A worker started from here inherits the setting.
func UseRunBLAS(w io.Writer, m runs.Meta) {
	if m.BLASThreads < 1 {
		return // recorded before selmix recorded it
	}
	if m.BLAS != blas.Name {
		fmt.Fprintf(w, "blas: run %s was made with %s, this selmix uses %s: the result may differ in the last bits\n", m.ID, m.BLAS, blas.Name)
		return
	}
	if !blas.OpenBLAS() {
		return // gonum's result does not depend on its threads
	}
	os.Setenv("OPENBLAS_NUM_THREADS", strconv.Itoa(m.BLASThreads))
	now := blas.Threads()
	if now == m.BLASThreads {
		return
	}
	blas.SetThreads(m.BLASThreads)
	if got := blas.Threads(); got != m.BLASThreads {
		fmt.Fprintf(w, "blas: run %s was made with %d OpenBLAS threads, this machine allows %d: the result may differ in the last bits\n", m.ID, m.BLASThreads, got)
		return
	}
	fmt.Fprintf(w, "blas: %d OpenBLAS thread(s), as run %s was made with (this shell had %d)\n", m.BLASThreads, m.ID, now)
}
