package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"selmix/internal/jsonfloat"
)

// Run statuses as stored in run.json.
const (
	StatusRunning  = "running"
	StatusPaused   = "paused"
	StatusFinished = "finished"
	StatusStopped  = "stopped"
	StatusCrashed  = "crashed"
	StatusError    = "error"
)

// validStatus reports whether s is a status a writer may store.
func validStatus(s string) bool {
	switch s {
	case StatusRunning, StatusPaused, StatusFinished, StatusStopped, StatusCrashed, StatusError:
		return true
	}
	return false
}

// Format is the run directory format this package writes. Format 1
// (run.json without "format") had no arrays.bin and untagged event
// payloads; format 2 added both (docs/run-format.md).
const Format = 2

// Meta is the content of run.json.
//
// Best is the best validation ψ of BestObjective, the objective being
// optimized when it was reached: an objective changed mid-run starts a
// new best, judged on the new objective. BestObjective is "" in runs
// written before it was recorded. Best is stored as a JSON number when finite and as the string "NaN",
// "+Inf" or "-Inf" otherwise, so a diverged run can still be saved.
// Pinned lists checkpoint steps exempt from retention (see
// Writer.WriteFinalCheckpoint). Format is the run's format version
// (absent in run.json means 1). BLAS and BLASThreads are the BLAS the
// run was created with and the threads it split products over (absent
// before they were recorded): a run re-executed bit for bit needs both.
type Meta struct {
	Format        int
	ID            string
	Name          string
	Created       string // RFC3339
	Status        string
	Parent        string // id of the run this one was forked from, or ""
	ParentStep    int    // step of the parent checkpoint it was forked at
	ParentBest    bool   // forked from the parent's best checkpoint (at ParentStep)
	Objective     string
	Policy        string
	Method        string // loop.Hyper.Method: where the method is not the paper's, how ("" for the paper's)
	Steps         int
	Best          float64
	BestStep      int
	BestObjective string
	Extra         map[string]string
	Pinned        []int
	BLAS          string
	BLASThreads   int
	// BLASCore is the OpenBLAS kernel the run's sessions ran on ("Haswell";
	// kernels sum in different orders), comma-separated in the order first
	// used where a resume could not run on the first one; CPU the
	// processor it was created on. Both "" before they were recorded.
	BLASCore string
	CPU      string
	// WorkerEnv is what a worker's hello said its results depend on (its
	// framework's version, the device, its determinism settings: see
	// docs/worker-protocol.md), as the latest session's worker said it;
	// nil in process and from workers that do not say.
	WorkerEnv map[string]string
	// GPUs are the GPUs the run's latest session used, as its worker's
	// hello named them (CUDA_VISIBLE_DEVICES's ids), and WorldSize the
	// ranks that served it (0: one, or unknown); both empty for the
	// in-process trainer and in runs recorded before them.
	GPUs      []string
	WorldSize int
	// Tags and Note are what a person wrote about the run (selmix runs
	// tag, untag, note; see Annotate). They belong to Annotate: a Writer
	// keeps the ones on disk whatever its own copy says.
	Tags []string
	Note string
}

// metaJSON is the on-disk shape of Meta.
type metaJSON struct {
	Format      int               `json:"format,omitempty"`
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Created     string            `json:"created"`
	Status      string            `json:"status"`
	Parent      string            `json:"parent,omitempty"`
	ParentStep  int               `json:"parent_step,omitempty"`
	ParentCkpt  string            `json:"parent_checkpoint,omitempty"`
	Objective   string            `json:"objective,omitempty"`
	Policy      string            `json:"policy,omitempty"`
	Method      string            `json:"method,omitempty"`
	Steps       int               `json:"steps"`
	Best        json.RawMessage   `json:"best,omitempty"`
	BestStep    int               `json:"best_step"`
	BestObj     string            `json:"best_objective,omitempty"`
	Extra       map[string]string `json:"extra,omitempty"`
	Pinned      []int             `json:"pinned,omitempty"`
	BLAS        string            `json:"blas,omitempty"`
	BLASThreads int               `json:"blas_threads,omitempty"`
	BLASCore    string            `json:"blas_core,omitempty"`
	CPU         string            `json:"cpu,omitempty"`
	WorkerEnv   map[string]string `json:"worker_env,omitempty"`
	GPUs        []string          `json:"gpus,omitempty"`
	WorldSize   int               `json:"world_size,omitempty"`
	Tags        []string          `json:"tags,omitempty"`
	Note        string            `json:"note,omitempty"`
}

