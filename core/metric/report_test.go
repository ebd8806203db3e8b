package metric

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Hand-worked matrices shared by the report and multiplier tests.
var (
	// c2: π = (0.5, 0.5), rec = (0.4/0.5, 0.3/0.5) = (0.8, 0.6),
	// cov = (0.4+0.2, 0.1+0.3) = (0.6, 0.4). Tied prior: TailSplit marks class 1.
	c2 = []float64{
		0.4, 0.1,
		0.2, 0.3,
	}
	// c3: π = (0.5, 0.3, 0.2), rec = (0.30/0.5, 0.15/0.3, 0.14/0.2) = (0.6, 0.5, 0.7),
	// cov = (0.30+0.09+0.02, 0.15+0.15+0.04, 0.05+0.06+0.14) = (0.41, 0.34, 0.25).
	// Tail = {2} (least frequent), head = {0, 1}.
	c3 = []float64{
		0.30, 0.15, 0.05,
		0.09, 0.15, 0.06,
		0.02, 0.04, 0.14,
	}
)

func TestNewReportHand(t *testing.T) {
	for _, tc := range []struct {
		name string
		C    *mat.Dense
		tail []bool
		want Report
	}{
		{
			name: "2x2 balanced",
			C:    dense(2, c2),
			tail: nil, // TailSplit(π): tie → class 1
			want: Report{
				K:        2,
				Prior:    []float64{0.5, 0.5},
				Recall:   []float64{0.8, 0.6},
				Coverage: []float64{0.6, 0.4},
				// (0.8+0.6)/2
				MeanRecall: 0.7,
				MinRecall:  0.6,
				// 2/(1/0.8 + 1/0.6) = 2/(5/4 + 5/3) = 2/(35/12)
				HMean: 24.0 / 35,
				// √(0.8·0.6)
				GMean:       math.Sqrt(0.48),
				MinCoverage: 0.4,
				// 0.4+0.3
				Accuracy: 0.7,
				// H = {0}, T = {1}
				HeadRecall: 0.8, TailRecall: 0.6, MinHTRecall: 0.6,
				HeadCoverage: 0.6, TailCoverage: 0.4, MinHTCoverage: 0.4,
				Worst: 1,
			},
		},
		{
			name: "2x2 tail forced to class 0",
			C:    dense(2, c2),
			tail: []bool{true, false},
			want: Report{
				K: 2, Prior: []float64{0.5, 0.5}, Recall: []float64{0.8, 0.6}, Coverage: []float64{0.6, 0.4},
				MeanRecall: 0.7, MinRecall: 0.6, HMean: 24.0 / 35, GMean: math.Sqrt(0.48), MinCoverage: 0.4, Accuracy: 0.7,
				HeadRecall: 0.6, TailRecall: 0.8, MinHTRecall: 0.6,
				HeadCoverage: 0.4, TailCoverage: 0.6, MinHTCoverage: 0.4,
				Worst: 1,
			},
		},
		{
			name: "3x3 imbalanced",
			C:    dense(3, c3),
			tail: nil, // TailSplit(π) = {2}
			want: Report{
				K:        3,
				Prior:    []float64{0.5, 0.3, 0.2},
				Recall:   []float64{0.6, 0.5, 0.7},
				Coverage: []float64{0.41, 0.34, 0.25},
				// (0.6+0.5+0.7)/3
				MeanRecall: 0.6,
				MinRecall:  0.5,
				// 3/(5/3 + 2 + 10/7) = 3/(107/21)
				HMean: 63.0 / 107,
				// ∛(0.6·0.5·0.7)
				GMean:       math.Cbrt(0.21),
				MinCoverage: 0.25,
				// 0.30+0.15+0.14
				Accuracy: 0.59,
				// H = {0,1}: (0.6+0.5)/2 and (0.41+0.34)/2; T = {2}
				HeadRecall: 0.55, TailRecall: 0.7, MinHTRecall: 0.55,
				HeadCoverage: 0.375, TailCoverage: 0.25, MinHTCoverage: 0.25,
				Worst: 1,
			},
		},
		{
			name: "2x2 all tied",
			// Dyadic entries, so every tie is exact: Worst is the lowest index,
			// the tail the highest.
			C:    dense(2, []float64{0.25, 0.25, 0.25, 0.25}),
			tail: nil,
			want: Report{
				K: 2, Prior: []float64{0.5, 0.5}, Recall: []float64{0.5, 0.5}, Coverage: []float64{0.5, 0.5},
				MeanRecall: 0.5, MinRecall: 0.5, HMean: 0.5, GMean: 0.5, MinCoverage: 0.5, Accuracy: 0.5,
				HeadRecall: 0.5, TailRecall: 0.5, MinHTRecall: 0.5,
				HeadCoverage: 0.5, TailCoverage: 0.5, MinHTCoverage: 0.5,
				Worst: 0,
			},
		},
		{
			name: "3x3 zero recall",
			// Class 1 is never predicted correctly: HM = GM = 0 exactly, not NaN.
			C: mat.NewDense(3, 3, []float64{
				0.3, 0.0, 0.0,
				0.2, 0.0, 0.1,
				0.1, 0.0, 0.3,
			}),
			tail: []bool{false, true, false},
			want: Report{
				K: 3, Prior: []float64{0.3, 0.3, 0.4}, Recall: []float64{1, 0, 0.75}, Coverage: []float64{0.6, 0, 0.4},
				MeanRecall: 1.75 / 3, MinRecall: 0, HMean: 0, GMean: 0, MinCoverage: 0, Accuracy: 0.6,
				HeadRecall: 0.875, TailRecall: 0, MinHTRecall: 0, // H = {0,2}: (1+0.75)/2
				HeadCoverage: 0.5, TailCoverage: 0, MinHTCoverage: 0, // (0.6+0.4)/2
				Worst: 1,
			},
		},
	} {
		got, err := NewReport(tc.C, tc.tail)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		compareReport(t, tc.name, got, tc.want, 1e-14)
	}
}

