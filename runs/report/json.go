package report

import (
	"encoding/json"
	"io"
	"path/filepath"

	"selmix/internal/safetext"
	"selmix/runs"
	"selmix/runs/record"
)

// Record is one run in runs ls --json (docs/run-format.md, "JSON
// listings").
type Record struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Status     string      `json:"status"`
	Created    string      `json:"created"`
	Objective  string      `json:"objective"`
	Policy     string      `json:"policy"`
	Steps      int         `json:"steps"`
	Best       *record.Num `json:"best"`      // null before the first refresh
	BestStep   *int        `json:"best_step"` // likewise
	BestObj    string      `json:"best_objective,omitempty"`
	BestAimed  bool        `json:"best_aimed,omitempty"` // best is ψ aimed at α/K + δ (record.BestAimed)
	Parent     string      `json:"parent"`
	ParentStep int         `json:"parent_step"`
	Format     int         `json:"format"`
	Dir        string      `json:"dir"`
	Live       bool        `json:"live"`
	Pid        int         `json:"pid,omitempty"`
	Tags       []string    `json:"tags"`
	Note       string      `json:"note"`
}

// RecordOf is r as runs ls --json lists it.
func RecordOf(r *runs.Run) Record {
	m := r.Meta
	j := Record{
		ID: filepath.Base(r.Dir), Name: m.Name, Status: r.EffectiveStatus(), Created: m.Created,
		Objective: m.Objective, Policy: m.Policy, Steps: m.Steps, Parent: m.Parent, ParentStep: m.ParentStep,
		Format: m.Format, Dir: r.Dir, Live: r.Live, Pid: r.Pid, Tags: m.Tags, Note: m.Note,
	}
	if j.Tags == nil {
		j.Tags = []string{}
	}
	if !r.Broken() && m.BestStep >= 0 {
		best, step := record.Num(m.Best), m.BestStep
		j.Best, j.BestStep, j.BestObj, j.BestAimed = &best, &step, m.BestObjective, record.BestAimed(r)
	}
	return j
}

// WriteJSON writes v as indented JSON and a newline, as every --json of
// selmix prints, with every control character escaped (safetext.JSON):
// a run's name or tag or a class name is printed as the string it is,
// never as bytes a terminal acts on.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(safetext.JSON(b), '\n'))
	return err
}

// ListJSON writes runs ls --json: a JSON array of the runs of root that
// carry every one of tags.
func ListJSON(w io.Writer, root string, tags []string) error {
	all, err := runs.List(root)
	if err != nil {
		return err
	}
	all = runs.Tagged(all, tags)
	out := make([]Record, 0, len(all))
	for i := range all {
		out = append(out, RecordOf(&all[i]))
	}
	return WriteJSON(w, out)
}

// ShowJSON writes runs show --json of r, whose event log is h: the run
// as ListJSON lists it, its configuration, its checkpoints and the
// scalars of its history.
func ShowJSON(w io.Writer, r *runs.Run, h *record.History) error {
	cfg, err := r.Recorded()
	if err != nil {
		return err
	}
	ck, err := r.Checkpoints()
	if err != nil {
		return err
	}
	if ck == nil {
		ck = []int{}
	}
	return WriteJSON(w, struct {
		Record
		Config      map[string]any `json:"config"`
		Checkpoints []int          `json:"checkpoints"`
		record.Scalars
	}{RecordOf(r), cfg.Table(), ck, h.Scalars()})
}
