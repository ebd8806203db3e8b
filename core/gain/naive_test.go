package gain

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// naiveGain is the test oracle for Computer.Gain. It follows the definitions
// literally and shares no code with the fast path: for every pair it forms
// ζ_ij ∈ R^d, the logits Wᵀζ_ij + b and their softmax p_ij, the update
// direction V_ij ∈ R^{d×K} column by column, and then the double sum
// G_ij = Σ_{k,l} D_kl (V_ij)_l · z_k, where (V_ij)_l is column l of V_ij.
//
// For the paper form V_ij = ζ_ij (e_i − p_ij)ᵀ. For the official form the
// positive part uses z_i instead of ζ_ij: V_ij = z_i e_iᵀ − ζ_ij p_ijᵀ, which
// gives (Z z_i)ᵀ D e_i − (Z ζ_ij)ᵀ D p_ij.
//
// Cost O(K⁴d): test sizes only.
func naiveGain(D, Z, W mat.Matrix, b []float64, betaBar float64, form Form) *mat.Dense {
	K, d := Z.Dims()
	// Copy to slices once so the O(K⁴d) loop does not go through At.
	z := toRows(Z)
	w := toRows(W)
	dd := toRows(D)

	G := mat.NewDense(K, K, nil)
	zeta := make([]float64, d)
	logit := make([]float64, K)
	p := make([]float64, K)
	V := make([][]float64, d)
	for m := range V {
		V[m] = make([]float64, K)
	}
	for i := range K {
		for j := range K {
			for m := range d {
				zeta[m] = betaBar*z[i][m] + (1-betaBar)*z[j][m]
			}
			mx := math.Inf(-1)
			for l := range K {
				logit[l] = b[l]
				for m := range d {
					logit[l] += w[m][l] * zeta[m]
				}
				mx = math.Max(mx, logit[l])
			}
			var sum float64
			for l := range K {
				p[l] = math.Exp(logit[l] - mx)
				sum += p[l]
			}
			for l := range K {
				p[l] /= sum
			}
			for m := range d {
				for l := range K {
					var e float64
					if l == i {
						e = 1
					}
					switch form {
					case Paper:
						V[m][l] = zeta[m] * (e - p[l])
					case Official:
						V[m][l] = z[i][m]*e - zeta[m]*p[l]
					default:
						panic("naiveGain: bad form")
					}
				}
			}
			var g float64
			for k := range K {
				for l := range K {
					var dot float64 // (V_ij)_l · z_k
					for m := range d {
						dot += V[m][l] * z[k][m]
					}
					g += dd[k][l] * dot
				}
			}
			G.Set(i, j, g)
		}
	}
	return G
}

func toRows(a mat.Matrix) [][]float64 {
	r, c := a.Dims()
	out := make([][]float64, r)
	for i := range out {
		out[i] = make([]float64, c)
		for j := range out[i] {
			out[i][j] = a.At(i, j)
		}
	}
	return out
}
