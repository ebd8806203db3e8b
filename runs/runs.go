package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"selmix/internal/atomicfile"
	"selmix/internal/boundedfile"
	"selmix/internal/suggest"
)

// File names inside a run directory.
const (
	metaName    = "run.json"
	configName  = "config.toml"
	eventsName  = "events.jsonl"
	summaryName = "summary.json"
	ckptDirName = "checkpoints"
)

// RecordFiles are the files of a run's record, beside its checkpoints,
// lock and control socket (docs/run-format.md).
func RecordFiles() []string {
	return []string{configName, metaName, eventsName, arraysName, summaryName}
}

// EnvRoot names the environment variable that sets the runs root.
const EnvRoot = "SELMIX_RUNS"

// Root picks the runs root: flag if set, else $SELMIX_RUNS, else "runs".
func Root(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv(EnvRoot); env != "" {
		return env
	}
	return "runs"
}

// Run is a read-only view of a run directory. Meta, Live and Pid are a
// snapshot taken when the Run was loaded; Refresh takes a new one.
type Run struct {
	Dir  string
	Meta Meta
	Live bool
	Pid  int
}

// statusBroken prefixes the Status List gives a run it cannot read.
const statusBroken = "broken: "

// Broken reports whether List could not read the run's metadata.
func (r *Run) Broken() bool { return strings.HasPrefix(r.Meta.Status, statusBroken) }

// EffectiveStatus is the stored status, except that a run stored as
// running or paused with no live writer is "crashed".
func (r *Run) EffectiveStatus() string {
	s := r.Meta.Status
	if (s == StatusRunning || s == StatusPaused) && !r.Live {
		return StatusCrashed
	}
	return s
}

// Best is the best validation ψ of the optimized objective that run.json
// records; NaN before the first refresh or where run.json is unreadable.
func (r *Run) Best() float64 {
	if r.Broken() || r.Meta.BestStep < 0 {
		return math.NaN()
	}
	return r.Meta.Best
}

// Refresh re-reads run.json and the liveness of the writer.
func (r *Run) Refresh() error {
	m, err := readMeta(r.Dir)
	if err != nil {
		return err
	}
	r.Meta = m
	r.Live, r.Pid = IsLive(r.Dir)
	return nil
}

// Events reads the event log (see ReadEvents).
func (r *Run) Events() ([]Event, []Warning, error) {
	return ReadEvents(filepath.Join(r.Dir, eventsName))
}

// Config returns config.toml. Every run has one: a missing one is
// damage.
func (r *Run) Config() (string, error) {
	path := filepath.Join(r.Dir, configName)
	b, err := boundedfile.ReadFile(path, configFile)
	if errors.Is(err, os.ErrNotExist) {
		return "", Damaged(fmt.Errorf("%s: missing (every run has one)", path))
	}
	return string(b), err
}

// Summary returns summary.json; the error wraps os.ErrNotExist if the run
// has none yet.
func (r *Run) Summary() ([]byte, error) {
	path := filepath.Join(r.Dir, summaryName)
	b, err := boundedfile.ReadFile(path, summaryFile)
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		return nil, Damaged(fmt.Errorf("%s: not valid JSON", path))
	}
	return b, nil
}

// readMeta reads run.json of the run in dir and checks that it is the
// run of that folder (checkFolder).
func readMeta(dir string) (Meta, error) {
	path := filepath.Join(dir, metaName)
	b, err := boundedfile.ReadFile(path, metaFile)
	if errors.Is(err, os.ErrNotExist) {
		return Meta{}, Damaged(fmt.Errorf("%s has no run.json: a run whose creation was cut off, or not a run (selmix runs rm %s --yes removes it)", dir, filepath.Base(dir)))
	}
	if err != nil {
		return Meta{}, err
	}
	m, err := parseMeta(b, path)
	if err != nil {
		return Meta{}, err
	}
	return m, checkFolder(m, dir)
}

// checkFolder refuses run.json m of a run folder dir named for another
// id: a copy of a run folder keeps its id, and a command acting on the
// copy by that id would act on the original (or find none).
func checkFolder(m Meta, dir string) error {
	name := filepath.Base(dir)
	if m.ID == name {
		return nil
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil && filepath.Base(real) == m.ID {
		return nil // a link to the run's folder (runs/latest), not a copy
	}
	return Damaged(fmt.Errorf("folder %s holds run %s (its run.json says so): a copied folder keeps its id; rename the folder to %s, or to keep it as a copy set \"id\" in %s to %q",
		dir, m.ID, m.ID, filepath.Join(dir, metaName), name))
}

// load reads the run in dir.
func load(dir string) (*Run, error) {
	m, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	live, pid := IsLive(dir)
	return &Run{Dir: dir, Meta: m, Live: live, Pid: pid}, nil
}

// List returns every run under root, oldest first. A run whose run.json
// cannot be read is listed with Status "broken: <reason>" and its directory
// name as ID. A missing root is an empty list.
func List(root string) ([]Run, error) {
	ents, err := readDir(root)
	if err != nil {
		return nil, err
	}
	var out []Run
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if !looksLikeRun(dir) {
			continue // not ours: e.g. the source tree's runs/ package when the root is ./runs
		}
		r, err := load(dir)
		if err != nil {
			r = brokenRun(dir, err)
		}
		out = append(out, *r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Meta.Created != out[j].Meta.Created {
			return out[i].Meta.Created < out[j].Meta.Created
		}
		return filepath.Base(out[i].Dir) < filepath.Base(out[j].Dir)
	})
	return out, nil
}

