//go:build openblas

package blas

// #cgo LDFLAGS: -lopenblas
// int openblas_get_num_threads(void);
// void openblas_set_num_threads(int);
// char* openblas_get_corename(void);
import "C"

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
)

func init() {
	blas32.Use(netlib.Implementation{})
	blas64.Use(netlib.Implementation{})
	Name = "openblas"
	threads = func() int { return int(C.openblas_get_num_threads()) }
	setThreads = func(n int) { C.openblas_set_num_threads(C.int(n)) }
	core = func() string { return C.GoString(C.openblas_get_corename()) }
}
