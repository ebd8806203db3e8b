package browser

import (
	"path/filepath"
	"strings"
	"sync"
	"time"

	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/runs/record"
)

// Row is one run as the browser lists it: what the run store reads of
// run.json (runs.List, with its tags), summary.json (record.Final) and
// config.toml (runs.ReadConfig), never the event log, each string made
// safe for the terminal (safetext.Line). Over the store's runs.Run it adds
// what the list shows and filters on: the status as listed (live, paused,
// broken), ψ on test from the summary, the creation time parsed, the
// config once ReadConfigs has read it, and the text filters search.
type Row struct {
	ID, Name, Dir string
	Status        string // live, paused, finished, stopped, crashed, error or broken
	Live          bool
	Objective     string
	Policy        string
	Steps         int
	Final         float64 // ψ of the optimized objective on test after fine-tuning; NaN if not finished
	Best          float64 // best validation ψ (run.json); NaN before the first refresh
	Created       time.Time
	Tags          []string
	// Config is config.toml flattened to "section.key" → value text; nil
	// until ReadConfigs has read it.
	Config map[string]string

	fields map[string]string // run.json's fields by key-filter name
	hay    string            // lower-case text a bare filter word searches
}

// Label is the name the list shows: the run's name, else its id.
func (e *Row) Label() string {
	if e.Name != "" {
		return e.Name
	}
	return e.ID
}

// Read lists every run under root as rows, oldest first, from their
// run.json and summary.json (ReadConfigs adds config.toml, later, so the
// list shows at once). A run it cannot read whole still appears, with
// what could be read.
func Read(root string) ([]Row, error) {
	all, err := runs.List(root)
	if err != nil {
		return nil, err
	}
	// The files are small and many: reading them is waiting on the disk,
	// so a few readers at once finish sooner, even on one core.
	out := make([]Row, len(all))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(readers, len(all)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = rowOf(&all[i])
			}
		}()
	}
	for i := range all {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, nil
}

// readers is how many runs Read reads at once.
const readers = 8

func rowOf(r *runs.Run) Row {
	m := r.Meta
	e := Row{
		ID: filepath.Base(r.Dir), Name: safetext.Line(m.Name), Dir: r.Dir, Live: r.Live,
		Objective: safetext.Line(m.Objective), Policy: safetext.Line(m.Policy), Steps: m.Steps,
		Final: record.Final(r), Best: r.Best(),
	}
	switch s := r.EffectiveStatus(); {
	case r.Broken():
		e.Status = "broken"
	case r.Live && s == runs.StatusPaused:
		e.Status = "paused"
	case r.Live:
		e.Status = "live"
	default:
		e.Status = safetext.Line(s)
	}
	e.Created, _ = time.Parse(time.RFC3339, m.Created)
	for _, t := range m.Tags {
		if t = safetext.Line(t); t != "" {
			e.Tags = append(e.Tags, t)
		}
	}
	// The run.json fields answer key filters under their own names; the
	// config keys join them when ReadConfigs has read them.
	e.fields = map[string]string{"name": e.Name, "id": e.ID, "status": e.Status, "objective": e.Objective, "policy": e.Policy}
	e.hay = strings.ToLower(strings.Join(append([]string{e.ID, e.Name, e.Status, e.Objective, e.Policy}, e.Tags...), " "))
	return e
}

// ReadConfigs reads the flattened config.toml of each run directory,
// by run id; a run whose config cannot be read has an empty one.
func ReadConfigs(dirs map[string]string) map[string]map[string]string {
	out := make(map[string]map[string]string, len(dirs))
	for id, dir := range dirs {
		c := readConfig(dir)
		if c == nil {
			c = map[string]string{}
		}
		out[id] = c
	}
	return out
}

// readConfig is the run's config.toml flattened (runs.ReadConfig), keys
// and values made safe for the terminal (Config.Lines); nil if it cannot
// be read.
func readConfig(dir string) map[string]string {
	c, err := runs.ReadConfig(dir)
	if err != nil {
		return nil
	}
	return c.Lines()
}
