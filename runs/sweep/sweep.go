// Package sweep is a sweep's folder in the run store: sweep.json (the
// plan core/search made of a spec), the members' locks and logs, the
// successive-halving schedule, the members' status read back from their
// runs, what to resume, and the results a report shows. docs/sweeps.md
// describes the folder.
package sweep

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"selmix/core/experiment"
	"selmix/core/search"
	"selmix/internal/boundedfile"
	"selmix/internal/safetext"
	"selmix/runs"
)

// Folder and file names. A sweep lives in <runs root>/sweeps/<id>/, which
// holds no run file, so the run store's listing skips it.
const (
	DirName   = "sweeps"
	fileName  = "sweep.json"
	specName  = "spec.toml"
	baseName  = "base.toml"
	logsDir   = "logs"    // local executor: one log per member
	slurmDir  = "slurm"   // Slurm: the tasks' output files
	memberDir = "members" // one lock per member
	Script    = "sweep.sbatch"
)

// Sweep is an open sweep folder.
type Sweep struct {
	Dir string // absolute
	Manifest
}

// Manifest is the content of sweep.json.
type Manifest struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Created    string          `json:"created"` // RFC3339
	Root       string          `json:"runs_root"`
	Workdir    string          `json:"workdir"` // where members run: relative paths in the configuration resolve here
	BaseConfig string          `json:"base_config,omitempty"`
	Executor   string          `json:"executor"`
	Columns    []string        `json:"columns"`
	Members    []search.Member `json:"members"`
	Slurm      *search.Slurm   `json:"slurm,omitempty"`
	Jobs       []Job           `json:"jobs,omitempty"` // Slurm submissions, oldest first
	// GPUs and GPUsPerMember are --gpus and --gpus-per-member as the
	// sweep was started with ("" and 0: not given): resume uses them
	// unless given again.
	GPUs          string `json:"gpus,omitempty"`
	GPUsPerMember int    `json:"gpus_per_member,omitempty"`
	// ASHA is the successive-halving plan of a sweep started with
	// --search asha; nil for a grid.
	ASHA *search.ASHA `json:"asha,omitempty"`
	// PBT is the population-based plan of a sweep started with --search
	// pbt (its members the first population); nil otherwise.
	PBT *search.PBT `json:"pbt,omitempty"`
	// Random says how the members were drawn (--search random, or a
	// search over a spec with distributions or [random]); nil for a grid.
	Random *search.Drawn `json:"random,omitempty"`
}

// Job is one sbatch submission of some members.
type Job struct {
	ID        string `json:"id"`
	Array     string `json:"array"` // the --array it was submitted with
	Submitted string `json:"submitted"`
}

// Root is the sweeps folder of a runs root.
func Root(runsRoot string) string { return filepath.Join(runsRoot, DirName) }

// Plan is a new grid sweep of spec under runs root (PlanSearch with
// search.Grid).
func Plan(root string, spec *search.Spec, executor, workdir string) (*Sweep, error) {
	return PlanSearch(root, spec, executor, workdir, search.Grid)
}

// PlanSearch is a new sweep of spec under runs root searched by how, with
// a fresh id and every member expanded (or drawn: search.Spec.Expand) and
// validated; nothing is written until Create.
func PlanSearch(root string, spec *search.Spec, executor, workdir, how string) (*Sweep, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	parent := Root(root)
	var rnd [2]byte
	var id string
	for i := 0; ; i++ {
		rand.Read(rnd[:])
		id = spec.Name + "-" + hex.EncodeToString(rnd[:])
		if _, err := os.Stat(filepath.Join(parent, id)); errors.Is(err, os.ErrNotExist) {
			break
		}
		if i == 100 {
			return nil, fmt.Errorf("no free sweep id under %s", parent)
		}
	}
	members, drawn, err := spec.Expand(id, how)
	if err != nil {
		return nil, err
	}
	s := &Sweep{Dir: filepath.Join(parent, id), Manifest: Manifest{
		ID: id, Name: spec.Name, Created: time.Now().Format(time.RFC3339), Root: root, Workdir: workdir,
		Executor: executor, Columns: spec.Columns(), Members: members, Slurm: spec.Slurm, Random: drawn,
	}}
	if spec.BaseConfig != "" {
		s.BaseConfig = baseName
	}
	return s, nil
}

