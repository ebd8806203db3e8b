package browser

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/BurntSushi/toml"

	"selmix/runs"
)

// Entry is one run as the browser lists it: what run.json, summary.json
// and config.toml say, never the event log.
type Entry struct {
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
func (e *Entry) Label() string {
	if e.Name != "" {
		return e.Name
	}
	return e.ID
}

// Caps on what the list reads of each run: these files are small; a
// larger one is damaged or not ours, and reading it whole would stall the
// list.
const (
	maxSummary = 16 << 20
	maxConfig  = 1 << 20
	maxMeta    = 1 << 20
)

// Read lists every run under root as entries, oldest first, from their
// run.json and summary.json (ReadConfigs adds config.toml, later, so the
// list shows at once). A run it cannot read whole still appears, with
// what could be read.
func Read(root string) ([]Entry, error) {
	all, err := runs.List(root)
	if err != nil {
		return nil, err
	}
	// The files are small and many: reading them is waiting on the disk,
	// so a few readers at once finish sooner, even on one core.
	out := make([]Entry, len(all))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(readers, len(all)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = entryOf(&all[i])
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

func entryOf(r *runs.Run) Entry {
	m := r.Meta
	e := Entry{
		ID: filepath.Base(r.Dir), Name: Clean(m.Name), Dir: r.Dir, Live: r.Live,
		Objective: Clean(m.Objective), Policy: Clean(m.Policy), Steps: m.Steps,
		Final: math.NaN(), Best: math.NaN(),
	}
	switch s := r.EffectiveStatus(); {
	case r.Broken():
		e.Status = "broken"
	case r.Live && s == runs.StatusPaused:
		e.Status = "paused"
	case r.Live:
		e.Status = "live"
	default:
		e.Status = Clean(s)
	}
	if !r.Broken() && m.BestStep >= 0 {
		e.Best = m.Best
	}
	e.Created, _ = time.Parse(time.RFC3339, m.Created)
	e.Tags = readTags(r.Dir)
	e.Final = readFinal(r.Dir, m.Objective)
	// The run.json fields answer key filters under their own names; the
	// config keys join them when ReadConfigs has read them.
	e.fields = map[string]string{"name": e.Name, "id": e.ID, "status": e.Status, "objective": e.Objective, "policy": e.Policy}
	e.hay = strings.ToLower(strings.Join(append([]string{e.ID, e.Name, e.Status, e.Objective, e.Policy}, e.Tags...), " "))
	return e
}

// readBounded reads at most limit bytes of path; a longer file is an
// error.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return b, nil
}

// readTags reads the "tags" of run.json (selmix runs tag). Runs written
// before tags existed have none.
func readTags(dir string) []string {
	b, err := readBounded(filepath.Join(dir, "run.json"), maxMeta)
	if err != nil {
		return nil
	}
	var m struct {
		Tags []string `json:"tags"`
	}
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	tags := m.Tags[:0]
	for _, t := range m.Tags {
		if t = Clean(t); t != "" {
			tags = append(tags, t)
		}
	}
	return tags
}

// readFinal is ψ of objective on test after fine-tuning, from
// summary.json; NaN if the run has no summary or it does not say.
func readFinal(dir, objective string) float64 {
	b, err := readBounded(filepath.Join(dir, "summary.json"), maxSummary)
	if err != nil {
		return math.NaN()
	}
	var s struct {
		Objective string                     `json:"objective"`
		After     map[string]json.RawMessage `json:"test_objectives_after"`
	}
	if json.Unmarshal(b, &s) != nil {
		return math.NaN()
	}
	if s.Objective != "" {
		objective = s.Objective
	}
	raw, ok := s.After[objective]
	if !ok {
		return math.NaN()
	}
	var v float64
	if json.Unmarshal(raw, &v) != nil {
		return math.NaN() // "NaN", "+Inf" or damaged
	}
	return v
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

// readConfig flattens config.toml; nil if it cannot be read.
func readConfig(dir string) map[string]string {
	b, err := readBounded(filepath.Join(dir, "config.toml"), maxConfig)
	if err != nil {
		return nil
	}
	var m map[string]any
	if _, err := toml.Decode(string(b), &m); err != nil {
		return nil
	}
	return Flatten(m)
}

// Flatten turns nested TOML tables into "section.key" → value text
// (values cleaned for the terminal).
func Flatten(m map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if sub, ok := v.(map[string]any); ok {
			for k, x := range sub {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, x)
			}
			return
		}
		out[prefix] = Clean(fmt.Sprint(v))
	}
	walk("", m)
	return out
}

// Clean makes an external string safe for one terminal cell run: control
// characters (escape sequences, newlines) become '?'.
func Clean(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}
