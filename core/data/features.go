package data

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"selmix/core/npy"
)

// FeatureFiles names researchers' exported features g(x) and labels.
//
// Each split is either an .npz holding arrays "x" (N×d, float32 or float64)
// and "y" (N, any integer dtype), or an .npy of x with its labels in the
// matching …Y .npy. The train .npz may also hold "names": the K class
// names, as strings (<U… or |S…). Train, Val and Test are required; Unlabeled is optional
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
// within [0,K), and a head of shape d×K. Class names are the train
// archive's "names", else "class 0" …
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
	var names *archiveNames
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
		s, nm, err := loadFeatureSplit(p.x, p.y, p.unlabeled, p.name == "train")
		if err != nil {
			return nil, nil, err
		}
		if nm != nil {
			names = nm
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
	for _, c := range []struct {
		s          *Set
		path, what string
	}{
		{&sp.Val, ff.Val, "validation samples (SelMix needs every class in validation)"},
		{&sp.Labeled, ff.Train, "labeled training samples (x1 of a pair is drawn from them)"},
	} {
		for k, n := range c.s.Counts(K) {
			if n == 0 {
				return nil, nil, fmt.Errorf("%s: class %d has no %s; K=%d from train ∪ val", c.path, k, c.what, K)
			}
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
	// Every class is measured on test: a missing one would only show after
	// pre-training, as an empty row of the test confusion matrix.
	for k, n := range sp.Test.Counts(K) {
		if n == 0 {
			return nil, nil, fmt.Errorf("%s: class %d has no test samples; K=%d from train ∪ val", ff.Test, k, K)
		}
	}
	sp.K = K
	if names != nil {
		if len(names.names) != K {
			return nil, nil, names.z.Errorf("names", "%d class names for K=%d classes (K = max label + 1 over train ∪ val)", len(names.names), K)
		}
		sp.ClassNames = names.names
	} else {
		sp.ClassNames = make([]string, K)
		for k := range sp.ClassNames {
			sp.ClassNames[k] = fmt.Sprintf("class %d", k)
		}
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

// archiveNames are the class names an .npz holds (array "names"), not yet
// checked against K; z names the member in errors.
type archiveNames struct {
	names []string
	z     *npy.NPZ
}

// loadFeatureSplit reads one split: an .npz (x, y) or an .npy pair. With
// withNames, it also returns the class names an .npz holds, if any.
func loadFeatureSplit(xPath, yPath string, labelsOptional, withNames bool) (Set, *archiveNames, error) {
	if isNPZ(xPath) {
		if yPath != "" {
			return Set{}, nil, fmt.Errorf("%s: is an .npz (holding x and y), so no separate labels file %s is expected", xPath, yPath)
		}
		z, err := npy.OpenNPZ(xPath)
		if err != nil {
			return Set{}, nil, err
		}
		defer z.Close()
		return splitFromNPZ(z, labelsOptional, withNames)
	}
	x, err := npy.Open(xPath)
	if err != nil {
		return Set{}, nil, err
	}
	defer x.Close()
	if yPath == "" && !labelsOptional {
		return Set{}, nil, fmt.Errorf("%s: an .npy of features needs its labels .npy too (or use an .npz with x and y)", xPath)
	}
	var y *npy.Array
	if yPath != "" {
		if y, err = npy.Open(yPath); err != nil {
			return Set{}, nil, err
		}
		defer y.Close()
	}
	s, err := readSplit(x, y, xPath, labelsOptional)
	return s, nil, err
}

// splitFromNPZ reads the arrays x, y (optional if labelsOptional) and,
// with withNames, names of an archive.
func splitFromNPZ(z *npy.NPZ, labelsOptional, withNames bool) (Set, *archiveNames, error) {
	x, err := z.Open("x")
	if err != nil {
		return Set{}, nil, err
	}
	defer x.Close()
	var y *npy.Array
	if z.Has("y") || !labelsOptional {
		if y, err = z.Open("y"); err != nil {
			return Set{}, nil, err
		}
		defer y.Close()
	}
	s, err := readSplit(x, y, z.Name(), labelsOptional)
	if err != nil || !withNames || !z.Has("names") {
		return s, nil, err
	}
	names, err := namesFromNPZ(z)
	if err != nil {
		return Set{}, nil, err
	}
	return s, &archiveNames{names, z}, nil
}

// readSplit reads features x (N×d float32 or float64) and labels y (N,
// any integer dtype, ≥ 0, or -1 if labelsOptional; nil: all -1). Both headers are checked before
// the features are read, straight into the float32 set.
func readSplit(x, y *npy.Array, xName string, labelsOptional bool) (Set, error) {
	if len(x.Shape) != 2 {
		return Set{}, x.Errorf("features x have shape %s, want 2-D (N, d)", npy.ShapeString(x.Shape))
	}
	if x.DType.Kind != npy.Float {
		return Set{}, x.Errorf("features x have dtype %s, want float32 or float64", x.DType)
	}
	n, d := x.Shape[0], x.Shape[1]
	if d == 0 {
		return Set{}, x.Errorf("features x have shape %s: zero feature dimension", npy.ShapeString(x.Shape))
	}
	if y != nil {
		if !(len(y.Shape) == 1 || len(y.Shape) == 2 && y.Shape[1] == 1) {
			return Set{}, y.Errorf("labels y have shape %s, want (N,)", npy.ShapeString(y.Shape))
		}
		switch y.DType.Kind {
		case npy.Int, npy.Uint:
		case npy.Bytes, npy.Unicode:
			return Set{}, y.Errorf("labels y have dtype %s (strings), want an integer dtype", y.DType)
		default:
			return Set{}, y.Errorf("labels y have dtype %s, want an integer dtype", y.DType)
		}
		if y.Shape[0] != n {
			return Set{}, y.Errorf("%d labels but %s has %d feature rows", y.Shape[0], xName, n)
		}
	}
	s := Set{X: make([]float32, n*d), Y: make([]int, n), N: n, Dim: d}
	if err := x.ReadFloat32(s.X); err != nil {
		var ve *npy.ValueError
		if errors.As(err, &ve) {
			return Set{}, x.Errorf("features x: %s (overflows float32) at row %d, column %d", ve.Value, ve.Index/d, ve.Index%d)
		}
		return Set{}, err
	}
	for j, v := range s.X {
		if math.IsNaN(float64(v)) {
			return Set{}, x.Errorf("features x: NaN at row %d, column %d", j/d, j%d)
		}
		if math.IsInf(float64(v), 0) {
			return Set{}, x.Errorf("features x: Inf at row %d, column %d", j/d, j%d)
		}
	}
	if y == nil {
		for i := range s.Y {
			s.Y[i] = -1
		}
		return s, nil
	}
	if err := y.ReadInt(s.Y); err != nil {
		var ve *npy.ValueError
		if errors.As(err, &ve) {
			return Set{}, y.Errorf("label %s at index %d exceeds the limit of %d classes", ve.Value, ve.Index, maxClasses)
		}
		return Set{}, err
	}
	for i, v := range s.Y {
		if v < 0 && !(labelsOptional && v == -1) {
			return Set{}, y.Errorf("negative label %d at index %d", v, i)
		}
		if v >= maxClasses {
			return Set{}, y.Errorf("label %d at index %d exceeds the limit of %d classes", v, i, maxClasses)
		}
	}
	return s, nil
}

func isNPZ(path string) bool { return strings.HasSuffix(strings.ToLower(path), ".npz") }

// loadHead reads W (d×K) and b (K) from an .npz and checks their shapes.
func loadHead(path string, d, K int) (*Head, error) {
	if !isNPZ(path) {
		return nil, fmt.Errorf("%s: the head must be an .npz with arrays W (d×K) and b (K)", path)
	}
	z, err := npy.OpenNPZ(path)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	return headFromNPZ(z, d, K)
}

func headFromNPZ(z *npy.NPZ, d, K int) (*Head, error) {
	W, err := z.Open("W")
	if err != nil {
		return nil, err
	}
	defer W.Close()
	b, err := z.Open("b")
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if len(W.Shape) != 2 || W.Shape[0] != d || W.Shape[1] != K {
		msg := fmt.Sprintf("head W has shape %s, want (%d, %d) = (d, K)", npy.ShapeString(W.Shape), d, K)
		if len(W.Shape) == 2 && W.Shape[0] == K && W.Shape[1] == d {
			msg += "; it looks like (K, d), PyTorch's nn.Linear layout — save W.T"
		}
		return nil, W.Errorf("%s", msg)
	}
	if !(len(b.Shape) == 1 && b.Shape[0] == K) {
		return nil, b.Errorf("head b has shape %s, want (%d,) = (K,)", npy.ShapeString(b.Shape), K)
	}
	h := &Head{W: make([]float64, d*K), B: make([]float64, K), D: d, K: K}
	for _, a := range []struct {
		name string
		a    *npy.Array
		dst  []float64
	}{{"W", W, h.W}, {"b", b, h.B}} {
		if a.a.DType.Kind != npy.Float {
			return nil, a.a.Errorf("head %s has dtype %s, want float32 or float64", a.name, a.a.DType)
		}
		if err := a.a.ReadFloat64(a.dst); err != nil {
			return nil, err
		}
		for j, v := range a.dst {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, a.a.Errorf("head %s: %v at flat index %d", a.name, v, j)
			}
		}
	}
	return h, nil
}