// Create writes a planned sweep's folder: the spec as written (text), a
// copy of its base_config, and sweep.json.
func (s *Sweep) Create(spec *search.Spec, text []byte) error {
	if err := os.MkdirAll(filepath.Dir(s.Dir), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(s.Dir, 0o755); err != nil {
		return err
	}
	fail := func(err error) error {
		os.RemoveAll(s.Dir)
		return err
	}
	if err := runs.WriteFile(filepath.Join(s.Dir, specName), text, 0o644); err != nil {
		return fail(err)
	}
	if spec.BaseConfig != "" {
		// A copy: the members (and a requeue next week) must see the
		// configuration the sweep was validated with.
		b, err := boundedfile.ReadFile(spec.BaseConfig, experiment.ConfigFile)
		if err != nil {
			return fail(err)
		}
		if err := runs.WriteFile(filepath.Join(s.Dir, baseName), b, 0o644); err != nil {
			return fail(err)
		}
	}
	if err := s.Save(); err != nil {
		return fail(err)
	}
	return nil
}

// Save writes sweep.json.
func (s *Sweep) Save() error {
	b, err := json.MarshalIndent(s.Manifest, "", "  ")
	if err != nil {
		return err
	}
	return runs.WriteFile(filepath.Join(s.Dir, fileName), append(b, '\n'), 0o644)
}

// infoFile bounds sweep.json (a line per member, at most MaxMembers).
var infoFile = boundedfile.Limit{What: "sweep.json", Max: 64 << 20}

// Load reads the sweep in dir.
func Load(dir string) (*Sweep, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, fileName)
	b, err := boundedfile.ReadFile(path, infoFile)
	if err != nil {
		return nil, err
	}
	s := &Sweep{Dir: dir}
	if err := json.Unmarshal(b, &s.Manifest); err != nil {
		return nil, runs.Damaged(fmt.Errorf("%s is damaged: %v", path, err))
	}
	if err := s.check(); err != nil {
		return nil, runs.Damaged(fmt.Errorf("%s is damaged: %s", path, safetext.Line(err.Error())))
	}
	return s, nil
}

// check holds the rules sweep.json obeys. Its fields name files and runs
// selmix acts on, so each is what Plan writes: a member's run is named
// <id>-<index> (a run name "../../x" was shown as not started and a
// second run started beside it), and runs_root is the runs root the
// sweep's folder is in (one elsewhere made sweep resume create it and
// run every member again there).
func (s *Sweep) check() error {
	if search.CheckName(s.Name) != nil || !strings.HasPrefix(s.ID, s.Name+"-") || search.CheckName(strings.TrimPrefix(s.ID, s.Name+"-")) != nil {
		return fmt.Errorf("bad id %q or name %q", s.ID, s.Name)
	}
	if s.ID != filepath.Base(s.Dir) {
		return fmt.Errorf("id %q is not its folder's name %q", s.ID, filepath.Base(s.Dir))
	}
	if !filepath.IsAbs(s.Root) || !filepath.IsAbs(s.Workdir) {
		return errors.New("runs_root and workdir must be absolute paths")
	}
	own := filepath.Dir(filepath.Dir(s.Dir))
	fi, err := os.Stat(s.Root)
	if err != nil {
		return fmt.Errorf("runs_root %q: %v", s.Root, err)
	}
	if ofi, err := os.Stat(own); err != nil || !os.SameFile(fi, ofi) {
		return fmt.Errorf("runs_root %q is not the runs root the sweep is in (%s)", s.Root, own)
	}
	if s.Executor != search.ExecLocal && s.Executor != search.ExecSlurm {
		return fmt.Errorf("executor %q: want local or slurm", s.Executor)
	}
	for i, m := range s.Members {
		if m.Index != i || len(m.Vary) != len(s.Columns) {
			return fmt.Errorf("member %d is malformed", i)
		}
		if want := fmt.Sprintf("%s-%d", s.ID, i); m.Run != want {
			return fmt.Errorf("member %d: run %q, want %q", i, m.Run, want)
		}
	}
	if s.ASHA != nil && s.PBT != nil {
		return errors.New("both asha and pbt")
	}
	if s.ASHA != nil {
		return s.ASHA.Check(len(s.Members))
	}
	if s.PBT != nil {
		return s.PBT.Check(len(s.Members))
	}
	return nil
}

// List returns the sweeps under a runs root, oldest first; folders that
// do not read as sweeps are listed with their error.
func List(root string) ([]*Sweep, []error, error) {
	out, bad, err := list(root)
	errs := make([]error, len(bad))
	for i, b := range bad {
		errs[i] = b.err
	}
	return out, errs, err
}

