package npzio

import "gonum.org/v1/gonum/mat"

// denseOf wraps data as a rows×cols matrix; npyio writes *mat.Dense with its
// 2-D shape. A zero-sized dimension cannot be a mat.Dense, so it falls back
// to a flat slice (shape is then lost, which only matters for empty arrays).
func denseOf(rows, cols int, data []float64) any {
	if rows == 0 || cols == 0 {
		return append([]float64(nil), data...)
	}
	return mat.NewDense(rows, cols, append([]float64(nil), data...))
}
