//go:build openblas

package model

// #cgo LDFLAGS: -lopenblas
import "C"

import (
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// With -tags openblas, matrix products run on the system OpenBLAS (cgo)
// instead of gonum's pure-Go BLAS.
func init() { G.Use(netlib.Implementation{}) }

// BLAS names the BLAS implementation in use.
const BLAS = "openblas"