// MarshalJSON encodes m in the run.json format.
func (m Meta) MarshalJSON() ([]byte, error) {
	best, err := json.Marshal(jsonfloat.Float(m.Best))
	if err != nil {
		return nil, err
	}
	return json.Marshal(metaJSON{
		Format: m.Format, ID: m.ID, Name: m.Name, Created: m.Created, Status: m.Status,
		Parent: m.Parent, ParentStep: m.ParentStep, ParentCkpt: parentCkpt(m.ParentBest),
		Objective: m.Objective, Policy: m.Policy, Method: m.Method,
		Steps: m.Steps, Best: best, BestStep: m.BestStep, BestObj: m.BestObjective,
		Extra: m.Extra, Pinned: m.Pinned, BLAS: m.BLAS, BLASThreads: m.BLASThreads,
		BLASCore: m.BLASCore, CPU: m.CPU, WorkerEnv: m.WorkerEnv,
		GPUs: m.GPUs, WorldSize: worldSize(m.WorldSize), Tags: m.Tags, Note: m.Note,
	})
}

// UnmarshalJSON decodes the run.json format; it does not validate (see
// parseMeta).
func (m *Meta) UnmarshalJSON(b []byte) error {
	var j metaJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	best := 0.0
	if len(j.Best) > 0 && !bytes.Equal(j.Best, []byte("null")) {
		var f jsonfloat.Float
		if err := json.Unmarshal(j.Best, &f); err != nil {
			return fmt.Errorf("best: %w", err)
		}
		best = float64(f)
	}
	if j.Format == 0 {
		j.Format = 1 // written before formats had numbers
	}
	*m = Meta{
		Format: j.Format, ID: j.ID, Name: j.Name, Created: j.Created, Status: j.Status,
		Parent: j.Parent, ParentStep: j.ParentStep, ParentBest: j.ParentCkpt == ParentCheckpointBest,
		Objective: j.Objective, Policy: j.Policy, Method: j.Method,
		Steps: j.Steps, Best: best, BestStep: j.BestStep, BestObjective: j.BestObj,
		Extra: j.Extra, Pinned: j.Pinned, BLAS: j.BLAS, BLASThreads: j.BLASThreads,
		BLASCore: j.BLASCore, CPU: j.CPU, WorkerEnv: j.WorkerEnv,
		GPUs: j.GPUs, WorldSize: worldSize(j.WorldSize), Tags: j.Tags, Note: j.Note,
	}
	return nil
}

// worldSize is a world size as Meta holds it: one is 0 (run.json
// omits it), like unknown.
func worldSize(n int) int {
	if n == 1 {
		return 0
	}
	return n
}

// ParentCheckpointBest is run.json's parent_checkpoint of a fork from its
// parent's best checkpoint.
const ParentCheckpointBest = "best"

func parentCkpt(best bool) string {
	if best {
		return ParentCheckpointBest
	}
	return ""
}

// clone returns a deep copy of m.
func (m Meta) clone() Meta {
	m.Extra = maps.Clone(m.Extra)
	m.Pinned = slices.Clone(m.Pinned)
	m.Tags = slices.Clone(m.Tags)
	m.GPUs = slices.Clone(m.GPUs)
	m.WorkerEnv = maps.Clone(m.WorkerEnv)
	return m
}

// parseMeta decodes and checks run.json content; file names the file in
// errors. Unknown fields are ignored (newer versions may add some); an
// unknown status is kept as is.
func parseMeta(b []byte, file string) (Meta, error) {
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, Damaged(fmt.Errorf("%s: invalid run metadata: %w", file, err))
	}
	if err := checkMeta(m); err != nil {
		return Meta{}, Damaged(fmt.Errorf("%s: invalid run metadata: %w", file, err))
	}
	return m, nil
}

// checkMeta holds the rules every stored Meta obeys.
func checkMeta(m Meta) error {
	if err := checkID(m.ID); err != nil {
		return err
	}
	if m.Status == "" {
		return errors.New("status is empty")
	}
	if m.Format < 1 {
		return fmt.Errorf("format %d is not a format version", m.Format)
	}
	if _, err := time.Parse(time.RFC3339, m.Created); err != nil {
		return fmt.Errorf("created %q is not an RFC3339 time", m.Created)
	}
	if m.ParentStep < 0 {
		return fmt.Errorf("parent_step %d is negative", m.ParentStep)
	}
	if m.BLASThreads < 0 {
		return fmt.Errorf("blas_threads %d is negative", m.BLASThreads)
	}
	if m.WorldSize < 0 {
		return fmt.Errorf("world_size %d is negative", m.WorldSize)
	}
	if m.Parent != "" {
		if err := checkID(m.Parent); err != nil {
			return fmt.Errorf("parent: %w", err)
		}
	}
	return nil
}

// checkID rejects ids that cannot be a directory name under the root.
func checkID(id string) error {
	switch {
	case id == "":
		return errors.New("id is empty")
	case id == "." || id == "..":
		return fmt.Errorf("id %q is not a run id", id)
	case strings.HasPrefix(id, "."):
		return fmt.Errorf("id %q starts with a dot", id)
	case strings.ContainsAny(id, "/\\\x00"):
		return fmt.Errorf("id %q contains a path separator or NUL", id)
	}
	return nil
}