func compareReport(t *testing.T, name string, got, want Report, tol float64) {
	t.Helper()
	if got.K != want.K || got.Worst != want.Worst {
		t.Errorf("%s: K, Worst = %d, %d; want %d, %d", name, got.K, got.Worst, want.K, want.Worst)
	}
	vecs := []struct {
		field     string
		got, want []float64
	}{{"Prior", got.Prior, want.Prior}, {"Recall", got.Recall, want.Recall}, {"Coverage", got.Coverage, want.Coverage}}
	for _, v := range vecs {
		if len(v.got) != len(v.want) {
			t.Errorf("%s: len(%s) = %d, want %d", name, v.field, len(v.got), len(v.want))
			continue
		}
		for i := range v.got {
			if !close(v.got[i], v.want[i], tol) {
				t.Errorf("%s: %s[%d] = %v, want %v", name, v.field, i, v.got[i], v.want[i])
			}
		}
	}
	scalars := []struct {
		field     string
		got, want float64
	}{
		{"MeanRecall", got.MeanRecall, want.MeanRecall},
		{"MinRecall", got.MinRecall, want.MinRecall},
		{"HMean", got.HMean, want.HMean},
		{"GMean", got.GMean, want.GMean},
		{"MinCoverage", got.MinCoverage, want.MinCoverage},
		{"Accuracy", got.Accuracy, want.Accuracy},
		{"HeadRecall", got.HeadRecall, want.HeadRecall},
		{"TailRecall", got.TailRecall, want.TailRecall},
		{"MinHTRecall", got.MinHTRecall, want.MinHTRecall},
		{"HeadCoverage", got.HeadCoverage, want.HeadCoverage},
		{"TailCoverage", got.TailCoverage, want.TailCoverage},
		{"MinHTCoverage", got.MinHTCoverage, want.MinHTCoverage},
	}
	for _, s := range scalars {
		if !close(s.got, s.want, tol) {
			t.Errorf("%s: %s = %v, want %v", name, s.field, s.got, s.want)
		}
	}
}

// close reports |a−b| ≤ tol·max(1, |b|); NaN is never close.
func close(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b))
}

func TestNewReportTailErrors(t *testing.T) {
	C := dense(3, c3)
	for _, tc := range []struct {
		name    string
		tail    []bool
		wantErr string
	}{
		{"no tail class", []bool{false, false, false}, "at least one class in each group"},
		{"no head class", []bool{true, true, true}, "at least one class in each group"},
		{"valid", []bool{true, false, false}, ""},
	} {
		_, err := NewReport(C, tc.tail)
		checkErr(t, tc.name, err, tc.wantErr)
	}
	if !panics(func() { NewReport(C, []bool{true, false}) }) {
		t.Error("NewReport with a tail of length 2 for K=3 did not panic")
	}
}

// dense returns a K×K matrix on a copy of data, so tests that write into
// it leave the shared fixtures alone.
func dense(K int, data []float64) *mat.Dense {
	return mat.NewDense(K, K, append([]float64(nil), data...))
}

func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}
