package local

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"selmix/core/data"
	"selmix/core/train"
)

// Features returns a split's samples through the model: their features
// (the head's inputs), logits and labels (train.Featurer).
func (l *Local) Features(split train.Split) (X, logits *mat.Dense, y []int, err error) {
	set := &l.sp.Val
	if split == train.SplitTest {
		set = &l.sp.Test
	}
	X, logits, err = l.forward(set, nil, set.N)
	return X, logits, append([]int(nil), set.Y...), err
}

// TrainFeatures returns the features of labeled training samples: pick[k]
// indexes class k's samples, rows class-major (train.Featurer).
func (l *Local) TrainFeatures(pick [][]int) (*mat.Dense, error) {
	if len(pick) != l.sp.K {
		return nil, fmt.Errorf("local: picks for %d classes, have %d", len(pick), l.sp.K)
	}
	var rows []int
	for k, p := range pick {
		for _, i := range p {
			if i < 0 || i >= len(l.labeledIdx[k]) {
				return nil, fmt.Errorf("local: sample %d of class %d, which has %d", i, k, len(l.labeledIdx[k]))
			}
			rows = append(rows, l.labeledIdx[k][i])
		}
	}
	X, _, err := l.forward(&l.sp.Labeled, rows, len(rows))
	return X, err
}

// forward runs n samples of set through the model in chunks: the rows
// named by idx, or the first n where idx is nil. It returns their
// features and logits.
func (l *Local) forward(set *data.Set, idx []int, n int) (X, logits *mat.Dense, err error) {
	K, d, in := l.sp.K, l.net.Dim(), set.Dim
	X, logits = mat.NewDense(max(n, 1), d, nil), mat.NewDense(max(n, 1), K, nil)
	if n == 0 {
		return nil, nil, fmt.Errorf("local: no samples")
	}
	x := make([]float32, min(n, evalChunk)*in)
	feat := make([]float32, min(n, evalChunk)*d)
	lg := make([]float32, min(n, evalChunk)*K)
	for lo := 0; lo < n; lo += evalChunk {
		hi := min(lo+evalChunk, n)
		rows := hi - lo
		for r := range rows {
			i := lo + r
			if idx != nil {
				i = idx[i]
			}
			copy(x[r*in:(r+1)*in], set.Row(i))
		}
		out := feat[:rows*d]
		if l.net.FeaturesAreInputs() {
			out = nil
		}
		if err := l.net.Forward(out, lg[:rows*K], x[:rows*in], rows); err != nil {
			return nil, nil, err
		}
		src := feat[:rows*d]
		if l.net.FeaturesAreInputs() {
			src = x[:rows*in]
		}
		for i, v := range src {
			X.RawMatrix().Data[lo*d+i] = float64(v)
		}
		for i, v := range lg[:rows*K] {
			logits.RawMatrix().Data[lo*K+i] = float64(v)
		}
	}
	return X, logits, nil
}
