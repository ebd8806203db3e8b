// Package blas says which BLAS selmix's matrix products run on. A build
// with -tags openblas (the Makefile sets it when the library is installed)
// registers OpenBLAS for gonum's blas32 and blas64, which the fast head
// (core/model) and the gain (core/gain) use; otherwise they run on gonum's
// pure-Go BLAS and selmix's own kernels.
package blas

// Name is the BLAS in use: "openblas" or "gonum".
var Name = "gonum"

// OpenBLAS reports whether the matrix products run on OpenBLAS.
func OpenBLAS() bool { return Name == "openblas" }

var (
	threads    = func() int { return 1 }
	setThreads = func(int) {}
	core       = func() string { return "" }
)

// Core is the kernel OpenBLAS chose for this CPU when the process started
// ("Haswell", "SkylakeX", "Cooperlake", …; "" for gonum's BLAS, whose
// results do not depend on the CPU). Kernels sum in different orders, so
// a result reproduced bit for bit needs the same kernel as well as the
// same threads. OpenBLAS reads CoreEnv once, when it loads: a process
// changes kernel only by starting again under it.
func Core() string { return core() }

// CoreEnv is the variable that makes OpenBLAS (built with DYNAMIC_ARCH, as
// Debian's is) use a named kernel instead of the one it picks.
const CoreEnv = "OPENBLAS_CORETYPE"

// Threads is how many threads the BLAS splits a product over. OpenBLAS's
// results can depend on it (its partitions change the order of sums), so
// a result that must be reproduced bit for bit records it.
func Threads() int { return threads() }

// SetThreads makes the BLAS split products over n ≥ 1 threads from now on
// (OpenBLAS: openblas_set_num_threads, which caps n at the machine's
// CPUs), as a run that recorded Threads must be re-run to get the same
// bits. Gonum's pure-Go BLAS gives the same result whatever the number of
// threads, so for it this does nothing.
func SetThreads(n int) {
	if n >= 1 {
		setThreads(n)
	}
}
