package bench

import (
	"fmt"
	"slices"
	"strings"

	"selmix/core/metric"
	"selmix/runs/sweep"
)

// policyTable writes the policy comparison (SelMix's own row is the
// objectives table's) and returns each objective's policy means.
func policyTable(p func(string, ...any), rs []paperResult) map[string]map[string]float64 {
	objs, pols := splitLabels(rs, "policies")
	if len(objs) == 0 {
		return nil
	}
	pols = append([]string{"selmix"}, pols...)
	p("\n## Policy comparison at the same budget (paper Table \"policy-comparison\")\n\n")
	p("Each cell: the optimized objective on test at the last step (`end`) and at the best step (`at best`, the model each run keeps).\n\n| objective | %s |\n|---|%s\n", strings.Join(pols, " | "), strings.Repeat("---|", len(pols)))
	means := map[string]map[string]float64{}
	for _, o := range objs {
		means[o] = map[string]float64{}
		for _, side := range []struct {
			name string
			v    value
		}{{"end", optimized}, {"at best", optimizedBest}} {
			p("| %s, %s |", o, side.name)
			for _, pol := range pols {
				xs := collect(rs, "policies", o+"/"+pol, side.v)
				if pol == "selmix" {
					xs = collect(rs, "objectives", o, side.v)
				}
				xs = sweep.Known(xs)
				if len(xs) > 0 && side.name == "end" {
					means[o][pol] = mean(xs)
				}
				p(" %s |", sweep.MeanStd(xs))
			}
			p("\n")
		}
	}
	return means
}

// adaptTable writes the linear-step study: per objective, the paper's
// refresh interval against the rows that change it.
func adaptTable(p func(string, ...any), rs []paperResult) {
	objs, variants := splitLabels(rs, "adapt")
	if len(objs) == 0 {
		return
	}
	p("\n## Is the linear step valid? Refresh interval and finetune.adapt\n\n")
	p("Each cell: test ψ of the optimized objective, then the lowest validation mean recall seen at a refresh, and the fine-tuning wall time (s), mean over seeds.\n\n")
	p("| objective | refresh 50 (paper) | %s |\n|---|%s\n", strings.Join(variants, " | "), strings.Repeat("---|", len(variants)+1))
	cell := func(table, label string) string {
		xs := collect(rs, table, label, optimized)
		if len(xs) == 0 {
			return "–"
		}
		return fmt.Sprintf("%s; low %.3f; %.0f s", sweep.MeanStd(xs), mean(collect(rs, table, label, lowestValMean)), mean(collect(rs, table, label, seconds)))
	}
	for _, o := range objs {
		p("| %s | %s |", o, cell("objectives", o))
		for _, v := range variants {
			p(" %s |", cell("adapt", o+"/"+v))
		}
		p("\n")
	}
}

// claims checks the paper's claims on the means.
func claims(p func(string, ...any), rs []paperResult, objectives []string, policyMeans map[string]map[string]float64) {
	p("\n## Do the paper's claims hold here?\n\n")
	var improved, not []string
	for _, o := range objectives {
		oc := objCol(metric.Objective(o))
		before, after := mean(collect(rs, "objectives", o, oc.before)), mean(collect(rs, "objectives", o, oc.after))
		s := fmt.Sprintf("%s %.4f → %.4f", o, before, after)
		if after > before {
			improved = append(improved, s)
		} else {
			not = append(not, s)
		}
	}
	p("1. **SelMix improves the optimized objective over the pre-trained model** for %d of %d objectives", len(improved), len(objectives))
	if len(not) > 0 {
		p("; not for: %s", strings.Join(not, ", "))
	}
	p(". (%s)\n", strings.Join(improved, "; "))
	if len(policyMeans) > 0 {
		p("2. **SelMix is at least as good as every other policy on its objective** (mean over seeds):")
		for o, m := range sortedMap(policyMeans) {
			var beaten []string
			for pol, v := range sortedMap(m) {
				if pol != "selmix" && v > m["selmix"] {
					beaten = append(beaten, fmt.Sprintf("%s (%.4f > %.4f)", pol, v, m["selmix"]))
				}
			}
			if len(beaten) == 0 {
				p(" %s: yes.", o)
			} else {
				p(" %s: **no**, beaten by %s.", o, strings.Join(beaten, ", "))
			}
		}
		p("\n")
	}
	diag := 0
	var misses []string
	for _, o := range objectives {
		oc := objCol(metric.Objective(o))
		own := mean(collect(rs, "objectives", o, oc.after))
		best, bestRow := own, o
		for _, other := range objectives {
			if v := mean(collect(rs, "objectives", other, oc.after)); v > best {
				best, bestRow = v, other
			}
		}
		if bestRow == o {
			diag++
		} else {
			misses = append(misses, fmt.Sprintf("ψ %s is best when optimizing %s (%.4f vs %.4f)", o, bestRow, best, own))
		}
	}
	p("3. **The diagonal (optimized on = observed) is the best in its column** for %d of %d objectives", diag, len(objectives))
	if len(misses) > 0 {
		p("; exceptions: %s", strings.Join(misses, "; "))
	}
	p(".\n")
}

// sortedMap ranges over m in key order (the report must not change from
// one generation to the next).
func sortedMap[V any](m map[string]V) func(yield func(string, V) bool) {
	return func(yield func(string, V) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}
