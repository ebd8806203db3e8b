package bench

import (
	"cmp"
	_ "embed"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"selmix/core/search"
	"selmix/runs/sweep"
)

// The paper-reproduction suite is the sweep spec paper-sweep.toml; `selmix
// bench paper` runs it like any sweep and writes its report, the paper's
// tables, from the member runs.

//go:embed paper-sweep.toml
var paperSpec []byte

// PaperSpecFile names the spec in errors and in the report.
const PaperSpecFile = "bench/paper-sweep.toml"

// PaperOptions change the shipped spec for one invocation.
type PaperOptions struct {
	Seeds, Steps, Epochs int      // 0 = the spec's
	DataDir              string   // "" = the spec's (the default data.dir)
	Cache                string   // pretrain.cache; "" = the spec's
	Semi                 bool     // keep the semi-supervised rows
	Sets                 []string // extra key=value on every member
}

// PaperSpec is the suite's spec with o applied, and its text as the sweep
// folder records it: the shipped spec under a comment that names the
// overrides (sweep.json lists every member's --set).
func PaperSpec(o PaperOptions) (*search.Spec, []byte, error) {
	spec, err := search.Parse(paperSpec, PaperSpecFile)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	set := func(key, value string) {
		notes = append(notes, key+"="+value)
		for i := range spec.Base {
			if spec.Base[i].Key == key {
				spec.Base[i].Value = value
				return
			}
		}
		spec.Base = append(spec.Base, search.Setting{Key: key, Value: value})
	}
	if o.Steps > 0 {
		set("finetune.steps", strconv.Itoa(o.Steps))
	}
	if o.Epochs > 0 {
		set("pretrain.epochs", strconv.Itoa(o.Epochs))
	}
	if o.DataDir != "" {
		set("data.dir", strconv.Quote(o.DataDir))
	}
	if o.Cache != "" {
		set("pretrain.cache", strconv.Quote(o.Cache))
	}
	for _, kv := range o.Sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, nil, fmt.Errorf("--set %s: want section.key=value", kv)
		}
		set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	if o.Seeds > 0 {
		i := slices.IndexFunc(spec.Axes, func(a search.Axis) bool { return a.Key == sweep.SeedKey })
		if i < 0 {
			return nil, nil, fmt.Errorf("%s: no seed axis", PaperSpecFile)
		}
		spec.Axes[i].Values = nil
		for s := 1; s <= o.Seeds; s++ {
			spec.Axes[i].Values = append(spec.Axes[i].Values, strconv.Itoa(s))
		}
		notes = append(notes, fmt.Sprintf("seed=1..%d", o.Seeds))
	}
	if !o.Semi {
		spec.Rows = slices.DeleteFunc(spec.Rows, func(r search.Row) bool { return rowTable(rowValues(r)) == "semi" })
		notes = append(notes, "no semi-supervised rows")
	}
	text := paperSpec
	if len(notes) > 0 {
		text = append([]byte("# selmix bench paper changed this spec: "+strings.Join(notes, ", ")+"\n"), paperSpec...)
	}
	return spec, text, nil
}

func rowValues(r search.Row) map[string]string {
	m := map[string]string{}
	for _, s := range r {
		m[s.Key] = search.Display(s.Value)
	}
	return m
}

// rowTable sorts a row of the suite into a table of the report by the
// keys it sets (paper-sweep.toml says how).
func rowTable(v map[string]string) string {
	switch {
	case v["data.unlabeled"] != "":
		return "semi"
	case v["pretrain.loss"] != "":
		return "scratch"
	case v["finetune.form"] != "":
		return "form"
	case v["finetune.policy"] == "resample":
		return "resample"
	case v["finetune.cov_margin"] != "":
		return "margin"
	case v["finetune.policy"] != "" && v["finetune.policy"] != "selmix":
		return "policies"
	case v["finetune.refresh"] != "" || v["finetune.adapt"] != "":
		return "adapt"
	}
	return "objectives"
}

// rowLabel names a row within its table.
func rowLabel(table string, v map[string]string) string {
	o := v["finetune.objective"]
	switch table {
	case "semi":
		return o + "/oracle=" + cmp.Or(v["finetune.oracle_labels"], "false")
	case "scratch":
		return o + "/" + v["pretrain.loss"]
	case "form":
		return o + "/" + v["finetune.form"]
	case "policies", "resample":
		return o + "/" + v["finetune.policy"]
	case "margin":
		l := o + "/cov_margin " + v["finetune.cov_margin"]
		if r := v["finetune.refresh"]; r != "" {
			l += ", refresh " + r
		}
		if a := v["finetune.adapt"]; a != "" {
			l += ", adapt " + a
		}
		if sv := v["finetune.s"]; sv != "" {
			l += ", s " + sv
		}
		return l
	case "adapt":
		if a := v["finetune.adapt"]; a != "" && a != "none" {
			return o + "/adapt " + a
		}
		return o + "/refresh " + v["finetune.refresh"]
	}
	return o
}