// brokenRun is the run in dir as List shows one it cannot read (err):
// its folder name as its id, its status "broken: " and why.
func brokenRun(dir string, err error) *Run {
	live, pid := IsLive(dir)
	return &Run{Dir: dir, Meta: Meta{ID: filepath.Base(dir), Status: statusBroken + err.Error()}, Live: live, Pid: pid}
}

// looksLikeRun reports whether dir holds any file a run writes, or the
// temp file of run.json or config.toml a crash of an older selmix left
// while creating one; one with some but a bad or missing run.json is a
// broken run, one with none is not a run at all.
func looksLikeRun(dir string) bool {
	for _, name := range []string{metaName, configName, eventsName} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	for _, name := range []string{metaName, configName} {
		if m, _ := filepath.Glob(filepath.Join(dir, "."+name+atomicfile.TempMarker+"*")); len(m) > 0 {
			return true
		}
	}
	return false
}

// Unreadable returns the run query designates (as for Open) as List
// shows it when it is a broken run: a folder of root holding files of a
// run whose run.json is missing, damaged or another folder's. ok is
// false when query designates a run that opens, or no run at all.
func Unreadable(root, query string) (r *Run, ok bool) {
	name, err := resolve(root, query)
	if err != nil {
		return nil, false
	}
	dir := filepath.Join(root, name)
	if !looksLikeRun(dir) {
		return nil, false
	}
	if _, err := load(dir); err != nil {
		return brokenRun(dir, err), true
	}
	return nil, false
}

// resolve finds the directory name of the run query designates: an exact
// id, else the one run whose name equals query or whose id starts with it.
func resolve(root, query string) (string, error) {
	if query == "" {
		return "", errors.New("no run given")
	}
	if checkID(query) == nil {
		if fi, err := os.Stat(filepath.Join(root, query)); err == nil && fi.IsDir() {
			return query, nil
		}
	}
	all, err := List(root)
	if err != nil {
		return "", err
	}
	var cand []Run
	for _, r := range all {
		id := filepath.Base(r.Dir)
		if strings.HasPrefix(id, query) || (!r.Broken() && r.Meta.Name == query) {
			cand = append(cand, r)
		}
	}
	switch len(cand) {
	case 1:
		return filepath.Base(cand[0].Dir), nil
	case 0:
		if len(all) == 0 {
			return "", fmt.Errorf("no run %q in %s: it has no runs", query, root)
		}
		return "", fmt.Errorf("no run %q in %s; nearest: %s", query, root, listed(nearest(query, all, maxListed), len(all)))
	}
	return "", fmt.Errorf("run %q is ambiguous in %s; it matches %s", query, root, listed(cand[:min(len(cand), maxListed)], len(cand)))
}

// maxListed is how many runs an error about a run id names: a store of
// hundreds must not print them all.
const maxListed = 5

// nearest returns at most n runs ordered by how close query is to their
// id or name (edit distance; ties keep the store's order).
func nearest(query string, all []Run, n int) []Run {
	type scored struct {
		r Run
		d int
	}
	sc := make([]scored, len(all))
	for i, r := range all {
		d := suggest.Distance(query, filepath.Base(r.Dir))
		if !r.Broken() && r.Meta.Name != "" {
			d = min(d, suggest.Distance(query, r.Meta.Name))
		}
		sc[i] = scored{r, d}
	}
	slices.SortStableFunc(sc, func(a, b scored) int { return a.d - b.d })
	out := make([]Run, 0, n)
	for _, s := range sc[:min(n, len(sc))] {
		out = append(out, s.r)
	}
	return out
}

// listed describes rs on one line, saying how many of total are not
// shown.
func listed(rs []Run, total int) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = describe(r)
	}
	s := strings.Join(parts, ", ")
	if more := total - len(rs); more > 0 {
		s += fmt.Sprintf(" (and %d more: selmix runs ls)", more)
	}
	return s
}

// describe is a one-line description of r starting with its id.
func describe(r Run) string {
	id := filepath.Base(r.Dir)
	if r.Broken() {
		return id + " (" + r.Meta.Status + ")"
	}
	if r.Meta.Name == "" {
		return id
	}
	return id + " (" + strconv.Quote(r.Meta.Name) + ")"
}

// Open loads a run read-only. id may be the full id, a unique id prefix or
// a unique run name; an ambiguous or unknown id is an error listing the
// candidates.
func Open(root, id string) (*Run, error) {
	name, err := resolve(root, id)
	if err != nil {
		return nil, err
	}
	return load(filepath.Join(root, name))
}

// Remove deletes a run (id as for Open). It refuses a live run. It holds
// the writer lock while it works, so no writer can start meanwhile, and
// first renames the directory to a hidden name so List never sees a
// half-deleted run.
func Remove(root, id string) error {
	name, err := resolve(root, id)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, name)
	lf, err := acquireLock(dir, name)
	if err != nil {
		var busy *BusyError
		if errors.As(err, &busy) {
			return fmt.Errorf("cannot remove live run: %w", err)
		}
		return err
	}
	defer lf.Close()
	removeStale(root)
	trash := filepath.Join(root, removingPrefix+name+"-"+randHex(4))
	if err := os.Rename(dir, trash); err != nil {
		return fmt.Errorf("remove run %s: %w", name, err)
	}
	if err := atomicfile.SyncDir(root); err != nil {
		return fmt.Errorf("remove run %s: %w", name, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("remove run %s: %w", name, err)
	}
	return nil
}

// sortedInts returns s sorted, without duplicates.
func sortedInts(s []int) []int {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
