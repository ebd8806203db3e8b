package experiment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"selmix/assets"
	"selmix/core/data"
	"selmix/internal/boundedfile"
)

// LoadData builds the split c describes, with the class names of
// data.class_names if set. For imported features it also returns the
// researcher's head, if they gave one.
func LoadData(c Config) (*data.Split, *data.Head, error) {
	sp, head, err := loadSource(c)
	if err != nil {
		return nil, nil, c.Data.keyed(err)
	}
	if c.Data.ClassNames == "" {
		return sp, head, nil
	}
	names, err := data.ReadClassNames(c.Data.ClassNames, sp.K)
	if err != nil {
		return nil, nil, fmt.Errorf("data.class_names: %w", err)
	}
	sp.ClassNames = names
	return sp, head, nil
}

// keyed names the config key that pointed at the file err is about
// ("data.train: open …/nope.npz: no such file or directory"), when it is
// about one of d's files.
func (d Data) keyed(err error) error {
	files := []struct{ key, path string }{
		{"data.train", d.Train}, {"data.train_y", d.TrainY}, {"data.unlabeled_x", d.UnlabeledX},
		{"data.unlabeled_y", d.UnlabeledY}, {"data.val", d.Val}, {"data.val_y", d.ValY},
		{"data.test", d.Test}, {"data.test_y", d.TestY}, {"data.head", d.Head},
	}
	if d.Source == "fashion-mnist" {
		files = append(files, struct{ key, path string }{"data.dir", d.Dir})
	}
	var pe *fs.PathError
	isPath := errors.As(err, &pe)
	for _, f := range files {
		if f.path == "" {
			continue
		}
		if isPath && (pe.Path == f.path || strings.HasPrefix(pe.Path, f.path+string(os.PathSeparator))) || strings.HasPrefix(err.Error(), f.path+":") {
			return fmt.Errorf("%s: %w", f.key, err)
		}
	}
	return err
}

// builtinSeed is the seed the embedded split was drawn with (seed in
// assets/pretrain.toml, which make assets builds it from).
const builtinSeed = 1

func loadSource(c Config) (*data.Split, *data.Head, error) {
	d := c.Data
	switch d.Source {
	case "builtin":
		raw, err := assets.DefaultSplit()
		if err != nil {
			return nil, nil, err
		}
		sp, err := data.LoadSplitBytes(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("built-in dataset: %w", err)
		}
		// The embedded split holds the whole official test set; the
		// first one kept 200 images per class of it, drawn with the
		// split's seed as BuildLT draws them.
		per := d.TestPerClass
		if d.Builtin == 1 {
			per = 200
		}
		if err := data.SubsampleTest(sp, per, builtinSeed); err != nil {
			return nil, nil, fmt.Errorf("data.test_per_class: %w", err)
		}
		return sp, nil, nil
	case "fashion-mnist":
		raw, err := data.LoadFashionMNIST(d.Dir)
		if err != nil {
			return nil, nil, err
		}
		mode := d.Unlabeled
		m1 := d.M1
		if mode == "none" {
			mode, m1 = "", 0
		}
		sp, err := data.BuildLT(raw, data.SplitConfig{
			N1: d.N1, RhoL: d.Rho, M1: m1, UnlabeledMode: mode, RhoU: d.RhoU,
			ValPerClass: d.ValPerClass, TestPerClass: d.TestPerClass, Seed: uint64(c.Seed),
		})
		return sp, nil, err
	case "features":
		sp, head, err := data.LoadFeatures(data.FeatureFiles{
			Train: d.Train, TrainY: d.TrainY, Unlabeled: d.UnlabeledX, UnlabeledY: d.UnlabeledY,
			Val: d.Val, ValY: d.ValY, Test: d.Test, TestY: d.TestY, Head: d.Head,
		})
		return sp, head, nameKey(err, d)
	}
	return nil, nil, fmt.Errorf("data.source: unknown %q", d.Source)
}

// nameKey prefixes a file refused for its type or size with the data key
// that named it.
func nameKey(err error, d Data) error {
	var be *boundedfile.Error
	if !errors.As(err, &be) {
		return err
	}
	for _, k := range []struct{ key, path string }{
		{"train", d.Train}, {"train_y", d.TrainY}, {"unlabeled_x", d.UnlabeledX}, {"unlabeled_y", d.UnlabeledY},
		{"val", d.Val}, {"val_y", d.ValY}, {"test", d.Test}, {"test_y", d.TestY}, {"head", d.Head},
	} {
		if k.path == be.Path {
			return fmt.Errorf("data.%s: %w", k.key, err)
		}
	}
	return err
}