// unreadable is a folder of the sweeps root that does not read as a sweep.
type unreadable struct {
	id  string // the folder's name: a sweep's id, if it is one
	err error
}

func list(root string) ([]*Sweep, []unreadable, error) {
	ents, err := os.ReadDir(Root(root))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var out []*Sweep
	var bad []unreadable
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		s, err := Load(filepath.Join(Root(root), e.Name()))
		if err != nil {
			bad = append(bad, unreadable{e.Name(), err})
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created < out[j].Created })
	return out, bad, nil
}

// Open finds a sweep: a folder holding sweep.json, else in the runs root
// an id, a unique id prefix or a unique name.
func Open(root, query string) (*Sweep, error) {
	if query == "" {
		return nil, errors.New("no sweep given")
	}
	if _, err := os.Stat(filepath.Join(query, fileName)); err == nil {
		return Load(query)
	}
	all, bad, err := list(root)
	if err != nil {
		return nil, err
	}
	var cand []*Sweep
	for _, s := range all {
		if s.ID == query {
			return s, nil
		}
		if strings.HasPrefix(s.ID, query) || s.Name == query {
			cand = append(cand, s)
		}
	}
	switch len(cand) {
	case 1:
		return cand[0], nil
	case 0:
		// A sweep whose sweep.json is damaged is still the one asked for
		// (an id, its prefix, or its name: ids are NAME-suffix): say so.
		for _, b := range bad {
			if strings.HasPrefix(b.id, query) {
				return nil, b.err
			}
		}
		var ids []string
		for _, s := range all {
			ids = append(ids, s.ID)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("no sweep %q: %s has no sweeps", query, Root(root))
		}
		return nil, fmt.Errorf("no sweep %q in %s; sweeps are: %s", query, Root(root), strings.Join(ids, ", "))
	}
	var ids []string
	for _, s := range cand {
		ids = append(ids, s.ID)
	}
	return nil, fmt.Errorf("sweep %q is ambiguous: %s", query, strings.Join(ids, ", "))
}

// Config builds member i's configuration, as `selmix run` would.
func (s *Sweep) Config(i int) (experiment.Config, error) {
	if i < 0 || i >= len(s.Members) {
		return experiment.Config{}, fmt.Errorf("sweep %s has members 0 to %d, not %d", s.ID, len(s.Members)-1, i)
	}
	base := ""
	if s.BaseConfig != "" {
		base = filepath.Join(s.Dir, s.BaseConfig)
	}
	c, err := experiment.Load(base, s.Members[i].Sets)
	if err != nil {
		return c, fmt.Errorf("sweep %s member %d: %w", s.ID, i, err)
	}
	return c, nil
}

// Describe is member i's values, e.g. "policy=uniform seed=2", with the
// section of each key left out where the last part is enough.
func (s *Sweep) Describe(i int) string {
	var parts []string
	names := ShortNames(s.Columns)
	for c, v := range s.Members[i].Vary {
		if v != "" {
			parts = append(parts, names[c]+"="+search.Display(v))
		}
	}
	return strings.Join(parts, " ")
}

