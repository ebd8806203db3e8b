package data

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// FeatureFiles names researchers' exported features g(x) and labels.
//
// Each split is either an .npz holding arrays "x" (N×d, float32 or float64)
// and "y" (N, any integer dtype), or an .npy of x with its labels in the
// matching …Y .npy. Train, Val and Test are required; Unlabeled is optional
// and so are its labels (-1, unknown, when absent). Head optionally names an
// .npz with "W" (d×K) and "b" (K), float32 or float64.
type FeatureFiles struct {
	Train, Unlabeled, Val, Test     string
	TrainY, UnlabeledY, ValY, TestY string
	Head                            string
}

// maxClasses bounds K so a stray huge label cannot exhaust memory.
const maxClasses = 1 << 20

// Head is a linear classifier f ↦ Wᵀf + b.
type Head struct {
	W    []float64 // d×K row-major
	B    []float64
	D, K int
}

// LoadFeatures loads the feature splits and optional head named by ff and
// checks them against each other: finite features, one feature dimension d
// across splits, non-negative labels, K = max label + 1 over train ∪ val
// with K ≥ 2, every class present in validation, test and unlabeled labels
// within [0,K), and a head of shape d×K. Class names are "class 0" …
// Errors name the file, the array and the offending index.
func LoadFeatures(ff FeatureFiles) (*Split, *Head, error) {
	type part struct {
		name, x, y string
		dst        *Set
		optional   bool // the split itself may be absent
		unlabeled  bool // labels may be absent (-1)
	}
	sp := &Split{}
	parts := []part{
		{"train", ff.Train, ff.TrainY, &sp.Labeled, false, false},
		{"val", ff.Val, ff.ValY, &sp.Val, false, false},
		{"test", ff.Test, ff.TestY, &sp.Test, false, false},
		{"unlabeled", ff.Unlabeled, ff.UnlabeledY, &sp.Unlabeled, true, true},
	}
	d, dFrom := -1, ""
	for _, p := range parts {
		if p.x == "" {
			if p.y != "" {
				return nil, nil, fmt.Errorf("features: %s labels %s given without %s features", p.name, p.y, p.name)
			}
			if p.optional {
				continue
			}
			return nil, nil, fmt.Errorf("features: no %s features given (an .npz with x and y, or an .npy pair)", p.name)
		}
		s, err := loadFeatureSplit(p.x, p.y, p.unlabeled)
		if err != nil {
			return nil, nil, err
		}
		if d >= 0 && s.Dim != d {
			return nil, nil, fmt.Errorf("%s: features have d=%d but %s has d=%d", p.x, s.Dim, dFrom, d)
		}
		d, dFrom = s.Dim, p.x
		*p.dst = s
	}
	if sp.Unlabeled.Dim == 0 {
		sp.Unlabeled.Dim = d
	}
	if sp.Labeled.N == 0 {
		return nil, nil, fmt.Errorf("%s: no training samples", ff.Train)
	}

	K := 0
	for _, s := range []*Set{&sp.Labeled, &sp.Val} {
		for _, y := range s.Y {
			K = max(K, y+1)
		}
	}
	if K < 2 {
		return nil, nil, fmt.Errorf("%s, %s: labels span K=%d class(es) (K = max label + 1 over train ∪ val); need at least 2", ff.Train, ff.Val, K)
	}
	for k, c := range sp.Val.Counts(K) {
		if c == 0 {
			return nil, nil, fmt.Errorf("%s: class %d has no validation samples (K=%d from train ∪ val; SelMix needs every class in validation)", ff.Val, k, K)
		}
	}
	for _, c := range []struct {
		s    *Set
		path string
		lo   int
	}{{&sp.Test, ff.Test, 0}, {&sp.Unlabeled, ff.Unlabeled, -1}} {
		if err := c.s.checkLabels(K, c.lo); err != nil {
			return nil, nil, fmt.Errorf("%s: %v (K=%d from train ∪ val)", c.path, err, K)
		}
	}
	sp.K = K
	sp.ClassNames = make([]string, K)
	for k := range sp.ClassNames {
		sp.ClassNames[k] = fmt.Sprintf("class %d", k)
	}
	sp.TrainCounts = sp.Labeled.Counts(K)

	if ff.Head == "" {
		return sp, nil, nil
	}
	h, err := loadHead(ff.Head, d, K)
	if err != nil {
		return nil, nil, err
	}
	return sp, h, nil
}

