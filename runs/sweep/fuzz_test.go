package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"selmix/core/search"
	"selmix/internal/safetext"
	"selmix/runs"
)

// FuzzLoad: no sweep.json panics Load; what it accepts is a sweep of the
// runs root it is in, whose members' runs are <id>-<index>, and what it
// refuses is damage.
func FuzzLoad(f *testing.F) {
	root := f.TempDir()
	dir := filepath.Join(Root(root), "small-beef")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	good := fmt.Sprintf(`{"id":"small-beef","name":"small","created":"2026-01-01T00:00:00Z","runs_root":%q,"workdir":"/","executor":"local","columns":["seed"],"members":[{"index":0,"run":"small-beef-0","vary":["1"]}]}`, root)
	f.Add([]byte(good))
	f.Add([]byte(strings.Replace(good, `"small-beef-0"`, `"../../x\u001b]0;X\u0007"`, 1)))
	f.Add([]byte(strings.Replace(good, root, "/nonexistent/root", 1)))
	pbt := `,"pbt":{"interval":100,"steps":300,"quantile":0.25,"explore":"perturb","keys":["s"],"seed":1}}`
	f.Add([]byte(strings.TrimSuffix(strings.Replace(good, `"vary":["1"]}]`, `"vary":["1"]},{"index":1,"run":"small-beef-1","vary":["2"]}]`, 1), "}") + pbt))
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, fileName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Load(dir)
		if err != nil {
			if !errors.Is(err, runs.ErrDamaged) && !strings.Contains(err.Error(), fileName) {
				t.Fatalf("refusal %v is neither damage nor names the file", err)
			}
			return
		}
		if s.Root != root && filepath.Clean(s.Root) != root {
			t.Fatalf("accepted runs_root %q in a sweep of %s", s.Root, root)
		}
		for i, m := range s.Members {
			if m.Run != fmt.Sprintf("%s-%d", s.ID, i) {
				t.Fatalf("accepted member %d run %q", i, m.Run)
			}
		}
	})
}

// FuzzPopulationLog: no pbt.log panics the population's reader; what it
// accepts is a population in turn (its generation within the plan's, a
// member's run its own or a fork named after it), and what it refuses is
// damage naming the file and line.
func FuzzPopulationLog(f *testing.F) {
	s := pbtSweepOf(f)
	path := filepath.Join(s.Dir, PopulationName)
	var lines []string
	for i := range 4 {
		lines = append(lines, fmt.Sprintf(`{"op":"report","member":%d,"gen":0,"step":100,"psi":0.%d,"time":"t"}`, i, 6-i))
	}
	lines = append(lines, `{"op":"exploit","member":3,"gen":0,"from":0,"parent":"p","at":101,"run":"`+s.Members[3].Run+`-g1","sets":["finetune.s=0.6"],"time":"t"}`,
		`{"op":"advance","member":0,"gen":0,"time":"t"}`)
	f.Add([]byte(strings.Join(lines, "\n") + "\n"))
	f.Add([]byte(strings.Join(lines[:5], "\n") + "\n" + `{"op":"adv`))
	f.Add([]byte(`{"op":"report","member":9,"gen":0,"psi":"NaN"}` + "\n"))
	// An exploit of explore = forecast, with its ranked candidates.
	ranked := strings.Replace(lines[4], `"time":"t"`, `"ranked":[{"sets":["finetune.s=0.6"],"forecast":0.01},{"sets":["finetune.s=1.3"],"forecast":"NaN"}],"time":"t"`, 1)
	f.Add([]byte(strings.Join(append(slices.Clone(lines[:4]), ranked, lines[5]), "\n") + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		po, err := s.Population()
		if err != nil {
			if !errors.Is(err, runs.ErrDamaged) || !strings.Contains(err.Error(), path+":") {
				t.Fatalf("refusal %v is not damage naming the file and line", err)
			}
			return
		}
		if g := po.Gen(); g < 0 || g >= s.PBT.Gens() {
			t.Fatalf("accepted generation %d of %d", g, s.PBT.Gens())
		}
		for i, m := range s.Members {
			if n := po.RunName(i); n != m.Run && !strings.HasPrefix(n, m.Run+"-g") {
				t.Fatalf("member %d continues in %q", i, n)
			}
		}
		for _, d := range po.Decisions {
			if safetext.Control(d.Parent) >= 0 || strings.ContainsAny(d.Parent, "/\\") {
				t.Fatalf("accepted an exploit of run %q", d.Parent)
			}
			if len(d.Ranked) > maxRanked {
				t.Fatalf("accepted an exploit ranking %d candidates", len(d.Ranked))
			}
			for _, c := range d.Ranked {
				for _, kv := range c.Sets {
					if !strings.HasPrefix(kv, "finetune.s=") {
						t.Fatalf("accepted a candidate setting %q", kv)
					}
				}
			}
		}
	})
}

// pbtSweepOf is a created population of four members, three generations
// of 100 steps.
func pbtSweepOf(f *testing.F) *Sweep {
	text := "name = \"pop\"\n[base]\n\"finetune.steps\" = 300\n\"finetune.refresh\" = 25\n[axes]\n\"finetune.s\" = [0.5, 1, 2, 4]\n[pbt]\ninterval = 100\n"
	spec, err := search.Parse([]byte(text), "pop.toml")
	if err != nil {
		f.Fatal(err)
	}
	root := f.TempDir()
	s, err := Plan(root, spec, search.ExecLocal, root)
	if err != nil {
		f.Fatal(err)
	}
	if s.PBT, err = search.PlanPBT(spec, s.Members); err != nil {
		f.Fatal(err)
	}
	if err := s.Create(spec, []byte(text)); err != nil {
		f.Fatal(err)
	}
	return s
}