// Label names a member in a narrow legend by its values of the columns
// (display values, as MemberStatus.Values): "resample · 2"; values it
// lacks ("" or "-") are left out.
func Label(values []string) string {
	var parts []string
	for _, v := range values {
		if v != "" && v != "-" {
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, " · ")
}

// MembersOf finds the sweep in runs root root whose member runs names
// all are (each named <sweep id>-<index>), with their indices in order;
// nil where they are not all members of one sweep.
func MembersOf(root string, names []string) (*Sweep, []int) {
	if len(names) == 0 {
		return nil, nil
	}
	id, _, ok := memberName(names[0])
	if !ok {
		return nil, nil
	}
	s, err := Load(filepath.Join(Root(root), id))
	if err != nil {
		return nil, nil
	}
	idx := make([]int, len(names))
	for k, n := range names {
		nid, i, ok := memberName(n)
		if !ok || nid != id || i >= len(s.Members) || s.Members[i].Run != n {
			return nil, nil
		}
		idx[k] = i
	}
	return s, idx
}

// MemberLabels names runs by their values of a sweep's columns (label:
// Sweep.Describe, "policy=resample seed=2", or Sweep.Label, "resample ·
// 2") where names all are member runs of one sweep in runs root root
// (MembersOf), so figures and views of them say what varies rather than
// generated names. It is nil where they are not, or where no column has
// a value.
func MemberLabels(root string, names []string, label func(s *Sweep, i int) string) []string {
	s, idx := MembersOf(root, names)
	if s == nil {
		return nil
	}
	out := make([]string, len(idx))
	named := false
	for k, i := range idx {
		out[k] = label(s, i)
		named = named || out[k] != ""
	}
	if !named {
		return nil
	}
	return out
}

// Label is member i's values, narrow: "resample · 2" (Label).
func (s *Sweep) Label(i int) string {
	vs := make([]string, len(s.Members[i].Vary))
	for c, v := range s.Members[i].Vary {
		vs[c] = search.Display(v)
	}
	return Label(vs)
}

// memberName splits a member's run name "<sweep id>-<index>".
func memberName(name string) (id string, index int, ok bool) {
	cut := strings.LastIndexByte(name, '-')
	if cut <= 0 {
		return "", 0, false
	}
	i, err := strconv.Atoi(name[cut+1:])
	if err != nil || i < 0 || name[cut+1:] != strconv.Itoa(i) {
		return "", 0, false
	}
	id = name[:cut]
	return id, i, !strings.ContainsAny(id, `/\`) && id != "." && id != ".."
}

// ShortNames are the columns as tables head them: each key without its
// section ("policy" for finetune.policy), unless two columns would then
// read the same.
func ShortNames(cols []string) []string {
	short := func(k string) string {
		if i := strings.LastIndexByte(k, '.'); i >= 0 {
			return k[i+1:]
		}
		return k
	}
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = short(c)
		for j, d := range cols {
			if j != i && short(d) == out[i] {
				out[i] = c
				break
			}
		}
	}
	return out
}

// LogPath is where the local executor writes member i's output.
func (s *Sweep) LogPath(i int) string {
	return filepath.Join(s.Dir, logsDir, strconv.Itoa(i)+".log")
}

// Lock takes the sweep's lock: one executor or submitter at a time.
func (s *Sweep) Lock() (*os.File, error) {
	f, err := runs.LockDir(s.Dir, s.ID)
	var busy *runs.BusyError
	if errors.As(err, &busy) {
		return nil, fmt.Errorf("sweep %s is being run or submitted by pid %d", s.ID, busy.Pid)
	}
	return f, err
}

// ExecutorLive reports whether a process holds the sweep's lock (a local
// executor runs it).
func (s *Sweep) ExecutorLive() bool {
	live, _ := runs.IsLive(s.Dir)
	return live
}

// devicesFile holds, in a member's folder, the devices the local
// executor gave it last ("3" or "0,1"), for status to show.
const devicesFile = "gpus"

// SetDevices records the devices the local executor gives member i (none:
// it removes the record).
func (s *Sweep) SetDevices(i int, devs []string) error {
	dir := filepath.Join(s.Dir, memberDir, strconv.Itoa(i))
	if len(devs) == 0 {
		if err := os.Remove(filepath.Join(dir, devicesFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return runs.WriteFile(filepath.Join(dir, devicesFile), []byte(strings.Join(devs, ",")+"\n"), 0o644)
}

// Devices are the devices the local executor gave member i last; nil if
// none. What it reads is made printable; at most 64 are kept.
func (s *Sweep) Devices(i int) []string {
	b, err := boundedfile.ReadFile(filepath.Join(s.Dir, memberDir, strconv.Itoa(i), devicesFile), devicesLimit)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range strings.Split(strings.TrimSpace(string(b)), ",") {
		if d = safetext.Cut(strings.TrimSpace(d), 80); d != "" && len(out) < 64 {
			out = append(out, d)
		}
	}
	return out
}

var devicesLimit = boundedfile.Limit{What: "a member's gpus file", Max: 64 << 10}

// LockMember takes member i's lock, held while a process runs it, so two
// processes (a requeued task and a resubmitted one) never run one member.
func (s *Sweep) LockMember(i int) (*os.File, error) {
	f, err := runs.LockDir(filepath.Join(s.Dir, memberDir, strconv.Itoa(i)), s.Members[i].Run)
	var busy *runs.BusyError
	if errors.As(err, &busy) {
		return nil, fmt.Errorf("sweep %s member %d is already being run by pid %d", s.ID, i, busy.Pid)
	}
	return f, err
}

// memberBusy reports whether a process holds member i's lock.
func (s *Sweep) memberBusy(i int) bool {
	live, _ := runs.IsLive(filepath.Join(s.Dir, memberDir, strconv.Itoa(i)))
	return live
}