// loadFeatureSplit reads one split: an .npz (x, y) or an .npy pair.
func loadFeatureSplit(xPath, yPath string, labelsOptional bool) (Set, error) {
	var (
		x, y  *array
		yName = "y"
		err   error
	)
	if isNPZ(xPath) {
		if yPath != "" {
			return Set{}, fmt.Errorf("%s: is an .npz (holding x and y), so no separate labels file %s is expected", xPath, yPath)
		}
		z, err := openNPZ(xPath)
		if err != nil {
			return Set{}, err
		}
		defer z.Close()
		if x, err = z.read("x"); err != nil {
			return Set{}, err
		}
		if z.has("y") || !labelsOptional {
			if y, err = z.read("y"); err != nil {
				return Set{}, err
			}
		}
		yName = xPath + ` array "y"`
	} else {
		if x, err = readNPYFile(xPath); err != nil {
			return Set{}, err
		}
		if yPath == "" && !labelsOptional {
			return Set{}, fmt.Errorf("%s: an .npy of features needs its labels .npy too (or use an .npz with x and y)", xPath)
		}
		if yPath != "" {
			if y, err = readNPYFile(yPath); err != nil {
				return Set{}, err
			}
		}
		yName = yPath
	}

	if len(x.shape) != 2 {
		return Set{}, fmt.Errorf("%s: features x have shape %s, want 2-D (N, d)", xPath, x.shapeString())
	}
	if x.f == nil {
		return Set{}, fmt.Errorf("%s: features x have dtype %s, want float32 or float64", xPath, x.dtype)
	}
	n, d := x.shape[0], x.shape[1]
	if d == 0 {
		return Set{}, fmt.Errorf("%s: features x have shape %s: zero feature dimension", xPath, x.shapeString())
	}
	s := Set{X: make([]float32, len(x.f)), Y: make([]int, n), N: n, Dim: d}
	for j, v := range x.f {
		f := float32(v)
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			what := "NaN"
			if !math.IsNaN(v) {
				what = "Inf"
				if !math.IsInf(v, 0) {
					what = fmt.Sprintf("%g (overflows float32)", v)
				}
			}
			return Set{}, fmt.Errorf("%s: features x: %s at row %d, column %d", xPath, what, j/d, j%d)
		}
		s.X[j] = f
	}
	if y == nil {
		for i := range s.Y {
			s.Y[i] = -1
		}
		return s, nil
	}
	if !(len(y.shape) == 1 || len(y.shape) == 2 && y.shape[1] == 1) {
		return Set{}, fmt.Errorf("%s: labels y have shape %s, want (N,)", yName, y.shapeString())
	}
	if y.i == nil {
		return Set{}, fmt.Errorf("%s: labels y have dtype %s, want an integer dtype", yName, y.dtype)
	}
	if y.shape[0] != n {
		return Set{}, fmt.Errorf("%s: %d labels but %s has %d feature rows", yName, y.shape[0], xPath, n)
	}
	for i, v := range y.i {
		if v < 0 && !(labelsOptional && v == -1) {
			return Set{}, fmt.Errorf("%s: negative label %d at index %d", yName, v, i)
		}
		if v >= maxClasses {
			return Set{}, fmt.Errorf("%s: label %d at index %d exceeds the limit of %d classes", yName, v, i, maxClasses)
		}
		s.Y[i] = int(v)
	}
	return s, nil
}

func isNPZ(path string) bool { return strings.HasSuffix(strings.ToLower(path), ".npz") }

// loadHead reads W (d×K) and b (K) from an .npz and checks their shapes.
func loadHead(path string, d, K int) (*Head, error) {
	if !isNPZ(path) {
		return nil, fmt.Errorf("%s: the head must be an .npz with arrays W (d×K) and b (K)", path)
	}
	z, err := openNPZ(path)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	W, err := z.read("W")
	if err != nil {
		return nil, err
	}
	b, err := z.read("b")
	if err != nil {
		return nil, err
	}
	for _, a := range []struct {
		name string
		a    *array
	}{{"W", W}, {"b", b}} {
		if a.a.f == nil {
			return nil, fmt.Errorf("%s: head %s has dtype %s, want float32 or float64", path, a.name, a.a.dtype)
		}
		for j, v := range a.a.f {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s: head %s: %v at flat index %d", path, a.name, v, j)
			}
		}
	}
	if len(W.shape) != 2 || W.shape[0] != d || W.shape[1] != K {
		msg := fmt.Sprintf("%s: head W has shape %s, want (%d, %d) = (d, K)", path, W.shapeString(), d, K)
		if len(W.shape) == 2 && W.shape[0] == K && W.shape[1] == d {
			msg += "; it looks like (K, d), PyTorch's nn.Linear layout — save W.T"
		}
		return nil, errors.New(msg)
	}
	if !(len(b.shape) == 1 && b.shape[0] == K) {
		return nil, fmt.Errorf("%s: head b has shape %s, want (%d,) = (K,)", path, b.shapeString(), K)
	}
	return &Head{W: W.f, B: b.f, D: d, K: K}, nil
}
