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

var threads = func() int { return 1 }

// Threads is how many threads the BLAS splits a product over. OpenBLAS's
// results can depend on it (its partitions change the order of sums), so
// a result that must be reproduced bit for bit records it.
func Threads() int { return threads() }
