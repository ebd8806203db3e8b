package bench

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/viz"
)

// paperFigures draws, for the first seed, each policy comparison with
// `selmix export --compare` under figDir and returns the Markdown that
// shows them.
func paperFigures(rs []paperResult, figDir, figRel string) (string, error) {
	if figDir == "" {
		return "", nil
	}
	var md strings.Builder
	md.WriteString("\n## Figures (first seed, `selmix export --compare`)\n\n")
	var errs []error
	first := rs[0].seed
	objs, _ := splitLabels(rs, "policies")
	for _, o := range objs {
		var group []*viz.RunData
		for _, r := range rs {
			if r.seed != first || !(r.table == "objectives" && r.label == o || r.table == "policies" && strings.HasPrefix(r.label, o+"/")) {
				continue
			}
			run, err := runs.Open(r.root, r.run)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			vr, err := viz.FromRun(run)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			// The legend names the policy, not the member's run name.
			vr.Meta.Name = "selmix"
			if _, pol, ok := strings.Cut(r.label, "/"); ok {
				vr.Meta.Name = pol
			}
			group = append(group, vr)
		}
		if len(group) < 2 {
			continue
		}
		name := "policies-" + safetext.FileName(o)
		res, err := viz.Compare(group, viz.DefaultCompareMetric(group), filepath.Join(figDir, name), viz.Options{Format: "png", DPI: 150})
		if err != nil {
			errs = append(errs, err)
		}
		if res == nil {
			continue
		}
		fmt.Fprintf(&md, "Policies on %s:\n\n", o)
		for _, f := range res.Files {
			fmt.Fprintf(&md, "![%s](%s)\n", f.Name, filepath.ToSlash(filepath.Join(figRel, name, f.Name)))
		}
		md.WriteString("\n")
	}
	return md.String(), errors.Join(errs...)
}
