//go:build !openblas

package model

// BLAS names the BLAS implementation in use.
const BLAS = "gonum"
